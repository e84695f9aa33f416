use super::*;

#[test]
fn compaction_rewrites_small_and_deleted_from_files_and_every_read_answers_as_before() {
    use crate::vector::{metric::reference_distance, Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.create_vector_index("embedding", HnswParams { metric: Metric::L2, m: 8, ef_construction: 40 }).unwrap();
    for start in (0..250).step_by(50) {
        table.append(reader(vec![batch(start..start + 50)])).unwrap();
    }
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"or","args":[{"op":"lt","column":"id","value":20},{"op":"in","column":"id","values":[60,61,130]}]}"#).unwrap())).unwrap();
    let model: Vec<i64> = (20..250).filter(|i| ![60, 61, 130].contains(i)).collect();
    let before = table.metadata().current_snapshot_id;
    let search = |t: &Table| {
        let files = t.data_files(t.metadata().current_snapshot()).unwrap();
        let query = VectorSearch::new("embedding", vec![100.3, 0.5, -90.0], Metric::L2, 12);
        let found = t.search(files, Some(&["id".to_owned()]), None, &query, 64).unwrap();
        found.column(0).as_primitive::<Int64Type>().values().to_vec()
    };
    let mut reference: Vec<(f64, i64)> = model
        .iter()
        .map(|&i| (reference_distance(Metric::L2, &[100.3, 0.5, -90.0], &[i as f32, 0.5, -(i as f32)]), i))
        .collect();
    reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
    let exact: Vec<i64> = reference.iter().take(12).map(|r| r.1).collect();
    assert_eq!(search(&table), exact);

    // Files of 60 rows at most: the five files (three with deletes) become four.
    let rewrite = table.rewrite_data_files(60).unwrap().unwrap();
    assert_eq!((rewrite.rewritten, rewrite.written), (5, 4));
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert_eq!(files.iter().map(|f| f.record_count).collect::<Vec<_>>(), vec![60, 60, 60, 47]);
    assert!(files.iter().all(|f| f.deletes.is_empty()));
    let summary = &table.metadata().current_snapshot().unwrap().summary;
    assert_eq!(
        (summary["operation"].as_str(), summary["total-delete-files"].as_str(), summary["total-records"].as_str()),
        ("replace", "0", "227")
    );
    assert_eq!(ids(&table, table.metadata().current_snapshot()), model);
    assert_eq!(search(&table), exact, "the new files carry sidecars and graphs");
    assert!(files
        .iter()
        .all(|f| table.storage.exists(&hnsw_path(table.storage.relative(&f.file_path).unwrap(), 3)).unwrap()));
    assert_eq!(ids(&table, table.metadata().snapshot(before.unwrap()).ok()), model, "time travel reads the old files");
    // Nothing is small or deleted from any more; an orphan sweep finds nothing.
    assert_eq!(table.rewrite_data_files(60).unwrap(), None);
    assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty());
    // Into one file; a reopened table reads the same.
    assert_eq!(table.rewrite_data_files(1000).unwrap().map(|r| (r.rewritten, r.written)), Some((4, 1)));
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model);
    assert!(matches!(table.rewrite_data_files(0), Err(Error::InvalidArgument(_))));
}

#[test]
fn rollback_makes_an_ancestor_current_and_keeps_the_later_snapshots_for_time_travel() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..10)])).unwrap();
    let second = table.append(reader(vec![batch(10..20)])).unwrap();
    let third = table.append(reader(vec![batch(20..30)])).unwrap();
    table.rollback_to(first).unwrap();
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), (0..10).collect::<Vec<_>>());
    assert_eq!(ids(&reopened, reopened.metadata().snapshot(third).ok()), (0..30).collect::<Vec<_>>());
    // The next commit builds on the snapshot rolled back to.
    let fourth = table.append(reader(vec![batch(100..105)])).unwrap();
    assert_eq!(table.metadata().snapshot(fourth).unwrap().parent_snapshot_id, Some(first));
    assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..10).chain(100..105).collect::<Vec<_>>());
    // Only ancestors: the abandoned line, and unknown snapshots, are refused by name.
    assert!(matches!(table.rollback_to(second), Err(Error::InvalidArgument(m)) if m.contains("ancestor")));
    assert!(matches!(table.rollback_to(42), Err(Error::NotFound(m)) if m.contains("42")));
    let now = now_ms();
    assert_eq!(table.snapshot(None, Some(now)).unwrap().map(|s| s.snapshot_id), Some(fourth));
}

#[test]
fn expired_snapshots_take_only_their_own_files_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let first = table.append(reader(vec![batch(0..10)])).unwrap();
    table.commit_overwrite(table.write_data_files(reader(vec![batch(10..20)])).unwrap()).unwrap();
    let third = table.append(reader(vec![batch(20..30)])).unwrap();
    let data = |t: &Table| t.storage.list("data").unwrap().into_iter().filter(|p| p.ends_with(".parquet")).count();
    assert_eq!(data(&table), 3);
    // Nothing is old enough: the snapshots stay.
    assert!(table.expire_snapshots(Some(0), Some(1)).unwrap().is_empty());
    let expired = table.expire_snapshots(Some(i64::MAX), Some(2)).unwrap();
    assert_eq!(expired, vec![first]);
    // The first append's file was only in the expired snapshot; the others are still live.
    assert_eq!(data(&table), 2);
    assert_eq!(ids(&table, table.metadata().current_snapshot()), (10..30).collect::<Vec<_>>());
    assert!(table.metadata().snapshot(first).is_err(), "time travel to an expired snapshot fails");
    let reopened = Table::load(&location, &HashMap::new()).unwrap();
    assert_eq!(reopened.metadata().snapshots.len(), 2);
    assert_eq!(reopened.metadata().current_snapshot_id, Some(third));
    assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty(), "expiry left no orphans");
}

#[test]
fn orphan_removal_spares_referenced_and_recent_files() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    table.append(reader(vec![batch(10..20)])).unwrap();
    // A write that never committed: its data file and the files beside it are orphans.
    let pending = table.write_data_files(reader(vec![batch(20..30)])).unwrap().remove(0);
    let listed = |t: &Table| {
        let mut all = t.storage.list("").unwrap();
        all.sort();
        all
    };
    let before = listed(&table);
    // Files younger than the cutoff stay: a writer may still be about to commit them.
    assert!(table.remove_orphan_files_unchecked(now_ms() - 3_600_000).unwrap().is_empty());
    let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    let stem = table.storage.relative(&pending.file_path).unwrap().strip_suffix(".parquet").unwrap().to_owned();
    // The data file, its vector sidecar and its distinct-value sketches.
    assert_eq!(removed.len(), 3, "{removed:?}");
    assert!(removed.iter().all(|p| p.starts_with(&stem)), "{removed:?}");
    assert_eq!(listed(&table).len(), before.len() - 3);
    assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..20).collect::<Vec<_>>());
    // Time travel still has every file it needs.
    let first = table.metadata().snapshots[0].snapshot_id;
    assert_eq!(ids(&table, table.metadata().snapshot(first).ok()).len(), 10);
}

#[test]
fn orphan_removal_refuses_young_cutoffs_and_spares_newer_versions_and_uncommitted_files() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..5)])).unwrap();
    for cutoff in [now_ms(), now_ms() + 3_600_000, i64::MAX, now_ms() - 3_600_000] {
        let err = table.remove_orphan_files(cutoff).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)) && err.to_string().contains("older than 24 hours"), "{err}");
    }
    assert!(table.remove_orphan_files(now_ms() - crate::limits::MIN_ORPHAN_AGE_MS).unwrap().is_empty());
    // A metadata version past the one read (another writer's, arriving meanwhile) is never an orphan.
    table.append(reader(vec![batch(5..9)])).unwrap();
    std::fs::write(dir.path().join("metadata/v99.metadata.json"), b"{}").unwrap();
    let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    assert!(removed.is_empty(), "{removed:?}");
    assert!(dir.path().join("metadata/v99.metadata.json").exists());
    std::fs::remove_file(dir.path().join("metadata/v99.metadata.json")).unwrap();
    let rows = |t: &Table| ids(t, t.metadata().current_snapshot()).len();
    assert_eq!(rows(&Table::load(location, &HashMap::new()).unwrap()), 9);
    // A staged file a killed writer left goes with the orphans.
    std::fs::write(dir.path().join("data/leftover.parquet#4242"), b"half a file").unwrap();
    let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    assert_eq!(removed, vec!["data/leftover.parquet#4242"]);
    // A file removed before its commit is not committed.
    let written = table.write_data_files(reader(vec![batch(9..12)])).unwrap();
    table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    let err = table.commit_append(written).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)) && err.to_string().contains("removed as an orphan"), "{err}");
    assert_eq!(rows(&Table::load(location, &HashMap::new()).unwrap()), 9);
}

/// Puts the next metadata version of the table at `location` as another writer would: the current
/// one's JSON with `change` applied (fields this library does not model included).
fn commit_as_another_writer(location: &str, change: impl FnOnce(&mut serde_json::Value)) {
    let table = Table::load(location, &HashMap::new()).unwrap();
    let number = table.version.number;
    let mut json: serde_json::Value =
        serde_json::from_slice(&table.storage.get(&metadata_file(number)).unwrap()).unwrap();
    change(&mut json);
    table.storage.put(&metadata_file(number + 1), Bytes::from(serde_json::to_vec(&json).unwrap())).unwrap();
    table.storage.put(VERSION_HINT, Bytes::from((number + 1).to_string())).unwrap();
}

#[test]
fn fields_this_library_does_not_model_survive_its_commits() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let properties = BTreeMap::from([("format-version".to_owned(), "3".to_owned())]);
    let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    let statistics = serde_json::json!([{"snapshot-id": table.metadata().current_snapshot_id, "statistics-path":
        format!("{location}/metadata/stats.puffin"), "file-size-in-bytes": 4, "file-footer-size-in-bytes": 0,
        "blob-metadata": []}]);
    let partition_statistics = serde_json::json!([{"snapshot-id": table.metadata().current_snapshot_id,
        "statistics-path": format!("{location}/metadata/partition-stats.parquet"), "file-size-in-bytes": 4}]);
    table.storage.put("metadata/stats.puffin", Bytes::from_static(b"PFA1")).unwrap();
    table.storage.put("metadata/partition-stats.parquet", Bytes::from_static(b"PAR1")).unwrap();
    commit_as_another_writer(&location, |json| {
        json["encryption-keys"] = serde_json::json!([{"key-id": "k1", "encrypted-key-metadata": "AAAA"}]);
        json["a-later-field"] = serde_json::json!({"nested": [1, 2]});
        json["refs"]["main"]["min-snapshots-to-keep"] = serde_json::json!(5);
        json["refs"]["main"]["max-snapshot-age-ms"] = serde_json::json!(86_400_000);
        json["snapshots"][0]["key-id"] = serde_json::json!("k1");
        json["schemas"][0]["fields"][1]["doc"] = serde_json::json!("a name");
        json["statistics"] = statistics.clone();
        json["partition-statistics"] = partition_statistics.clone();
        // Specs and orders, and their fields, with keys this library does not know.
        json["partition-specs"][0]["x-spec-note"] = serde_json::json!("kept");
        json["partition-specs"].as_array_mut().unwrap().push(serde_json::json!({"spec-id": 1, "x-spec-note": 1,
            "fields": [{"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]", "x-field-note": [1]}]}));
        json["last-partition-id"] = serde_json::json!(1000);
        json["sort-orders"][0]["x-order-note"] = serde_json::json!(true);
        json["sort-orders"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"order-id": 1, "fields": [{"transform": "identity",
            "source-id": 1, "direction": "asc", "null-order": "nulls-first", "x-field-note": {"a": 1}}]}));
    });
    let before: serde_json::Value = {
        let t = Table::load(&location, &HashMap::new()).unwrap();
        serde_json::from_slice(&t.storage.get(&metadata_file(t.version.number)).unwrap()).unwrap()
    };
    let mut table = Table::load(&location, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(10..20)])).unwrap();
    let filter = Predicate::from_json(r#"{"op":"eq","column":"id","value":3}"#).unwrap();
    table.delete_where(Some(&filter)).unwrap();
    let after: serde_json::Value =
        serde_json::from_slice(&table.storage.get(&metadata_file(table.version.number)).unwrap()).unwrap();
    for key in [
        "encryption-keys",
        "a-later-field",
        "statistics",
        "partition-statistics",
        "schemas",
        "partition-specs",
        "sort-orders",
    ] {
        assert_eq!(after[key], before[key], "{key}");
    }
    assert_eq!(after["refs"]["main"]["min-snapshots-to-keep"], 5);
    assert_eq!(after["refs"]["main"]["max-snapshot-age-ms"], 86_400_000);
    assert_eq!(after["snapshots"][0]["key-id"], "k1");
    assert_eq!(after["schemas"][0]["fields"][1]["doc"], "a name");
    // The statistics files the metadata names are not orphans.
    let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    assert!(removed.iter().all(|p| !p.contains("stats")), "{removed:?}");
    assert!(table.storage.exists("metadata/stats.puffin").unwrap());
    assert!(table.storage.exists("metadata/partition-stats.parquet").unwrap());
}

#[test]
fn expiry_follows_the_retention_of_the_table_and_of_each_ref() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let snapshots: Vec<i64> = (0..6).map(|i| table.append(reader(vec![batch(i * 10..i * 10 + 10)])).unwrap()).collect();
    let day = 24 * 3_600_000i64;
    let now = now_ms();
    // Another writer dates the first four snapshots back (10, 9, 8, 7 days), keeps three of main's,
    // tags the first and opens a branch at the second that keeps two of its own.
    commit_as_another_writer(&location, |json| {
        for (i, snapshot) in json["snapshots"].as_array_mut().unwrap().iter_mut().enumerate().take(4) {
            snapshot["timestamp-ms"] = serde_json::json!(now - (10 - i as i64) * day);
        }
        json["properties"]["history.expire.min-snapshots-to-keep"] = serde_json::json!("3");
        json["refs"]["first-tag"] = serde_json::json!({"snapshot-id": snapshots[0], "type": "tag"});
        json["refs"]["old-tag"] =
            serde_json::json!({"snapshot-id": snapshots[1], "type": "tag", "max-ref-age-ms": day});
        json["refs"]["audit"] = serde_json::json!({"snapshot-id": snapshots[3], "type": "branch",
            "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 1});
    });
    let mut table = Table::load(&location, &HashMap::new()).unwrap();
    // No arguments: the table's retention (keep 3 of main's, younger than 5 days).
    let mut expired = table.expire_snapshots(None, None).unwrap();
    expired.sort_unstable();
    // main keeps its newest three (5, 4, 3: the rest is older than 5 days); the tag keeps 0; the
    // branch keeps two of its own (3, 2) whatever their age; the old tag goes, and 1 with it.
    assert_eq!(expired, vec![snapshots[1]]);
    let refs = &table.metadata().refs;
    assert!(refs.contains_key("first-tag") && refs.contains_key("audit") && !refs.contains_key("old-tag"));
    assert_eq!(refs["main"].min_snapshots_to_keep, None);
    let kept: Vec<i64> = table.metadata().snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(kept, [0, 2, 3, 4, 5].map(|i| snapshots[i]));
    // Explicit arguments stand for the table's defaults, not for a ref's own retention.
    let expired = table.expire_snapshots(Some(i64::MAX), Some(1)).unwrap();
    assert_eq!(expired, vec![snapshots[4]], "main keeps one; the branch its two; the tag its one");
    let kept: Vec<i64> = table.metadata().snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(kept, [0, 2, 3, 5].map(|i| snapshots[i]));
    assert_eq!(ids(&table, table.metadata().snapshot(snapshots[0]).ok()), (0..10).collect::<Vec<_>>());
    assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().iter().all(|p| !p.ends_with(".avro")));
}

#[test]
fn a_purge_deletes_only_what_the_metadata_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("t").to_str().unwrap().to_owned();
    let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..10)])).unwrap();
    let filter = Predicate::from_json(r#"{"op":"eq","column":"id","value":3}"#).unwrap();
    table.delete_where(Some(&filter)).unwrap();
    table.commit_overwrite(table.write_data_files(reader(vec![batch(10..20)])).unwrap()).unwrap();
    // Another table's file, or anything else the metadata does not name, under the same location.
    table.storage.put("data/not-ours.parquet", Bytes::from_static(b"PAR1")).unwrap();
    let purged = table.purge_files().unwrap();
    assert!(purged > 8, "{purged}");
    assert_eq!(table.storage.list("").unwrap(), ["data/not-ours.parquet"]);
    assert!(std::path::Path::new(&location).join("data").is_dir(), "a folder still holding a file stays");
    assert!(!std::path::Path::new(&location).join("metadata").exists());
}
