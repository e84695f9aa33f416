//! Array store benchmark (the native half of `bench/array_store.py`): the NumPack README's workloads
//! on a store in `<dir>`, over the arrays in `<table.npy>` (rows x 10 f32) and `<vectors.npy>`
//! (rows x 128 f32) with the queries in `<queries.npy>`. Prints one JSON object of median
//! milliseconds, plus the ids each top-10 query found.
//!
//!     cargo run --release --example array_bench -- <dir> <table.npy> <vectors.npy> <queries.npy>

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::median;
use hyperstream::array::npy::parse_header;
use hyperstream::array::{ArrayStore, DType, StoreOptions};
use hyperstream::vector::Metric;

fn read_npy(path: &str) -> (Vec<u64>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let (dtype, shape, start) = parse_header(&bytes, path).unwrap();
    assert_eq!(dtype, DType::F32, "{path}");
    (shape, bytes[start..].to_vec())
}

/// Median milliseconds of `runs` calls of `f`.
fn time_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

/// `n` random row indices below `below`.
fn indices(seed: u64, n: usize, below: u64) -> Vec<u64> {
    let mut rng = hyperstream::rand::SplitMix64(seed);
    (0..n).map(|_| rng.below(below)).collect()
}

fn ops(store: &Arc<ArrayStore>, shape: &[u64], data: &[u8], runs: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let mut put = |k: &str, v: f64| {
        out.insert(k.to_string(), v.into());
    };
    let rows = shape[0];
    let row_bytes = data.len() / rows as usize;
    // Each save starts with the page cache written back (as the Python side does), so that one
    // save's writeback does not slow the next.
    let saves = (0..5)
        .map(|_| {
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            time_ms(1, || drop(store.save("a", DType::F32, shape, data).unwrap()))
        })
        .collect();
    put("save", median(saves));
    put("load", time_ms(runs, || drop(store.load("a").unwrap())));
    put("lazy", time_ms(runs, || drop(store.lazy("a").unwrap())));
    let new_rows = vec![7u8; 100 * row_bytes];
    let mut seed = 0;
    put(
        "replace_100",
        time_ms(runs, || {
            seed += 1;
            store.replace("a", &indices(seed, 100, rows), &new_rows).unwrap();
        }),
    );
    put(
        "append_100",
        time_ms(runs, || {
            store.append("a", &new_rows).unwrap();
        }),
    );
    for n in [100, 1000, 10_000] {
        let wanted = indices(n as u64, n, rows);
        put(&format!("getitem_{n}"), time_ms(runs, || drop(store.get_rows("a", &wanted).unwrap())));
    }
    // 100 one-row replaces and 100 one-row appends: each on its own, then in one batch (one flush).
    let row = &new_rows[..row_bytes];
    put(
        "small_200",
        time_ms(runs.min(7), || {
            for at in indices(5, 100, rows) {
                store.replace("a", &[at], row).unwrap();
                store.append("a", row).unwrap();
            }
        }),
    );
    put(
        "batch_200",
        time_ms(runs.min(7), || {
            let batch = store.batch();
            for at in indices(6, 100, rows) {
                batch.replace("a", &[at], row).unwrap();
                batch.append("a", row).unwrap();
            }
            batch.flush().unwrap();
        }),
    );
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: array_bench <dir> <table.npy> <vectors.npy> <queries.npy>");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let _ = std::fs::remove_dir_all(dir);
    let (shape, data) = read_npy(&args[2]);
    let (vshape, vectors) = read_npy(&args[3]);
    let (qshape, queries) = read_npy(&args[4]);
    let dim = vshape[1] as usize;
    assert_eq!(qshape[1] as usize, dim);

    let store = Arc::new(ArrayStore::open(dir.join("plain"), StoreOptions::default()).unwrap());
    let plain = ops(&store, &shape, &data, 21);
    let durable_store =
        Arc::new(ArrayStore::open(dir.join("durable"), StoreOptions { durable: true, ..Default::default() }).unwrap());
    let durable = ops(&durable_store, &shape, &data, 7);

    store.save("v", DType::F32, &vshape, &vectors).unwrap();
    let queries: Vec<Vec<f32>> = queries
        .chunks_exact(dim * 4)
        .map(|q| q.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect())
        .collect();
    // Warm the page cache and the mapping, as NumPack's file search gets after its save.
    store.top_k("v", Metric::L2, &queries[..1], 10).unwrap();
    let mut ids = Vec::new();
    let topk = median(
        queries
            .iter()
            .map(|q| {
                let start = Instant::now();
                let hits = store.top_k("v", Metric::L2, std::slice::from_ref(q), 10).unwrap();
                let ms = start.elapsed().as_secs_f64() * 1e3;
                ids.push(hits[0].iter().map(|n| n.ordinal).collect::<Vec<_>>());
                ms
            })
            .collect(),
    );
    let batched = time_ms(3, || drop(store.top_k("v", Metric::L2, &queries, 10).unwrap())) / queries.len() as f64;
    // The same rows stored as float16 (half the bytes) and quantized to int8 (a quarter), each read at
    // its own width and widened as it is compared.
    let floats: Vec<f32> = vectors.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let largest = floats.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
    let halves: Vec<u8> = floats.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect();
    let bytes: Vec<u8> = floats.iter().map(|v| (v / largest * 127.0).round() as i8 as u8).collect();
    let narrow = |name: &str, dtype: DType, data: &[u8]| {
        store.save(name, dtype, &vshape, data).unwrap();
        store.top_k(name, Metric::L2, &queries[..1], 10).unwrap();
        median(
            queries
                .iter()
                .map(|q| {
                    let start = Instant::now();
                    drop(store.top_k(name, Metric::L2, std::slice::from_ref(q), 10).unwrap());
                    start.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        )
    };
    let topk_f16 = narrow("h", DType::F16, &halves);
    let topk_i8 = narrow("b", DType::I8, &bytes);
    let report = serde_json::json!({
        "plain": plain,
        "durable": durable,
        "topk_stream": topk,
        "topk_batched_per_query": batched,
        "topk_f16_stream": topk_f16,
        "topk_i8_stream": topk_i8,
        "ids": ids,
        "threads": rayon::current_num_threads(),
    });
    println!("{report}");
}
