//! Row-level changes (UPDATE, MERGE, DELETE by row) against an in-memory model of the rows.

use super::*;
use crate::vector::{metric::reference_distance, Metric, VectorSearch};

/// Rows of the test schema: (id, name, the first vector component `v`: the vector is [v, 0.5, -v]).
type Row = (i64, Option<String>, f32);

fn rows_batch(rows: &[Row]) -> RecordBatch {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let values: Vec<f32> = rows.iter().flat_map(|r| [r.2, 0.5, -r.2]).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from(rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>())),
            Arc::new(FixedSizeListArray::new(item, 3, Arc::new(Float32Array::from(values)), None)),
        ],
    )
    .unwrap()
}

/// Every row of the current snapshot, with where it is (`_file`, `_pos`), sorted by id.
fn read_all(table: &Table, filter: Option<Predicate>) -> Vec<(Row, String, u64)> {
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let columns: Vec<String> = ["id", "name", "embedding", FILE_PATH, ROW_POSITION].map(str::to_owned).into();
    let mut out = Vec::new();
    for b in table.scan(files, Some(&columns), filter, 37).unwrap() {
        let b = b.unwrap();
        let (id, name) = (b.column(0).as_primitive::<Int64Type>(), b.column(1).as_string::<i32>());
        let vectors = b.column(2).as_fixed_size_list();
        let (file, pos) = (b.column(3).as_string::<i32>(), b.column(4).as_primitive::<Int64Type>());
        for i in 0..b.num_rows() {
            let v = vectors.value(i).as_primitive::<Float32Type>().value(0);
            let name = name.is_valid(i).then(|| name.value(i).to_owned());
            out.push(((id.value(i), name, v), file.value(i).to_owned(), pos.value(i) as u64));
        }
    }
    out.sort_by_key(|r| r.0 .0);
    out
}

fn check_against_model(table: &Table, model: &BTreeMap<i64, Row>, step: &str) {
    let read = read_all(table, None);
    let rows: Vec<Row> = read.iter().map(|r| r.0.clone()).collect();
    assert_eq!(rows, model.values().cloned().collect::<Vec<_>>(), "{step}: full scan");
    // Each row is where `_file` and `_pos` say: reading that position alone finds it.
    for (row, file, pos) in read.iter().take(5) {
        let file =
            table.data_files(table.metadata().current_snapshot()).unwrap().into_iter().find(|f| &f.file_path == file);
        let file = file.expect("_file names a live data file");
        let taken =
            table.take_rows(&file, &["id".to_owned()], &arrow::array::UInt32Array::from(vec![*pos as u32])).unwrap();
        assert_eq!(taken[0].as_primitive::<Int64Type>().value(0), row.0, "{step}: _pos of id {}", row.0);
    }
    // A filtered read (the scalar index of name prunes) and a vector search see the same rows.
    let filter = Predicate::from_json(r#"{"op":"starts_with","column":"name","prefix":"u"}"#).unwrap();
    let filtered: Vec<i64> = read_all(table, Some(filter.clone())).iter().map(|r| r.0 .0).collect();
    let expected: Vec<i64> =
        model.values().filter(|r| r.1.as_deref().is_some_and(|n| n.starts_with('u'))).map(|r| r.0).collect();
    assert_eq!(filtered, expected, "{step}: filtered scan");
    let query = vec![250.0f32, 0.5, -250.0];
    for filter in [None, Some(&filter)] {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let search = VectorSearch::new("embedding", query.clone(), Metric::L2, 10);
        let found = table.search(files, Some(&["id".to_owned()]), filter, &search, 64).unwrap();
        let mut reference: Vec<(f64, i64)> = model
            .values()
            .filter(|r| filter.is_none() || r.1.as_deref().is_some_and(|n| n.starts_with('u')))
            .map(|r| (reference_distance(Metric::L2, &query, &[r.2, 0.5, -r.2]), r.0))
            .collect();
        reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let got: Vec<f64> = found
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|id| reference_distance(Metric::L2, &query, &[model[id].2, 0.5, -model[id].2]))
            .collect();
        let want: Vec<f64> = reference.iter().take(10).map(|r| r.0).collect();
        assert_eq!(got, want, "{step}: search distances, filter {filter:?}");
    }
}

#[test]
fn random_updates_deletes_and_merges_match_a_model_in_both_format_versions() {
    for version in ["2", "3"] {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let properties = BTreeMap::from([("format-version".to_owned(), version.to_owned())]);
        let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
        table.create_scalar_index("name").unwrap();
        let params = crate::vector::hnsw::HnswParams { metric: Metric::L2, m: 8, ef_construction: 40 };
        table.create_vector_index("embedding", params).unwrap();
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        let first: Vec<Row> = (0..400).map(|i| (i, (i % 3 != 0).then(|| format!("n{i}")), i as f32)).collect();
        table.append(reader(vec![rows_batch(&first[..250]), rows_batch(&first[250..])])).unwrap();
        model.extend(first.iter().map(|r| (r.0, r.clone())));
        let mut rng = Rng(version.len() as u64 * 7 + 3);
        let mut next_id = 1000;
        for step in 0..12 {
            let read = table.metadata().current_snapshot_id;
            let live = read_all(&table, None);
            // MERGE: each live row is deleted, updated or kept; new rows are inserted.
            let mut deletes: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            let mut written: Vec<Row> = Vec::new();
            for (row, file, pos) in &live {
                match rng.below(10) {
                    0 => {
                        model.remove(&row.0);
                    }
                    1 | 2 => {
                        let updated = (row.0, Some(format!("u{step}")), rng.below(500) as f32);
                        model.insert(row.0, updated.clone());
                        written.push(updated);
                    }
                    _ => continue,
                }
                deletes.entry(file.clone()).or_default().push(*pos as i64);
            }
            for _ in 0..rng.below(30) {
                let row = (next_id, (rng.below(2) == 0).then(|| format!("u{step}")), rng.below(500) as f32);
                next_id += 1;
                model.insert(row.0, row.clone());
                written.push(row);
            }
            let added = match written.is_empty() {
                true => Vec::new(),
                false => {
                    table.write_data_files(RecordBatchIterator::new([Ok(rows_batch(&written))], schema())).unwrap()
                }
            };
            // Each file's rows as two tasks would report them, split anywhere.
            let fragments: Vec<String> = deletes
                .iter()
                .flat_map(|(file, rows)| {
                    let cut = rng.below(rows.len() as u64 + 1) as usize;
                    [
                        row_deletes_fragment(file, &rows[..cut]).unwrap(),
                        row_deletes_fragment(file, &rows[cut..]).unwrap(),
                    ]
                })
                .collect();
            let committed = table.commit_row_changes(&read_at(read), row_deletes(&fragments).unwrap(), added).unwrap();
            assert!(committed.is_some(), "step {step}");
            let summary = &table.metadata().current_snapshot().unwrap().summary;
            assert_eq!(
                summary["total-records"].parse::<i64>().unwrap()
                    - summary["total-position-deletes"].parse::<i64>().unwrap(),
                model.len() as i64,
                "v{version} step {step}: {summary:?}"
            );
            let reopened = Table::load(&location, &HashMap::new()).unwrap();
            check_against_model(&reopened, &model, &format!("v{version} step {step}"));
        }
        // Nothing changed: nothing committed.
        assert_eq!(
            table
                .commit_row_changes(&read_at(table.metadata().current_snapshot_id), BTreeMap::new(), Vec::new())
                .unwrap(),
            None
        );
        assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty(), "v{version}: nothing orphaned");
        // Compaction keeps the rows.
        table.rewrite_data_files(10_000).unwrap();
        check_against_model(&table, &model, &format!("v{version} after compaction"));
    }
}

#[test]
fn row_changes_to_the_same_file_by_two_writers_conflict_and_appends_do_under_serializable_isolation_only() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..100)])).unwrap();
    table.append(reader(vec![batch(100..200)])).unwrap();
    let read = table.metadata().current_snapshot_id;
    let live = read_all(&table, None);
    let (first, second) = (live[0].1.clone(), live[100].1.clone());
    assert_eq!((live[3].2, live[100].2), (3, 0), "rows at their positions");
    let rows = |file: &str, positions: &[i64]| row_deletes(&[row_deletes_fragment(file, positions).unwrap()]).unwrap();
    let mut other = Table::load(&location, &HashMap::new()).unwrap();
    // Another writer appends and deletes a row of the first file.
    other.append(reader(vec![batch(500..510)])).unwrap();
    other.commit_row_changes(&read_at(other.metadata().current_snapshot_id), rows(&first, &[3]), Vec::new()).unwrap();
    // A change that read before that and deletes rows of the first file conflicts, cleanly...
    let before = ids(&table, Table::load(&location, &HashMap::new()).unwrap().metadata().current_snapshot());
    let err = table.commit_row_changes(&read_at(read), rows(&first, &[7]), Vec::new()).unwrap_err();
    assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    let reloaded = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reloaded, reloaded.metadata().current_snapshot()), before, "nothing of the loser landed");
    // ...one of the second file conflicts too under serializable isolation (the default: the
    // append added rows its unfiltered scan would have read), and lands beside the append under
    // snapshot isolation.
    let err = table.commit_row_changes(&read_at(read), rows(&second, &[0, 1]), Vec::new()).unwrap_err();
    assert!(matches!(&err, Error::CommitConflict(m) if m.contains("serializable")), "{err}");
    table.set_properties(&[("write.merge.isolation-level".to_owned(), Some("snapshot".to_owned()))]).unwrap();
    table.commit_row_changes(&read_at(read), rows(&second, &[0, 1]), Vec::new()).unwrap();
    let after = ids(&table, table.metadata().current_snapshot());
    assert_eq!(after.len(), before.len() - 2);
    assert!(after.contains(&505) && !after.contains(&100) && !after.contains(&3) && after.contains(&7));
    // Positions the file does not hold, files not in the table and bad fragments are refused.
    assert!(
        matches!(table.commit_row_changes(&read_at(table.metadata().current_snapshot_id), rows(&second, &[100]), Vec::new()), Err(Error::InvalidArgument(m)) if m.contains("holds 100 rows"))
    );
    assert!(matches!(
        table.commit_row_changes(
            &read_at(table.metadata().current_snapshot_id),
            rows("file:///elsewhere.parquet", &[1]),
            Vec::new()
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(row_deletes(&["{\"file\":\"x\"}".to_owned()]), Err(Error::InvalidArgument(_))));
    assert!(matches!(row_deletes(&["{\"file\":\"x\",\"rows\":\"!!\"}".to_owned()]), Err(Error::InvalidArgument(_))));
    assert!(matches!(row_deletes_fragment("x", &[-1]), Err(Error::InvalidArgument(_))));
}

#[test]
fn updated_rows_keep_their_row_ids_and_take_the_new_sequence_number() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let properties = BTreeMap::from([("format-version".to_owned(), "3".to_owned())]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..100)])).unwrap();
    table.append(reader(vec![batch(100..150)])).unwrap();
    let lineage = |t: &Table| -> BTreeMap<i64, (i64, i64)> {
        let files = t.data_files(t.metadata().current_snapshot()).unwrap();
        let columns = ["id", lineage::ROW_ID, lineage::LAST_UPDATED_SEQUENCE_NUMBER].map(str::to_owned);
        let mut out = BTreeMap::new();
        for b in t.scan_files(files, Some(&columns), 64).unwrap() {
            let b = b.unwrap();
            let [id, row, seq] = [0, 1, 2].map(|c| b.column(c).as_primitive::<Int64Type>().clone());
            for i in 0..b.num_rows() {
                out.insert(id.value(i), (row.value(i), seq.value(i)));
            }
        }
        out
    };
    let before = lineage(&table);
    // Ids 10..20 updated (deleted and written again with their row ids), 200..205 inserted.
    let read = read_all(&table, None);
    let updated: Vec<&(Row, String, u64)> = read.iter().filter(|r| (10..20).contains(&r.0 .0)).collect();
    let mut rows: Vec<Row> = updated.iter().map(|r| (r.0 .0, Some("u".to_owned()), 7.0)).collect();
    rows.extend((200..205).map(|i| (i, None, 1.0)));
    let ids: Vec<Option<i64>> =
        updated.iter().map(|r| Some(before[&r.0 .0].0)).chain((200..205).map(|_| None)).collect();
    let with_ids = {
        let b = rows_batch(&rows);
        let mut fields: Vec<Field> = b.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(lineage::ROW_ID, DataType::Int64, true));
        let mut columns = b.columns().to_vec();
        columns.push(Arc::new(Int64Array::from(ids)));
        RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).unwrap()
    };
    let mut writer = table.lineage_writer().unwrap();
    writer.write(&with_ids).unwrap();
    let added = writer.finish().unwrap();
    let fragments: Vec<String> = updated.iter().map(|r| row_deletes_fragment(&r.1, &[r.2 as i64]).unwrap()).collect();
    let snapshot = table
        .commit_row_changes(&read_at(table.metadata().current_snapshot_id), row_deletes(&fragments).unwrap(), added)
        .unwrap()
        .unwrap();
    let sequence = table.metadata().snapshot(snapshot).unwrap().sequence_number;
    let after = lineage(&Table::load(&location, &HashMap::new()).unwrap());
    for (id, (row_id, seq)) in &after {
        match id {
            10..20 => assert_eq!((*row_id, *seq), (before[id].0, sequence), "updated row {id} keeps its id"),
            200..205 => {
                assert!(before.values().all(|b| b.0 != *row_id), "a new row takes a new id");
                assert_eq!(*seq, sequence);
            }
            _ => assert_eq!((*row_id, *seq), before[id], "row {id} is untouched"),
        }
    }
    assert_eq!(
        after.values().map(|v| v.0).collect::<std::collections::BTreeSet<_>>().len(),
        after.len(),
        "ids stay unique"
    );
}

#[test]
fn serializable_changes_fail_when_a_concurrent_commit_added_rows_their_scan_would_have_read() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let mut other = Table::load(&location, &HashMap::new()).unwrap();
    // Two insert-only MERGEs of the same new key, both of which read the empty table: the second
    // to commit fails, so the key is not there twice.
    let mine = table.write_data_files(reader(vec![batch(7..8)])).unwrap();
    let theirs = other.write_data_files(reader(vec![batch(7..8)])).unwrap();
    other.commit_row_changes(&read_at(None), BTreeMap::new(), theirs).unwrap().unwrap();
    let err = table.commit_row_changes(&read_at(None), BTreeMap::new(), mine.clone()).unwrap_err();
    assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    let loaded = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&loaded, loaded.metadata().current_snapshot()), [7]);
    // Under snapshot isolation both land, as Iceberg's snapshot isolation lets them.
    table.set_properties(&[("write.merge.isolation-level".to_owned(), Some("SNAPSHOT".to_owned()))]).unwrap();
    table.commit_row_changes(&read_at(None), BTreeMap::new(), mine).unwrap().unwrap();
    assert_eq!(ids(&table, table.metadata().current_snapshot()), [7, 7]);

    // An UPDATE whose scan read only ids above 100 conflicts with rows added where it read, not elsewhere
    // (the added files' statistics decide).
    let read = table.metadata().current_snapshot_id;
    let above = Predicate::from_json(r#"{"op":"gt","column":"id","value":100}"#).unwrap();
    let update = ChangeRead { snapshot: read, operation: RowOperation::Update, filter: Some(&above) };
    other.refresh().unwrap();
    other.append(reader(vec![batch(0..10)])).unwrap();
    let added = table.write_data_files(reader(vec![batch(200..201)])).unwrap();
    table.commit_row_changes(&update, BTreeMap::new(), added).unwrap().unwrap();
    other.refresh().unwrap();
    other.append(reader(vec![batch(150..160)])).unwrap();
    let added = table.write_data_files(reader(vec![batch(201..202)])).unwrap();
    let err = table.commit_row_changes(&update, BTreeMap::new(), added).unwrap_err();
    assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    // Compaction adds no rows: a change that read before it still commits.
    let read = table.metadata().current_snapshot_id;
    let update = ChangeRead { snapshot: read, ..update };
    other.refresh().unwrap();
    other.rewrite_data_files(10_000).unwrap().unwrap();
    let added = table.write_data_files(reader(vec![batch(202..203)])).unwrap();
    table.commit_row_changes(&update, BTreeMap::new(), added).unwrap().unwrap();
    let ids = ids(&table, table.metadata().current_snapshot());
    assert!(ids.contains(&200) && ids.contains(&202) && !ids.contains(&201) && ids.contains(&155), "{ids:?}");
    // A level Iceberg does not name is refused by name.
    table.set_properties(&[("write.update.isolation-level".to_owned(), Some("strict".to_owned()))]).unwrap();
    let err = table
        .commit_row_changes(&update, BTreeMap::new(), Vec::new())
        .map(|_| ())
        .and(table.isolation(RowOperation::Update).map(|_| ()));
    assert!(matches!(&err, Err(Error::InvalidArgument(m)) if m.contains("write.update.isolation-level")), "{err:?}");
}
