//! The CUDA backend: batched distances and exact top-k on an NVIDIA GPU, through cudarc with the
//! driver and NVRTC loaded at run time, so that building needs no CUDA toolkit. The kernels below are
//! compiled by NVRTC the first time the device is used.
//!
//! Results follow the CPU path's rules (`topk.rs`): order by distance, NaN after every number, ties to
//! the lower ordinal; a cosine distance to a stored zero vector is 1. The selection is exact on the
//! distances the GPU computed; those can differ from the CPU's in the last bits (another summation
//! order), which the tests allow for and nothing else does.

use std::sync::{Arc, OnceLock};

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};

use super::topk::{result_order, Neighbor};
use super::{FloatQuery, Metric};
use crate::{Error, Result};

const KERNELS: &str = r#"
#define QUERY_TILE 8
#define WARPS_PER_BLOCK 8

// Metric codes, as `metric_code` in cuda.rs gives them.
#define L2 0
#define COSINE 1
#define INNER_PRODUCT 2
#define L1 3
#define HAMMING 4
#define JACCARD 5

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ unsigned warp_sum_u(unsigned v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// out[q * n + i] = distance(query q, vector i). A block holds WARPS_PER_BLOCK warps, one vector each,
// against QUERY_TILE queries (blockIdx.y picks the tile), so every vector is read once per tile.
extern "C" __global__ void float_distances(const float* __restrict__ vectors, unsigned long long n, unsigned dim,
                                           const float* __restrict__ queries, const float* __restrict__ query_norms,
                                           unsigned nq, int metric, float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long row = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    const unsigned q0 = blockIdx.y * QUERY_TILE;
    if (row >= n) return;
    const float* v = vectors + row * dim;
    float acc[QUERY_TILE];
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) acc[t] = 0.0f;
    float vv = 0.0f;
    for (unsigned d = lane; d < dim; d += 32) {
        const float x = v[d];
        vv += x * x;
        #pragma unroll
        for (int t = 0; t < QUERY_TILE; t++) {
            const unsigned q = min(q0 + t, nq - 1);
            const float y = __ldg(queries + (unsigned long long)q * dim + d);
            if (metric == L2) { const float e = y - x; acc[t] += e * e; }
            else if (metric == L1) { acc[t] += fabsf(y - x); }
            else { acc[t] += y * x; }
        }
    }
    if (metric == COSINE) vv = warp_sum(vv);
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) acc[t] = warp_sum(acc[t]);
    if (lane != 0) return;
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) {
        const unsigned q = q0 + t;
        if (q >= nq) break;
        float d;
        if (metric == L2) d = sqrtf(acc[t]);
        else if (metric == INNER_PRODUCT) d = -acc[t];
        else if (metric == L1) d = acc[t];
        else if (vv == 0.0f) d = 1.0f;
        else {
            d = 1.0f - acc[t] / (query_norms[q] * sqrtf(vv));
            if (!isnan(d)) d = fminf(fmaxf(d, 0.0f), 2.0f);
        }
        out[(unsigned long long)q * n + row] = d;
    }
}

// The same over bit-packed binary vectors of `width` bytes: hamming (differing bits) or jaccard.
extern "C" __global__ void binary_distances(const unsigned char* __restrict__ vectors, unsigned long long n, unsigned width,
                                            const unsigned char* __restrict__ queries, unsigned nq, int metric,
                                            float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long row = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    const unsigned q0 = blockIdx.y * QUERY_TILE;
    if (row >= n) return;
    const unsigned char* v = vectors + row * width;
    unsigned both[QUERY_TILE], either[QUERY_TILE];
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) { both[t] = 0; either[t] = 0; }
    for (unsigned b = lane; b < width; b += 32) {
        const unsigned x = v[b];
        #pragma unroll
        for (int t = 0; t < QUERY_TILE; t++) {
            const unsigned q = min(q0 + t, nq - 1);
            const unsigned y = queries[(unsigned long long)q * width + b];
            if (metric == HAMMING) { either[t] += __popc(x ^ y); }
            else { both[t] += __popc(x & y); either[t] += __popc(x | y); }
        }
    }
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) { both[t] = warp_sum_u(both[t]); either[t] = warp_sum_u(either[t]); }
    if (lane != 0) return;
    #pragma unroll
    for (int t = 0; t < QUERY_TILE; t++) {
        const unsigned q = q0 + t;
        if (q >= nq) break;
        float d;
        if (metric == HAMMING) d = (float)either[t];
        else if (either[t] == 0) d = 0.0f;
        else d = 1.0f - (float)both[t] / (float)either[t];
        out[(unsigned long long)q * n + row] = d;
    }
}

// norms[i] = the squared norm of vector i (one warp per vector).
extern "C" __global__ void squared_norms(const float* __restrict__ vectors, unsigned long long n, unsigned dim,
                                         float* __restrict__ norms) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long row = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= n) return;
    const float* v = vectors + row * dim;
    float acc = 0.0f;
    for (unsigned d = lane; d < dim; d += 32) acc += v[d] * v[d];
    acc = warp_sum(acc);
    if (lane == 0) norms[row] = acc;
}

// Turns out[q * n + i] = query q · vector i (a matrix product) into the metric's distance, given the
// vectors' squared norms and the queries' squared norms and norms.
extern "C" __global__ void distances_from_dots(float* __restrict__ out, unsigned long long n, unsigned nq,
                                               const float* __restrict__ vector_squares, const float* __restrict__ query_squares,
                                               const float* __restrict__ query_norms, int metric) {
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * nq) return;
    const unsigned long long row = i % n;
    const unsigned q = (unsigned)(i / n);
    const float dot = out[i];
    const float vv = vector_squares[row];
    float d;
    if (metric == L2) {
        const float squared = query_squares[q] + vv - 2.0f * dot;
        d = sqrtf(squared < 0.0f ? 0.0f : squared);  // rounding can dip below zero; NaN stays NaN
    } else if (metric == INNER_PRODUCT) {
        d = -dot;
    } else if (vv == 0.0f) {
        d = 1.0f;
    } else {
        d = 1.0f - dot / (query_norms[q] * sqrtf(vv));
        if (!isnan(d)) d = fminf(fmaxf(d, 0.0f), 2.0f);
    }
    out[i] = d;
}

// The l2 distances of chosen rows, computed directly: rows[q * per_query + j] is a row for query q.
// Corrects the matrix-product form (|q|² + |v|² − 2 q·v), which loses the small distances of near rows
// to cancellation, before the final selection.
extern "C" __global__ void l2_of_rows(const float* __restrict__ vectors, unsigned dim, const float* __restrict__ queries,
                                      const unsigned* __restrict__ rows, unsigned per_query, unsigned nq,
                                      float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long slot = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (slot >= (unsigned long long)per_query * nq) return;
    const float* q = queries + (slot / per_query) * dim;
    const float* v = vectors + (unsigned long long)rows[slot] * dim;
    float acc = 0.0f;
    for (unsigned d = lane; d < dim; d += 32) { const float e = q[d] - v[d]; acc += e * e; }
    acc = warp_sum(acc);
    if (lane == 0) out[slot] = sqrtf(acc);
}

// A key whose unsigned order is the result order of distances: numbers ascending (-0 as +0), NaN last.
__device__ __forceinline__ unsigned order_key(float d) {
    if (isnan(d)) return 0xffffffffu;
    if (d == 0.0f) d = 0.0f;
    const unsigned u = __float_as_uint(d);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// One block per query: finds the k-th smallest key by radix selection (four passes of eight bits),
// then writes the rows below it and, in row order, as many rows equal to it as are needed, so the
// k rows written are exactly the first k in result order (ties to the lower row). Unsorted.
extern "C" __global__ void select_top_k(const float* __restrict__ distances, unsigned long long n, unsigned k,
                                        unsigned* __restrict__ out_rows, float* __restrict__ out_distances) {
    __shared__ unsigned histogram[256];
    __shared__ unsigned chosen_prefix, chosen_rank;
    __shared__ unsigned warp_less[32], warp_equal[32];
    const float* d = distances + (unsigned long long)blockIdx.x * n;
    unsigned* rows = out_rows + (unsigned long long)blockIdx.x * k;
    float* dists = out_distances + (unsigned long long)blockIdx.x * k;

    unsigned prefix = 0, mask = 0, rank = k;  // the k-th key is the rank-th among keys matching prefix
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) histogram[i] = 0;
        __syncthreads();
        for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) {
            const unsigned key = order_key(d[i]);
            if ((key & mask) == prefix) atomicAdd(&histogram[(key >> shift) & 0xffu], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned below = 0, bucket = 0;
            for (; bucket < 255; bucket++) {
                if (below + histogram[bucket] >= rank) break;
                below += histogram[bucket];
            }
            chosen_prefix = prefix | (bucket << shift);
            chosen_rank = rank - below;
        }
        __syncthreads();
        prefix = chosen_prefix;
        rank = chosen_rank;
        mask |= 0xffu << shift;
        __syncthreads();
    }
    const unsigned threshold = prefix;
    const unsigned less_total = k - rank;  // rows strictly below the k-th key; `rank` equal ones follow
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    const unsigned below_lane = (1u << lane) - 1u;
    unsigned less_written = 0, equal_written = 0;
    for (unsigned long long base = 0; base < n && (less_written < less_total || equal_written < rank); base += blockDim.x) {
        const unsigned long long i = base + threadIdx.x;
        const unsigned key = i < n ? order_key(d[i]) : 0xffffffffu;
        const bool less = i < n && key < threshold;
        const bool equal = i < n && key == threshold;
        const unsigned less_bits = __ballot_sync(0xffffffffu, less);
        const unsigned equal_bits = __ballot_sync(0xffffffffu, equal);
        if (lane == 0) { warp_less[warp] = __popc(less_bits); warp_equal[warp] = __popc(equal_bits); }
        __syncthreads();
        unsigned less_before = 0, equal_before = 0, less_here = 0, equal_here = 0;
        for (unsigned w = 0; w < warps; w++) {
            if (w < warp) { less_before += warp_less[w]; equal_before += warp_equal[w]; }
            less_here += warp_less[w];
            equal_here += warp_equal[w];
        }
        if (less) {
            const unsigned slot = less_written + less_before + __popc(less_bits & below_lane);
            rows[slot] = (unsigned)i;
            dists[slot] = d[i];
        }
        if (equal) {
            const unsigned nth = equal_written + equal_before + __popc(equal_bits & below_lane);
            if (nth < rank) {
                rows[less_total + nth] = (unsigned)i;
                dists[less_total + nth] = d[i];
            }
        }
        less_written += less_here;
        equal_written += equal_here;
        __syncthreads();
    }
}
"#;

const SELECT_THREADS: u32 = 1024;
const DISTANCE_THREADS: u32 = 256;
const WARPS_PER_BLOCK: u64 = 8;
const QUERY_TILE: usize = 8;
/// From this many queries in a batch on, l2, cosine and inner-product distances come from one cuBLAS
/// matrix product of the queries and the vectors (finished by `distances_from_dots`) instead of the
/// direct kernel: the product reads each vector once for the whole batch and runs at the GPU's matrix
/// rate. The direct kernel stays for small batches, l1 and binary vectors, and where cuBLAS is missing.
const GEMM_MIN_QUERIES: usize = 4;
/// The most distances one launch keeps on the device (1 GiB of f32); larger query sets are split.
const MAX_DISTANCES: usize = 1 << 28;

fn metric_code(metric: Metric) -> i32 {
    match metric {
        Metric::L2 => 0,
        Metric::Cosine => 1,
        Metric::InnerProduct => 2,
        Metric::L1 => 3,
        Metric::Hamming => 4,
        Metric::Jaccard => 5,
    }
}

fn driver_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("CUDA {what} failed: {e}"))
}

/// The GPU this process uses (device 0) and its compiled kernels.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    float_distances: CudaFunction,
    binary_distances: CudaFunction,
    select_top_k: CudaFunction,
    squared_norms: CudaFunction,
    distances_from_dots: CudaFunction,
    l2_of_rows: CudaFunction,
    /// cuBLAS, when its library loads.
    blas: Option<CudaBlas>,
    name: String,
}

/// Vectors held on the device: uploaded once, searched by any number of query batches.
pub struct DeviceVectors {
    data: DeviceData,
    rows: usize,
    dim: usize,
}

enum DeviceData {
    /// The vectors and their squared norms.
    Float(CudaSlice<f32>, CudaSlice<f32>),
    Binary(CudaSlice<u8>),
}

impl std::fmt::Debug for DeviceVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.data {
            DeviceData::Float(..) => "float",
            DeviceData::Binary(_) => "binary",
        };
        f.debug_struct("DeviceVectors").field("kind", &kind).field("rows", &self.rows).field("dim", &self.dim).finish()
    }
}

impl DeviceVectors {
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Floats per vector, or bytes per binary vector.
    pub fn dim(&self) -> usize {
        self.dim
    }
}

/// The CUDA device, started (and its kernels compiled) on first use; an error says why there is none.
pub fn device() -> Result<&'static CudaDevice> {
    static DEVICE: OnceLock<std::result::Result<CudaDevice, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            // Loading a missing driver library panics inside cudarc; that means "no device".
            std::panic::catch_unwind(CudaDevice::start).unwrap_or_else(|payload| {
                Err(payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    // cudarc's message goes on to list every file name it tried.
                    .map(|m| m.split(" - searched").next().unwrap_or_default().to_owned())
                    .unwrap_or_else(|| "the CUDA driver could not be loaded".to_owned()))
            })
        })
        .as_ref()
        .map_err(|e| Error::invalid(format!("no CUDA device: {e}")))
}

impl CudaDevice {
    fn start() -> std::result::Result<CudaDevice, String> {
        let ctx = CudaContext::new(0).map_err(|e| format!("CUDA driver: {e}"))?;
        let name = ctx.name().map_err(|e| e.to_string())?;
        let options = CompileOptions { use_fast_math: Some(false), ..Default::default() };
        let ptx =
            compile_ptx_with_opts(KERNELS, options).map_err(|e| format!("NVRTC could not compile the kernels: {e}"))?;
        let module = ctx.load_module(ptx).map_err(|e| format!("loading the kernels: {e}"))?;
        let function = |name: &str| module.load_function(name).map_err(|e| format!("kernel {name}: {e}"));
        let stream = ctx.default_stream();
        // A missing cuBLAS library panics inside cudarc; the direct kernels then serve every metric.
        let blas = std::panic::catch_unwind(|| CudaBlas::new(stream.clone()).ok()).ok().flatten();
        Ok(CudaDevice {
            squared_norms: function("squared_norms")?,
            distances_from_dots: function("distances_from_dots")?,
            l2_of_rows: function("l2_of_rows")?,
            blas,
            float_distances: function("float_distances")?,
            binary_distances: function("binary_distances")?,
            select_top_k: function("select_top_k")?,
            stream,
            ctx,
            name,
        })
    }

    /// The device's name, as the driver gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Copies `dim`-float vectors (back to back) to the device.
    pub fn upload(&self, vectors: &[f32], dim: usize) -> Result<DeviceVectors> {
        check_rows(vectors.len(), dim)?;
        let data = self.stream.clone_htod(vectors).map_err(|e| driver_error("upload", e))?;
        let rows = vectors.len() / dim;
        let mut squares = self.stream.alloc_zeros::<f32>(rows).map_err(|e| driver_error("allocation", e))?;
        let (n, dim32) = (rows as u64, dim as u32);
        let mut launch = self.stream.launch_builder(&self.squared_norms);
        launch.arg(&data).arg(&n).arg(&dim32).arg(&mut squares);
        let grid = u32::try_from(n.div_ceil(WARPS_PER_BLOCK))
            .map_err(|_| Error::invalid("too many vectors for one upload"))?;
        let config =
            LaunchConfig { grid_dim: (grid.max(1), 1, 1), block_dim: (DISTANCE_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: `data` holds n * dim floats and `squares` n; the kernel stays inside both.
        unsafe { launch.launch(config) }.map_err(|e| driver_error("norm kernel", e))?;
        Ok(DeviceVectors { data: DeviceData::Float(data, squares), rows, dim })
    }

    /// Copies bit-packed binary vectors of `width` bytes (back to back) to the device.
    pub fn upload_binary(&self, vectors: &[u8], width: usize) -> Result<DeviceVectors> {
        check_rows(vectors.len(), width)?;
        let data = self.stream.clone_htod(vectors).map_err(|e| driver_error("upload", e))?;
        Ok(DeviceVectors { data: DeviceData::Binary(data), rows: vectors.len() / width, dim: width })
    }

    /// The distance from every query to every vector: `queries.len() * vectors.rows()` values, query-major.
    /// Float queries are checked as the CPU path checks them; binary queries hold byte values. Batches
    /// that take the matrix-product path get l2 values in the product form, which is off by up to about
    /// √(ε·(|q|² + |v|²)) for near rows; [`CudaDevice::top_k`] recomputes its answers directly.
    pub fn distances(&self, vectors: &DeviceVectors, metric: Metric, queries: &[Vec<f32>]) -> Result<Vec<f32>> {
        let prepared = self.prepare(vectors, metric, queries)?;
        let mut out = Vec::with_capacity(queries.len() * vectors.rows);
        for batch in prepared.batches() {
            let distances = self.launch_distances(vectors, metric, &batch)?;
            out.extend(self.stream.clone_dtoh(&distances).map_err(|e| driver_error("copy back", e))?);
        }
        Ok(out)
    }

    /// The `k` nearest vectors to each query, nearest first, in the CPU path's order.
    pub fn top_k(
        &self,
        vectors: &DeviceVectors,
        metric: Metric,
        queries: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<Neighbor>>> {
        let prepared = self.prepare(vectors, metric, queries)?;
        let k = k.min(vectors.rows);
        if k == 0 {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        let n = vectors.rows as u64;
        let mut results = Vec::with_capacity(queries.len());
        for batch in prepared.batches() {
            let distances = self.launch_distances(vectors, metric, &batch)?;
            // The product form of l2 blurs near rows: select more, recompute those directly, keep k.
            let rerank = metric == Metric::L2 && self.uses_matrix_product(metric, batch.count);
            let selected = if rerank { (2 * k + 32).min(vectors.rows) } else { k };
            let slots = batch.count * selected;
            let mut rows = self.stream.alloc_zeros::<u32>(slots).map_err(|e| driver_error("allocation", e))?;
            let mut found = self.stream.alloc_zeros::<f32>(slots).map_err(|e| driver_error("allocation", e))?;
            let selected32 = selected as u32;
            let mut launch = self.stream.launch_builder(&self.select_top_k);
            launch.arg(&distances).arg(&n).arg(&selected32).arg(&mut rows).arg(&mut found);
            let config = LaunchConfig {
                grid_dim: (batch.count as u32, 1, 1),
                block_dim: (SELECT_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the arguments match select_top_k's parameters; `distances` holds count * n values
            // and `rows`/`found` count * selected slots, every one of which the kernel writes.
            unsafe { launch.launch(config) }.map_err(|e| driver_error("top-k selection", e))?;
            if rerank {
                let DeviceData::Float(data, _) = &vectors.data else { unreachable!("l2 runs over float vectors") };
                let queries = self.stream.clone_htod(batch.floats).map_err(|e| driver_error("query upload", e))?;
                let (dim, nq) = (vectors.dim as u32, batch.count as u32);
                let mut launch = self.stream.launch_builder(&self.l2_of_rows);
                launch.arg(data).arg(&dim).arg(&queries).arg(&rows).arg(&selected32).arg(&nq).arg(&mut found);
                let blocks = u32::try_from((slots as u64).div_ceil(WARPS_PER_BLOCK))
                    .map_err(|_| Error::invalid("too many rows to rerank"))?;
                let config =
                    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (DISTANCE_THREADS, 1, 1), shared_mem_bytes: 0 };
                // SAFETY: `rows` holds count * selected row numbers below n, `data` n * dim floats,
                // `queries` count * dim and `found` count * selected slots.
                unsafe { launch.launch(config) }.map_err(|e| driver_error("l2 rerank", e))?;
            }
            let rows = self.stream.clone_dtoh(&rows).map_err(|e| driver_error("copy back", e))?;
            let found = self.stream.clone_dtoh(&found).map_err(|e| driver_error("copy back", e))?;
            for q in 0..batch.count {
                let mut top: Vec<Neighbor> = (q * selected..(q + 1) * selected)
                    .map(|s| Neighbor { distance: found[s], ordinal: rows[s] as u64 })
                    .collect();
                top.sort_by(result_order);
                top.truncate(k);
                results.push(top);
            }
        }
        Ok(results)
    }

    fn prepare(&self, vectors: &DeviceVectors, metric: Metric, queries: &[Vec<f32>]) -> Result<PreparedQueries> {
        if queries.is_empty() {
            return Err(Error::invalid("vector search needs at least one query vector"));
        }
        if vectors.rows > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "{} vectors are more than one GPU search takes ({})",
                vectors.rows,
                u32::MAX
            )));
        }
        let dim = vectors.dim;
        let binary = matches!(vectors.data, DeviceData::Binary(_));
        if metric.is_binary() != binary {
            let (wants, holds) = if metric.is_binary() { ("bit-packed binary", "float") } else { ("float", "binary") };
            return Err(Error::invalid(format!(
                "metric '{metric}' compares {wants} vectors, but the device holds {holds} vectors"
            )));
        }
        let mut floats = Vec::with_capacity(queries.len() * dim);
        let mut norms = Vec::with_capacity(queries.len());
        for q in queries {
            if binary {
                if q.len() != dim {
                    return Err(Error::invalid(format!(
                        "query vector has {} bytes but the vectors have {dim}",
                        q.len()
                    )));
                }
                if let Some(v) = q.iter().find(|v| !((0.0..=255.0).contains(*v) && v.fract() == 0.0)) {
                    return Err(Error::invalid(format!("binary query byte {v} is not in 0..=255")));
                }
                floats.extend_from_slice(q);
            } else {
                let checked = FloatQuery::new(metric, q.clone(), dim)?;
                norms.push(checked.norm());
                floats.extend_from_slice(q);
            }
        }
        // A launch's grid has at most 65,535 query tiles.
        let per_batch = (MAX_DISTANCES / vectors.rows.max(1)).clamp(1, 65_535 * QUERY_TILE);
        Ok(PreparedQueries { floats, norms, dim, per_batch, count: queries.len() })
    }

    /// Whether a batch of `queries` by `metric` takes the matrix-product path.
    pub fn uses_matrix_product(&self, metric: Metric, queries: usize) -> bool {
        self.blas.is_some()
            && queries >= GEMM_MIN_QUERIES
            && matches!(metric, Metric::L2 | Metric::Cosine | Metric::InnerProduct)
    }

    fn launch_distances(&self, vectors: &DeviceVectors, metric: Metric, batch: &QueryBatch) -> Result<CudaSlice<f32>> {
        let n = vectors.rows as u64;
        let dim = vectors.dim as u32;
        let nq = batch.count as u32;
        let code = metric_code(metric);
        let mut out =
            self.stream.alloc_zeros::<f32>(batch.count * vectors.rows).map_err(|e| driver_error("allocation", e))?;
        let grid_x = u32::try_from(n.div_ceil(WARPS_PER_BLOCK))
            .map_err(|_| Error::invalid("too many vectors for one launch"))?;
        let config = LaunchConfig {
            grid_dim: (grid_x, batch.count.div_ceil(QUERY_TILE) as u32, 1),
            block_dim: (DISTANCE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        match &vectors.data {
            DeviceData::Float(data, squares) if self.uses_matrix_product(metric, batch.count) => {
                let blas = self.blas.as_ref().expect("uses_matrix_product checked it");
                let queries = self.stream.clone_htod(batch.floats).map_err(|e| driver_error("query upload", e))?;
                let (rows, count, d) = (c_int(vectors.rows)?, c_int(batch.count)?, c_int(vectors.dim)?);
                // Row-major vectors (n x dim) are column-major (dim x n): out, column-major n x nq
                // (row-major nq x n, as the selection reads it), is vectorsᵀᵀ · queriesᵀ.
                let gemm = GemmConfig {
                    transa: cublasOperation_t::CUBLAS_OP_T,
                    transb: cublasOperation_t::CUBLAS_OP_N,
                    m: rows,
                    n: count,
                    k: d,
                    alpha: 1.0f32,
                    lda: d,
                    ldb: d,
                    beta: 0.0f32,
                    ldc: rows,
                };
                // SAFETY: `data` is n x dim, `queries` nq x dim and `out` nq x n, as the leading
                // dimensions above describe.
                unsafe { blas.gemm(gemm, data, &queries, &mut out) }
                    .map_err(|e| driver_error("cuBLAS matrix product", e))?;
                let query_squares: Vec<f32> =
                    batch.floats.chunks_exact(vectors.dim).map(|q| q.iter().map(|x| x * x).sum()).collect();
                let query_squares =
                    self.stream.clone_htod(&query_squares).map_err(|e| driver_error("query upload", e))?;
                let norms = self.stream.clone_htod(batch.norms).map_err(|e| driver_error("query upload", e))?;
                let total = n * nq as u64;
                let threads = 256u32;
                let grid = u32::try_from(total.div_ceil(threads as u64))
                    .map_err(|_| Error::invalid("too many distances for one launch"))?;
                let mut launch = self.stream.launch_builder(&self.distances_from_dots);
                launch.arg(&mut out).arg(&n).arg(&nq).arg(squares).arg(&query_squares).arg(&norms).arg(&code);
                let config = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
                // SAFETY: `out` holds nq * n values, `squares` n and the query arrays nq each.
                unsafe { launch.launch(config) }.map_err(|e| driver_error("distance kernel", e))?;
            }
            DeviceData::Float(data, _) => {
                let queries = self.stream.clone_htod(batch.floats).map_err(|e| driver_error("query upload", e))?;
                let norms = self.stream.clone_htod(batch.norms).map_err(|e| driver_error("query upload", e))?;
                let mut launch = self.stream.launch_builder(&self.float_distances);
                launch.arg(data).arg(&n).arg(&dim).arg(&queries).arg(&norms).arg(&nq).arg(&code).arg(&mut out);
                // SAFETY: the arguments match float_distances's parameters: `data` holds n * dim floats,
                // `queries` nq * dim, `norms` nq, and `out` nq * n; the kernel reads and writes inside them.
                unsafe { launch.launch(config) }.map_err(|e| driver_error("distance kernel", e))?;
            }
            DeviceData::Binary(data) => {
                let bytes: Vec<u8> = batch.floats.iter().map(|v| *v as u8).collect();
                let queries = self.stream.clone_htod(&bytes).map_err(|e| driver_error("query upload", e))?;
                let mut launch = self.stream.launch_builder(&self.binary_distances);
                launch.arg(data).arg(&n).arg(&dim).arg(&queries).arg(&nq).arg(&code).arg(&mut out);
                // SAFETY: as above, with `data` holding n * width bytes and `queries` nq * width.
                unsafe { launch.launch(config) }.map_err(|e| driver_error("distance kernel", e))?;
            }
        }
        Ok(out)
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("name", &self.name).field("ordinal", &self.ctx.ordinal()).finish()
    }
}

fn c_int(value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::invalid(format!("{value} is too large for one cuBLAS call")))
}

fn check_rows(len: usize, dim: usize) -> Result<()> {
    if dim == 0 || len % dim != 0 {
        return Err(Error::invalid(format!("{len} values are not whole vectors of {dim}")));
    }
    Ok(())
}

/// Checked queries, flattened, split so that one batch's distances fit the device budget.
struct PreparedQueries {
    floats: Vec<f32>,
    norms: Vec<f32>,
    dim: usize,
    per_batch: usize,
    count: usize,
}

struct QueryBatch<'a> {
    floats: &'a [f32],
    norms: &'a [f32],
    count: usize,
}

impl PreparedQueries {
    fn batches(&self) -> impl Iterator<Item = QueryBatch<'_>> {
        (0..self.count).step_by(self.per_batch).map(move |start| {
            let end = (start + self.per_batch).min(self.count);
            QueryBatch {
                floats: &self.floats[start * self.dim..end * self.dim],
                norms: if self.norms.is_empty() { &[] } else { &self.norms[start..end] },
                count: end - start,
            }
        })
    }
}
