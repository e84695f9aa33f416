//! HNSW benchmark, native half: reads `rows x dim` vectors and `queries x dim` queries (raw
//! little-endian f32 files, see tests/gen_clustered.py), builds the HNSW graph of all rows, stores
//! and re-reads it the way a table does (the flat form, searched in place), and for each ef in the
//! list times single queries and measures recall@k against exact search, without and with a filter
//! passing every tenth row. Prints one JSON object, exact neighbours included so that the peer's
//! recall is measured against the same truth.
//!
//!   hnsw_bench <vectors.f32> <queries.f32> <dim> <k> <metric> <m> <ef_construction> <ef,ef,...>

mod common;
use common::{median, Inputs};

use std::collections::HashSet;
use std::time::Instant;

use arrow::buffer::BooleanBuffer;
use hyperstream::vector::hnsw::{HnswGraph, HnswParams};
use hyperstream::vector::{exact_top_k, FloatQuery};

fn main() {
    let Inputs { vectors, queries, dim, k, metric, rest, .. } =
        Inputs::from_args("hnsw_bench", &["<m>", "<ef_construction>", "<ef,ef,...>"]);
    let params = HnswParams {
        metric,
        m: rest[0].parse().expect("m"),
        ef_construction: rest[1].parse().expect("ef_construction"),
    };
    let efs: Vec<usize> = rest[2].split(',').map(|e| e.parse().expect("ef")).collect();
    let rows = vectors.len() / dim;
    let all = BooleanBuffer::new_set(rows);
    let tenth = BooleanBuffer::collect_bool(rows, |i| i % 10 == 0);

    let start = Instant::now();
    let built = HnswGraph::build(&vectors, dim, &all, params).expect("build");
    let build_s = start.elapsed().as_secs_f64();
    let bytes = built.to_bytes();
    let graph = HnswGraph::parse(&bytes, rows, dim, "bench").expect("parse");

    let queries: Vec<FloatQuery> =
        queries.chunks_exact(dim).map(|q| FloatQuery::new(metric, q.to_vec(), dim).unwrap()).collect();
    let truth = |filter: Option<&BooleanBuffer>| -> Vec<Vec<u64>> {
        queries
            .iter()
            .map(|q| exact_top_k(q, &vectors, filter, 0, k).into_sorted().iter().map(|n| n.ordinal).collect())
            .collect()
    };
    let (plain_truth, filtered_truth) = (truth(None), truth(Some(&tenth)));
    let run = |ef: usize, allowed: &BooleanBuffer, truth: &[Vec<u64>]| -> serde_json::Value {
        // Warm once, then time every query on its own.
        graph.search(&queries[0], &vectors, k, ef, allowed).unwrap();
        let mut ms = Vec::new();
        let mut hits = 0;
        for (q, want) in queries.iter().zip(truth) {
            let start = Instant::now();
            let found = graph.search(q, &vectors, k, ef, allowed).unwrap();
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            let want: HashSet<u64> = want.iter().copied().collect();
            assert!(found.iter().all(|n| allowed.value(n.ordinal as usize)), "filtered results satisfy the filter");
            hits += found.iter().filter(|n| want.contains(&n.ordinal)).count();
        }
        serde_json::json!({"ef": ef, "recall": hits as f64 / (k * queries.len()) as f64, "median_ms": median(ms)})
    };
    let plain: Vec<_> = efs.iter().map(|&ef| run(ef, &all, &plain_truth)).collect();
    let filtered: Vec<_> = efs.iter().map(|&ef| run(ef, &tenth, &filtered_truth)).collect();
    println!(
        "{}",
        serde_json::json!({
            "rows": rows, "build_s": build_s, "graph_bytes": graph.size_bytes(), "threads": rayon::current_num_threads(),
            "plain": plain, "filtered": filtered, "truth": plain_truth, "filtered_truth": filtered_truth,
        })
    );
}
