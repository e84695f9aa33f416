//! Vector search as the table grows, natively: a stored table of `rows x dim` clustered f32 vectors
//! (fixed seed, written as data files of at most 1,048,576 rows, the split size of the distributed
//! plan) is searched for the 10 nearest of `queries` queries, exactly and through per-file HNSW graphs
//! (M=16, ef_construction=200 unless given), over every file at once (the single plan) and file by file with the
//! answers merged (what each task of the distributed plan does, run one after another here). Prints
//! one Markdown row per search with the write and build times, the index size, p50/p99 latency and
//! recall@10 against the exact answer.
//!
//!   cargo run --release --example scale_bench -- <rows> <dim> [queries (50)] [ef (64)] [ef_construction (200)]
//!       [--files N] [--keep ROOT]
//!
//! `--files N` writes the rows as N data files of equal size. `--keep ROOT` stores the table as
//! `items` of namespace `db` under the catalog root ROOT and keeps it, with the queries
//! (`ROOT/queries.f32`: little-endian f32, a query after another) and their exact answers
//! (`ROOT/truth.txt`: a line of ids per query, nearest first), for the engine half of the scale
//! benchmark (`./build-connectors.sh bench scale`), which reads it through Spark and Trino.

mod common;
use common::median;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use hyperstream::table::iceberg::Table;
use hyperstream::vector::hnsw::HnswParams;
use hyperstream::vector::{IndexUse, Metric, VectorSearch};

const FILE_ROWS: usize = 1 << 20;
const K: usize = 10;

/// A fixed-seed generator: `splitmix64` draws.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Vector `row`: one of 100 centres plus a spread along 8 directions of its cluster and a little noise.
fn vector<'a>(row: u64, dim: usize, centres: &'a [f32], directions: &'a [f32]) -> impl Iterator<Item = f32> + 'a {
    let cluster = (row % 100) as usize;
    let mut draws = Draws(row.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let weights: Vec<f32> = (0..8).map(|_| draws.next()).collect();
    (0..dim).map(move |j| {
        let along: f32 = (0..8).map(|d| weights[d] * directions[(cluster * 8 + d) * dim + j]).sum();
        centres[cluster * dim + j] + along + 0.05 * draws.next()
    })
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flag = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        let value = args.get(at + 1).unwrap_or_else(|| panic!("{name} takes a value")).clone();
        args.drain(at..at + 2);
        Some(value)
    };
    let keep = flag("--keep");
    let files_wanted: Option<usize> = flag("--files").map(|n| n.parse().expect("--files takes a number"));
    let number = |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse().expect("a number"));
    let (rows, dim, queries, ef, ef_construction) =
        (number(0, 100_000), number(1, 768), number(2, 50), number(3, 64), number(4, 200));
    let mut draws = Draws(7);
    let centres: Vec<f32> = (0..100 * dim).map(|_| draws.next()).collect();
    let directions: Vec<f32> = (0..100 * 8 * dim).map(|_| draws.next() * 0.5).collect();

    let location = match &keep {
        Some(root) => {
            let _ = std::fs::remove_dir_all(root);
            std::fs::create_dir_all(format!("{root}/db")).expect("catalog root");
            format!("{root}/db/items")
        }
        None => format!("target/bench-data/scale-{rows}x{dim}"),
    };
    let _ = std::fs::remove_dir_all(&location);
    let file_rows = files_wanted.map_or(FILE_ROWS, |n| rows.div_ceil(n.max(1)));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("embedding", DataType::FixedSizeList(item.clone(), dim as i32), false),
    ]));
    let mut table = Table::create(&location, &schema, BTreeMap::new(), &HashMap::new()).expect("create table");
    let start = Instant::now();
    for first in (0..rows).step_by(file_rows) {
        let end = (first + file_rows).min(rows);
        let values: Vec<f32> =
            (first..end).flat_map(|r| vector(r as u64, dim, &centres, &directions).collect::<Vec<_>>()).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(first as i64..end as i64)),
                Arc::new(FixedSizeListArray::new(item.clone(), dim as i32, Arc::new(Float32Array::from(values)), None)),
            ],
        )
        .expect("batch");
        table.append(RecordBatchIterator::new(vec![Ok(batch)], schema.clone())).expect("append");
    }
    let write_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    table.create_vector_index("embedding", HnswParams { metric: Metric::L2, m: 16, ef_construction }).expect("index");
    let build_s = start.elapsed().as_secs_f64();
    let mut index_bytes = 0u64;
    let mut vector_bytes = 0u64;
    for entry in walk(std::path::Path::new(&location)) {
        let name = entry.to_string_lossy().to_string();
        let size = std::fs::metadata(&entry).map(|m| m.len()).unwrap_or(0);
        if name.ends_with(".hnsw") {
            index_bytes += size;
        } else if name.ends_with(".f32vec") {
            vector_bytes += size;
        }
    }
    let files = table.data_files(table.metadata().current_snapshot()).expect("files");
    let query_vectors: Vec<Vec<f32>> =
        (0..queries).map(|q| vector(rows as u64 + 1_000 + q as u64, dim, &centres, &directions).collect()).collect();
    let ids = |found: &RecordBatch| -> Vec<i64> { found.column(0).as_primitive::<Int64Type>().values().to_vec() };
    let search = |query: &[f32], index: IndexUse, files: Vec<_>| {
        let search = VectorSearch { index, ..VectorSearch::new("embedding", query.to_vec(), Metric::L2, K) };
        table.search(files, Some(&["id".to_owned()]), None, &search, 8192).expect("search")
    };
    // Warm the pages and the pool.
    let _ = search(&query_vectors[0], IndexUse::Exact, files.clone());
    let mut truth = Vec::new();
    let mut rows_out = Vec::new();
    for (name, index) in [("exact", IndexUse::Exact), ("HNSW", IndexUse::Ef(ef))] {
        for (plan, split) in [("single", false), ("per file, merged", true)] {
            let mut ms = Vec::new();
            let mut found_right = 0usize;
            for (q, query) in query_vectors.iter().enumerate() {
                let start = Instant::now();
                let found: Vec<i64> = if split {
                    let mut all: Vec<(f64, i64)> = files
                        .iter()
                        .flat_map(|f| {
                            let found = search(query, index, vec![f.clone()]);
                            let d = found.column(1).as_primitive::<arrow::datatypes::Float64Type>().values().to_vec();
                            d.into_iter().zip(ids(&found)).collect::<Vec<_>>()
                        })
                        .collect();
                    all.sort_by(|a, b| a.0.total_cmp(&b.0));
                    all.into_iter().take(K).map(|(_, id)| id).collect()
                } else {
                    ids(&search(query, index, files.clone()))
                };
                ms.push(start.elapsed().as_secs_f64() * 1e3);
                if truth.len() <= q {
                    truth.push(found.clone());
                }
                found_right += found.iter().filter(|id| truth[q].contains(id)).count();
            }
            rows_out.push(format!(
                "| {rows} x {dim} | {} | {name} | {plan} | {write_s:.1} | {} | {:.1} MB | {:.2} | {:.2} | {:.3} |",
                files.len(),
                if name == "HNSW" { format!("{build_s:.1}") } else { "-".to_owned() },
                if name == "HNSW" { index_bytes as f64 / 1e6 } else { vector_bytes as f64 / 1e6 },
                median(ms.clone()),
                percentile(ms, 0.99),
                found_right as f64 / (K * queries) as f64,
            ));
        }
    }
    println!("| vectors | files | search | plan | write s | HNSW build s | index (vectors) size | p50 ms | p99 ms | recall@10 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in rows_out {
        println!("{row}");
    }
    println!(
        "({} threads; HNSW M=16, ef_construction={ef_construction}, ef {ef}; cargo run --release --example scale_bench -- {})",
        rayon::current_num_threads(),
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    match keep {
        Some(root) => {
            let bytes: Vec<u8> = query_vectors.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(format!("{root}/queries.f32"), bytes).expect("queries");
            let lines: Vec<String> =
                truth.iter().map(|ids| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")).collect();
            std::fs::write(format!("{root}/truth.txt"), lines.join("\n") + "\n").expect("truth");
        }
        None => {
            let _ = std::fs::remove_dir_all(&location);
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}
