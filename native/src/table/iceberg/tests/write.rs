use super::*;

#[test]
fn create_append_scan_and_travel_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("t");
    let location = location.to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    assert!(table.data_files(table.metadata().current_snapshot()).unwrap().is_empty());
    let first = table.append(reader(vec![batch(0..100), batch(100..150)])).unwrap();
    let second = table.append(reader(vec![batch(150..160)])).unwrap();
    assert_eq!(table.version(), 3);

    let reopened = Table::load(location, &HashMap::new()).unwrap();
    assert_eq!(reopened.metadata().current_snapshot_id, Some(second));
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), (0..160).collect::<Vec<_>>());
    let earlier = reopened.snapshot(Some(first), None).unwrap();
    assert_eq!(ids(&reopened, earlier), (0..150).collect::<Vec<_>>());
    let at = reopened.metadata().snapshot(first).unwrap().timestamp_ms;
    assert_eq!(reopened.snapshot(None, Some(at)).unwrap().unwrap().snapshot_id, first);
    assert_eq!(reopened.metadata().current_snapshot().unwrap().summary["total-records"], "160");

    // Every column comes back as written, the vector as a fixed-size list.
    let files = reopened.data_files(reopened.snapshot(Some(first), None).unwrap()).unwrap();
    let all: Vec<RecordBatch> = reopened.scan_files(files, None, 64).unwrap().map(Result::unwrap).collect();
    let merged = arrow::compute::concat_batches(&all[0].schema(), &all).unwrap();
    assert_eq!(merged.num_rows(), 150);
    assert!(matches!(merged.schema().field(2).data_type(), DataType::FixedSizeList(_, 3)));
    let names = merged.column(1).as_string::<i32>();
    let row = merged.column(0).as_primitive::<Int64Type>().values().iter().position(|&v| v == 7).unwrap();
    assert_eq!(names.value(row), "n7");
    let vector = merged.column(2).as_fixed_size_list().value(row);
    assert_eq!(vector.as_primitive::<Float32Type>().values(), &[7.0, 0.5, -7.0]);
    assert_eq!(reopened.vectors(), HashMap::from([(3, 3)]));
}

#[test]
fn files_carry_counts_and_bounds_for_pruning() {
    let dir = tempfile::tempdir().unwrap();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(10..20), batch(5..8)])).unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert_eq!(f.record_count, 13);
    assert_eq!(f.value_counts[&1], 13);
    assert_eq!(f.null_value_counts[&2], 2); // ids 12 and 16
    assert_eq!(f.lower_bounds[&1], 5i64.to_le_bytes());
    assert_eq!(f.upper_bounds[&1], 19i64.to_le_bytes());
    assert_eq!(f.lower_bounds[&2], b"n10");
}

#[test]
fn float_bounds_leave_nan_out_and_nan_value_counts_count_it() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("d", DataType::Float64, true),
        Field::new("r", DataType::Float32, true),
    ]));
    let batch = |ids: Vec<i64>, d: Vec<Option<f64>>, r: Vec<Option<f32>>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(arrow::array::Float64Array::from(d)),
                Arc::new(Float32Array::from(r)),
            ],
        )
        .unwrap()
    };
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    // One file of two batches: NaN beside the smallest and largest values in the first.
    let batches = vec![
        batch(vec![0, 1, 2, 3], vec![Some(1.0), Some(f64::NAN), Some(100.0), None], vec![Some(f32::NAN); 4]),
        batch(vec![4, 5], vec![Some(5.0), Some(-0.0)], vec![Some(2.5), None]),
    ];
    table.append(RecordBatchIterator::new(batches.into_iter().map(Ok), schema.clone())).unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let f = &files[0];
    assert_eq!(
        (f.lower_bounds[&2].as_slice(), f.upper_bounds[&2].as_slice()),
        (&(-0.0f64).to_le_bytes()[..], &100.0f64.to_le_bytes()[..])
    );
    assert_eq!(
        (f.lower_bounds[&3].as_slice(), f.upper_bounds[&3].as_slice()),
        (&2.5f32.to_le_bytes()[..], &2.5f32.to_le_bytes()[..])
    );
    assert_eq!((f.nan_value_counts[&2], f.nan_value_counts[&3]), (1, 4));
    assert!(!f.nan_value_counts.contains_key(&1), "an integer column has no NaN count");
    // A pushed filter on a value beside the NaN finds its row.
    let filter = Predicate::from_json(r#"{"op":"eq","column":"d","value":100.0}"#).unwrap();
    assert_eq!(table.prune(files.clone(), Some(&filter)).unwrap().len(), 1);
}

#[test]
fn bad_writes_are_refused_and_commit_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let unknown = Arc::new(ArrowSchema::new(vec![Field::new("colour", DataType::Utf8, true)]));
    let bad = RecordBatch::try_new(unknown.clone(), vec![Arc::new(StringArray::from(vec!["red"]))]).unwrap();
    let err = table.append(RecordBatchIterator::new(vec![Ok(bad)], unknown)).unwrap_err();
    assert!(err.to_string().contains("'colour'"), "{err}");
    let wrong = Arc::new(ArrowSchema::new(vec![Field::new("id", DataType::Utf8, false)]));
    let bad = RecordBatch::try_new(wrong.clone(), vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
    let err = table.append(RecordBatchIterator::new(vec![Ok(bad)], wrong)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("'id'"), "{err}");
    assert!(table.append(reader(vec![])).is_err());
    assert!(Table::create(location, &schema(), BTreeMap::new(), &HashMap::new())
        .unwrap_err()
        .to_string()
        .contains("already exists"));
    let reopened = Table::load(location, &HashMap::new()).unwrap();
    assert_eq!(reopened.version(), 1);
    assert!(reopened.metadata().snapshots.is_empty());
}

#[test]
fn corrupt_metadata_and_paths_outside_the_root_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..5)])).unwrap();
    // A manifest list pointing outside the table root.
    let mut metadata = table.metadata().clone();
    metadata.snapshots[0].manifest_list = "/etc/passwd".to_owned();
    let outside = Table { metadata, ..table.clone() };
    let err = outside.data_files(outside.metadata().current_snapshot()).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)) && err.to_string().contains("/etc/passwd"), "{err}");
    // A corrupted metadata file.
    std::fs::write(dir.path().join("metadata/v2.metadata.json"), b"{ not json").unwrap();
    let err = Table::load(location, &HashMap::new()).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)) && err.to_string().contains("v2.metadata.json"), "{err}");
}

#[test]
fn icebergs_compression_properties_choose_the_codec_of_the_files_written_after() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("t").to_str().unwrap().to_owned();
    let codec_of = |table: &Table, file: &DataFile| {
        let bytes = table.storage.get(table.storage.relative(&file.file_path).unwrap()).unwrap();
        SerializedFileReader::new(bytes).unwrap().metadata().row_group(0).column(0).compression()
    };
    let properties = BTreeMap::from([(COMPRESSION_CODEC.to_owned(), "Snappy".to_owned())]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    table
        .set_properties(&[
            (COMPRESSION_CODEC.to_owned(), Some("gzip".to_owned())),
            (COMPRESSION_LEVEL.to_owned(), Some("9".to_owned())),
        ])
        .unwrap();
    table.append(reader(vec![batch(10..20)])).unwrap();
    table.set_properties(&[(COMPRESSION_CODEC.to_owned(), None), (COMPRESSION_LEVEL.to_owned(), None)]).unwrap();
    table.append(reader(vec![batch(20..30)])).unwrap();
    let mut files = table.data_files(table.metadata().current_snapshot()).unwrap();
    files.sort_by_key(|f| f.lower_bounds[&1].clone());
    // (A file records its codec, not the level it was written at.)
    let codecs: Vec<String> =
        files.iter().map(|f| format!("{:?}", codec_of(&table, f)).split('(').next().unwrap().to_owned()).collect();
    assert_eq!(codecs, ["SNAPPY", "GZIP", "ZSTD"]);
    assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..30).collect::<Vec<_>>());
    // Refused by name, changing nothing.
    for (key, value, says) in [
        (COMPRESSION_CODEC, "brotli9", "zstd, snappy, gzip or uncompressed"),
        (COMPRESSION_LEVEL, "high", "an integer"),
        (COMPRESSION_LEVEL, "99", "compression-level"),
    ] {
        let err = table.set_properties(&[(key.to_owned(), Some(value.to_owned()))]).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains(says)), "{err}");
        let err = Table::create(
            dir.path().join("u").to_str().unwrap(),
            &schema(),
            BTreeMap::from([(key.to_owned(), value.to_owned())]),
            &HashMap::new(),
        )
        .err()
        .unwrap();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains(says)), "{err}");
    }
    assert!(!table.metadata().properties.contains_key(COMPRESSION_CODEC));
}

#[test]
fn replace_redefines_the_table_in_one_snapshot_and_keeps_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let before = table.append(reader(vec![batch(0..10)])).unwrap();
    let version = table.version();
    // New columns (one keeps an old name, with another type), partitioned and sorted.
    let replacement = ArrowSchema::new(vec![
        Field::new("name", DataType::Int32, true),
        Field::new("day", DataType::Date32, true),
        Field::new("id", DataType::Int64, false),
    ]);
    let properties = BTreeMap::from([
        (PARTITIONING.to_owned(), "day(day)".to_owned()),
        (SORTED_BY.to_owned(), "id DESC".to_owned()),
        (INDEX_COLUMNS.to_owned(), "id".to_owned()),
    ]);
    let replaced = table.replace(&replacement, properties).unwrap();
    assert_eq!(table.version(), version + 1, "one commit");
    let metadata = table.metadata();
    assert_eq!(metadata.current_snapshot_id, Some(replaced));
    assert_eq!(metadata.current_snapshot().unwrap().operation(), "overwrite");
    let names: Vec<String> = table.arrow_schema().unwrap().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["name", "day", "id"]);
    let ids: Vec<i32> = metadata.current_schema().unwrap().fields.iter().map(|f| f.id).collect();
    assert!(ids.iter().all(|id| *id > 3), "fresh ids past the old ones: {ids:?}");
    assert_eq!(table.partitioning().unwrap(), ["day(day)"]);
    assert_eq!(table.sort_order().unwrap(), ["id DESC NULLS LAST"]);
    assert!(table.data_files(metadata.current_snapshot()).unwrap().is_empty(), "no rows");
    // The new definition takes rows; the old snapshot still reads under its own schema.
    let rows = RecordBatch::try_new(
        Arc::new(replacement.clone()),
        vec![
            Arc::new(arrow::array::Int32Array::from(vec![Some(7), None])),
            Arc::new(arrow::array::Date32Array::from(vec![Some(19000), Some(19001)])),
            Arc::new(Int64Array::from(vec![1, 2])),
        ],
    )
    .unwrap();
    table.append(RecordBatchIterator::new(vec![Ok(rows)], Arc::new(replacement.clone()))).unwrap();
    assert_eq!(table.data_files(table.metadata().current_snapshot()).unwrap().len(), 2, "a file per day");
    let old = Table::load_at(&location, &HashMap::new(), Some(before), None).unwrap();
    assert_eq!(old.arrow_schema().unwrap().field(1).data_type(), &DataType::Utf8);
    assert_eq!(ids_of(&old, Some(before)), (0..10).collect::<Vec<_>>());
    // A bad definition is refused by name, committing nothing.
    let version = table.version();
    let bad = BTreeMap::from([(PARTITIONING.to_owned(), "bucket(nope, 4)".to_owned())]);
    assert!(table.replace(&replacement, bad).unwrap_err().to_string().contains("nope"));
    let v3 = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
    assert!(matches!(table.replace(&replacement, v3), Err(Error::InvalidArgument(m)) if m.contains("format version")));
    assert_eq!(Table::load(&location, &HashMap::new()).unwrap().version(), version);
}

#[test]
fn concurrent_writers_lose_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let location = location.clone();
            std::thread::spawn(move || {
                let mut table = Table::load(&location, &HashMap::new()).unwrap();
                for i in 0..50 {
                    let start = (w * 1000 + i * 10) as i64;
                    table.append(reader(vec![batch(start..start + 10)])).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let table = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(table.version(), 101);
    assert_eq!(ids(&table, table.metadata().current_snapshot()).len(), 1000);
    assert_eq!(table.metadata().snapshots.len(), 100);
}

#[test]
fn overwrite_replaces_every_row_and_keeps_the_old_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..10)])).unwrap();
    table.append(reader(vec![batch(10..20)])).unwrap();
    let file = table.write_data_files(reader(vec![batch(100..105)])).unwrap().remove(0);
    let replaced = table.commit_overwrite(vec![file]).unwrap();
    assert_eq!(ids(&table, table.metadata().current_snapshot()), (100..105).collect::<Vec<_>>());
    assert_eq!(ids(&table, table.metadata().snapshot(first).ok()), (0..10).collect::<Vec<_>>());
    let summary = &table.metadata().snapshot(replaced).unwrap().summary;
    assert_eq!(
        (summary["operation"].as_str(), summary["total-records"].as_str(), summary["deleted-data-files"].as_str()),
        ("overwrite", "5", "2")
    );
    // An overwrite with no files empties the table (TRUNCATE); appends go on from there.
    table.commit_overwrite(vec![]).unwrap();
    assert!(ids(&table, table.metadata().current_snapshot()).is_empty());
    table.append(reader(vec![batch(7..9)])).unwrap();
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), vec![7, 8]);
    assert_eq!(ids(&reopened, reopened.metadata().snapshot(replaced).ok()), (100..105).collect::<Vec<_>>());
}

#[test]
fn negative_snapshot_ids_and_times_before_1970_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..5)])).unwrap();
    for (snapshot, as_of) in
        [(Some(-1), None), (Some(-5), None), (Some(i64::MIN), None), (None, Some(-1)), (None, Some(-86_400_000))]
    {
        let err = Table::load_at(location, &HashMap::new(), snapshot, as_of).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{snapshot:?} {as_of:?}: {err}");
    }
}

#[test]
fn a_staged_replacement_commits_its_definition_and_rows_as_one_snapshot_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..10)])).unwrap();
    let replacement =
        ArrowSchema::new(vec![Field::new("id", DataType::Int64, false), Field::new("day", DataType::Date32, true)]);
    let properties = BTreeMap::from([(PARTITIONING.to_owned(), "day(day)".to_owned())]);
    let rows = |ids: Vec<i64>| {
        let days: Vec<i32> = ids.iter().map(|i| 19000 + (*i % 2) as i32).collect();
        RecordBatch::try_new(
            Arc::new(replacement.clone()),
            vec![Arc::new(Int64Array::from(ids)), Arc::new(arrow::array::Date32Array::from(days))],
        )
        .unwrap()
    };
    // CREATE OR REPLACE TABLE t AS SELECT * FROM t WHERE id > 5: the stage reads the old rows.
    let staging = table.stage_replace(&replacement, properties.clone()).unwrap();
    assert_eq!(ids(&table, table.metadata().current_snapshot()).len(), 10, "the stage changed nothing");
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(reopened.metadata().current_snapshot_id, Some(first), "readers see the table as it was");
    let stage = Table::load(&staging, &HashMap::new()).unwrap();
    let written = stage
        .write_data_files(RecordBatchIterator::new([Ok(rows((6..10).collect()))], Arc::new(replacement.clone())))
        .unwrap();
    let replaced = table.commit_replace(&staging, &replacement, properties.clone(), written).unwrap();
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(reopened.metadata().current_snapshot_id, Some(replaced));
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), [6, 7, 8, 9]);
    assert_eq!(reopened.partitioning().unwrap(), ["day(day)"]);
    let old = Table::load_at(&location, &HashMap::new(), Some(first), None).unwrap();
    assert_eq!(ids(&old, old.metadata().current_snapshot()).len(), 10, "history kept, read under its schema");
    assert!(
        !reopened.storage.list("staging").unwrap().iter().any(|p| p.contains("/metadata/")),
        "the stage's metadata went"
    );
    let mut reopened = reopened;
    assert!(reopened.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty(), "its files are the table's");
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), [6, 7, 8, 9]);

    // An aborted stage leaves nothing; a stage the table moved away from conflicts.
    let staging = table.stage_replace(&replacement, properties.clone()).unwrap();
    let stage = Table::load(&staging, &HashMap::new()).unwrap();
    let written =
        stage.write_data_files(RecordBatchIterator::new([Ok(rows(vec![1]))], Arc::new(replacement.clone()))).unwrap();
    table.abort_replace(&staging).unwrap();
    assert!(!std::path::Path::new(&written[0].file_path).exists(), "its files went with it");
    assert!(table.storage.list("staging").unwrap().iter().all(|p| !p.starts_with(&staging[location.len() + 1..])));
    assert_eq!(ids(&table, table.metadata().current_snapshot()), [6, 7, 8, 9]);
    let staging = table.stage_replace(&replacement, properties.clone()).unwrap();
    table.add_column(&Field::new("late", DataType::Int32, true)).unwrap();
    let conflict = table.commit_replace(&staging, &replacement, properties, Vec::new());
    assert!(matches!(conflict, Err(Error::CommitConflict(_))), "{conflict:?}");
    assert!(table.stage_replace(&replacement, BTreeMap::new()).is_ok());
    let outside = table.commit_replace(&location, &replacement, BTreeMap::new(), Vec::new());
    assert!(matches!(outside, Err(Error::InvalidArgument(m)) if m.contains("not a staging table")));
}

#[test]
fn a_table_opened_at_its_metadata_file_reads_and_writes_data_files_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("t");
    let location = location.to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..50)])).unwrap();
    // A table of the file-system layout travels as it is: its tasks read its folder.
    assert!(!table.task_options().contains_key(crate::table::rest::METADATA_LOCATION));
    let file = table.version.location.clone();
    table.append(reader(vec![batch(50..60)])).unwrap();

    // What a query's task opens a catalog's table with: the metadata file of the version planned.
    let options = HashMap::from([(crate::table::rest::METADATA_LOCATION.to_owned(), file.clone())]);
    let task = Table::load(location, &options).unwrap();
    assert_eq!(task.metadata().current_snapshot_id, Some(first), "the planned version, not the newest");
    assert_eq!(ids(&task, task.metadata().current_snapshot()), (0..50).collect::<Vec<_>>());
    assert_eq!(task.task_options().get(crate::table::rest::METADATA_LOCATION), Some(&file));
    let mut writer = task.writer().unwrap();
    writer.write(&batch(100..105)).unwrap();
    let written = writer.finish().unwrap();
    assert_eq!(written.len(), 1, "a task writes its data files");
    let mut task = task;
    let err = task.append(reader(vec![batch(200..201)])).unwrap_err();
    assert!(err.to_string().contains("commit through its catalog"), "{err}");
    // The files it wrote commit through the table itself.
    table.commit_append(written).unwrap();
    assert_eq!(ids(&table, table.metadata().current_snapshot()).len(), 65);
    let missing = HashMap::from([(
        crate::table::rest::METADATA_LOCATION.to_owned(),
        format!("{location}/metadata/v99.metadata.json"),
    )]);
    assert!(matches!(Table::load(location, &missing), Err(Error::NotFound(_))));
}
