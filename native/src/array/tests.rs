//! Store tests: every operation against a plain in-memory model, recovery from killed writers,
//! readers beside a writer, and refused input that leaves the files as they were.

use std::collections::BTreeMap;
use std::path::Path;

use super::batches::{from_column, to_batch};
use super::file::KilledAt;
use super::search::top_k_in_memory;
use super::*;
use crate::vector::metric::reference_distance;
use crate::vector::Metric;

use crate::rand::SplitMix64 as Rng;

/// Valid test values of every dtype.
trait Values {
    /// Valid values of `dtype` (bools 0/1, finite floats) as bytes.
    fn values(&mut self, dtype: DType, elements: usize) -> Vec<u8>;
}

impl Values for Rng {
    fn values(&mut self, dtype: DType, elements: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(elements * dtype.size());
        for _ in 0..elements {
            let r = self.next_u64();
            match dtype {
                DType::Bool => out.push((r & 1) as u8),
                DType::F16 => {
                    out.extend_from_slice(&half::f16::from_f32((r % 2000) as f32 / 100.0 - 10.0).to_le_bytes())
                }
                DType::F32 => out.extend_from_slice(&((r % 20000) as f32 / 1000.0 - 10.0).to_le_bytes()),
                DType::F64 => out.extend_from_slice(&((r % 2_000_000) as f64 / 1e5 - 10.0).to_le_bytes()),
                DType::Complex64 => {
                    out.extend_from_slice(&((r % 1000) as f32 - 500.0).to_le_bytes());
                    out.extend_from_slice(&(((r >> 20) % 1000) as f32 - 500.0).to_le_bytes());
                }
                DType::Complex128 => {
                    out.extend_from_slice(&((r % 1000) as f64 - 500.0).to_le_bytes());
                    out.extend_from_slice(&(((r >> 20) % 1000) as f64 - 500.0).to_le_bytes());
                }
                _ => out.extend_from_slice(&r.to_le_bytes()[..dtype.size()]),
            }
        }
        out
    }
}

/// The obviously correct twin: rows as byte vectors.
#[derive(Debug, Clone, PartialEq)]
struct Model {
    dtype: DType,
    row_shape: Vec<u64>,
    rows: Vec<Vec<u8>>,
}

impl Model {
    fn bytes(&self) -> Vec<u8> {
        self.rows.concat()
    }

    fn width(&self) -> usize {
        self.row_shape.iter().product::<u64>() as usize * self.dtype.size()
    }

    fn shape(&self) -> Vec<u64> {
        let mut s = vec![self.rows.len() as u64];
        s.extend_from_slice(&self.row_shape);
        s
    }
}

fn rows_of(bytes: &[u8], width: usize) -> Vec<Vec<u8>> {
    bytes.chunks_exact(width).map(<[u8]>::to_vec).collect()
}

fn assert_same(store: &ArrayStore, name: &str, model: &Model) {
    let info = store.info(name).unwrap();
    assert_eq!((info.dtype, info.shape.clone()), (model.dtype, model.shape()), "{name}");
    assert_eq!(store.load(name).unwrap().bytes.as_slice(), model.bytes().as_slice(), "{name}: load");
    assert_eq!(store.lazy(name).unwrap().bytes(), model.bytes().as_slice(), "{name}: lazy");
}

/// The message of the error `r` must be.
fn err<T>(r: crate::Result<T>) -> String {
    r.map(|_| ()).unwrap_err().to_string()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

#[test]
fn every_operation_round_trips_every_dtype_against_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let mut rng = Rng(11);
    let mut models = BTreeMap::new();
    for (case, dtype) in DType::ALL.into_iter().enumerate() {
        let row_shape: Vec<u64> = (0..rng.below(3)).map(|_| 1 + rng.below(5)).collect();
        let name = format!("{dtype}-{case}");
        let mut model = Model { dtype, row_shape, rows: Vec::new() };
        let width = model.width();
        let elements = width / dtype.size();
        let rows = rng.below(300) as usize;
        model.rows = rows_of(&rng.values(dtype, rows * elements), width);
        store.save(&name, dtype, &model.shape(), &model.bytes()).unwrap();
        assert_same(&store, &name, &model);

        for _ in 0..20 {
            match rng.below(5) {
                0 => {
                    let n = 1 + rng.below(50) as usize;
                    let new = rng.values(dtype, n * elements);
                    assert_eq!(store.append(&name, &new).unwrap(), (model.rows.len() + n) as u64);
                    model.rows.extend(rows_of(&new, width));
                }
                1 if !model.rows.is_empty() => {
                    let n = 1 + rng.below(30) as usize;
                    let indices: Vec<u64> = (0..n).map(|_| rng.below(model.rows.len() as u64)).collect();
                    let new = rng.values(dtype, n * elements);
                    store.replace(&name, &indices, &new).unwrap();
                    for (i, row) in indices.iter().zip(rows_of(&new, width)) {
                        model.rows[*i as usize] = row;
                    }
                }
                2 if !model.rows.is_empty() => {
                    let indices: Vec<u64> = (0..rng.below(10)).map(|_| rng.below(model.rows.len() as u64)).collect();
                    let left = store.drop_rows(&name, &indices).unwrap();
                    let mut i = 0;
                    model.rows.retain(|_| {
                        i += 1;
                        !indices.contains(&(i - 1))
                    });
                    assert_eq!(left, model.rows.len() as u64);
                }
                _ => {}
            }
            assert_same(&store, &name, &model);
            if !model.rows.is_empty() {
                let mut random: Vec<u64> = (0..rng.below(40)).map(|_| rng.below(model.rows.len() as u64)).collect();
                let got = store.get_rows(&name, &random).unwrap();
                assert_eq!(got.info.shape[0], random.len() as u64);
                assert_eq!(
                    got.bytes.as_slice(),
                    random.iter().map(|&i| model.rows[i as usize].clone()).collect::<Vec<_>>().concat()
                );
                random.sort_unstable();
                let got = store.get_rows(&name, &random).unwrap();
                assert_eq!(
                    got.bytes.as_slice(),
                    random.iter().map(|&i| model.rows[i as usize].clone()).collect::<Vec<_>>().concat()
                );
                let (a, b) = (rng.below(model.rows.len() as u64), rng.below(model.rows.len() as u64 + 1));
                let (start, end) = (a.min(b), a.max(b));
                let got = store.slice(&name, start, end).unwrap();
                assert_eq!(got.bytes.as_slice(), model.rows[start as usize..end as usize].concat());
            }
        }

        // Arrow batches carry the array and come back as exactly it.
        let array = store.load(&name).unwrap();
        let batch = to_batch(&array.info, 0..array.info.rows(), array.bytes.clone()).unwrap();
        let field = batch.schema().field(1).clone();
        let (dtype_back, shape_back, bytes_back) = from_column(batch.column(1).as_ref(), Some(&field)).unwrap();
        assert_eq!(
            (dtype_back, shape_back.as_slice(), bytes_back.as_slice()),
            (dtype, model.row_shape.as_slice(), model.bytes().as_slice())
        );

        // .npy out and back in.
        let npy = dir.path().join(format!("{case}.npy"));
        store.export_npy(&name, &npy).unwrap();
        store.import_npy(&format!("{name}-copy"), &npy).unwrap();
        assert_same(&store, &format!("{name}-copy"), &model);
        models.insert(name, model);
    }

    // A second store over the same directory sees the same arrays; dropping removes the files.
    let other = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    for (name, model) in &models {
        assert_same(&other, name, model);
    }
    let first = models.keys().next().unwrap().clone();
    store.drop_array(&first).unwrap();
    let data_files = snapshot(dir.path()).keys().filter(|f| f.ends_with(".hsa")).count();
    assert_eq!(data_files, store.names().unwrap().len(), "a dropped array's data file stays behind");
    assert!(!other.contains(&first).unwrap());
}

#[test]
fn refused_changes_name_the_problem_and_leave_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let rows: Vec<u8> = (0..40u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    store.save("a", DType::F32, &[10, 4], &rows).unwrap();
    store.replace("a", &[1], &rows[..16]).unwrap();
    let before = snapshot(dir.path());
    assert!(err(store.append("a", &rows[..10]))
        .contains("append to 'a': 10 bytes are not whole rows of [4] float32 (16 bytes each)"));
    assert!(err(store.replace("a", &[3, 10], &rows[..32])).contains("row 10 is out of range for array 'a' of 10 rows"));
    assert!(err(store.replace("a", &[3], &rows[..32])).contains("1 indices but 2 rows"));
    assert!(err(store.get_rows("a", &[99])).contains("row 99 is out of range"));
    assert!(err(store.slice("a", 4, 11)).contains("rows 4..11 are out of range"));
    assert!(err(store.drop_rows("a", &[10])).contains("row 10 is out of range"));
    assert!(err(store.drop_array("missing")).contains("not found: array 'missing'"));
    assert!(err(store.load("missing")).contains("not found: array 'missing'"));
    assert!(err(store.save("b", DType::F32, &[3, 4], &rows)).contains("shape [3, 4] has 3 rows but 160 bytes hold 10"));
    assert!(err(store.save("b", DType::F32, &[10, 0], &[])).contains("dimension 1 of the shape is 0"));
    assert!(err(store.save("", DType::F32, &[10, 4], &rows)).contains("array name \"\" is not allowed"));
    assert!(err(store.save("../up", DType::F32, &[10, 4], &rows)).contains("path separator"));
    // Arrow input of the wrong kind.
    let strings = arrow::array::StringArray::from(vec!["x"]);
    assert!(from_column(&strings, None).unwrap_err().to_string().contains("cannot be stored"));
    let with_null = arrow::array::Float32Array::from(vec![Some(1.0), None]);
    assert!(from_column(&with_null, None).unwrap_err().to_string().contains("cannot be null"));
    assert_eq!(snapshot(dir.path()), before, "a refused change touched the files");

    let read_only = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    assert!(err(read_only.append("a", &rows[..16])).contains("opened read-only"));
    assert!(
        ArrayStore::open(dir.path().join("nowhere"), StoreOptions { read_only: true, ..Default::default() }).is_err()
    );
}

#[test]
fn damaged_files_are_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    store.save("a", DType::U8, &[4, 2], &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let data = dir.path().join("data-1.hsa");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[8] = 200; // 200 rows committed, 4 present
    std::fs::write(&data, &bytes).unwrap();
    let fresh = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let e = fresh.load("a").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("200 rows of 2 bytes committed but only 4104 bytes present"), "{e}");
    // A row count whose size wraps past 2^64 (rows x 2 bytes = 2^64 + 8) is as short of bytes.
    bytes[8..16].copy_from_slice(&((1u64 << 63) + 4).to_le_bytes());
    std::fs::write(&data, &bytes).unwrap();
    let fresh = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let e = fresh.load("a").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{e}");
    // A catalog entry naming a file that is not the store's own is refused before anything reads or
    // deletes it, as is a row shape that does not fit.
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"keep").unwrap();
    for entry in [r#""file": "../victim.txt""#, r#""file": "/etc/passwd""#, r#""file": "data-1.hsa/../../x""#] {
        let catalog = format!(
            r#"{{"format": 1, "next_file": 2, "arrays": {{"a": {{"dtype": "uint8", "row_shape": [2], {entry}}}}}}}"#
        );
        std::fs::write(dir.path().join("arrays.json"), catalog).unwrap();
        let e = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap_err();
        assert!(e.kind() == crate::error::ErrorKind::Corrupt && e.to_string().contains("not a data file name"), "{e}");
    }
    let huge = r#"{"format": 1, "next_file": 2, "arrays": {"a": {"dtype": "float64", "row_shape": [4294967296, 4294967296], "file": "data-1.hsa"}}}"#;
    std::fs::write(dir.path().join("arrays.json"), huge).unwrap();
    assert_eq!(
        ArrayStore::open(dir.path(), StoreOptions::default()).unwrap_err().kind(),
        crate::error::ErrorKind::Corrupt
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    std::fs::write(dir.path().join("arrays.json"), b"{ not json").unwrap();
    let e = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap_err();
    assert!(e.to_string().contains("array store catalog") && e.kind() == crate::error::ErrorKind::Corrupt, "{e}");
}

#[test]
fn a_replace_killed_at_any_stage_leaves_the_old_rows_or_the_new_ones() {
    for stop in [
        KilledAt::JournalBody,
        KilledAt::JournalCommitted,
        KilledAt::Applying(0),
        KilledAt::Applying(2),
        KilledAt::Applying(4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let old: Vec<u8> = (0..64u8).collect();
        let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
        store.save("a", DType::U8, &[16, 4], &old).unwrap();
        let indices = [3u64, 9, 3, 15];
        let rows: Vec<u8> = (200..216u8).collect();
        let mut new = old.clone();
        for (i, &r) in indices.iter().enumerate() {
            new[r as usize * 4..r as usize * 4 + 4].copy_from_slice(&rows[i * 4..i * 4 + 4]);
        }
        store.replace_killed("a", &indices, &rows, stop).unwrap();
        let want = if stop == KilledAt::JournalBody { &old } else { &new };
        // Readers in the middle of it see a whole state: the overlay covers the rows still being written.
        let reader = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
        if matches!(stop, KilledAt::Applying(_)) {
            assert_eq!(
                reader.load("a").unwrap().bytes.as_slice(),
                want.as_slice(),
                "{stop:?}: reader during the replace"
            );
            assert_eq!(
                reader.get_rows("a", &[3, 0]).unwrap().bytes.as_slice(),
                &[want[12..16].to_vec(), want[..4].to_vec()].concat()[..]
            );
        }
        drop(store);
        // The next writer finishes a committed replace before anything else.
        let reopened = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(reopened.load("a").unwrap().bytes.as_slice(), want.as_slice(), "{stop:?}");
        assert_eq!(reader.load("a").unwrap().bytes.as_slice(), want.as_slice(), "{stop:?}: reader after recovery");
        reopened.append("a", &[9, 9, 9, 9]).unwrap();
        assert_eq!(reopened.info("a").unwrap().shape, vec![17, 4]);
    }
}

#[test]
fn readers_beside_a_writer_always_see_whole_states() {
    let dir = tempfile::tempdir().unwrap();
    let writer = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let (rows, width) = (2000usize, 64usize);
    writer.save("a", DType::U8, &[rows as u64, width as u64], &vec![0u8; rows * width]).unwrap();
    let all: Vec<u64> = (0..rows as u64).collect();
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let store = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
            let mut seen = 0;
            while seen < 200 {
                let data = store.load("a").unwrap();
                let first = data.bytes[0];
                // Every replace sets every row of the first 2000 to one value; appends add whole rows.
                assert!(data.bytes[..rows * width].iter().all(|&b| b == first), "a load saw two replaces at once");
                for row in data.bytes[rows * width..].chunks_exact(width) {
                    assert!(row.iter().all(|&b| b == row[0]), "a load saw half an appended row");
                }
                seen += 1;
            }
        });
        for round in 1..=100u8 {
            writer.replace("a", &all, &vec![round; rows * width]).unwrap();
            writer.append("a", &vec![round; width * 3]).unwrap();
        }
        reader.join().unwrap();
    });
}

#[test]
fn durable_mode_keeps_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions { durable: true, ..Default::default() }).unwrap();
    store.save("a", DType::I64, &[2], &[1u8; 16]).unwrap();
    store.append("a", &[2u8; 8]).unwrap();
    store.replace("a", &[0], &[3u8; 8]).unwrap();
    assert_eq!(store.load("a").unwrap().bytes.as_slice(), [[3u8; 8], [1u8; 8], [2u8; 8]].concat());
}

fn reference_top_k(metric: Metric, query: &[f32], rows: &[Vec<f32>], k: usize) -> Vec<u64> {
    let mut all: Vec<(f64, u64)> =
        rows.iter().enumerate().map(|(i, r)| (reference_distance(metric, query, r), i as u64)).collect();
    all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, i)| i).collect()
}

#[test]
fn top_k_over_a_stored_array_equals_a_float64_sort() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let mut rng = Rng(5);
    let (rows, dim) = (20_000usize, 13usize);
    for dtype in [DType::F32, DType::F64, DType::F16, DType::I8] {
        let bytes = rng.values(dtype, rows * dim);
        let name = dtype.name();
        store.save(name, dtype, &[rows as u64, dim as u64], &bytes).unwrap();
        let floats: Vec<Vec<f32>> = bytes
            .chunks_exact(dim * dtype.size())
            .map(|r| match dtype {
                DType::F32 => r.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect(),
                DType::F64 => r.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap()) as f32).collect(),
                DType::I8 => r.iter().map(|&b| b as i8 as f32).collect(),
                _ => r.chunks_exact(2).map(|b| half::f16::from_le_bytes(b.try_into().unwrap()).to_f32()).collect(),
            })
            .collect();
        let queries: Vec<Vec<f32>> = (0..3)
            .map(|_| {
                rng.values(DType::F32, dim).chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
            })
            .collect();
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            let got = store.top_k(name, metric, &queries, 10).unwrap();
            let memory = top_k_in_memory(&store.load(name).unwrap(), metric, &queries, 10).unwrap();
            for (q, (hits, mem)) in queries.iter().zip(got.iter().zip(&memory)) {
                let want = reference_top_k(metric, q, &floats, 10);
                let ids: Vec<u64> = hits.iter().map(|n| n.ordinal).collect();
                assert_eq!(ids, want, "{dtype} {metric}");
                assert_eq!(ids, mem.iter().map(|n| n.ordinal).collect::<Vec<_>>());
            }
        }
    }
    // Binary metrics over bit-packed uint8 rows.
    let bits: Vec<u8> = rng.values(DType::U8, 500 * 8);
    store.save("bits", DType::U8, &[500, 8], &bits).unwrap();
    let query: Vec<f32> = bits[8 * 77..8 * 78].iter().map(|&b| b as f32).collect();
    let hits = store.top_k("bits", Metric::Hamming, std::slice::from_ref(&query), 3).unwrap();
    assert_eq!((hits[0][0].ordinal, hits[0][0].distance), (77, 0.0));
    assert_eq!(store.top_k("bits", Metric::Jaccard, &[query], 1).unwrap()[0][0].ordinal, 77);
    // Refusals.
    let e = err::<Vec<Vec<crate::vector::Neighbor>>>;
    assert!(e(store.top_k("float32", Metric::L2, &[vec![0.0; 12]], 10))
        .contains("query vector has 12 dimensions but the column has 13"));
    assert!(e(store.top_k("float32", Metric::Hamming, &[vec![0.0; 13]], 10)).contains("compares bit-packed uint8 rows"));
    assert!(e(store.top_k("bits", Metric::L2, &[vec![0.0; 8]], 10)).contains("compares float vectors"));
    assert!(e(store.top_k("float32", Metric::L2, &[vec![f32::NAN; 13]], 10)).contains("query vector holds NaN"));
}

#[test]
fn searches_on_gpu_backends_answer_as_the_cpu_does() {
    use crate::vector::gpu::{assert_same_neighbors, test_device, Backend};
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let (rows, dim) = (3000usize, 19usize);
    let values = crate::vector::test_values(8, rows * dim);
    let f32s: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let f16s: Vec<u8> = values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect();
    store.save("f32", DType::F32, &[rows as u64, dim as u64], &f32s).unwrap();
    store.save("f16", DType::F16, &[rows as u64, dim as u64], &f16s).unwrap();
    let queries: Vec<Vec<f32>> = (0..4).map(|i| crate::vector::test_values(50 + i, dim)).collect();
    let gpu = test_device();
    for name in ["f32", "f16"] {
        let floats: Vec<f32> = match name {
            "f32" => values.clone(),
            _ => values.iter().map(|v| half::f16::from_f32(*v).to_f32()).collect(),
        };
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            let cpu = store.top_k_on(name, metric, &queries, 17, Backend::Cpu).unwrap();
            assert_eq!(cpu.backend, "cpu");
            // Small batches stay on the CPU under auto.
            let auto = store.top_k_on(name, metric, &queries, 17, Backend::Auto).unwrap();
            assert_eq!((auto.backend, &auto.neighbors), ("cpu", &cpu.neighbors));
            let Some(gpu) = gpu else { continue };
            let on = store.top_k_on(name, metric, &queries, 17, gpu).unwrap();
            assert_eq!(on.backend, gpu.name());
            for (q, (g, c)) in queries.iter().zip(on.neighbors.iter().zip(&cpu.neighbors)) {
                let query = crate::vector::FloatQuery::new(metric, q.clone(), dim).unwrap();
                assert_same_neighbors(
                    g,
                    c,
                    |r| query.distance(&floats[r as usize * dim..][..dim]),
                    &format!("{name} {metric}"),
                );
            }
        }
    }
    let e = err::<crate::vector::gpu::BatchResult>;
    assert!(e(store.top_k_on("f32", Metric::Hamming, &queries, 3, Backend::Wgpu)).contains("runs on the CPU only"));
    if !cfg!(feature = "cuda") {
        assert!(e(store.top_k_on("f32", Metric::L2, &queries, 3, Backend::Cuda)).contains("--features cuda"));
    }
}

#[test]
fn top_k_during_a_replace_sees_the_new_rows() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
    let rows: Vec<u8> = (0..100u32).flat_map(|i| [(i as f32).to_le_bytes(), 0f32.to_le_bytes()].concat()).collect();
    store.save("v", DType::F32, &[100, 2], &rows).unwrap();
    // Row 50 moves next to the query at (-5, 0) while rows 0..2 keep their old places.
    let new: Vec<u8> = [(-5f32).to_le_bytes(), 0f32.to_le_bytes()].concat();
    store.replace_killed("v", &[50], &new, KilledAt::Applying(0)).unwrap();
    let reader = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let hits = reader.top_k("v", Metric::L2, &[vec![-5.0, 0.0]], 2).unwrap();
    assert_eq!(hits[0].iter().map(|n| n.ordinal).collect::<Vec<_>>(), vec![50, 0]);
}

#[test]
fn engine_batches_convert_back_to_exactly_the_stored_rows() {
    let mut rng = Rng(5);
    for dtype in DType::ALL {
        for row_shape in [vec![], vec![3], vec![2, 2]] {
            let info = ArrayInfo { name: "a".into(), dtype, shape: [&[40u64][..], &row_shape].concat() };
            let bytes = rng.values(dtype, 40 * info.row_elements());
            let batch = to_batch(&info, 0..40, arrow::buffer::Buffer::from_vec(bytes.clone())).unwrap();
            let engine = super::batches::to_engine(batch).unwrap();
            assert_eq!(engine.schema(), super::batches::engine_schema(dtype, &row_shape), "{dtype}");
            let field = engine.schema().field(1).clone();
            let (back, shape, got) = from_column(engine.column(1).as_ref(), Some(&field)).unwrap();
            assert_eq!(
                (back, shape, got.as_slice()),
                (dtype, row_shape.clone(), bytes.as_slice()),
                "{dtype} {row_shape:?}"
            );
        }
    }
    // Values an engine sends that the dtype cannot hold are refused, never wrapped.
    let named = |element: arrow::datatypes::DataType, dtype: &str| {
        arrow::datatypes::Field::new("value", element, false)
            .with_metadata([(super::batches::DTYPE_KEY.to_string(), dtype.to_string())])
    };
    let shorts = arrow::array::Int16Array::from(vec![1, 300]);
    let e = from_column(&shorts, Some(&named(arrow::datatypes::DataType::Int16, "uint8"))).unwrap_err().to_string();
    assert!(e.contains("do not fit a uint8 array"), "{e}");
    let negative = arrow::array::Int64Array::from(vec![-1]);
    assert!(from_column(&negative, Some(&named(arrow::datatypes::DataType::Int64, "uint64"))).is_err());
    let floats = arrow::array::Float32Array::from(vec![1.5]);
    let e = from_column(&floats, Some(&named(arrow::datatypes::DataType::Float32, "int32"))).unwrap_err().to_string();
    assert!(e.contains("values of Float32 cannot be stored in a int32 array"), "{e}");
    let fits = arrow::array::Int16Array::from(vec![0, 255]);
    let (dtype, _, bytes) = from_column(&fits, Some(&named(arrow::datatypes::DataType::Int16, "uint8"))).unwrap();
    assert_eq!((dtype, bytes.as_slice()), (DType::U8, &[0u8, 255][..]));
}

#[test]
fn batch_mode_holds_changes_until_one_flush_and_matches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(ArrayStore::open(dir.path(), StoreOptions::default()).unwrap());
    let mut rng = Rng(23);
    let mut models = BTreeMap::new();
    for (i, dtype) in [DType::F32, DType::I64, DType::U8].into_iter().enumerate() {
        let model = Model {
            dtype,
            row_shape: vec![1 + i as u64],
            rows: rows_of(&rng.values(dtype, 50 * (1 + i)), dtype.size() * (1 + i)),
        };
        store.save(&format!("a{i}"), dtype, &model.shape(), &model.bytes()).unwrap();
        models.insert(format!("a{i}"), model);
    }
    let before = snapshot(dir.path());
    let batch = store.batch();
    for _ in 0..300 {
        let name = format!("a{}", rng.below(3));
        let model = models.get_mut(&name).unwrap();
        let (width, elements) = (model.width(), model.width() / model.dtype.size());
        match rng.below(3) {
            0 => {
                let new = rng.values(model.dtype, elements);
                assert_eq!(batch.append(&name, &new).unwrap(), model.rows.len() as u64 + 1);
                model.rows.push(new);
            }
            1 => {
                let row = rng.below(model.rows.len() as u64);
                let new = rng.values(model.dtype, elements);
                batch.replace(&name, &[row], &new).unwrap();
                model.rows[row as usize] = new;
            }
            _ => {
                let row = rng.below(model.rows.len() as u64);
                batch.drop_rows(&name, &[row]).unwrap();
                model.rows.remove(row as usize);
            }
        }
        assert_eq!(batch.load(&name).unwrap().bytes.as_slice(), model.bytes().as_slice());
        assert_eq!(model.width(), width);
    }
    batch.drop_array("a2").unwrap();
    models.remove("a2");
    assert!(err(batch.append("a2", &[1])).contains("dropped in this batch"));
    assert!(err(batch.replace("a0", &[10_000], &[0; 4])).contains("row 10000 is out of range"));
    assert!(err(batch.drop_array("missing")).contains("array 'missing'"));
    // Nothing reached the files before the flush; a failed change changed nothing in the batch.
    assert_eq!(snapshot(dir.path()), before);
    assert_eq!(batch.names().unwrap(), vec!["a0", "a1"]);
    batch.flush().unwrap();
    assert_eq!(batch.pending().unwrap(), 0);
    let reader = ArrayStore::open(dir.path(), StoreOptions { read_only: true, ..Default::default() }).unwrap();
    assert_eq!(reader.names().unwrap(), vec!["a0", "a1"]);
    for (name, model) in &models {
        assert_same(&reader, name, model);
    }
    assert_eq!(
        snapshot(dir.path()).keys().filter(|f| f.ends_with(".hsa")).count(),
        2,
        "replaced data files stay behind"
    );

    // Replaces and appends alone are written in place; another writer's appends meanwhile stay first.
    let model = models.get_mut("a0").unwrap();
    let files = snapshot(dir.path()).into_keys().filter(|f| f.ends_with(".hsa")).collect::<Vec<_>>();
    let batch = store.batch();
    let mut appended = Vec::new();
    for _ in 0..50 {
        let row = rng.below(model.rows.len() as u64) as usize;
        let new = rng.values(DType::F32, 1);
        batch.replace("a0", &[row as u64], &new).unwrap();
        model.rows[row] = new;
        let more = rng.values(DType::F32, 1);
        batch.append("a0", &more).unwrap();
        appended.push(more);
    }
    // Rows the batch appended can be replaced before the flush too.
    let base = model.rows.len() as u64;
    let new = rng.values(DType::F32, 1);
    batch.replace("a0", &[base + 3], &new).unwrap();
    appended[3] = new;
    let other = rng.values(DType::F32, 2);
    store.append("a0", &other).unwrap();
    model.rows.extend(rows_of(&other, 4));
    batch.flush().unwrap();
    model.rows.extend(appended);
    assert_same(&reader, "a0", model);
    assert_eq!(
        snapshot(dir.path()).into_keys().filter(|f| f.ends_with(".hsa")).collect::<Vec<_>>(),
        files,
        "written in place"
    );

    // A batch over an array another writer rewrote meanwhile refuses to flush it.
    let batch = store.batch();
    batch.append("a1", &rng.values(DType::I64, 2)).unwrap();
    store.drop_rows("a1", &[0, 1, 2]).unwrap();
    assert!(err(batch.flush()).contains("rewritten by another writer"));
    assert_eq!(batch.pending().unwrap(), 1, "the refused changes stay in the batch");
}

#[test]
fn staged_parts_commit_as_one_append_or_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArrayStore::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let staging = ArrayStore::open(dir.path().join("staging"), StoreOptions::default()).unwrap();
    let mut rng = Rng(8);
    let parts: Vec<Vec<u8>> = (0..3).map(|i| rng.values(DType::F32, 4 * (i + 1))).collect();
    for (i, p) in parts.iter().enumerate() {
        staging.save(&format!("p{i}"), DType::F32, &[(i + 1) as u64, 4], p).unwrap();
    }
    let names: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
    // No array yet: the parts make it; then they append; an overwrite replaces it.
    assert_eq!(store.commit_parts("v", &staging, &names, false).unwrap().shape, vec![6, 4]);
    assert_eq!(store.commit_parts("v", &staging, &names[..1], false).unwrap().shape, vec![7, 4]);
    assert_eq!(store.load("v").unwrap().bytes.as_slice(), [parts.concat(), parts[0].clone()].concat());
    assert_eq!(store.commit_parts("v", &staging, &names[2..], true).unwrap().shape, vec![3, 4]);
    assert_eq!(store.load("v").unwrap().bytes.as_slice(), parts[2].as_slice());
    // Parts of another layout are refused and leave the array as it was.
    staging.save("odd", DType::F64, &[1, 4], &[0; 32]).unwrap();
    let before = snapshot(&dir.path().join("store"));
    let e = err(store.commit_parts("v", &staging, &["p0".into(), "odd".into()], false));
    assert!(e.contains("parts disagree"), "{e}");
    let e = err(store.commit_parts("v", &staging, &["odd".into()], false));
    assert!(e.contains("do not fit array 'v'"), "{e}");
    assert!(err(store.commit_parts("v", &staging, &[], false)).contains("no parts"));
    assert_eq!(snapshot(&dir.path().join("store")), before);
}
