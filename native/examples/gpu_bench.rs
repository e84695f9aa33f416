//! CUDA benchmark: batched exact top-k on the GPU (vectors resident on the device) against the CPU
//! path on every core of the same machine, over the same random vectors, for growing query batches.
//! Prints a table and checks that both found the same neighbours. With `--dump DIR`, also writes the
//! vectors and queries as raw little-endian f32 files for `bench/gpu_peer.py` (PyTorch on the GPU).
//!
//!   cargo run --release --features cuda --example gpu_bench -- [rows] [dim] [k] [--dump DIR]

use std::time::Instant;

use hyperstream::vector::cuda::device;
use hyperstream::vector::gpu::{batch_top_k, Backend};
use hyperstream::vector::Metric;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dump = args.iter().position(|a| a == "--dump").map(|i| args[i + 1].clone());
    let numbers: Vec<usize> =
        args.iter().take_while(|a| *a != "--dump").map(|a| a.parse().expect("rows, dim and k are numbers")).collect();
    let (rows, dim, k) = (
        numbers.first().copied().unwrap_or(100_000),
        numbers.get(1).copied().unwrap_or(768),
        numbers.get(2).copied().unwrap_or(10),
    );
    let gpu = device().unwrap_or_else(|e| {
        eprintln!("gpu_bench: {e}");
        std::process::exit(2)
    });
    let vectors = values(1, rows * dim);
    let all_queries: Vec<Vec<f32>> = (0..1000).map(|i| values(100 + i, dim)).collect();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).unwrap();
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        std::fs::write(format!("{dir}/vectors.f32"), bytes(&vectors)).unwrap();
        std::fs::write(format!("{dir}/queries.f32"), bytes(&all_queries.concat())).unwrap();
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# gpu_bench: {rows} x {dim} f32, top-{k}, l2; GPU {}; CPU {threads} threads", gpu.name());
    let start = Instant::now();
    let resident = gpu.upload(&vectors, dim).unwrap();
    let upload_ms = start.elapsed().as_secs_f64() * 1e3;
    println!("upload: {upload_ms:.1} ms ({:.1} GB/s)", (rows * dim * 4) as f64 / upload_ms / 1e6);
    // Warm both paths once.
    gpu.top_k(&resident, Metric::L2, &all_queries[..1], k).unwrap();
    batch_top_k(&vectors, dim, Metric::L2, &all_queries[..2], k, Backend::Cpu).unwrap();

    println!("| queries | GPU ms (median) | CPU ms (median) | GPU queries/s | CPU queries/s | CPU/GPU | same neighbours | GPU distances |");
    println!("|---|---|---|---|---|---|---|---|");
    for batch in [1usize, 10, 100, 1000] {
        let queries = &all_queries[..batch];
        let reps = if batch >= 1000 { 3 } else { 7 };
        let mut gpu_ms = Vec::new();
        let mut gpu_found = Vec::new();
        for _ in 0..reps {
            let start = Instant::now();
            gpu_found = gpu.top_k(&resident, Metric::L2, queries, k).unwrap();
            gpu_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let mut cpu_ms = Vec::new();
        let mut cpu_found = Vec::new();
        for _ in 0..if batch >= 1000 { 1 } else { 3 } {
            let start = Instant::now();
            cpu_found = batch_top_k(&vectors, dim, Metric::L2, queries, k, Backend::Cpu).unwrap().neighbors;
            cpu_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let same = gpu_found
            .iter()
            .zip(&cpu_found)
            .map(|(g, c)| g.iter().filter(|n| c.iter().any(|m| m.ordinal == n.ordinal)).count())
            .sum::<usize>() as f64
            / (batch * k) as f64;
        let (g, c) = (median(gpu_ms), median(cpu_ms));
        println!(
            "| {batch} | {g:.2} | {c:.1} | {:.0} | {:.0} | {:.1}x | {:.4} | {} |",
            batch as f64 / g * 1e3,
            batch as f64 / c * 1e3,
            c / g,
            same,
            if gpu.uses_matrix_product(Metric::L2, batch) { "cuBLAS product" } else { "direct kernel" }
        );
    }
}
