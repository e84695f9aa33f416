use super::*;

#[test]
fn schema_evolution_adds_drops_and_renames_columns_without_rewriting_data() {
    use arrow::array::Float64Array;
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let before = table.append(reader(vec![batch(0..10)])).unwrap();
    let files_before: Vec<String> = table.storage.list("data").unwrap();
    // Added: rows written before read it as null; new rows carry it.
    table.add_column(&Field::new("score", DataType::Float64, true)).unwrap();
    let scored = table.arrow_schema().unwrap();
    let with_score = |ids: std::ops::Range<i64>| {
        let old = batch(ids.clone());
        let mut columns = old.columns().to_vec();
        columns.push(Arc::new(Float64Array::from_iter_values(ids.map(|i| i as f64 * 1.5))));
        let mut fields: Vec<Field> = old.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("score", DataType::Float64, true));
        let schema = Arc::new(ArrowSchema::new(fields));
        RecordBatchIterator::new(vec![RecordBatch::try_new(schema.clone(), columns)], schema)
    };
    table.append(with_score(10..20)).unwrap();
    let read = |t: &Table, column: &str, filter: Option<&str>| -> Vec<(i64, Option<f64>)> {
        let files = t.data_files(t.metadata().current_snapshot()).unwrap();
        let filter = filter.map(|f| Predicate::from_json(f).unwrap());
        let mut out: Vec<(i64, Option<f64>)> = t
            .scan(files, Some(&["id".to_owned(), column.to_owned()]), filter, 7)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let ids = b.column(0).as_primitive::<Int64Type>().clone();
                let x = b.column(1).as_primitive::<Float64Type>().clone();
                (0..b.num_rows()).map(move |i| (ids.value(i), x.is_valid(i).then(|| x.value(i)))).collect::<Vec<_>>()
            })
            .collect();
        out.sort_by_key(|r| r.0);
        out
    };
    let want: Vec<(i64, Option<f64>)> = (0..20).map(|i| (i, (i >= 10).then_some(i as f64 * 1.5))).collect();
    assert_eq!(read(&table, "score", None), want);
    assert_eq!(read(&table, "score", Some(r#"{"op":"is_null","column":"score"}"#)), want[..10].to_vec());
    assert_eq!(read(&table, "score", Some(r#"{"op":"ge","column":"score","value":27}"#)), want[18..].to_vec());
    // Renamed: every file answers for it by field id, filters and pruning included.
    table.rename_column("score", "points").unwrap();
    assert_eq!(read(&table, "points", Some(r#"{"op":"not_null","column":"points"}"#)), want[10..].to_vec());
    assert!(matches!(table.scan(vec![], Some(&["score".to_owned()]), None, 7), Err(Error::NotFound(_))));
    // Dropped, then added again under the same name: a new column, null for every row so far.
    table.drop_column("points").unwrap();
    assert_eq!(table.arrow_schema().unwrap().fields().len(), 3);
    table.add_column(&Field::new("points", DataType::Float64, true)).unwrap();
    assert!(read(&table, "points", None).iter().all(|(_, p)| p.is_none()));
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    let ids: Vec<i32> = reopened.metadata().current_schema().unwrap().fields.iter().map(|f| f.id).collect();
    assert_eq!(ids.last(), Some(&(scored.fields().len() as i32 + 2)), "a fresh id past every earlier one");
    assert_eq!(reopened.metadata().schemas.len(), 5);
    // A vector column added later: its dimension is recorded, and old rows have no vector.
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    table.add_column(&Field::new("v2", DataType::FixedSizeList(item, 2), true)).unwrap();
    assert_eq!(table.vector_column("v2").unwrap().1, 2);
    // Nothing was rewritten, and the first snapshot still reads.
    assert!(files_before.iter().all(|f| table.storage.exists(f).unwrap()));
    assert_eq!(ids_of(&table, Some(before)), (0..10).collect::<Vec<_>>());
    // Refused, by name, with nothing committed.
    let version = table.version();
    assert!(
        matches!(table.add_column(&Field::new("req", DataType::Int64, false)), Err(Error::InvalidArgument(m)) if m.contains("nullable"))
    );
    assert!(
        matches!(table.add_column(&Field::new("id", DataType::Int64, true)), Err(Error::InvalidArgument(m)) if m.contains("already"))
    );
    assert!(matches!(table.drop_column("nope"), Err(Error::NotFound(m)) if m.contains("nope")));
    assert!(matches!(table.rename_column("id", "name"), Err(Error::InvalidArgument(m)) if m.contains("exists")));
    assert_eq!(table.version(), version);
}

#[test]
fn time_travel_reads_a_snapshot_under_the_schema_it_was_written_with_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..10)])).unwrap();
    let first_ms = table.metadata().snapshot(first).unwrap().timestamp_ms;
    // Since then: "name" renamed, "embedding" dropped, "score" added; more rows.
    table.rename_column("name", "label").unwrap();
    table.drop_column("embedding").unwrap();
    table.add_column(&Field::new("score", DataType::Float64, true)).unwrap();
    let now = table.arrow_schema().unwrap();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(10..15)),
        Arc::new(StringArray::from_iter_values((10..15).map(|i| format!("l{i}")))),
        Arc::new(arrow::array::Float64Array::from_iter_values((10..15).map(|i| i as f64))),
    ];
    table.append(RecordBatchIterator::new(vec![RecordBatch::try_new(now.clone(), columns)], now.clone())).unwrap();
    let names =
        |t: &Table| -> Vec<String> { t.arrow_schema().unwrap().fields().iter().map(|f| f.name().clone()).collect() };
    assert_eq!(names(&table), ["id", "label", "score"]);

    for pinned in [
        Table::load_at(&location, &HashMap::new(), Some(first), None).unwrap(),
        Table::load_at(&location, &HashMap::new(), None, Some(first_ms)).unwrap(),
    ] {
        // The first snapshot's rows under its own columns: the old name, the dropped vector.
        assert_eq!(names(&pinned), ["id", "name", "embedding"]);
        assert_eq!(pinned.metadata().current_snapshot_id, Some(first));
        let files = pinned.data_files(pinned.metadata().current_snapshot()).unwrap();
        let filter = Predicate::from_json(r#"{"op":"eq","column":"name","value":"n5"}"#).unwrap();
        let rows: Vec<RecordBatch> =
            pinned.scan(files.clone(), None, Some(filter), 4).unwrap().map(|b| b.unwrap()).collect();
        let rows = arrow::compute::concat_batches(&rows[0].schema(), &rows).unwrap();
        let values = |b: &RecordBatch| b.columns().iter().map(|c| format!("{c:?}")).collect::<Vec<_>>();
        assert_eq!(values(&rows), values(&batch(5..6)), "every column of the old row, the dropped vector included");
        assert_eq!(pinned.live_rows(&files).unwrap(), 10);
        // Nothing is written through it, and nothing was.
        let version = table.version();
        let refused = |r: Result<()>| assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("time travel")));
        let mut pinned = pinned;
        refused(pinned.append(reader(vec![batch(20..21)])).map(drop));
        refused(pinned.delete_where(None).map(drop));
        refused(pinned.add_column(&Field::new("x", DataType::Int64, true)));
        refused(pinned.rollback_to(first));
        assert_eq!(Table::load(&location, &HashMap::new()).unwrap().version(), version);
    }
    // The current version is untouched by it; a snapshot that does not exist is named.
    assert_eq!(names(&Table::load_at(&location, &HashMap::new(), None, None).unwrap()), ["id", "label", "score"]);
    assert!(
        matches!(Table::load_at(&location, &HashMap::new(), Some(42), None), Err(Error::NotFound(m)) if m.contains("42"))
    );
    assert!(matches!(Table::load_at(&location, &HashMap::new(), None, Some(first_ms - 1)), Err(Error::NotFound(_))));
}

/// (id, _row_id, _last_updated_sequence_number) of every live row, by id.
fn lineage_of(table: &Table, filter: Option<&str>) -> Vec<(i64, i64, i64)> {
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let columns = ["id", lineage::ROW_ID, lineage::LAST_UPDATED_SEQUENCE_NUMBER].map(str::to_owned);
    let filter = filter.map(|f| Predicate::from_json(f).unwrap());
    let mut rows: Vec<(i64, i64, i64)> = table
        .scan(files, Some(&columns), filter, 7)
        .unwrap()
        .flat_map(|b| {
            let b = b.unwrap();
            let c = |i: usize| b.column(i).as_primitive::<Int64Type>().clone();
            let (id, row, seq) = (c(0), c(1), c(2));
            assert_eq!(row.null_count() + seq.null_count(), 0);
            (0..b.num_rows()).map(move |i| (id.value(i), row.value(i), seq.value(i))).collect::<Vec<_>>()
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn format_version_3_keeps_row_lineage_through_deletes_and_compaction_and_deletes_with_deletion_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let properties = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    assert_eq!((table.metadata().format_version, table.metadata().next_row_id), (3, Some(0)));
    assert!(!table.metadata().properties.contains_key(FORMAT_VERSION));
    table.append(reader(vec![batch(0..10)])).unwrap();
    table.append(reader(vec![batch(10..25)])).unwrap();
    let second = table.metadata().current_snapshot().unwrap().clone();
    assert_eq!((second.first_row_id, second.added_rows), (Some(10), Some(15)));
    assert_eq!(table.metadata().next_row_id, Some(25));
    // Ids from each file's first row id and position; sequence numbers from the snapshot that wrote it.
    let want: Vec<(i64, i64, i64)> = (0..25).map(|i| (i, i, if i < 10 { 1 } else { 2 })).collect();
    assert_eq!(lineage_of(&table, None), want);
    // The same rows when a filter (on a column or on the id itself) leaves some out.
    assert_eq!(lineage_of(&table, Some(r#"{"op":"ge","column":"id","value":20}"#)), want[20..].to_vec());
    assert_eq!(lineage_of(&table, Some(r#"{"op":"eq","column":"_row_id","value":12}"#)), want[12..13].to_vec());
    // The table's own columns do not include them; a version 2 table has none.
    assert_eq!(table.arrow_schema().unwrap().fields().len(), 3);
    assert_eq!(ids_of(&table, Some(second.snapshot_id)), (0..25).collect::<Vec<_>>());

    // Deletes are deletion vectors; the rows left keep their ids.
    let (_, deleted) = table
        .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"id","values":[3,4,17]}"#).unwrap()))
        .unwrap();
    assert_eq!(deleted, 3);
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let vectors: Vec<&DataFile> = files.iter().flat_map(|f| &f.deletes).collect();
    assert_eq!(vectors.len(), 2);
    assert!(vectors
        .iter()
        .all(|d| is_deletion_vector(d) && d.file_path.ends_with(".puffin") && d.referenced_data_file.is_some()));
    let left: Vec<(i64, i64, i64)> = want.iter().copied().filter(|r| ![3, 4, 17].contains(&r.0)).collect();
    assert_eq!(lineage_of(&table, None), left);
    assert_eq!(table.live_rows(&files).unwrap(), 22);
    // Deleting again from the same file folds the earlier vector into the new one.
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"eq","column":"id","value":5}"#).unwrap())).unwrap();
    let left: Vec<(i64, i64, i64)> = left.into_iter().filter(|r| r.0 != 5).collect();
    assert_eq!(lineage_of(&table, None), left);

    // Compaction moves rows into new files, which store their ids and sequence numbers.
    let rewrite = table.rewrite_data_files(1000).unwrap().expect("files with deletes are rewritten");
    assert_eq!(rewrite.written, 1);
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert!(files.iter().all(|f| f.deletes.is_empty()));
    assert_eq!(lineage_of(&table, None), left, "ids survive compaction");
    // New rows after it take ids past every id given so far.
    let next = table.metadata().next_row_id.unwrap();
    table.append(reader(vec![batch(100..102)])).unwrap();
    let seq = table.metadata().current_snapshot().unwrap().sequence_number;
    let appended = lineage_of(&table, Some(r#"{"op":"ge","column":"id","value":100}"#));
    assert_eq!(appended, vec![(100, next, seq), (101, next + 1, seq)]);
    assert!(next >= 25);

    // Reopened, the same; a version 2 table refuses the names.
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(lineage_of(&reopened, Some(r#"{"op":"lt","column":"id","value":100}"#)), left);
    let v2 =
        Table::create(dir.path().join("v2").to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    assert!(matches!(v2.scan(vec![], Some(&[lineage::ROW_ID.to_owned()]), None, 7), Err(Error::NotFound(_))));
    // Its names are the lineage columns': no column takes them.
    let reserved =
        |r: Result<()>| assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("reserved for row lineage")));
    reserved(table.add_column(&Field::new("_row_id", DataType::Int64, true)));
    reserved(table.rename_column("name", "_last_updated_sequence_number"));
    let named = ArrowSchema::new(vec![Field::new("_row_id", DataType::Int64, true)]);
    reserved(table.replace(&named, BTreeMap::new()).map(drop));
    let v3 = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
    reserved(Table::create(dir.path().join("r").to_str().unwrap(), &named, v3, &HashMap::new()).map(drop));
    assert!(
        Table::create(dir.path().join("r2").to_str().unwrap(), &named, BTreeMap::new(), &HashMap::new()).is_ok(),
        "a version 2 table may"
    );
    let bad = BTreeMap::from([(FORMAT_VERSION.to_owned(), "4".to_owned())]);
    let err = Table::create(dir.path().join("v4").to_str().unwrap(), &schema(), bad, &HashMap::new()).err().unwrap();
    assert!(matches!(err, Error::InvalidArgument(m) if m.contains("format-version must be 2 or 3")));
}

#[test]
fn a_column_added_with_a_default_reads_it_in_older_files_and_takes_it_where_a_writer_omits_it() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let properties = BTreeMap::from([("format-version".to_owned(), "3".to_owned())]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    let score = Field::new("score", DataType::Int64, false);
    let bad = table.add_column_with_default(&score, Some(&serde_json::json!("seven")));
    assert!(matches!(bad, Err(Error::InvalidArgument(m)) if m.contains("score")));
    table.add_column_with_default(&score, Some(&serde_json::json!(7))).unwrap();
    let json = table.metadata().current_schema().unwrap().to_json();
    assert_eq!(json["fields"][3]["initial-default"], 7);
    assert_eq!(json["fields"][3]["write-default"], 7);
    // Rows written without the column: the write default.
    table.append(reader(vec![batch(10..20)])).unwrap();
    let read = |table: &Table, filter: Option<Predicate>| -> Vec<(i64, i64)> {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let mut rows: Vec<(i64, i64)> = table
            .scan(files, Some(&["id".to_owned(), "score".to_owned()]), filter, 64)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
                let scores = b.column(1).as_primitive::<Int64Type>().values().to_vec();
                ids.into_iter().zip(scores).collect::<Vec<_>>()
            })
            .collect();
        rows.sort_unstable();
        rows
    };
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(read(&reopened, None), (0..20).map(|i| (i, 7)).collect::<Vec<_>>());
    let seven = Predicate::from_json(r#"{"op":"eq","column":"score","value":7}"#).unwrap();
    assert_eq!(read(&reopened, Some(seven)).len(), 20, "older files are not pruned as if they held nulls");
    // Format version 2 has no defaults: refused by name.
    let dir = tempfile::tempdir().unwrap();
    let mut v2 = Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let refused = v2.add_column_with_default(&score, Some(&serde_json::json!(7)));
    assert!(matches!(refused, Err(Error::InvalidArgument(m)) if m.contains("format version 3")));
}

#[test]
fn user_properties_are_kept_and_reserved_or_unknown_own_ones_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let properties = BTreeMap::from([
        ("owner.team".to_owned(), "x".to_owned()),
        ("write.merge.isolation-level".to_owned(), "serializable".to_owned()),
        (ROW_GROUP_ROWS.to_owned(), "1000".to_owned()),
    ]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    let kept = &Table::load(&location, &HashMap::new()).unwrap().metadata().properties.clone();
    assert_eq!(kept["owner.team"], "x");
    assert_eq!(kept["write.merge.isolation-level"], "serializable");
    assert_eq!(kept[ROW_GROUP_ROWS], "1000");
    for (key, says) in [("uuid", "reserved"), ("hyperstream.bogus", "unknown table property 'hyperstream.bogus'")] {
        let at = dir.path().join(key.replace('.', "-"));
        let refused = Table::create(
            at.to_str().unwrap(),
            &schema(),
            BTreeMap::from([(key.to_owned(), "1".to_owned())]),
            &HashMap::new(),
        );
        assert!(matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains(says)), "{refused:?}");
        let refused = table.set_properties(&[(key.to_owned(), Some("1".to_owned()))]);
        assert!(matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains(key)), "{refused:?}");
    }
    table
        .set_properties(&[("owner.team".to_owned(), Some("y".to_owned())), ("note".to_owned(), Some("n".to_owned()))])
        .unwrap();
    table.set_properties(&[("write.merge.isolation-level".to_owned(), None)]).unwrap();
    let kept = Table::load(&location, &HashMap::new()).unwrap().metadata().properties.clone();
    assert_eq!((kept["owner.team"].as_str(), kept["note"].as_str()), ("y", "n"));
    assert!(!kept.contains_key("write.merge.isolation-level"));
    let refused = table.set_properties(&[(FORMAT_VERSION.to_owned(), Some("3".to_owned()))]);
    assert!(matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains("format-version")), "{refused:?}");
}
