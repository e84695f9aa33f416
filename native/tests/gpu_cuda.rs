//! The CUDA backend against the CPU path, which is the reference. Runs where a CUDA device answers;
//! elsewhere each test says why it skipped. `HYPERSTREAM_REQUIRE_CUDA=1` turns a missing device into a
//! failure (the GPU machine's check sets it, so a device that fails to start cannot pass as a skip).
#![cfg(feature = "cuda")]

use hyperstream::vector::cuda::{device, CudaDevice};
use hyperstream::vector::gpu::{batch_top_k, Backend};
use hyperstream::vector::kernels::{hamming, jaccard};
use hyperstream::vector::metric::reference_distance;
use hyperstream::vector::{exact_top_k, FloatQuery, Metric, Neighbor, TopK};

const FLOAT_METRICS: [Metric; 4] = [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1];

fn device_or_skip(test: &str) -> Option<&'static CudaDevice> {
    match device() {
        Ok(d) => Some(d),
        Err(e) if std::env::var("HYPERSTREAM_REQUIRE_CUDA").as_deref() == Ok("1") => panic!("{test}: {e}"),
        Err(e) => {
            eprintln!("{test}: skipped, {e}");
            None
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    /// A whole number in -2..=2: sums of such values are exact in f32, so both paths agree bit for bit.
    fn small(&mut self) -> f32 {
        (self.next() % 5) as f32 - 2.0
    }
}

fn cpu_top_k(metric: Metric, vectors: &[f32], dim: usize, query: &[f32], k: usize) -> Vec<Neighbor> {
    let q = FloatQuery::new(metric, query.to_vec(), dim).unwrap();
    exact_top_k(&q, vectors, None, 0, k).into_sorted()
}

fn ordinals(found: &[Neighbor]) -> Vec<u64> {
    found.iter().map(|n| n.ordinal).collect()
}

#[test]
fn exact_top_k_agrees_with_the_cpu_path_for_every_float_metric_dimension_and_k() {
    let Some(gpu) = device_or_skip("exact_top_k_agrees") else { return };
    let mut rng = Rng(7);
    for dim in [1usize, 3, 17, 128, 769, 2048] {
        let rows = if dim >= 769 { 2_000 } else { 5_000 };
        let vectors: Vec<f32> = (0..rows * dim).map(|_| rng.unit()).collect();
        let queries: Vec<Vec<f32>> = (0..5).map(|_| (0..dim).map(|_| rng.unit()).collect()).collect();
        let resident = gpu.upload(&vectors, dim).unwrap();
        for metric in FLOAT_METRICS {
            for k in [1usize, 10, 1000] {
                let found = gpu.top_k(&resident, metric, &queries, k).unwrap();
                assert_eq!(found.len(), queries.len());
                for (query, got) in queries.iter().zip(&found) {
                    let expected = cpu_top_k(metric, &vectors, dim, query, k);
                    assert_eq!(got.len(), expected.len(), "{metric} dim {dim} k {k}");
                    let row = |o: u64| &vectors[o as usize * dim..(o as usize + 1) * dim];
                    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                        let exact = reference_distance(metric, query, row(g.ordinal));
                        let tolerance = 1e-4 * exact.abs().max(1.0);
                        assert!(
                            (g.distance as f64 - exact).abs() <= tolerance,
                            "{metric} dim {dim}: GPU distance {} vs float64 {exact}",
                            g.distance
                        );
                        // Rows may trade places only where their distances tie within rounding.
                        if g.ordinal != e.ordinal {
                            let other = reference_distance(metric, query, row(e.ordinal));
                            assert!(
                                (exact - other).abs() <= 2.0 * tolerance,
                                "{metric} dim {dim} k {k} position {i}: GPU row {} ({exact}) vs CPU row {} ({other})",
                                g.ordinal,
                                e.ordinal
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn ties_nan_and_zero_vectors_follow_the_cpu_rules_exactly() {
    let Some(gpu) = device_or_skip("ties_nan_and_zero_vectors") else { return };
    let mut rng = Rng(11);
    let dim = 8;
    // Few distinct vectors, so most distances tie; a zero vector; rows holding NaN.
    let mut vectors: Vec<f32> = (0..3_000 * dim).map(|_| rng.small()).collect();
    vectors[40 * dim..41 * dim].fill(0.0);
    for row in [5usize, 77, 2_999] {
        vectors[row * dim + 3] = f32::NAN;
    }
    let queries: Vec<Vec<f32>> =
        (0..6).map(|i| (0..dim).map(|j| if j == i { 1.0 } else { rng.small() }).collect()).collect();
    let resident = gpu.upload(&vectors, dim).unwrap();
    for metric in FLOAT_METRICS {
        for k in [1usize, 7, 100, 2_999, 3_000, 5_000] {
            let found = gpu.top_k(&resident, metric, &queries, k).unwrap();
            for (query, got) in queries.iter().zip(&found) {
                let expected = cpu_top_k(metric, &vectors, dim, query, k);
                assert_eq!(ordinals(got), ordinals(&expected), "{metric} k {k}");
                for (g, e) in got.iter().zip(&expected) {
                    assert!(
                        g.distance == e.distance || (g.distance.is_nan() && e.distance.is_nan()),
                        "{metric}: {} vs {}",
                        g.distance,
                        e.distance
                    );
                }
            }
        }
    }
    // The NaN rows come last, in row order; a zero vector is at cosine distance 1.
    let all = gpu.top_k(&resident, Metric::L2, &queries[..1], 3_000).unwrap();
    assert_eq!(ordinals(&all[0][2_997..]), vec![5, 77, 2_999]);
    let distances = gpu.distances(&resident, Metric::Cosine, &queries[..1]).unwrap();
    assert_eq!(distances[40], 1.0);
    assert!(distances[77].is_nan());
}

#[test]
fn batched_distances_equal_the_cpu_distances() {
    let Some(gpu) = device_or_skip("batched_distances") else { return };
    let mut rng = Rng(5);
    let dim = 33;
    let vectors: Vec<f32> = (0..1_000 * dim).map(|_| rng.small()).collect();
    // More queries than one tile of the kernel holds, and not a multiple of it.
    let queries: Vec<Vec<f32>> = (0..21).map(|_| (0..dim).map(|_| rng.small() + 0.5).collect()).collect();
    let resident = gpu.upload(&vectors, dim).unwrap();
    for metric in FLOAT_METRICS {
        let distances = gpu.distances(&resident, metric, &queries).unwrap();
        assert_eq!(distances.len(), queries.len() * 1_000);
        for (q, query) in queries.iter().enumerate() {
            let cpu = FloatQuery::new(metric, query.clone(), dim).unwrap();
            for (row, v) in vectors.chunks_exact(dim).enumerate() {
                assert_eq!(distances[q * 1_000 + row], cpu.distance(v), "{metric} query {q} row {row}");
            }
        }
    }
}

#[test]
fn the_matrix_product_path_and_the_direct_kernel_agree() {
    let Some(gpu) = device_or_skip("the_matrix_product_path") else { return };
    let mut rng = Rng(23);
    let dim = 300;
    let vectors: Vec<f32> = (0..6_000 * dim).map(|_| rng.unit()).collect();
    let queries: Vec<Vec<f32>> = (0..9).map(|_| (0..dim).map(|_| rng.unit()).collect()).collect();
    let resident = gpu.upload(&vectors, dim).unwrap();
    for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct] {
        if !gpu.uses_matrix_product(metric, queries.len()) {
            eprintln!("the_matrix_product_path: cuBLAS did not load, only the direct kernel runs");
            return;
        }
        assert!(!gpu.uses_matrix_product(metric, 1));
        // Queries that are stored rows find themselves first at distance 0 (l2), however near others lie.
        let own: Vec<Vec<f32>> = (100..109).map(|r| vectors[r * dim..(r + 1) * dim].to_vec()).collect();
        let found = gpu.top_k(&resident, metric, &own, 3).unwrap();
        for (i, top) in found.iter().enumerate() {
            if metric != Metric::InnerProduct {
                assert_eq!(top[0].ordinal, 100 + i as u64, "{metric}");
            }
            if metric == Metric::L2 {
                assert_eq!(top[0].distance, 0.0);
            }
        }
        let batched = gpu.distances(&resident, metric, &queries).unwrap();
        for (q, query) in queries.iter().enumerate() {
            let alone = gpu.distances(&resident, metric, std::slice::from_ref(query)).unwrap();
            for (row, (a, b)) in alone.iter().zip(&batched[q * 6_000..(q + 1) * 6_000]).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * a.abs().max(1.0),
                    "{metric} query {q} row {row}: {a} alone, {b} batched"
                );
            }
        }
    }
}

#[test]
fn binary_metrics_agree_with_the_cpu_kernels_exactly() {
    let Some(gpu) = device_or_skip("binary_metrics") else { return };
    let mut rng = Rng(13);
    for width in [1usize, 5, 32, 97] {
        let rows = 4_000;
        // Few bits set, so distances tie often; an all-zero row for jaccard's empty-set rule.
        let mut vectors: Vec<u8> = (0..rows * width).map(|_| (rng.next() & rng.next() & rng.next()) as u8).collect();
        vectors[..width].fill(0);
        let queries: Vec<Vec<u8>> =
            (0..9).map(|_| (0..width).map(|_| (rng.next() & rng.next()) as u8).collect()).collect();
        let as_floats: Vec<Vec<f32>> = queries.iter().map(|q| q.iter().map(|b| *b as f32).collect()).collect();
        let resident = gpu.upload_binary(&vectors, width).unwrap();
        for metric in [Metric::Hamming, Metric::Jaccard] {
            let found = gpu.top_k(&resident, metric, &as_floats, 50).unwrap();
            for (query, got) in queries.iter().zip(&found) {
                let mut expected = TopK::new(50);
                for (ordinal, row) in vectors.chunks_exact(width).enumerate() {
                    let distance =
                        if metric == Metric::Hamming { hamming(query, row) as f32 } else { jaccard(query, row) };
                    expected.push(Neighbor { distance, ordinal: ordinal as u64 });
                }
                let expected = expected.into_sorted();
                assert_eq!(ordinals(got), ordinals(&expected), "{metric} width {width}");
                assert!(got.iter().zip(&expected).all(|(g, e)| g.distance == e.distance), "{metric} width {width}");
            }
        }
    }
}

#[test]
fn bad_queries_are_refused_by_name_on_the_device() {
    let Some(gpu) = device_or_skip("bad_queries") else { return };
    let resident = gpu.upload(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3).unwrap();
    let message = |r: hyperstream::Result<Vec<Vec<Neighbor>>>| r.unwrap_err().to_string();
    assert!(message(gpu.top_k(&resident, Metric::L2, &[vec![1.0, 2.0]], 1)).contains("2 dimensions"));
    assert!(message(gpu.top_k(&resident, Metric::L2, &[vec![1.0, f32::NAN, 2.0]], 1)).contains("NaN"));
    assert!(message(gpu.top_k(&resident, Metric::Cosine, &[vec![0.0; 3]], 1)).contains("zero query vector"));
    assert!(message(gpu.top_k(&resident, Metric::Hamming, &[vec![1.0; 3]], 1)).contains("binary"));
    assert!(message(gpu.top_k(&resident, Metric::L2, &[], 1)).contains("at least one query"));
    assert!(gpu.upload(&[1.0, 2.0], 3).unwrap_err().to_string().contains("whole vectors of 3"));
    let binary = gpu.upload_binary(&[1, 2, 3, 4], 2).unwrap();
    assert!(message(gpu.top_k(&binary, Metric::Hamming, &[vec![1.0, 300.0]], 1)).contains("300"));
    assert!(message(gpu.top_k(&binary, Metric::L2, &[vec![1.0, 2.0]], 1)).contains("float"));
    // k above the row count returns every row.
    assert_eq!(gpu.top_k(&resident, Metric::L2, &[vec![0.0; 3]], 10).unwrap()[0].len(), 2);
}

#[test]
fn the_dispatcher_runs_large_batches_on_the_device_and_matches_the_cpu() {
    let Some(_) = device_or_skip("the_dispatcher") else { return };
    let mut rng = Rng(17);
    let dim = 64;
    let vectors: Vec<f32> = (0..20_000 * dim).map(|_| rng.small()).collect();
    let queries: Vec<Vec<f32>> = (0..40).map(|_| (0..dim).map(|_| rng.small()).collect()).collect();
    let gpu = batch_top_k(&vectors, dim, Metric::L2, &queries, 25, Backend::Cuda).unwrap();
    let cpu = batch_top_k(&vectors, dim, Metric::L2, &queries, 25, Backend::Cpu).unwrap();
    assert_eq!((gpu.backend, cpu.backend), ("cuda", "cpu"));
    for (g, c) in gpu.neighbors.iter().zip(&cpu.neighbors) {
        assert_eq!(ordinals(g), ordinals(c));
    }
}
