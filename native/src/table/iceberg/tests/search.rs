use super::*;

#[test]
fn sparse_vector_columns_are_searched_as_their_dense_twins_say() {
    use crate::vector::{metric::reference_distance, Metric, VectorSearch};
    use arrow::array::{ListArray, StructArray};
    use arrow::datatypes::{Fields, Int32Type};
    let dir = tempfile::tempdir().unwrap();
    let fields = Fields::from(vec![
        Field::new("indices", DataType::List(Arc::new(Field::new("item", DataType::Int32, true))), true),
        Field::new("values", DataType::List(Arc::new(Field::new("item", DataType::Float32, true))), true),
    ]);
    let sparse_schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("terms", DataType::Struct(fields.clone()), true),
    ]));
    let mut table =
        Table::create(dir.path().to_str().unwrap(), &sparse_schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let dim = 30;
    let mut rng = crate::rand::SplitMix64(21);
    let mut dense: Vec<Option<Vec<f32>>> = Vec::new();
    for _ in 0..2 {
        let rows: Vec<Option<Vec<f32>>> = (0..120)
            .map(|i| {
                (i % 17 != 5).then(|| {
                    (0..dim)
                        .map(|_| {
                            if rng.next_u64().is_multiple_of(3) {
                                (rng.next_u64() % 200) as f32 / 10.0 - 10.0
                            } else {
                                0.0
                            }
                        })
                        .collect()
                })
            })
            .collect();
        let first = dense.len() as i64;
        let indices = ListArray::from_iter_primitive::<Int32Type, _, _>(rows.iter().map(|r| {
            r.as_ref().map(|v| {
                v.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, _)| Some(i as i32)).collect::<Vec<_>>()
            })
        }));
        let values = ListArray::from_iter_primitive::<Float32Type, _, _>(
            rows.iter()
                .map(|r| r.as_ref().map(|v| v.iter().filter(|x| **x != 0.0).map(|x| Some(*x)).collect::<Vec<_>>())),
        );
        let nulls = arrow::buffer::NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
        let terms = StructArray::new(fields.clone(), vec![Arc::new(indices), Arc::new(values)], Some(nulls));
        let ids = Int64Array::from_iter_values(first..first + rows.len() as i64);
        let batch = RecordBatch::try_new(sparse_schema.clone(), vec![Arc::new(ids), Arc::new(terms)]).unwrap();
        table.append(RecordBatchIterator::new(vec![Ok(batch)], sparse_schema.clone())).unwrap();
        dense.extend(rows);
    }
    let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
    let query_dense: Vec<f32> = (0..dim).map(|i| if i % 4 == 1 { i as f32 / 7.0 } else { 0.0 }).collect();
    let pairs: Vec<f32> = query_dense
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .flat_map(|(i, v)| [i as f32, *v])
        .rev()
        .collect::<Vec<_>>();
    // Pairs in any order: reversed above (value, position), put back as (position, value).
    let pairs: Vec<f32> = pairs.chunks_exact(2).flat_map(|p| [p[1], p[0]]).collect();
    for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
        let mut want: Vec<(f64, i64)> = dense
            .iter()
            .enumerate()
            .filter_map(|(id, v)| v.as_ref().map(|v| (reference_distance(metric, &query_dense, v), id as i64)))
            .collect();
        want.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let found = table
            .search(files(), Some(&["id".to_owned()]), None, &VectorSearch::new("terms", pairs.clone(), metric, 10), 50)
            .unwrap();
        let distances = found.column(1).as_primitive::<Float64Type>().values().to_vec();
        for (got, w) in distances.iter().zip(&want) {
            assert!((got - w.0).abs() <= 1e-4 * (1.0 + w.0.abs()), "{metric}: {distances:?} vs {want:?}");
        }
        assert_eq!(found.num_rows(), 10);
    }
    let err = table
        .search(files(), None, None, &VectorSearch::new("terms", vec![1.0], Metric::L2, 3), 50)
        .unwrap_err()
        .to_string();
    assert!(err.contains("searching 'terms': a sparse query is (position, value) pairs"), "{err}");
}

#[test]
fn binary_columns_are_searched_by_hamming_and_jaccard_as_a_full_scan_sorted_says() {
    use crate::vector::{Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let bits_schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("bits", DataType::Binary, true),
        Field::new("fixed", DataType::FixedSizeBinary(3), false),
    ]));
    let mut table =
        Table::create(dir.path().to_str().unwrap(), &bits_schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let mut rng = crate::rand::SplitMix64(9);
    let mut rows: Vec<(i64, Option<[u8; 3]>, [u8; 3])> = Vec::new();
    for file in 0..3i64 {
        let range = file * 70..(file + 1) * 70;
        let chunk: Vec<(i64, Option<[u8; 3]>, [u8; 3])> = range
            .map(|id| {
                let mut b = [0u8; 3];
                b.iter_mut().for_each(|v| *v = rng.next_u64() as u8);
                (id, (id % 9 != 4).then_some(b), [b[2], b[1], id as u8])
            })
            .collect();
        let batch = RecordBatch::try_new(
            bits_schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.0))),
                Arc::new(arrow::array::BinaryArray::from_iter(chunk.iter().map(|r| r.1.map(|b| b.to_vec())))),
                Arc::new(
                    arrow::array::FixedSizeBinaryArray::try_from_iter(chunk.iter().map(|r| r.2.to_vec())).unwrap(),
                ),
            ],
        )
        .unwrap();
        table.append(RecordBatchIterator::new(vec![Ok(batch)], bits_schema.clone())).unwrap();
        rows.extend(chunk);
    }
    let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
    let query = [0x5au8, 0x0f, 0xc3];
    // The reference: bits counted one by one, in f64; the answer sorts by it, ties by id.
    let distance = |metric: Metric, value: &[u8]| -> f64 {
        let (mut differ, mut both, mut either) = (0u32, 0u32, 0u32);
        for (x, y) in query.iter().zip(value) {
            for bit in 0..8 {
                let (a, b) = ((x >> bit) & 1, (y >> bit) & 1);
                differ += (a != b) as u32;
                both += (a & b) as u32;
                either += (a | b) as u32;
            }
        }
        if metric == Metric::Hamming {
            differ as f64
        } else if either == 0 {
            0.0
        } else {
            1.0 - both as f64 / either as f64
        }
    };
    let filter = Predicate::from_json(r#"{"op":"ge","column":"id","value":20}"#).unwrap();
    let as_query: Vec<f32> = query.iter().map(|&b| b as f32).collect();
    for metric in [Metric::Hamming, Metric::Jaccard] {
        for column in ["bits", "fixed"] {
            let value = |r: &(i64, Option<[u8; 3]>, [u8; 3])| {
                if column == "bits" {
                    r.1.map(|b| b.to_vec())
                } else {
                    Some(r.2.to_vec())
                }
            };
            let mut want: Vec<(f64, i64)> = rows
                .iter()
                .filter(|r| r.0 >= 20)
                .filter_map(|r| value(r).map(|v| (distance(metric, &v), r.0)))
                .collect();
            want.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            let search = VectorSearch::new(column, as_query.clone(), metric, 12);
            let found = table.search(files(), Some(&["id".to_owned()]), Some(&filter), &search, 32).unwrap();
            let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
            let distances = found.column(1).as_primitive::<Float64Type>().values().to_vec();
            // Ties (many, for Hamming) may fall to either row: the distances are the answer's,
            // and each row found has the distance it is listed with.
            assert_eq!(ids.len(), 12);
            for (row, (got, w)) in distances.iter().zip(&want).enumerate() {
                assert!((got - w.0).abs() < 1e-6, "{metric} over {column}: {distances:?} vs {want:?}");
                let listed = want.iter().find(|x| x.1 == ids[row]).expect("a passing row with a value");
                assert!((got - listed.0).abs() < 1e-6, "{metric} over {column}: row {}", ids[row]);
            }
            // Every row's distance (null without a value) agrees with the search.
            let every: usize = table
                .scan_with_distances(files(), Some(&["id".to_owned()]), Some(filter.clone()), &search, 32)
                .unwrap()
                .map(|b| b.unwrap().column(1).as_primitive::<Float64Type>().iter().flatten().count())
                .sum();
            assert_eq!(every, want.len(), "{metric} over {column}");
        }
    }
    // Rows without a value come last, as for float vectors.
    let all = table
        .search(
            files(),
            Some(&["id".to_owned()]),
            None,
            &VectorSearch::new("bits", as_query.clone(), Metric::Hamming, 210),
            32,
        )
        .unwrap();
    assert_eq!(all.column(1).null_count(), rows.iter().filter(|r| r.1.is_none()).count());
    assert!(all.column(1).as_primitive::<Float64Type>().iter().skip_while(|d| d.is_some()).all(|d| d.is_none()));
    // Bad searches are named.
    let err = |column: &str, query: Vec<f32>, metric: Metric| {
        table.search(files(), None, None, &VectorSearch::new(column, query, metric, 3), 32).unwrap_err().to_string()
    };
    assert!(err("bits", as_query.clone(), Metric::L2)
        .contains("metric 'l2' compares float vectors, not bit-packed binary vectors"));
    assert!(err("id", as_query.clone(), Metric::Hamming)
        .contains("metric 'hamming' compares bit-packed binary columns, but 'id' is Int64"));
    assert!(err("bits", vec![1.0, 256.0, 0.0], Metric::Hamming).contains("binary query byte 256 is not in 0..=255"));
    assert!(err("fixed", vec![1.0, 2.0], Metric::Jaccard).contains("jaccard: bit vectors of 2 and 3 bytes"));
}

#[test]
fn filtered_scan_and_search_across_files_equal_a_full_scan_sorted() {
    use crate::vector::{metric::reference_distance, Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    for range in [0..40, 40..90, 90..100] {
        table.append(reader(vec![batch(range)])).unwrap();
    }
    let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
    let filter = Predicate::from_json(
        r#"{"op":"and","args":[{"op":"not_null","column":"name"},{"op":"ge","column":"id","value":10}]}"#,
    )
    .unwrap();
    // The filtered scan keeps exactly the rows the filter passes, with only the asked-for column.
    let mut kept: Vec<i64> = table
        .scan(files(), Some(&["id".to_owned()]), Some(filter.clone()), 16)
        .unwrap()
        .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    kept.sort_unstable();
    let want: Vec<i64> = (10..100).filter(|i| i % 4 != 0).collect();
    assert_eq!(kept, want);
    // Search: the reference sorts every passing row by its float64 distance, ties by id.
    let query = vec![30.0, 0.5, -31.0];
    for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
        let search = VectorSearch::new("embedding", query.clone(), metric, 7);
        let found =
            table.search(files(), Some(&["id".to_owned(), "name".to_owned()]), Some(&filter), &search, 16).unwrap();
        assert_eq!(
            found.schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
            vec!["id", "name", "_distance"]
        );
        let mut reference: Vec<(f64, i64)> =
            want.iter().map(|&i| (reference_distance(metric, &query, &[i as f32, 0.5, -(i as f32)]), i)).collect();
        reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
        let distances = found.column(2).as_primitive::<Float64Type>().values().to_vec();
        for (row, (d, _)) in reference.iter().take(7).enumerate() {
            assert!((distances[row] - d).abs() < 1e-3 * (1.0 + d.abs()), "{metric}: {distances:?} vs {reference:?}");
        }
        if metric == Metric::L2 || metric == Metric::L1 {
            assert_eq!(ids, reference.iter().take(7).map(|r| r.1).collect::<Vec<_>>(), "{metric}");
        }
    }
    // Every passing row's distance, which a sort and limit over it would turn into the top-k.
    let search = VectorSearch::new("embedding", query.clone(), Metric::L2, 1);
    let mut every: Vec<(f64, i64)> = table
        .scan_with_distances(files(), Some(&["id".to_owned()]), Some(filter.clone()), &search, 16)
        .unwrap()
        .flat_map(|b| {
            let b = b.unwrap();
            let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
            let d = b.column(1).as_primitive::<Float64Type>().values().to_vec();
            d.into_iter().zip(ids).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(every.len(), want.len());
    every.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
    let top =
        table.search(files(), Some(&["id".to_owned()]), Some(&filter), &VectorSearch { k: 5, ..search }, 16).unwrap();
    assert_eq!(
        top.column(0).as_primitive::<Int64Type>().values().to_vec(),
        every.iter().take(5).map(|e| e.1).collect::<Vec<_>>()
    );
    let bad = VectorSearch::new("name", vec![1.0], Metric::L2, 3);
    assert!(table.search(files(), None, None, &bad, 16).unwrap_err().to_string().contains("not a float vector column"));
    // An empty table searches to no rows.
    let empty =
        Table::create(dir.path().join("e").to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    let search = VectorSearch::new("embedding", query, Metric::L2, 3);
    assert_eq!(empty.search(Vec::new(), None, None, &search, 16).unwrap().num_rows(), 0);
}

#[test]
fn search_through_sidecars_equals_search_of_the_parquet_columns_and_damage_only_warns() {
    use crate::vector::{Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    for range in [0..300, 300..700, 700..1000] {
        table.append(reader(vec![batch(range)])).unwrap();
    }
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let sidecars: Vec<std::path::PathBuf> =
        files.iter().map(|f| std::path::PathBuf::from(sidecar_path(&f.file_path, 3))).collect();
    assert!(sidecars.iter().all(|p| p.exists()), "every append writes a sidecar beside its data file");
    let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
    let columns = ["name".to_owned(), "id".to_owned()];
    let answers = |table: &Table| {
        [Metric::L2, Metric::Cosine, Metric::InnerProduct]
            .map(|metric| {
                let search = VectorSearch::new("embedding", vec![400.0, 0.5, -380.0], metric, 9);
                table.search(files.clone(), Some(&columns), Some(&filter), &search, 100).unwrap()
            })
            .to_vec()
    };
    let with_sidecars = answers(&table);
    assert_eq!(with_sidecars[0].num_rows(), 9);
    assert_eq!(
        with_sidecars[0].schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
        vec!["name", "id", "_distance"]
    );
    // One sidecar damaged, one gone: the same answers, from the Parquet columns.
    std::fs::write(&sidecars[0], b"HSVEC001 truncated").unwrap();
    std::fs::remove_file(&sidecars[1]).unwrap();
    assert_eq!(answers(&table), with_sidecars);
    // Aborting a written file removes its sidecar too.
    let file = table.write_data_files(reader(vec![batch(5000..5010)])).unwrap().remove(0);
    let sidecar = std::path::PathBuf::from(sidecar_path(&file.file_path, 3));
    assert!(sidecar.exists());
    table.delete_files(&[file]).unwrap();
    assert!(!sidecar.exists());
}

#[test]
fn exact_searches_on_gpu_backends_answer_as_the_cpu_does() {
    use crate::vector::gpu::{assert_same_neighbors, test_device, Backend};
    use crate::vector::{FloatQuery, Metric, Neighbor, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    for range in [0..3000, 3000..5000] {
        table.append(reader(vec![batch(range)])).unwrap();
    }
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    // A quarter of the rows (every fourth id) have no name: the filter leaves them out.
    let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
    let query = vec![1234.3, 0.1, -1234.2];
    let search = |metric: Metric, backend: Backend, filter: Option<&Predicate>| {
        let search = VectorSearch { backend, ..VectorSearch::new("embedding", query.clone(), metric, 7) };
        table.search(files.clone(), Some(&["id".to_owned()]), filter, &search, 100)
    };
    let neighbors = |found: RecordBatch| -> Vec<Neighbor> {
        let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
        let distances = found.column(1).as_primitive::<arrow::datatypes::Float64Type>().values().to_vec();
        ids.into_iter().zip(distances).map(|(id, d)| Neighbor { ordinal: id as u64, distance: d as f32 }).collect()
    };
    let gpu = test_device();
    for metric in [Metric::L2, Metric::L1, Metric::InnerProduct] {
        for filter in [None, Some(&filter)] {
            let cpu = search(metric, Backend::Cpu, filter).unwrap();
            assert_eq!(
                search(metric, Backend::Auto, filter).unwrap(),
                cpu,
                "a small search stays on the CPU under auto"
            );
            let Some(gpu) = gpu else { continue };
            let checked = FloatQuery::new(metric, query.clone(), 3).unwrap();
            let own = |id: u64| checked.distance(&[id as f32, 0.5, -(id as f32)]);
            let on = neighbors(search(metric, gpu, filter).unwrap());
            assert!(filter.is_none() || on.iter().all(|n| n.ordinal % 4 != 0), "{metric}: {on:?}");
            assert_same_neighbors(&on, &neighbors(cpu), own, &format!("{metric} {filter:?}"));
        }
    }
    if !cfg!(feature = "cuda") {
        let err = search(Metric::L2, Backend::Cuda, None).unwrap_err();
        assert!(err.to_string().contains("--features cuda"), "{err}");
    }
}

#[test]
fn vector_indexes_build_without_rewriting_data_answer_searches_and_drop() {
    use crate::vector::{IndexUse, Metric, VectorSearch};
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    for range in [0..1000, 1000..2000] {
        table.append(reader(vec![batch(range)])).unwrap();
    }
    let before = table.data_files(table.metadata().current_snapshot()).unwrap();
    let snapshot = table.metadata().current_snapshot().map(|s| s.snapshot_id);
    let params = HnswParams { metric: Metric::L2, m: 8, ef_construction: 50 };
    assert_eq!(table.create_vector_index("embedding", params).unwrap(), 2);
    assert_eq!(
        table.metadata().current_snapshot().map(|s| s.snapshot_id),
        snapshot,
        "declaring an index adds no snapshot"
    );
    let graph = |f: &DataFile| std::path::PathBuf::from(hnsw_path(&f.file_path, 3));
    assert!(before.iter().all(|f| graph(f).exists()));
    assert_eq!(
        (table.index_builds().totals().0, table.index_builds().totals().1),
        (2, 2000),
        "two files of 1000 vectors indexed"
    );
    table.append(reader(vec![batch(2000..3000)])).unwrap();
    let (files, vectors, nanos) = table.index_builds().totals();
    assert_eq!((files, vectors), (3, 3000), "and one more as written");
    assert!(nanos > 0);
    let mut table = Table::load(location, &HashMap::new()).unwrap();
    assert_eq!(table.index_builds().totals(), (0, 0, 0), "counts belong to a handle");
    assert_eq!(table.vector_indexes().get(&3), Some(&params));
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert_eq!(files.len(), 3);
    assert!(files.iter().all(|f| graph(f).exists()), "appends after the declaration are indexed as written");
    // The file of the second append (ids 1000..2000), which holds the nearest rows.
    let middle = files
        .iter()
        .find(|f| {
            let first =
                table.scan_files(vec![(*f).clone()], Some(&["id".to_owned()]), 1).unwrap().next().unwrap().unwrap();
            first.column(0).as_primitive::<Int64Type>().value(0) == 1000
        })
        .unwrap()
        .clone();

    let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
    let ids = |table: &Table, metric: Metric, index: IndexUse, filter: Option<&Predicate>| -> Vec<i64> {
        let search = VectorSearch { index, ..VectorSearch::new("embedding", vec![1500.0, 0.5, -1500.0], metric, 5) };
        let found = table.search(files.clone(), Some(&["id".to_owned()]), filter, &search, 100).unwrap();
        found.column(0).as_primitive::<Int64Type>().values().to_vec()
    };
    let exact = ids(&table, Metric::L2, IndexUse::Exact, None);
    assert_eq!(exact, vec![1500, 1499, 1501, 1498, 1502]);
    assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);
    assert_eq!(
        ids(&table, Metric::L2, IndexUse::Ef(5), Some(&filter)),
        ids(&table, Metric::L2, IndexUse::Exact, Some(&filter))
    );

    // EXPLAIN's account of the same choice, before any vector is read: a file goes through its
    // graph when enough of its rows pass the filter for a walk (64 x ef of them here).
    let explained = |table: &Table, metric: Metric, index: IndexUse, filter: Option<&str>| {
        let search = VectorSearch { index, ..VectorSearch::new("embedding", vec![1500.0, 0.5, -1500.0], metric, 5) };
        let filter = filter.map(|f| Predicate::from_json(f).unwrap());
        let e = table.explain_search(files.clone(), filter.as_ref(), &search).unwrap();
        (e.files_pruned, e.files_by_graph, e.files_exact)
    };
    assert_eq!(explained(&table, Metric::L2, IndexUse::Ef(5), None), (0, 3, 0));
    assert_eq!(explained(&table, Metric::L2, IndexUse::Exact, None), (0, 0, 3));
    assert_eq!(explained(&table, Metric::L1, IndexUse::Ef(5), None), (0, 0, 3), "not the index's metric");
    // Ids below 1100: all 1000 rows of the first file, 100 of the second (whose bounds and
    // statistics cannot tell), none of the third.
    let below = r#"{"op":"lt","column":"id","value":1100}"#;
    assert_eq!(explained(&table, Metric::L2, IndexUse::Ef(5), Some(below)), (1, 1, 1));

    // The graph answers: one that holds only the even rows of the middle file finds only those.
    let sidecar = std::fs::read(sidecar_path(&middle.file_path, 3)).unwrap();
    let vectors = Sidecar::parse(&sidecar, 1000, 3, "s").unwrap();
    let even = BooleanBuffer::collect_bool(1000, |i| i % 2 == 0);
    let partial = HnswGraph::build(vectors.vectors(), 3, &even, params).unwrap();
    std::fs::write(graph(&middle), partial.to_bytes()).unwrap();
    assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), vec![1500, 1498, 1502, 1496, 1504]);
    // A filter passing only rows that graph never reaches (the odd ones): the walk finds none of
    // them, and the file is searched exactly instead, so the search does not under-return.
    let odd: Vec<String> = (1001..2000).step_by(2).map(|i| i.to_string()).collect();
    let odd = Predicate::from_json(&format!(r#"{{"op":"in","column":"id","values":[{}]}}"#, odd.join(","))).unwrap();
    assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), Some(&odd)), vec![1499, 1501, 1497, 1503, 1495]);
    // Another metric than the index's, or exact asked for: exact search.
    assert_eq!(ids(&table, Metric::L1, IndexUse::Ef(5), None), ids(&table, Metric::L1, IndexUse::Exact, None));
    // A damaged graph only warns: the exact answer.
    std::fs::write(graph(&middle), b"HSHNSW01 but not much more").unwrap();
    assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);

    assert_eq!(table.drop_vector_index("embedding").unwrap(), 3);
    assert!(files.iter().all(|f| !graph(f).exists()));
    assert!(table.vector_indexes().is_empty());
    assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);
    let err = |e: Error| e.to_string();
    assert!(err(table.drop_vector_index("embedding").unwrap_err()).contains("has no vector index"));
    assert!(err(table.create_vector_index("name", params).unwrap_err()).contains("not a float vector column"));
    assert!(err(table.create_vector_index("nope", params).unwrap_err()).contains("'nope' is not in the table schema"));
    assert!(
        err(table.create_vector_index("embedding", HnswParams { m: 0, ..params }).unwrap_err()).contains("m must be")
    );
    // The data files themselves never changed.
    let after = table.data_files(table.metadata().current_snapshot()).unwrap();
    assert!(before
        .iter()
        .all(|b| after.iter().any(|a| a.file_path == b.file_path && a.file_size_in_bytes == b.file_size_in_bytes)));
}

#[test]
fn a_batched_search_answers_each_query_as_its_own_search_does() {
    use crate::vector::{IndexUse, Metric, VectorSearch, QUERY_COLUMN};
    use arrow::array::Int32Array;
    const DIM: i32 = 8;
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("embedding", DataType::FixedSizeList(item.clone(), DIM), true),
    ]));
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
    };
    let rows = |ids: std::ops::Range<i64>, next: &mut dyn FnMut() -> f32| {
        let values: Vec<f32> = ids.clone().flat_map(|_| (0..DIM).map(|_| next()).collect::<Vec<_>>()).collect();
        // Every 13th row has no vector.
        let valid = arrow::buffer::NullBuffer::from(ids.clone().map(|i| i % 13 != 0).collect::<Vec<_>>());
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(ids.clone())),
                Arc::new(StringArray::from(ids.clone().map(|i| format!("n{}", i % 5)).collect::<Vec<_>>())),
                Arc::new(FixedSizeListArray::new(item.clone(), DIM, Arc::new(Float32Array::from(values)), Some(valid))),
            ],
        )
        .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
    let append = |table: &mut Table, batch: RecordBatch| {
        table.append(RecordBatchIterator::new(vec![Ok(batch)], schema.clone())).unwrap();
    };
    append(&mut table, rows(0..1500, &mut next));
    append(&mut table, rows(1500..3000, &mut next));
    table.create_vector_index("embedding", HnswParams { metric: Metric::L2, m: 8, ef_construction: 60 }).unwrap();
    append(&mut table, rows(3000..3400, &mut next));
    table
        .delete_where(Some(
            &Predicate::from_json(r#"{"op":"in","column":"id","values":[1,2,3,1600,1601,3001]}"#).unwrap(),
        ))
        .unwrap();
    let files = table.data_files(table.metadata().current_snapshot()).unwrap();
    let filter = Predicate::from_json(r#"{"op":"in","column":"name","values":["n1","n3"]}"#).unwrap();
    let queries: Vec<Vec<f32>> = (0..17).map(|_| (0..DIM).map(|_| next()).collect()).collect();
    let columns = ["id".to_owned(), "name".to_owned()];
    for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
        for index in [IndexUse::Default, IndexUse::Ef(8), IndexUse::Exact] {
            for filter in [None, Some(&filter)] {
                for nulls_first in [false, true] {
                    let search =
                        VectorSearch { index, nulls_first, ..VectorSearch::new("embedding", Vec::new(), metric, 9) };
                    let all = table.search_many(files.clone(), Some(&columns), filter, &search, &queries, 64).unwrap();
                    assert_eq!(all.schema().field(0).name(), QUERY_COLUMN);
                    let which = all.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                    for (q, query) in queries.iter().enumerate() {
                        let one = VectorSearch { query: query.clone(), ..search.clone() };
                        let want = table.search(files.clone(), Some(&columns), filter, &one, 64).unwrap();
                        let at: Vec<u32> =
                            (0..all.num_rows() as u32).filter(|&r| which.value(r as usize) == q as i32).collect();
                        let got = take_record_batch(&all, &UInt32Array::from(at)).unwrap();
                        let what = format!(
                            "{metric} {index:?} filter {} nulls first {nulls_first} query {q}",
                            filter.is_some()
                        );
                        assert_eq!(got.num_rows(), 9, "{what}");
                        assert_eq!(got.column(1).as_ref(), want.column(0).as_ref(), "{what}: ids");
                        assert_eq!(got.column(2).as_ref(), want.column(1).as_ref(), "{what}: names");
                        let (g, w) =
                            (got.column(3).as_primitive::<Float64Type>(), want.column(2).as_primitive::<Float64Type>());
                        for r in 0..9 {
                            assert_eq!(g.is_null(r), w.is_null(r), "{what}");
                            assert!(
                                g.is_null(r) || (g.value(r) - w.value(r)).abs() <= 1e-5 * (1.0 + w.value(r).abs()),
                                "{what}"
                            );
                        }
                    }
                }
            }
        }
    }
    // The found rows' vectors, taken from the sidecars, are the rows' own as a scan reads them from
    // the Parquet pages; rows without one (first when nulls come first) have none.
    let mut scanned: HashMap<i64, Option<Vec<f32>>> = HashMap::new();
    for batch in table.scan_files(files.clone(), Some(&["id".to_owned(), "embedding".to_owned()]), 1000).unwrap() {
        let batch = batch.unwrap();
        let vectors = batch.column(1).as_fixed_size_list();
        for (r, id) in batch.column(0).as_primitive::<Int64Type>().values().iter().enumerate() {
            let vector = vectors.is_valid(r).then(|| vectors.value(r).as_primitive::<Float32Type>().values().to_vec());
            scanned.insert(*id, vector);
        }
    }
    let with_vectors = ["name".to_owned(), "embedding".to_owned(), "id".to_owned()];
    for index in [IndexUse::Ef(8), IndexUse::Exact] {
        for nulls_first in [false, true] {
            let search =
                VectorSearch { index, nulls_first, ..VectorSearch::new("embedding", Vec::new(), Metric::L2, 9) };
            let one = VectorSearch { query: queries[0].clone(), ..search.clone() };
            let single = table.search(files.clone(), Some(&with_vectors), None, &one, 64).unwrap();
            let batched =
                table.search_many(files.clone(), Some(&with_vectors), None, &search, &queries[..2], 64).unwrap();
            for (found, first) in [(&single, 0), (&batched, 1)] {
                let vectors = found.column(first + 1).as_fixed_size_list();
                for (r, id) in found.column(first + 2).as_primitive::<Int64Type>().values().iter().enumerate() {
                    let got =
                        vectors.is_valid(r).then(|| vectors.value(r).as_primitive::<Float32Type>().values().to_vec());
                    assert_eq!(&got, &scanned[id], "{index:?} nulls first {nulls_first}: row {id}");
                }
            }
            assert_eq!(nulls_first, single.column(1).is_null(0), "{index:?}");
        }
    }

    let bad = VectorSearch::new("embedding", Vec::new(), Metric::L2, 3);
    let err = table.search_many(files.clone(), None, None, &bad, &[vec![1.0; 8], vec![1.0; 3]], 64).unwrap_err();
    assert!(err.to_string().contains("query 1:"), "{err}");
    assert!(table
        .search_many(files, None, None, &bad, &[], 64)
        .unwrap_err()
        .to_string()
        .contains("at least one query"));
}
