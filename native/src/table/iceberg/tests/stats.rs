use super::*;

#[test]
fn aggregates_from_metadata_equal_the_aggregates_of_a_full_scan_or_are_refused() {
    use crate::scan::MetadataAggregate as A;
    use arrow::util::display::array_value_to_string;
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let asked = [
        A::CountStar,
        A::Count("b".into()),
        A::Min("k".into()),
        A::Max("k".into()),
        A::Min("b".into()),
        A::Max("b".into()),
        A::Min("s".into()),
        A::Max("s".into()),
        A::Count("s".into()),
        A::Count("x".into()),
    ];
    // The slow twin: the same aggregates over every row read.
    let scanned = |table: &Table| -> Vec<String> {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let all = arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files, None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap();
        let text = |a: &dyn Array| if a.is_null(0) { "null".to_owned() } else { array_value_to_string(a, 0).unwrap() };
        let min_max = |i: usize| -> (String, String) {
            let sorted = arrow::compute::sort(
                all.column(i),
                Some(arrow::compute::SortOptions { descending: false, nulls_first: false }),
            )
            .unwrap();
            let valid = sorted.len() - sorted.null_count();
            if valid == 0 {
                ("null".into(), "null".into())
            } else {
                (text(&sorted.slice(0, 1)), text(&sorted.slice(valid - 1, 1)))
            }
        };
        let count = |i: usize| (all.num_rows() - all.column(i).null_count()).to_string();
        let ((k0, k1), (b0, b1), (s0, s1)) = (min_max(0), min_max(1), min_max(2));
        vec![all.num_rows().to_string(), count(1), k0, k1, b0, b1, s0, s1, count(2), count(3)]
    };
    let answered = |table: &Table, asked: &[A]| -> Option<Vec<String>> {
        let batch = table.aggregate_from_metadata(table.metadata().current_snapshot(), asked).unwrap()?;
        assert_eq!(batch.num_rows(), 1);
        Some(
            batch
                .columns()
                .iter()
                .map(|c| if c.is_null(0) { "null".to_owned() } else { array_value_to_string(c, 0).unwrap() })
                .collect(),
        )
    };
    let mut rng = Rng(41);
    for f in 0..12i64 {
        let n = 1 + rng.below(80) as usize;
        let k: Vec<i64> = (0..n).map(|_| rng.below(10_000) as i64 - 5_000).collect();
        let b: Vec<Option<i32>> =
            (0..n).map(|_| (f % 5 != 2 && rng.below(4) != 0).then(|| rng.below(1000) as i32 - 500)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(5) != 0).then(|| format!("s{}", rng.below(100_000)))).collect();
        let x: Vec<Option<f64>> = (0..n).map(|_| (rng.below(3) != 0).then(|| rng.below(100) as f64)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
        assert_eq!(answered(&table, &asked), Some(scanned(&table)), "after {} files", f + 1);
    }
    // Floats may hold NaN, which bounds leave out: refused, not guessed.
    assert_eq!(answered(&table, &[A::Max("x".into())]), None);
    // A long string gets no bounds: its column's MIN is refused; the others still answer.
    table.append(kbsx_rows(vec![1], vec![None], vec![Some("z".repeat(100))], vec![None])).unwrap();
    assert_eq!(answered(&table, &[A::Min("s".into())]), None);
    assert_eq!(answered(&table, &asked[..6]), Some(scanned(&table)[..6].to_vec()));
    // A deleted row may hold a bound: only COUNT(*) (exact through the delete files) answers.
    let count_before: u64 = scanned(&table)[0].parse().unwrap();
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"lt","column":"k","value":0}"#).unwrap())).unwrap();
    assert_eq!(answered(&table, &asked[2..3]), None);
    let left: u64 = answered(&table, &[A::CountStar]).unwrap()[0].parse().unwrap();
    assert_eq!(left.to_string(), scanned(&table)[0]);
    assert!(left < count_before);
    let err = table.aggregate_from_metadata(table.metadata().current_snapshot(), &[A::Min("nope".into())]).unwrap_err();
    assert!(err.to_string().contains("'nope'"), "{err}");
}

#[test]
fn string_bounds_answer_min_and_max_only_where_the_metrics_mode_keeps_them_whole() {
    use crate::scan::MetadataAggregate as A;
    let dir = tempfile::tempdir().unwrap();
    let answer = |properties: &[(&str, &str)]| {
        let at = dir.path().join(format!("t{}", properties.len()));
        let properties = properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut table = Table::create(at.to_str().unwrap(), &kbsx_schema(), properties, &HashMap::new()).unwrap();
        table
            .append(kbsx_rows(
                vec![1, 2],
                vec![None, None],
                vec![Some("abcdefgh".into()), Some("abc".into())],
                vec![None, None],
            ))
            .unwrap();
        table
            .aggregate_from_metadata(table.metadata().current_snapshot(), &[A::Min("s".into()), A::Max("s".into())])
            .unwrap()
            .map(|b| {
                (b.column(0).as_string::<i32>().value(0).to_owned(), b.column(1).as_string::<i32>().value(0).to_owned())
            })
    };
    // Iceberg's default keeps 16 characters: these bounds are whole.
    assert_eq!(answer(&[]), Some(("abc".to_owned(), "abcdefgh".to_owned())));
    // A writer under truncate(4) keeps `abcd` for `abcdefgh`: a bound that long is not trusted.
    assert_eq!(answer(&[("write.metadata.metrics.default", "truncate(4)")]), None);
    assert_eq!(
        answer(&[("write.metadata.metrics.default", "full"), ("write.metadata.metrics.column.s", "counts")]),
        None
    );
    assert_eq!(
        answer(&[
            ("write.metadata.metrics.default", "truncate(4)"),
            ("a", "b"),
            ("write.metadata.metrics.column.s", "full")
        ]),
        Some(("abc".to_owned(), "abcdefgh".to_owned()))
    );
}

#[test]
fn column_statistics_estimate_distinct_values_and_count_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let schema = kbsx_schema();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let mut rng = Rng(71);
    for _ in 0..6 {
        let n = 3_000 + rng.below(3_000) as usize;
        let k: Vec<i64> = (0..n).map(|_| rng.below(20_000) as i64).collect();
        let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
        let s: Vec<Option<String>> =
            (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(4_000)))).collect();
        let x: Vec<Option<f64>> = (0..n).map(|_| None).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
    }
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let all = arrow::compute::concat_batches(
        &schema,
        &table.scan_files(files.clone(), None, 8192).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
    )
    .unwrap();
    // The slow twin: exact distinct and null counts of every row.
    let exact = |i: usize| -> (u64, u64) {
        let column = all.column(i);
        let distinct: std::collections::HashSet<String> = (0..column.len())
            .filter(|&r| column.is_valid(r))
            .map(|r| arrow::util::display::array_value_to_string(column, r).unwrap())
            .collect();
        (distinct.len() as u64, column.null_count() as u64)
    };
    let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
    for (i, (name, ndv, nulls)) in stats.iter().enumerate() {
        let (distinct, null_count) = exact(i);
        assert_eq!(*nulls, Some(null_count), "{name}");
        let ndv = ndv.unwrap() as f64;
        assert!((ndv - distinct as f64).abs() <= (distinct as f64 * 0.05).max(1.0), "{name}: {ndv} for {distinct}");
    }
    // A column added later has no sketch in the older files: no estimate rather than a wrong one.
    table.add_column(&Field::new("y", DataType::Int64, true)).unwrap();
    let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
    assert_eq!(stats[4], ("y".to_owned(), None, None));
    // A damaged sketch file only loses the estimates.
    let path = crate::index::ndv::ndv_path(&files[0].file_path.replace("file://", ""));
    std::fs::write(&path, b"HSNDV001 damaged").unwrap();
    let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
    assert_eq!((stats[0].1, stats[0].2), (None, Some(exact(0).1)));
}
