use super::*;

#[test]
fn pruned_scans_return_exactly_the_rows_of_a_full_scan_filtered_after() {
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let mut rng = Rng(7);
    // Ten files, each a band of k (so bounds prune), with nulls, all-null and constant columns in some.
    for f in 0..10i64 {
        let n = 50 + rng.below(50) as usize;
        let k: Vec<i64> = (0..n).map(|_| f * 100 + rng.below(100) as i64).collect();
        let b: Vec<Option<i32>> = (0..n)
            .map(|_| (f % 4 != 3 && rng.below(5) != 0).then(|| if f == 5 { 7 } else { rng.below(60) as i32 }))
            .collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", f * 3 + rng.below(10) as i64))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    }
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let keys = |stream: BatchStream| {
        let mut out: Vec<(i64, Option<i32>)> = stream
            .flat_map(|b| {
                let b = b.unwrap();
                let k = b.column(0).as_primitive::<Int64Type>().clone();
                let bb = b.column(1).as_primitive::<Int32Type>().clone();
                (0..b.num_rows()).map(move |i| (k.value(i), bb.is_valid(i).then(|| bb.value(i)))).collect::<Vec<_>>()
            })
            .collect();
        out.sort_unstable();
        out
    };
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let (mut pruned_total, mut kept_total) = (0, 0);
    for _ in 0..400 {
        let predicate = random_predicate(&mut rng, 2);
        // The slow twin: every row of every file, the filter applied after.
        let want =
            keys(Box::new(RecordBatchIterator::new(vec![Ok(predicate.filter(&everything).unwrap())], schema.clone())));
        let kept = table.prune(files.clone(), Some(&predicate)).unwrap();
        pruned_total += files.len() - kept.len();
        kept_total += kept.len();
        let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 64).unwrap());
        assert_eq!(got, want, "{}", predicate.to_json());
    }
    // Pruning did something, and not everything.
    assert!(pruned_total > 1000 && kept_total > 500, "pruned {pruned_total}, kept {kept_total}");
}

#[test]
fn partitioned_sorted_tables_split_rows_by_partition_prune_by_it_and_stay_exact() {
    use crate::spec::partition::Transform;
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let schema = kbsx_schema();
    let properties = BTreeMap::from([
        (PARTITIONING.to_owned(), "bucket(k, 4), s, truncate(b, 10)".to_owned()),
        (SORTED_BY.to_owned(), "x DESC, k".to_owned()),
    ]);
    let mut table = Table::create(&location, &schema, properties, &HashMap::new()).unwrap();
    assert_eq!(table.partitioning().unwrap(), vec!["bucket(k, 4)", "s", "truncate(b, 10)"]);
    assert_eq!(table.sort_order().unwrap(), vec!["x DESC NULLS LAST", "k ASC NULLS FIRST"]);
    assert!(!table.metadata().properties.contains_key(PARTITIONING));
    let mut rng = Rng(11);
    for _ in 0..4 {
        let n = 300;
        let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
        let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(6)))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    }
    let check_files = |table: &Table| {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        for file in &files {
            assert!(file.file_path.contains("/data/k_bucket="), "{}", file.file_path);
            let rows = table
                .scan_files(vec![DataFile { deletes: Vec::new(), ..file.clone() }], None, 100_000)
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>();
            let rows = arrow::compute::concat_batches(&schema, &rows).unwrap();
            for (field_id, column, transform) in
                [(1000, 0, Transform::Bucket(4)), (1001, 2, Transform::Identity), (1002, 1, Transform::Truncate(10))]
            {
                let values = transform.apply(rows.column(column)).unwrap();
                for i in 0..rows.num_rows() {
                    assert_eq!(
                        crate::spec::partition::single_value(&values, i).as_ref(),
                        file.partition.get(&field_id),
                        "{}",
                        file.file_path
                    );
                }
            }
            assert_eq!(file.sort_order_id, Some(1));
            let x = rows.column(3).as_primitive::<Float64Type>();
            let k = rows.column(0).as_primitive::<Int64Type>();
            for i in 1..rows.num_rows() {
                let before = (x.is_valid(i - 1).then(|| -x.value(i - 1)).map_or((1, 0.0), |v| (0, v)), k.value(i - 1));
                let after = (x.is_valid(i).then(|| -x.value(i)).map_or((1, 0.0), |v| (0, v)), k.value(i));
                assert!(before <= after, "rows out of order in {}", file.file_path);
            }
        }
        files
    };
    let files = check_files(&table);
    assert!(files.len() > 50, "{} files", files.len());
    let everything = |table: &Table, files: &[DataFile]| {
        Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.to_vec(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        )
    };
    let keys = |batches: Vec<RecordBatch>| {
        let mut out: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).map(move |i| {
                    format!(
                        "{:?}",
                        b.slice(i, 1)
                            .columns()
                            .iter()
                            .map(|c| arrow::util::display::array_value_to_string(c, 0).unwrap())
                            .collect::<Vec<_>>()
                    )
                })
            })
            .collect();
        out.sort();
        out
    };
    let compare_all = |table: &Table, rng: &mut Rng| {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let all = everything(table, &files);
        let mut pruned = 0;
        for _ in 0..150 {
            let predicate = random_predicate(rng, 2);
            let want = keys(vec![predicate.filter(&all).unwrap()]);
            let kept = table.prune(files.clone(), Some(&predicate)).unwrap();
            pruned += files.len() - kept.len();
            let got = keys(
                table.scan(files.clone(), None, Some(predicate.clone()), 64).unwrap().map(Result::unwrap).collect(),
            );
            assert_eq!(got, want, "{}", predicate.to_json());
        }
        pruned
    };
    assert!(compare_all(&table, &mut rng) > 500);
    // Equality on a bucketed column keeps only the files of its bucket (bounds alone cannot).
    let pruner = PartitionPruner::new(table.metadata(), &table.arrow_schema().unwrap());
    let probe = Predicate::Eq { column: "k".into(), value: serde_json::json!(500) };
    let kept = files.iter().filter(|f| pruner.may_match(&probe, f)).count();
    assert!(kept * 3 < files.len() && kept > 0, "kept {kept} of {}", files.len());
    // Deletes carry their data file's partition; compaction keeps files within partitions.
    table.delete_where(Some(&Predicate::Lt { column: "k".into(), value: serde_json::json!(300) })).unwrap();
    let reloaded = Table::load(&location, &HashMap::new()).unwrap();
    let with_deletes = reloaded.data_files(reloaded.metadata().current_snapshot()).unwrap();
    for file in with_deletes.iter().flat_map(|f| f.deletes.iter().map(move |d| (f, d))) {
        assert_eq!((file.1.spec_id, &file.1.partition), (file.0.spec_id, &file.0.partition));
    }
    compare_all(&reloaded, &mut rng);
    let before = keys(table.scan(with_deletes.clone(), None, None, 1000).unwrap().map(Result::unwrap).collect());
    table.rewrite_data_files(10_000).unwrap().unwrap();
    let compacted = check_files(&table);
    assert_eq!(keys(table.scan(compacted.clone(), None, None, 1000).unwrap().map(Result::unwrap).collect()), before);
    compare_all(&table, &mut rng);
    // The manifest list summarizes each manifest's partition values.
    let manifests = table.manifests(table.metadata().current_snapshot().unwrap()).unwrap();
    let data = manifests.iter().find(|m| m.content == 0).unwrap();
    assert_eq!(data.partitions.as_ref().map(Vec::len), Some(3));
    let buckets = &data.partitions.as_ref().unwrap()[0];
    assert_eq!(
        (buckets.lower_bound.as_deref(), buckets.upper_bound.as_deref()),
        (Some(&0i32.to_le_bytes()[..]), Some(&3i32.to_le_bytes()[..]))
    );
    assert!(data.partitions.as_ref().unwrap()[1].contains_null);
    let err = table.drop_column("s").unwrap_err().to_string();
    assert!(err.contains("partitioned by"), "{err}");
    assert!(table.drop_column("x").unwrap_err().to_string().contains("sorted by"));
    for (bad, why) in [("bucket(nope, 4)", "does not have"), ("hour(k)", "does not apply")] {
        let props = BTreeMap::from([(PARTITIONING.to_owned(), bad.to_owned())]);
        let err = Table::create(&format!("{location}/bad"), &schema, props, &HashMap::new()).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    assert!(!std::path::Path::new(&format!("{location}/bad")).join("metadata").exists());
}

#[test]
fn pages_ruled_out_by_the_column_index_are_skipped_and_scans_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let mut rng = Rng(61);
    // One row group of many pages: k ascends (its pages prune), b is random (its pages do not),
    // s is null in whole stretches (null pages).
    let n = 60_000usize;
    let k: Vec<i64> = (0..n as i64).map(|i| i * 2).collect();
    let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
    let s: Vec<Option<String>> = (0..n).map(|i| (i / 10_000 % 2 == 0).then(|| format!("s{}", i / 1000))).collect();
    let x: Vec<Option<f64>> =
        (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
    table.append(kbsx_rows(k, b, s, x)).unwrap();
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap())).unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 8192).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let keys = |batches: Vec<RecordBatch>| {
        let mut out: Vec<i64> =
            batches.iter().flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec()).collect();
        out.sort_unstable();
        out
    };
    for _ in 0..150 {
        let predicate = random_predicate_over(&mut rng, 2, 2 * n as u64);
        let want = keys(vec![predicate.filter(&everything).unwrap()]);
        let got =
            keys(table.scan(files.clone(), None, Some(predicate.clone()), 4096).unwrap().map(Result::unwrap).collect());
        assert_eq!(got, want, "{}", predicate.to_json());
    }
    // A narrow range on the ascending key reads one page of each column, not the whole group.
    let range = Predicate::from_json(
        r#"{"op":"and","args":[{"op":"ge","column":"k","value":50000},{"op":"lt","column":"k","value":50200}]}"#,
    )
    .unwrap();
    let explained = table.explain(files.clone(), Some(&range)).unwrap();
    assert_eq!(explained.row_groups, 1);
    assert!(explained.rows_read <= 8192 && explained.pages_read * 4 < explained.pages, "{explained:?}");
    let nulls = Predicate::from_json(r#"{"op":"eq","column":"s","value":"s15"}"#).unwrap();
    let explained = table.explain(files.clone(), Some(&nulls)).unwrap();
    assert!(explained.rows_read <= 2 * 8192, "{explained:?}");
    assert_eq!(
        table.scan(files.clone(), None, Some(nulls), 4096).unwrap().map(|b| b.unwrap().num_rows()).sum::<usize>(),
        keys(vec![Predicate::from_json(r#"{"op":"eq","column":"s","value":"s15"}"#)
            .unwrap()
            .filter(&everything)
            .unwrap()])
        .len()
    );
}

#[test]
fn bloom_filters_skip_row_groups_without_the_value_and_scans_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let mut properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "32".to_owned())]);
    for column in ["k", "b", "s", "x"] {
        properties.insert(format!("{BLOOM_ENABLED_PREFIX}{column}"), "true".to_owned());
    }
    properties.insert(format!("{BLOOM_FPP_PREFIX}s"), "0.001".to_owned());
    let mut table =
        Table::create(dir.path().join("t").to_str().unwrap(), &schema, properties, &HashMap::new()).unwrap();
    let mut rng = Rng(53);
    // Unsorted keys: every row group's bounds span them all, so only the bloom filters prune.
    for _ in 0..5 {
        let n = 200 + rng.below(200) as usize;
        let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
        let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    }
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap())).unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let keys = |batches: Vec<RecordBatch>| {
        let mut out: Vec<(i64, Option<String>)> = batches
            .iter()
            .flat_map(|b| {
                let (k, s) = (b.column(0).as_primitive::<Int64Type>().clone(), b.column(2).as_string::<i32>().clone());
                (0..b.num_rows()).map(move |i| (k.value(i), s.is_valid(i).then(|| s.value(i).to_owned())))
            })
            .collect();
        out.sort_unstable();
        out
    };
    let mut bloom_pruned = 0;
    for _ in 0..300 {
        let predicate = random_predicate(&mut rng, 2);
        let want = keys(vec![predicate.filter(&everything).unwrap()]);
        let got =
            keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap().map(Result::unwrap).collect());
        assert_eq!(got, want, "{}", predicate.to_json());
        bloom_pruned += table.explain(files.clone(), Some(&predicate)).unwrap().row_groups_pruned_by_bloom;
    }
    assert!(bloom_pruned > 100, "bloom filters pruned {bloom_pruned} row groups");
    // A point lookup on the unsorted key opens only the row groups whose filter may hold it.
    let k = everything.column(0).as_primitive::<Int64Type>().value(17);
    let lookup = Predicate::from_json(&format!(r#"{{"op":"eq","column":"k","value":{k}}}"#)).unwrap();
    let explained = table.explain(files.clone(), Some(&lookup)).unwrap();
    assert_eq!(explained.row_groups_pruned_by_stats, 0, "{explained:?}");
    assert!(explained.row_groups_pruned_by_bloom * 4 > explained.row_groups * 3, "{explained:?}");
    // A probability outside (0, 1) is refused when the table is created.
    let bad = BTreeMap::from([(format!("{BLOOM_FPP_PREFIX}k"), "1.5".to_owned())]);
    let err = Table::create(dir.path().join("u").to_str().unwrap(), &schema, bad, &HashMap::new()).unwrap_err();
    assert!(err.to_string().contains("write.parquet.bloom-filter-fpp.column.k"), "{err}");
}

#[test]
fn scalar_indexes_are_declared_at_creation_by_column_name() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let props = |v: &str| BTreeMap::from([(INDEX_COLUMNS.to_owned(), v.to_owned())]);
    let mut table = Table::create(&at("a"), &kbsx_schema(), props(" s, k "), &HashMap::new()).unwrap();
    assert_eq!(table.scalar_index_columns().unwrap(), ["k", "s"]);
    assert!(!table.metadata().properties.contains_key(INDEX_COLUMNS), "stored by field id, not by name");
    // Appended files are indexed as they are written; renamed, a column keeps its index.
    table.append(kbsx_rows(vec![1, 2], vec![None, Some(1)], vec![Some("a".into()), None], vec![None, None])).unwrap();
    let file = &table.data_files(table.metadata().current_snapshot()).unwrap()[0];
    assert!(std::path::Path::new(&crate::index::scalar_index_path(&file.file_path.replace("file://", ""), 3)).exists());
    table.rename_column("s", "label").unwrap();
    assert_eq!(table.scalar_index_columns().unwrap(), ["k", "label"]);
    let found = table
        .scan(
            vec![file.clone()],
            Some(&["k".to_owned()]),
            Some(Predicate::from_json(r#"{"op":"eq","column":"label","value":"a"}"#).unwrap()),
            10,
        )
        .unwrap();
    assert_eq!(found.map(|b| b.unwrap().num_rows()).sum::<usize>(), 1);
    table.drop_column("label").unwrap();
    assert_eq!(table.scalar_index_columns().unwrap(), ["k"]);
    let err = Table::create(&at("b"), &kbsx_schema(), props("k,nope"), &HashMap::new()).unwrap_err();
    assert!(err.to_string().contains("'nope' is not in the table schema"), "{err}");
    let err = Table::create(&at("c"), &schema(), props("embedding"), &HashMap::new()).unwrap_err();
    assert!(err.to_string().contains("cannot have a scalar index"), "{err}");
}

#[test]
fn index_pruned_scans_return_exactly_the_rows_of_a_full_scan_filtered_after() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap().to_owned();
    let schema = kbsx_schema();
    let properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "16".to_owned())]);
    let mut table = Table::create(&location, &schema, properties, &HashMap::new()).unwrap();
    let mut rng = Rng(29);
    // Unsorted keys (every file spans them all, so bounds prune nothing), few and many distinct
    // values, nulls; files before the indexes are declared (built then) and after (built on write).
    let append = |table: &mut Table, rng: &mut Rng, f: i64| {
        let n = 100 + rng.below(200) as usize;
        let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
        let b: Vec<Option<i32>> =
            (0..n).map(|_| (f % 4 != 3 && rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    };
    for f in 0..3 {
        append(&mut table, &mut rng, f);
    }
    for column in ["k", "b", "s", "x"] {
        assert_eq!(table.create_scalar_index(column).unwrap(), 3);
    }
    for f in 3..8 {
        append(&mut table, &mut rng, f);
    }
    // Deleted rows stay out of every path.
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap())).unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let index_files = |files: &[DataFile]| -> Vec<std::path::PathBuf> {
        files
            .iter()
            .flat_map(|f| {
                [1, 2, 3, 4].map(|id| {
                    std::path::PathBuf::from(crate::index::scalar_index_path(&f.file_path.replace("file://", ""), id))
                })
            })
            .collect()
    };
    assert!(index_files(&files).iter().all(|p| p.exists()), "every file has its indexes");
    let keys = |stream: BatchStream| {
        let mut out: Vec<(i64, Option<i32>)> = stream
            .flat_map(|b| {
                let b = b.unwrap();
                let k = b.column(0).as_primitive::<Int64Type>().clone();
                let bb = b.column(1).as_primitive::<Int32Type>().clone();
                (0..b.num_rows()).map(move |i| (k.value(i), bb.is_valid(i).then(|| bb.value(i)))).collect::<Vec<_>>()
            })
            .collect();
        out.sort_unstable();
        out
    };
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let check = |table: &Table, rng: &mut Rng, rounds: usize| {
        for _ in 0..rounds {
            let predicate = random_predicate(rng, 2);
            let want = keys(Box::new(RecordBatchIterator::new(
                vec![Ok(predicate.filter(&everything).unwrap())],
                schema.clone(),
            )));
            let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
            assert_eq!(got, want, "{}", predicate.to_json());
        }
    };
    check(&table, &mut rng, 400);
    // A point lookup on the unsorted key: only the rows holding the key are read.
    let lookup = Predicate::from_json(r#"{"op":"eq","column":"k","value":500}"#).unwrap();
    let explained = table.explain(files.clone(), Some(&lookup)).unwrap();
    assert_eq!(explained.files_pruned, 0, "bounds cannot prune an unsorted key");
    assert!(explained.rows_read <= 10 && explained.rows_pruned_by_index > 1000, "{explained:?}");
    assert!(explained.row_groups_pruned_by_index > explained.row_groups / 2, "{explained:?}");
    assert!(
        explained.pages_read > 0 && explained.pages_read * 4 < explained.pages && explained.bytes_read > 0,
        "{explained:?}"
    );
    let everything_read = table.explain(files.clone(), None).unwrap();
    assert_eq!(
        (everything_read.pages_read, everything_read.rows_read + everything_read.rows_deleted),
        (everything_read.pages, everything_read.rows)
    );

    // Damaged and missing index files change nothing but the work done.
    let paths = index_files(&files);
    std::fs::write(&paths[0], b"HSSIDX01 and then garbage").unwrap();
    let mut flipped = std::fs::read(&paths[5]).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    std::fs::write(&paths[5], flipped).unwrap();
    std::fs::remove_file(&paths[9]).unwrap();
    check(&table, &mut rng, 150);
    // Dropping an index removes its files; scans stay exact.
    assert_eq!(table.drop_scalar_index("s").unwrap(), files.len());
    assert!(paths.iter().filter(|p| p.to_string_lossy().ends_with(".3.sidx")).all(|p| !p.exists()));
    check(&table, &mut rng, 50);

    // Schema evolution: a column added later (the older files read it as null, and have no index
    // for it) is indexed for the files written after; renamed, a column keeps its index.
    table.add_column(&Field::new("y", DataType::Int64, true)).unwrap();
    assert_eq!(table.create_scalar_index("y").unwrap(), files.len());
    let evolved = table.arrow_schema().unwrap();
    for _ in 0..3 {
        let n = 100 + rng.below(200) as usize;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from((0..n).map(|_| rng.below(1200) as i64 - 100).collect::<Vec<_>>())),
            Arc::new(arrow::array::Int32Array::from(
                (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect::<Vec<_>>(),
            )),
            Arc::new(arrow::array::Float64Array::from(
                (0..n).map(|_| (rng.below(7) != 0).then(|| rng.below(2000) as f64 / 10.0)).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                (0..n).map(|_| (rng.below(4) != 0).then(|| rng.below(50) as i64)).collect::<Vec<_>>(),
            )),
        ];
        let plain = Arc::new(ArrowSchema::new(
            evolved
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_metadata(HashMap::<String, String>::new()))
                .collect::<Vec<_>>(),
        ));
        table.append(RecordBatchIterator::new(vec![RecordBatch::try_new(plain.clone(), columns)], plain)).unwrap();
    }
    table.rename_column("y", "why").unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let evolved = table.arrow_schema().unwrap();
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &evolved,
            &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let mut narrowed = 0;
    for _ in 0..200 {
        let w = "why".to_owned();
        let v = |rng: &mut Rng| serde_json::json!(rng.below(55) as i64);
        let leaf = match rng.below(6) {
            0 => Predicate::Eq { column: w, value: v(&mut rng) },
            1 => Predicate::Lt { column: w, value: v(&mut rng) },
            2 => Predicate::Ge { column: w, value: v(&mut rng) },
            3 => Predicate::In { column: w, values: vec![v(&mut rng), v(&mut rng)] },
            4 => Predicate::IsNull { column: w },
            _ => Predicate::NotNull { column: w },
        };
        let predicate = match rng.below(3) {
            0 => leaf,
            1 => Predicate::And { args: vec![leaf, random_predicate(&mut rng, 1)] },
            _ => Predicate::Or { args: vec![leaf, random_predicate(&mut rng, 1)] },
        };
        let want =
            keys(Box::new(RecordBatchIterator::new(vec![Ok(predicate.filter(&everything).unwrap())], evolved.clone())));
        let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
        assert_eq!(got, want, "{}", predicate.to_json());
        narrowed += table.explain(files.clone(), Some(&predicate)).unwrap().rows_pruned_by_index;
    }
    assert!(narrowed > 0, "the index of the added column narrowed no scan");
    assert_eq!(table.scalar_index_columns().unwrap(), ["k", "b", "x", "why"]);
    let err = |e: Error| e.to_string();
    assert!(err(table.drop_scalar_index("s").unwrap_err()).contains("has no scalar index"));
    assert!(err(table.create_scalar_index("nope").unwrap_err()).contains("'nope' is not in the table schema"));
}

#[test]
fn split_files_cut_big_files_into_row_group_runs_that_read_each_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let properties =
        BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "100".to_owned()), (FORMAT_VERSION.to_owned(), "3".to_owned())]);
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema(), properties, &HashMap::new()).unwrap();
    table.append(reader(vec![batch(0..1000)])).unwrap();
    table.append(reader(vec![batch(1000..1050)])).unwrap();
    table
        .delete_where(Some(
            &Predicate::from_json(r#"{"op":"in","column":"id","values":[5,250,251,999,1001]}"#).unwrap(),
        ))
        .unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let splits = table.split_files(files.clone(), 250).unwrap();
    let ranges: Vec<_> = splits.iter().map(|s| (s.row_groups, s.record_count)).collect();
    assert_eq!(ranges.len(), 5, "{ranges:?}");
    assert!(
        ranges.contains(&(Some([0, 3]), 300)) && ranges.contains(&(Some([9, 10]), 100)) && ranges.contains(&(None, 50)),
        "{ranges:?}"
    );
    assert_eq!(splits.iter().map(|s| s.record_count).sum::<i64>(), 1050);
    // Each split read alone (as an engine task does), with or without a filter, lineage columns
    // too: together exactly the rows of the whole files.
    let columns = ["id".to_owned(), lineage::ROW_ID.to_owned()];
    let read = |files: Vec<DataFile>, filter: Option<&str>| -> Vec<(i64, i64)> {
        let mut rows: Vec<(i64, i64)> = files
            .into_iter()
            .flat_map(|f| {
                let filter = filter.map(|f| Predicate::from_json(f).unwrap());
                table
                    .scan(vec![f], Some(&columns), filter, 64)
                    .unwrap()
                    .flat_map(|b| {
                        let b = b.unwrap();
                        let (ids, row_ids) = (
                            b.column(0).as_primitive::<Int64Type>().clone(),
                            b.column(1).as_primitive::<Int64Type>().clone(),
                        );
                        (0..b.num_rows()).map(move |i| (ids.value(i), row_ids.value(i))).collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        rows.sort();
        rows
    };
    for filter in
        [None, Some(r#"{"op":"ge","column":"id","value":240}"#), Some(r#"{"op":"lt","column":"id","value":120}"#)]
    {
        let whole = read(files.clone(), filter);
        assert_eq!(read(splits.clone(), filter), whole, "{filter:?}");
        assert!(!whole.is_empty());
    }
    assert_eq!(read(splits.clone(), None).len(), 1045);
    // The plan of one split counts its own row groups only.
    let explained = table.explain(vec![splits[1].clone()], None).unwrap();
    assert_eq!((explained.row_groups, explained.rows), (3, 300));
}

#[test]
fn row_groups_pruned_by_footer_statistics_leave_exactly_the_rows_of_a_full_scan_with_deletes_too() {
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "16".to_owned())]);
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, properties, &HashMap::new()).unwrap();
    let mut rng = Rng(23);
    // Four files of sorted k (so their row groups hold disjoint bands of it), nulls in every other column.
    for f in 0..4i64 {
        let n = 100 + rng.below(60) as usize;
        let mut k: Vec<i64> = (0..n).map(|_| f * 250 + rng.below(300) as i64).collect();
        k.sort_unstable();
        let b: Vec<Option<i32>> =
            (0..n).map(|i| (rng.below(5) != 0).then(|| (i / 16) as i32 * 10 + rng.below(10) as i32)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    }
    table
        .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,14,25,36,47]}"#).unwrap()))
        .unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert!(files.iter().any(|f| !f.deletes.is_empty()));
    let keys = |stream: BatchStream| {
        let mut out: Vec<(i64, Option<i32>, Option<String>)> = stream
            .flat_map(|b| {
                let b = b.unwrap();
                let k = b.column(0).as_primitive::<Int64Type>().clone();
                let bb = b.column(1).as_primitive::<Int32Type>().clone();
                let ss = b.column(2).as_string::<i32>().clone();
                (0..b.num_rows())
                    .map(move |i| {
                        (
                            k.value(i),
                            bb.is_valid(i).then(|| bb.value(i)),
                            ss.is_valid(i).then(|| ss.value(i).to_owned()),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_unstable();
        out
    };
    // The slow twin: every live row, the filter applied after.
    let everything = Arc::new(
        arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    let footers: Vec<Arc<parquet::file::metadata::ParquetMetaData>> = files
        .iter()
        .map(|f| {
            let bytes = table.storage.get(table.storage.relative(&f.file_path).unwrap()).unwrap();
            ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap().metadata().clone()
        })
        .collect();
    assert!(footers.iter().all(|m| m.num_row_groups() >= 6), "row groups of 16 rows");
    let table_schema = table.arrow_schema().unwrap(); // with the field ids the footers carry
    let (mut pruned, mut kept) = (0, 0);
    for _ in 0..400 {
        let predicate = random_predicate_over(&mut rng, 2, 1000);
        let want =
            keys(Box::new(RecordBatchIterator::new(vec![Ok(predicate.filter(&everything).unwrap())], schema.clone())));
        let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
        assert_eq!(got, want, "{}", predicate.to_json());
        for footer in &footers {
            let groups = row_groups_may_match(&predicate, footer, &table_schema);
            kept += groups.len();
            pruned += footer.num_row_groups() - groups.len();
        }
    }
    assert!(pruned > 2000 && kept > 1000, "row groups pruned {pruned}, kept {kept}");
}

/// The twin of the JNI module's `BridgeContractTest`: the explain counts cross to Java as one Arrow
/// row, a column per count named as below (bound to `NativeTable.ScanExplain`'s components), and
/// `reading`, the descriptions of the files to read.
#[test]
fn scan_explain_crosses_the_bridge_by_name() {
    let explain = ScanExplain { files: 3, bytes_read: 7, ..Default::default() };
    let file = DataFile { file_path: "file:///t/data/a.parquet".into(), record_count: 5, ..Default::default() };
    let row = explain.to_batch(std::slice::from_ref(&file)).unwrap();
    let mut names: Vec<String> = row.schema().fields().iter().map(|f| f.name().clone()).collect();
    names.sort_unstable();
    let mut expected = vec![
        "files",
        "files_pruned",
        "row_groups",
        "row_groups_pruned_by_stats",
        "row_groups_pruned_by_bloom",
        "row_groups_pruned_by_index",
        "rows",
        "rows_deleted",
        "rows_pruned_by_index",
        "rows_read",
        "pages",
        "pages_read",
        "bytes_read",
        "files_by_graph",
        "files_exact",
        "reading",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
    assert_eq!(row.num_rows(), 1);
    let count = |name: &str| row.column_by_name(name).unwrap().as_primitive::<Int64Type>().value(0);
    assert_eq!((count("files"), count("bytes_read"), count("rows")), (3, 7, 0));
    let reading = row.column_by_name("reading").unwrap().as_list::<i32>().value(0);
    let described: DataFile = serde_json::from_str(reading.as_string::<i32>().value(0)).unwrap();
    assert_eq!(described, file);
}
