//! Exact top-k benchmark, native half: reads `rows x dim` little-endian f32 vectors and `queries x dim`
//! queries (raw files written by bench/vector_topk.py), then times, per query, the native exact top-k
//! and a memory-read floor (one parallel pass summing the same bytes). Prints one JSON object.
//!
//!   topk_bench <vectors.f32> <queries.f32> <dim> <k> <metric>

use std::time::Instant;

use hyperstream::vector::kernels::kernels;
use hyperstream::vector::{exact_top_k, FloatQuery, Metric};
use rayon::prelude::*;

fn read_f32(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

/// Sums `values` in 16 independent lanes, so the pass is bound by memory, not by a chain of adds.
fn lane_sum(values: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = values.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for i in 0..16 {
            acc[i] += chunk[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: topk_bench <vectors.f32> <queries.f32> <dim> <k> <metric>");
        std::process::exit(2);
    }
    let vectors = read_f32(&args[1]);
    let queries = read_f32(&args[2]);
    let dim: usize = args[3].parse().expect("dim");
    let k: usize = args[4].parse().expect("k");
    let metric = Metric::parse(&args[5]).expect("metric");
    let rows = vectors.len() / dim;

    // Warm the pages and the thread pool once.
    let _ = exact_top_k(&FloatQuery::new(metric, queries[..dim].to_vec(), dim).unwrap(), &vectors, None, 0, k);

    let mut search_ms = Vec::new();
    let mut results = Vec::new();
    for q in queries.chunks_exact(dim) {
        let query = FloatQuery::new(metric, q.to_vec(), dim).unwrap();
        let start = Instant::now();
        let top = exact_top_k(&query, &vectors, None, 0, k).into_sorted();
        search_ms.push(start.elapsed().as_secs_f64() * 1e3);
        results.push(top.iter().map(|n| n.ordinal).collect::<Vec<_>>());
    }
    let mut floor_ms = Vec::new();
    let mut checksum = 0f32;
    for _ in 0..queries.len() / dim {
        let start = Instant::now();
        checksum += vectors.par_chunks(64 * 1024).map(lane_sum).sum::<f32>();
        floor_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let results = results.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>().join(",");
    println!(
        "{{\"rows\":{rows},\"dim\":{dim},\"k\":{k},\"isa\":\"{}\",\"threads\":{},\"search_ms\":{:.3},\"floor_ms\":{:.3},\"checksum\":{checksum},\"ids\":[{results}]}}",
        kernels().isa,
        rayon::current_num_threads(),
        median(search_ms),
        median(floor_ms)
    );
}
