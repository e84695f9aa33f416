//! Vector search: distance kernels with run-time instruction-set dispatch, metrics, exact top-k and
//! its merge, search over record-batch streams and vector sidecars, and the probe for the GPU backends in this build.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod gpu;
pub mod hnsw;
pub mod kernels;
pub mod metric;
pub mod search;
pub mod sidecar;
pub mod sparse;
pub mod topk;
#[cfg(feature = "wgpu")]
pub mod wgpu_backend;

pub use metric::{FloatQuery, Metric};
pub use search::{search_batches, IndexUse, Prepared, VectorSearch, Wanted, DISTANCE_COLUMN, QUERY_COLUMN};
pub use topk::{exact_top_k, Neighbor, TopK};

/// Deterministic pseudo-random values in [-1, 1) (SplitMix64), for tests.
#[cfg(test)]
pub(crate) fn test_values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = crate::rand::SplitMix64(seed);
    (0..n).map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect()
}
