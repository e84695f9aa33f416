//! HNSW recall@10 >= 0.95 on the clustered 100K x 768 set that `tests/gen_clustered.py` writes
//! (fixed seed), without and with a filter passing 10% of the rows, against exact search; filtered
//! results must satisfy the filter. `./build-connectors.sh test` generates the set and points
//! `HYPERSTREAM_CLUSTERED_DIR` at it; without that variable the test says so and does nothing.

use std::collections::HashSet;

use arrow::buffer::BooleanBuffer;
use hyperstream::vector::hnsw::{HnswGraph, HnswParams};
use hyperstream::vector::{exact_top_k, FloatQuery, Metric};

const ROWS: usize = 100_000;
const DIM: usize = 768;
const QUERIES: usize = 200;
const K: usize = 10;
/// The candidate list length the recall is asked at (bench/hnsw_bench.py sweeps it).
const EF: usize = 240;

fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

#[test]
fn hnsw_recall_on_the_clustered_100k_set_with_and_without_a_filter() {
    let Some(dir) = std::env::var_os("HYPERSTREAM_CLUSTERED_DIR") else {
        eprintln!(
            "HYPERSTREAM_CLUSTERED_DIR is not set: run python3 tests/gen_clustered.py DIR and set it to run this test"
        );
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let vectors = read_f32(&dir.join(format!("vectors-{ROWS}x{DIM}.f32")));
    let queries = read_f32(&dir.join(format!("queries-{QUERIES}x{DIM}.f32")));
    assert_eq!(vectors.len(), ROWS * DIM);
    let all = BooleanBuffer::new_set(ROWS);
    let tenth = BooleanBuffer::collect_bool(ROWS, |i| i % 10 == 7);
    let graph = HnswGraph::build(&vectors, DIM, &all, HnswParams::default()).unwrap();
    let stored = graph.to_bytes();
    let graph = HnswGraph::parse(&stored, ROWS, DIM, "clustered").unwrap();
    for (name, filter) in [("no filter", &all), ("10% filter", &tenth)] {
        let mut hits = 0;
        for q in queries.chunks_exact(DIM) {
            let query = FloatQuery::new(Metric::L2, q.to_vec(), DIM).unwrap();
            let truth: HashSet<u64> =
                exact_top_k(&query, &vectors, Some(filter), 0, K).into_sorted().iter().map(|n| n.ordinal).collect();
            let found = graph.search(&query, &vectors, K, EF, filter).unwrap();
            assert_eq!(found.len(), K);
            assert!(found.iter().all(|n| filter.value(n.ordinal as usize)), "{name}: results satisfy the filter");
            hits += found.iter().filter(|n| truth.contains(&n.ordinal)).count();
        }
        let recall = hits as f64 / (K * QUERIES) as f64;
        eprintln!("recall@{K} at ef {EF}, {name}: {recall:.4}");
        assert!(recall >= 0.95, "{name}: recall@{K} {recall}");
    }
}
