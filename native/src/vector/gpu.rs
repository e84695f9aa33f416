//! Which GPU backends this build has and whether this machine can run them. The CPU path is always
//! there and is the reference every GPU result is checked against.

use std::fmt;

use arrow::buffer::BooleanBuffer;
use rayon::prelude::*;

use super::topk::{exact_top_k, Neighbor, TopK};
use super::{FloatQuery, Metric};
use crate::{Error, Result};

/// Where a batched search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// A GPU when one is compiled in, answers (CUDA first, then a wgpu device that is not a software
    /// driver) and the batch is large enough to pay for copying the vectors over; the CPU otherwise.
    #[default]
    Auto,
    Cpu,
    Cuda,
    /// wgpu (WGSL compute: Vulkan, Metal, DX12, or a software Vulkan driver).
    Wgpu,
}

impl Backend {
    /// Parses `auto`, `cpu`, `cuda` or `wgpu` (case-insensitive).
    pub fn parse(name: &str) -> Result<Backend> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda),
            "wgpu" => Ok(Backend::Wgpu),
            other => Err(Error::invalid(format!("unknown search backend '{other}' (known: auto, cpu, cuda, wgpu)"))),
        }
    }
}

impl Backend {
    /// The backend a float search of `work` distance terms (queries × rows × dimension) runs on:
    /// `Auto` becomes a GPU when the work pays for copying the vectors over and one answers (CUDA
    /// first, then a wgpu device that is not a software driver), the CPU otherwise; any other
    /// choice stands (a GPU not compiled in or not answering is then an error of the search).
    pub fn choose(self, work: usize) -> Backend {
        let large = work >= AUTO_GPU_MIN_WORK;
        match self {
            Backend::Auto if large && cfg!(feature = "cuda") && cuda_answers() => Backend::Cuda,
            Backend::Auto if large && cfg!(feature = "wgpu") && wgpu_answers() => Backend::Wgpu,
            Backend::Auto => Backend::Cpu,
            chosen => chosen,
        }
    }

    /// `auto`, `cpu`, `cuda` or `wgpu`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Wgpu => "wgpu",
        }
    }
}

/// A batched search's answer and the backend that computed it.
#[derive(Debug, Clone)]
pub struct BatchResult {
    /// Per query, the nearest rows first.
    pub neighbors: Vec<Vec<Neighbor>>,
    /// `cpu`, `cuda` or `wgpu`.
    pub backend: &'static str,
}

/// Below this many distance terms (queries × rows × dimension) `Auto` stays on the CPU: copying the
/// vectors to the device costs more than the CPU's whole search.
const AUTO_GPU_MIN_WORK: usize = 1 << 30;

/// The `k` nearest of `vectors` (rows of `dim` floats, back to back) to each query, nearest first, by
/// a float `metric`, on `backend`. Every backend checks the queries the same way and orders results
/// the same way (distance, NaN last, ties to the lower row).
pub fn batch_top_k(
    vectors: &[f32],
    dim: usize,
    metric: Metric,
    queries: &[Vec<f32>],
    k: usize,
    backend: Backend,
) -> Result<BatchResult> {
    if dim == 0 || !vectors.len().is_multiple_of(dim) {
        return Err(Error::invalid(format!("{} values are not whole vectors of {dim}", vectors.len())));
    }
    if queries.is_empty() {
        return Err(Error::invalid("vector search needs at least one query vector"));
    }
    let checked = queries.iter().map(|q| FloatQuery::new(metric, q.clone(), dim)).collect::<Result<Vec<_>>>()?;
    Ok(match backend.choose(queries.len().saturating_mul(vectors.len())) {
        Backend::Cuda => BatchResult { neighbors: cuda_top_k(vectors, dim, metric, queries, k)?, backend: "cuda" },
        Backend::Wgpu => BatchResult { neighbors: wgpu_top_k(vectors, dim, metric, queries, k)?, backend: "wgpu" },
        _ => BatchResult { neighbors: cpu_top_k(&checked, vectors, k), backend: "cpu" },
    })
}

/// Rows per task of a batched CPU search: a block small enough to stay in a core's cache while every
/// query of the batch is compared with it.
const CPU_BATCH_ROWS: usize = 256;

fn cpu_top_k(queries: &[FloatQuery], vectors: &[f32], k: usize) -> Vec<Vec<Neighbor>> {
    cpu_masked_top_k(queries, vectors, None, k)
}

/// [`cpu_top_k`] among the rows `allowed` passes (every row without it).
fn cpu_masked_top_k(
    queries: &[FloatQuery],
    vectors: &[f32],
    allowed: Option<&BooleanBuffer>,
    k: usize,
) -> Vec<Vec<Neighbor>> {
    if queries.len() == 1 {
        return vec![exact_top_k(&queries[0], vectors, allowed, 0, k).into_sorted()];
    }
    let dim = queries.first().map_or(1, FloatQuery::dimension);
    let fresh = || queries.iter().map(|_| TopK::new(k)).collect::<Vec<_>>();
    vectors
        .par_chunks(CPU_BATCH_ROWS * dim)
        .enumerate()
        .map(|(block, rows)| {
            let mut tops = fresh();
            let first = block * CPU_BATCH_ROWS;
            for (query, top) in queries.iter().zip(tops.iter_mut()) {
                for (i, v) in rows.chunks_exact(dim).enumerate() {
                    if allowed.is_none_or(|a| a.value(first + i)) {
                        top.push(Neighbor { distance: query.distance(v), ordinal: (first + i) as u64 });
                    }
                }
            }
            tops
        })
        .reduce(fresh, |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| x.merge(y));
            a
        })
        .into_iter()
        .map(TopK::into_sorted)
        .collect()
}

/// For each of `queries` (checked, of one metric and dimension), the `k` rows of `vectors` nearest
/// it among those `allowed` passes, nearest first, ordinals the rows' positions: one pass over the
/// vectors for all the queries, block by block. On a GPU where `backend` chooses one and every row
/// is allowed (the device compares every row); on the CPU otherwise. Every backend gives the same
/// answer.
pub fn masked_batch_top_k(
    queries: &[FloatQuery],
    vectors: &[f32],
    allowed: &BooleanBuffer,
    k: usize,
    backend: Backend,
) -> Result<Vec<Vec<Neighbor>>> {
    let Some(first) = queries.first() else {
        return Ok(Vec::new());
    };
    let every = allowed.count_set_bits() == allowed.len();
    if every
        && !vectors.is_empty()
        && !matches!(backend.choose(queries.len().saturating_mul(vectors.len())), Backend::Cpu)
    {
        let raw: Vec<Vec<f32>> = queries.iter().map(|q| q.vector().to_vec()).collect();
        return Ok(batch_top_k(vectors, first.dimension(), first.metric(), &raw, k, backend)?.neighbors);
    }
    Ok(cpu_masked_top_k(queries, vectors, (!every).then_some(allowed), k))
}

#[cfg(feature = "cuda")]
fn cuda_answers() -> bool {
    super::cuda::device().is_ok()
}

#[cfg(not(feature = "cuda"))]
fn cuda_answers() -> bool {
    false
}

#[cfg(feature = "cuda")]
fn cuda_top_k(
    vectors: &[f32],
    dim: usize,
    metric: Metric,
    queries: &[Vec<f32>],
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    let device = super::cuda::device()?;
    let resident = device.upload(vectors, dim)?;
    device.top_k(&resident, metric, queries, k)
}

#[cfg(not(feature = "cuda"))]
fn cuda_top_k(_: &[f32], _: usize, _: Metric, _: &[Vec<f32>], _: usize) -> Result<Vec<Vec<Neighbor>>> {
    Err(Error::invalid("the CUDA backend is not compiled into this library (build with --features cuda)"))
}

/// Whether a wgpu device that is not a software driver answers (a software one is never faster
/// than the CPU path, so `Auto` does not pick it).
#[cfg(feature = "wgpu")]
fn wgpu_answers() -> bool {
    super::wgpu_backend::device().is_ok_and(|d| !d.is_software())
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_answers() -> bool {
    false
}

#[cfg(feature = "wgpu")]
fn wgpu_top_k(
    vectors: &[f32],
    dim: usize,
    metric: Metric,
    queries: &[Vec<f32>],
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    super::wgpu_backend::device()?.top_k(vectors, dim, metric, queries, k)
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_top_k(_: &[f32], _: usize, _: Metric, _: &[Vec<f32>], _: usize) -> Result<Vec<Vec<Neighbor>>> {
    Err(Error::invalid("the wgpu backend is not compiled into this library (build with --features wgpu)"))
}

/// One backend's probe result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStatus {
    /// `cpu`, `cuda` or `wgpu`.
    pub name: &'static str,
    /// Built into this library (its cargo feature was on).
    pub compiled: bool,
    /// A device answered.
    pub available: bool,
    /// The device, or why none answered.
    pub detail: String,
}

impl fmt::Display for BackendStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.compiled, self.available) {
            (false, _) => "not compiled",
            (true, false) => "unavailable",
            (true, true) => "available",
        };
        write!(f, "{}: {state}", self.name)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

/// Probes every backend. Never fails: a backend that cannot start reports why.
pub fn probe() -> Vec<BackendStatus> {
    vec![
        BackendStatus {
            name: "cpu",
            compiled: true,
            available: true,
            detail: format!("{} threads", std::thread::available_parallelism().map_or(1, |n| n.get())),
        },
        probe_cuda(),
        probe_wgpu(),
    ]
}

fn status(name: &'static str, compiled: bool, outcome: std::result::Result<String, String>) -> BackendStatus {
    match outcome {
        Ok(detail) => BackendStatus { name, compiled, available: true, detail },
        Err(detail) => BackendStatus { name, compiled, available: false, detail },
    }
}

/// Runs a probe that may panic (dynamic loading of a missing driver does) and reports the panic.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn guarded(probe: impl FnOnce() -> std::result::Result<String, String>) -> std::result::Result<String, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(probe)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "driver probe panicked".to_owned());
        Err(msg)
    })
}

#[cfg(feature = "cuda")]
fn probe_cuda() -> BackendStatus {
    // Starting the device also compiles the kernels, so "available" means a search can run.
    let outcome = guarded(|| super::cuda::device().map(|d| d.name().to_owned()).map_err(|e| e.to_string()));
    status("cuda", true, outcome)
}

#[cfg(not(feature = "cuda"))]
fn probe_cuda() -> BackendStatus {
    status("cuda", false, Err("build with --features cuda".to_owned()))
}

#[cfg(feature = "wgpu")]
fn probe_wgpu() -> BackendStatus {
    // Opening the device also compiles the shader, so "available" means a search can run.
    let outcome = guarded(|| {
        let device = super::wgpu_backend::device().map_err(|e| e.to_string())?;
        Ok(match device.is_software() {
            true => format!("{} (a software driver: auto searches stay on the CPU)", device.name()),
            false => device.name().to_owned(),
        })
    });
    status("wgpu", true, outcome)
}

#[cfg(not(feature = "wgpu"))]
fn probe_wgpu() -> BackendStatus {
    status("wgpu", false, Err("build with --features wgpu".to_owned()))
}

/// The GPU backend tests compare with the CPU: wgpu (a software driver will do) or CUDA, whichever
/// answers; None, said on stderr, when neither does in this build on this machine.
#[cfg(test)]
pub(crate) fn test_device() -> Option<Backend> {
    #[cfg(feature = "wgpu")]
    match super::wgpu_backend::device() {
        Ok(device) => {
            eprintln!("GPU half of this test on wgpu: {}", device.name());
            return Some(Backend::Wgpu);
        }
        Err(e) => eprintln!("wgpu: {e}"),
    }
    if cfg!(feature = "cuda") && cuda_answers() {
        return Some(Backend::Cuda);
    }
    eprintln!("no GPU backend answers in this build here: the GPU half of this test is skipped");
    None
}

/// Whether `gpu` found what `cpu` did: the same rows, or where not, a row as near by the CPU's own
/// distance `distance_of` (a tie within rounding); distances within rounding.
#[cfg(test)]
pub(crate) fn assert_same_neighbors(gpu: &[Neighbor], cpu: &[Neighbor], distance_of: impl Fn(u64) -> f32, what: &str) {
    assert_eq!(gpu.len(), cpu.len(), "{what}");
    for (a, b) in gpu.iter().zip(cpu) {
        let tolerance = 1e-4 * (1.0 + b.distance.abs());
        assert!((a.distance - b.distance).abs() <= tolerance, "{what}: {a:?} vs {b:?}");
        assert!(
            a.ordinal == b.ordinal || (distance_of(a.ordinal) - b.distance).abs() <= tolerance,
            "{what}: {a:?} vs {b:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_backend_is_always_available_and_every_backend_reports() {
        let report = probe();
        let names: Vec<_> = report.iter().map(|b| b.name).collect();
        assert_eq!(names, ["cpu", "cuda", "wgpu"]);
        assert!(report[0].available);
        assert_eq!(report[1].compiled, cfg!(feature = "cuda"));
        assert_eq!(report[2].compiled, cfg!(feature = "wgpu"));
        assert!(report.iter().all(|b| b.compiled || !b.available));
    }

    #[test]
    fn the_cpu_backend_answers_as_the_exact_search_does() {
        let dim = 7;
        let vectors = crate::vector::test_values(3, 500 * dim);
        let queries: Vec<Vec<f32>> = (0..4).map(|i| crate::vector::test_values(10 + i, dim)).collect();
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            let result = batch_top_k(&vectors, dim, metric, &queries, 9, Backend::Cpu).unwrap();
            assert_eq!(result.backend, "cpu");
            for (q, found) in queries.iter().zip(&result.neighbors) {
                let query = FloatQuery::new(metric, q.clone(), dim).unwrap();
                let expected = exact_top_k(&query, &vectors, None, 0, 9).into_sorted();
                assert_eq!(
                    found.iter().map(|n| n.ordinal).collect::<Vec<_>>(),
                    expected.iter().map(|n| n.ordinal).collect::<Vec<_>>()
                );
            }
            // Small batches stay on the CPU under Auto.
            assert_eq!(batch_top_k(&vectors, dim, metric, &queries, 9, Backend::Auto).unwrap().backend, "cpu");
        }
    }

    #[test]
    fn batched_searches_refuse_bad_input_by_name() {
        let vectors = vec![0.0; 12];
        let err = batch_top_k(&vectors, 5, Metric::L2, &[vec![0.0; 5]], 1, Backend::Cpu).unwrap_err();
        assert!(err.to_string().contains("not whole vectors of 5"), "{err}");
        let err = batch_top_k(&vectors, 3, Metric::L2, &[vec![0.0; 4]], 1, Backend::Cpu).unwrap_err();
        assert!(err.to_string().contains("4 dimensions"), "{err}");
        let err = batch_top_k(&vectors, 3, Metric::L2, &[vec![f32::NAN, 0.0, 0.0]], 1, Backend::Auto).unwrap_err();
        assert!(err.to_string().contains("NaN"), "{err}");
        let err = Backend::parse("tpu").unwrap_err();
        assert!(err.to_string().contains("'tpu'"), "{err}");
        if !cfg!(feature = "cuda") {
            let err = batch_top_k(&vectors, 3, Metric::L2, &[vec![0.0; 3]], 1, Backend::Cuda).unwrap_err();
            assert!(err.to_string().contains("--features cuda"), "{err}");
        }
        if !cfg!(feature = "wgpu") {
            let err = batch_top_k(&vectors, 3, Metric::L2, &[vec![0.0; 3]], 1, Backend::Wgpu).unwrap_err();
            assert!(err.to_string().contains("--features wgpu"), "{err}");
        }
    }
}
