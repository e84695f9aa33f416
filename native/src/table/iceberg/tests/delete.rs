use super::*;

#[test]
fn deletes_leave_exactly_the_rows_a_full_scan_keeps_for_scans_searches_and_time_travel() {
    use crate::vector::{metric::reference_distance, Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    for range in [0..300, 300..700, 700..1000] {
        table.append(reader(vec![batch(range)])).unwrap();
    }
    let files = |t: &Table| t.data_files(t.metadata().current_snapshot()).unwrap();
    // The slow twin: the ids left, each delete's filter applied to the rows of a model batch.
    let mut model: Vec<i64> = (0..1000).collect();
    let mut history = vec![(table.metadata().current_snapshot_id.unwrap(), model.clone())];
    let mut rng = Rng(11);
    let query = vec![500.0f32, 0.5, -480.0];
    let deletes = [
        r#"{"op":"and","args":[{"op":"ge","column":"id","value":100},{"op":"lt","column":"id","value":140}]}"#
            .to_owned(),
        r#"{"op":"is_null","column":"name"}"#.to_owned(),
        r#"{"op":"lt","column":"id","value":300}"#.to_owned(), // the rest of the first file: it leaves the table
        r#"{"op":"eq","column":"id","value":5000}"#.to_owned(), // no row: no snapshot
    ]
    .into_iter()
    .map(|j| Predicate::from_json(&j).unwrap())
    .chain((0..6).map(|_| {
        let lo = rng.below(1000) as i64;
        let mut values: Vec<serde_json::Value> = (0..20).map(|_| serde_json::json!(rng.below(1000) as i64)).collect();
        values.push(serde_json::json!(lo));
        Predicate::Or {
            args: vec![
                Predicate::In { column: "id".into(), values },
                Predicate::And {
                    args: vec![
                        Predicate::Ge { column: "id".into(), value: serde_json::json!(lo) },
                        Predicate::Lt { column: "id".into(), value: serde_json::json!(lo + 15) },
                    ],
                },
                Predicate::StartsWith { column: "name".into(), prefix: format!("n{}", 1 + rng.below(9)) },
            ],
        }
    }));
    for (step, filter) in deletes.enumerate() {
        let before = model.clone();
        let all = batch(0..1000);
        let passed = filter.evaluate(&all).unwrap();
        model.retain(|&id| !(passed.is_valid(id as usize) && passed.value(id as usize)));
        let (snapshot, deleted) = table.delete_where(Some(&filter)).unwrap();
        assert_eq!(deleted as usize, before.len() - model.len(), "step {step}: {}", filter.to_json());
        assert_eq!(snapshot.is_some(), deleted > 0, "a delete of no row commits nothing");
        if let Some(id) = snapshot {
            assert_eq!(table.metadata().snapshot(id).unwrap().summary["operation"], "delete");
            history.push((id, model.clone()));
        }
        // A full scan, a filtered scan and a search all leave the deleted rows out.
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model, "step {step}");
        let odd = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
        let mut kept: Vec<i64> = reopened
            .scan(files(&reopened), Some(&["id".to_owned()]), Some(odd.clone()), 50)
            .unwrap()
            .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        kept.sort_unstable();
        assert_eq!(kept, model.iter().copied().filter(|i| i % 4 != 0).collect::<Vec<_>>(), "step {step}");
        for filter in [None, Some(&odd)] {
            let search = VectorSearch::new("embedding", query.clone(), Metric::L2, 25);
            let found = reopened.search(files(&reopened), Some(&["id".to_owned()]), filter, &search, 64).unwrap();
            let mut reference: Vec<(f64, i64)> = model
                .iter()
                .filter(|&&i| filter.is_none() || i % 4 != 0)
                .map(|&i| (reference_distance(Metric::L2, &query, &[i as f32, 0.5, -(i as f32)]), i))
                .collect();
            reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            let got = found.column(0).as_primitive::<Int64Type>().values().to_vec();
            assert_eq!(
                got,
                reference.iter().take(25).map(|r| r.1).collect::<Vec<_>>(),
                "step {step}, filter {filter:?}"
            );
        }
    }
    // The first file left the table whole; no data file holds more than one delete file.
    let live = files(&table);
    assert_eq!(table.live_rows(&live).unwrap(), model.len() as u64, "a count from metadata equals the rows read");
    assert_eq!(live.len(), 2);
    assert!(live.iter().all(|f| f.deletes.len() == 1));
    // Time travel sees every earlier snapshot's rows.
    for (id, rows) in &history {
        assert_eq!(&ids(&table, table.metadata().snapshot(*id).ok()), rows);
    }
    // Appends keep the deletes; an overwrite drops them with the rows; nothing is left orphaned.
    table.append(reader(vec![batch(2000..2010)])).unwrap();
    model.extend(2000..2010);
    assert_eq!(ids(&table, table.metadata().current_snapshot()), model);
    let summary = &table.metadata().current_snapshot().unwrap().summary;
    assert_eq!(summary["total-delete-files"], "2");
    assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty());
    table.commit_overwrite(vec![]).unwrap();
    assert!(ids(&table, table.metadata().current_snapshot()).is_empty());
    assert_eq!(table.metadata().current_snapshot().unwrap().summary["total-delete-files"], "0");
    // Deleting every row of a table removes its files without writing a delete file.
    table.append(reader(vec![batch(0..10)])).unwrap();
    assert_eq!(table.delete_where(None).unwrap().1, 10);
    assert!(files(&table).is_empty());
    // A filter on a column the table lacks is refused before anything is written.
    let unknown = Predicate::from_json(r#"{"op":"eq","column":"nope","value":1}"#).unwrap();
    assert!(matches!(table.delete_where(Some(&unknown)), Err(Error::NotFound(m)) if m.contains("nope")));
}

/// Another writer's delete entries that serve two data files from one file (two deletion vectors
/// in one Puffin file; one position delete file of the partition), committed as Iceberg's writers
/// commit them; returns the table's data files (`[first, second]`).
fn delete_first_rows_of_both_files_as_another_writer(table: &mut Table) -> [DataFile; 2] {
    let mut files = table.data_files(table.metadata().current_snapshot()).unwrap();
    files.sort_by_key(|f| f.lower_bounds[&1].clone());
    let first_row = RoaringTreemap::from_iter([0u64]);
    let both = [(files[0].file_path.as_str(), &first_row), (files[1].file_path.as_str(), &first_row)];
    let (bytes, mut entries, extension) = match table.metadata().format_version >= 3 {
        true => {
            let (bytes, entries) = crate::spec::deletes::write_deletion_vectors(&both).unwrap();
            (bytes, entries, "puffin")
        }
        false => {
            let (bytes, entry) = crate::spec::deletes::write_positions(&both).unwrap();
            (bytes, vec![entry], "parquet")
        }
    };
    table.storage.put(&format!("data/shared-deletes.{extension}"), bytes).unwrap();
    for entry in &mut entries {
        entry.file_path = table.storage.uri(&format!("data/shared-deletes.{extension}"));
    }
    assert_eq!(target(&entries[0]).is_some(), extension == "puffin", "a partition's file names no one data file");
    let change = Change::new(&table.metadata);
    let parent = table.metadata.current_snapshot().cloned();
    let delta =
        RowDelta { operation: Operation::Delete, removed: &[], replaced: &[], added_deletes: &entries, added: &[] };
    assert!(table.commit_row_delta(&change, parent.as_ref(), &delta).unwrap());
    [files[0].clone(), files[1].clone()]
}

#[test]
fn a_delete_file_serving_several_data_files_stays_for_those_a_change_leaves() {
    for version in ["2", "3"] {
        for how in ["delete", "row change", "whole file", "compaction"] {
            let dir = tempfile::tempdir().unwrap();
            let location = dir.path().to_str().unwrap().to_owned();
            let properties = BTreeMap::from([("format-version".to_owned(), version.to_owned())]);
            let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
            table.append(reader(vec![batch(0..3)])).unwrap();
            table.append(reader(vec![batch(3..6)])).unwrap();
            let [first, _] = delete_first_rows_of_both_files_as_another_writer(&mut table);
            assert_eq!(ids(&table, table.metadata().current_snapshot()), [1, 2, 4, 5]);
            let step = format!("v{version}, {how}");
            let expected: &[i64] = match how {
                "delete" => {
                    let filter = Predicate::from_json(r#"{"op":"eq","column":"id","value":1}"#).unwrap();
                    assert_eq!(table.delete_where(Some(&filter)).unwrap().1, 1, "{step}");
                    &[2, 4, 5]
                }
                "row change" => {
                    let rows = BTreeMap::from([(first.file_path.clone(), RoaringTreemap::from_iter([1u64]))]);
                    table
                        .commit_row_changes(&read_at(table.metadata().current_snapshot_id), rows, Vec::new())
                        .unwrap()
                        .unwrap();
                    &[2, 4, 5]
                }
                "whole file" => {
                    let rows = BTreeMap::from([(first.file_path.clone(), RoaringTreemap::from_iter([1u64, 2]))]);
                    table
                        .commit_row_changes(&read_at(table.metadata().current_snapshot_id), rows, Vec::new())
                        .unwrap()
                        .unwrap();
                    &[4, 5]
                }
                _ => {
                    table.rewrite_data_files(1000).unwrap().unwrap();
                    &[1, 2, 4, 5]
                }
            };
            let reopened = Table::load(&location, &HashMap::new()).unwrap();
            assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), expected, "{step}");
            // The shared file's entry of the file left alone is still there; compaction, which
            // rewrote both files, leaves none.
            let files = reopened.metadata_table("files").unwrap();
            let paths = files.column_by_name("file_path").unwrap().as_string::<i32>();
            let shared = (0..files.num_rows()).filter(|&i| paths.value(i).contains("shared-deletes")).count();
            assert_eq!(shared, usize::from(how != "compaction"), "{step}: entries of the shared file");
            // Nothing it still needs counts as an orphan.
            let mut reopened = reopened;
            assert!(reopened.remove_orphan_files_unchecked(i64::MAX).unwrap().iter().all(|p| !p.contains("shared")));
            assert_eq!(
                ids(&reopened, reopened.metadata().current_snapshot()),
                expected,
                "{step}: after orphan removal"
            );
        }
    }
}

#[test]
fn equality_deletes_of_other_writers_apply_to_the_data_written_before_them_on_every_read() {
    use crate::vector::{Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    table.append(reader(vec![batch(10..20)])).unwrap();
    // A Flink-style upsert: an equality delete on `id` (field id 1) for ids 3, 12 and 40 (no such row).
    let key = Arc::new(ArrowSchema::new(vec![Field::new("id", DataType::Int64, false)
        .with_metadata(HashMap::from([(PARQUET_FIELD_ID.to_owned(), "1".to_owned())]))]));
    let rows = RecordBatch::try_new(key.clone(), vec![Arc::new(Int64Array::from(vec![3, 12, 40]))]).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(Vec::new(), key, None).unwrap();
    writer.write(&rows).unwrap();
    let bytes = writer.into_inner().unwrap();
    table.storage.put("data/eq-deletes.parquet", Bytes::from(bytes.clone())).unwrap();
    let delete = DataFile {
        content: CONTENT_EQUALITY_DELETES,
        file_path: table.storage.uri("data/eq-deletes.parquet"),
        file_format: "PARQUET".to_owned(),
        record_count: 3,
        file_size_in_bytes: bytes.len() as i64,
        equality_ids: Some(vec![1]),
        ..DataFile::default()
    };
    let change = Change::new(&table.metadata);
    let parent = table.metadata.current_snapshot().cloned();
    let delta =
        RowDelta { operation: Operation::Delete, removed: &[], replaced: &[], added_deletes: &[delete], added: &[] };
    assert!(table.commit_row_delta(&change, parent.as_ref(), &delta).unwrap());
    // Rows written after the delete are not deleted by it.
    table.append(reader(vec![batch(3..4)])).unwrap();
    let mut model: Vec<i64> = (0..20).filter(|i| *i != 3 && *i != 12).chain([3]).collect();
    model.sort_unstable();
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model);
    let files = reopened.data_files(reopened.metadata().current_snapshot()).unwrap();
    assert_eq!(reopened.live_rows(&files).unwrap(), 19);
    let search = VectorSearch::new("embedding", vec![12.0, 0.5, -12.0], Metric::L2, 1);
    let found = reopened.search(files, Some(&["id".to_owned()]), None, &search, 64).unwrap();
    assert_ne!(found.column(0).as_primitive::<Int64Type>().value(0), 12, "a search leaves the deleted row out");
    // Our own commits keep the delete file's key columns; compaction folds it in and lets it go.
    let filter = Predicate::from_json(r#"{"op":"eq","column":"id","value":5}"#).unwrap();
    table.delete_where(Some(&filter)).unwrap();
    model.retain(|i| *i != 5);
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model);
    assert_eq!(reopened.metadata().current_snapshot().unwrap().summary["total-equality-deletes"], "3");
    table.rewrite_data_files(1000).unwrap().unwrap();
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model);
    let files = reopened.data_files(reopened.metadata().current_snapshot()).unwrap();
    assert!(files.iter().all(|f| f.deletes.is_empty()), "compaction left no delete file");
    assert_eq!(reopened.metadata().current_snapshot().unwrap().summary["total-equality-deletes"], "0");
}
