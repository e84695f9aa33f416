//! Exact top-k benchmark, native half: reads `rows x dim` little-endian f32 vectors and `queries x dim`
//! queries (raw files written by bench/vector_topk.py), then times, per query, the native exact top-k
//! a memory-read floor (one parallel pass summing the same bytes) and the same search over a stored
//! table holding the vectors (`Table::search`, through the vector sidecars). Prints one JSON object.
//!
//!   topk_bench <vectors.f32> <queries.f32> <dim> <k> <metric>

mod common;
use common::{median, Inputs};

use std::time::Instant;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, Field, Schema};
use hyperstream::table::iceberg::Table;
use hyperstream::vector::kernels::kernels;
use hyperstream::vector::VectorSearch;
use hyperstream::vector::{exact_top_k, FloatQuery};
use rayon::prelude::*;

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

fn main() {
    let Inputs { vectors_path, vectors, queries, dim, k, metric, .. } = Inputs::from_args("topk_bench", &[]);
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
    // The same vectors as a stored table of four data files (with their vector sidecars), searched
    // end to end: manifests, files in parallel, the merge and fetching the k rows' columns.
    let location = format!("{vectors_path}.table");
    let _ = std::fs::remove_dir_all(&location);
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("embedding", DataType::FixedSizeList(item.clone(), dim as i32), false),
    ]));
    let mut table = Table::create(&location, &schema, BTreeMap::new(), &HashMap::new()).expect("create table");
    let per_file = rows.div_ceil(4);
    for start in (0..rows).step_by(per_file) {
        let end = (start + per_file).min(rows);
        let values = Float32Array::from(vectors[start * dim..end * dim].to_vec());
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(start as i64..end as i64)),
                Arc::new(FixedSizeListArray::new(item.clone(), dim as i32, Arc::new(values), None)),
            ],
        )
        .expect("batch");
        table.append(RecordBatchIterator::new(vec![Ok(batch)], schema.clone())).expect("append");
    }
    let mut table_ms = Vec::new();
    let mut table_agree = 0;
    for (q, want) in queries.chunks_exact(dim).zip(&results) {
        let search = VectorSearch::new("embedding", q.to_vec(), metric, k);
        let start = Instant::now();
        let files = table.data_files(table.metadata().current_snapshot()).expect("files");
        let found = table.search(files, Some(&["id".to_owned()]), None, &search, 8192).expect("search");
        table_ms.push(start.elapsed().as_secs_f64() * 1e3);
        let ids = found.column(0).as_any().downcast_ref::<Int64Array>().expect("ids");
        table_agree += ids.values().iter().filter(|id| want.contains(&(**id as u64))).count();
    }
    let _ = std::fs::remove_dir_all(&location);
    let results = results.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>().join(",");
    println!(
        "{{\"rows\":{rows},\"dim\":{dim},\"k\":{k},\"isa\":\"{}\",\"threads\":{},\"search_ms\":{:.3},\"floor_ms\":{:.3},\"table_ms\":{:.3},\"table_agree\":{table_agree},\"checksum\":{checksum},\"ids\":[{results}]}}",
        kernels().isa,
        rayon::current_num_threads(),
        median(search_ms),
        median(floor_ms),
        median(table_ms)
    );
}
