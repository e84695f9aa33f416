//! The wgpu backend: batched float distances in a WGSL compute shader, on whatever device wgpu finds
//! (Vulkan, Metal, DX12, or a software Vulkan driver such as Mesa's lavapipe), and each query's exact
//! top-k selected on the device: a radix select over order-preserving 32-bit keys of the distances
//! (four histogram passes of 8 bits find the k-th smallest key per query), then a gather of the rows
//! at or below it, about k per query, which are all that is read back; the CPU orders those few. When
//! ties at the k-th distance leave too many rows to gather, the distances are read back whole and
//! selected on the CPU instead.
//!
//! Results follow the CPU path's rules (`topk.rs`): order by distance, NaN after every number, ties to
//! the lower ordinal; a cosine distance to a stored zero vector is 1. The distances can differ from
//! the CPU's in the last bits (another summation order), which the tests allow for.

use std::sync::OnceLock;

use wgpu::util::DeviceExt;

use super::topk::{Neighbor, TopK};
use super::{FloatQuery, Metric};
use crate::{Error, Result};

const SHADER: &str = r#"
struct Params { rows: u32, dim: u32, queries: u32, metric: u32 }

@group(0) @binding(0) var<storage, read> vectors: array<f32>;
@group(0) @binding(1) var<storage, read> queries: array<f32>;
@group(0) @binding(2) var<storage, read_write> distances: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

// Metric codes, as `metric_code` gives them: 0 l2, 1 cosine, 2 inner product (negated), 3 l1.
@compute @workgroup_size(64)
fn distance(@builtin(global_invocation_id) id: vec3<u32>) {
    let row = id.x;
    let q = id.y;
    if (row >= params.rows || q >= params.queries) {
        return;
    }
    let v = row * params.dim;
    let w = q * params.dim;
    var sum = 0.0;
    var dot = 0.0;
    var norm_v = 0.0;
    var norm_q = 0.0;
    for (var i = 0u; i < params.dim; i = i + 1u) {
        let a = queries[w + i];
        let b = vectors[v + i];
        let d = a - b;
        sum = sum + select(abs(d), d * d, params.metric == 0u);
        dot = dot + a * b;
        norm_v = norm_v + b * b;
        norm_q = norm_q + a * a;
    }
    var out = sum;
    if (params.metric == 0u) {
        out = sqrt(sum);
    } else if (params.metric == 1u) {
        if (norm_v == 0.0) {
            out = 1.0;
        } else {
            out = clamp(1.0 - dot / (sqrt(norm_q) * sqrt(norm_v)), 0.0, 2.0);
        }
    } else if (params.metric == 2u) {
        out = -dot;
    }
    distances[q * params.rows + row] = out;
}
"#;

/// Radix select over the distances: `histogram` counts, per query, the keys that match the query's
/// prefix so far by their next 8 bits; `gather` writes out the rows whose key is at most the query's
/// threshold, with their distance bits.
const SELECT_SHADER: &str = r#"
struct Select { rows: u32, queries: u32, shift: u32, cap: u32 }

@group(0) @binding(0) var<storage, read> dists: array<f32>;
@group(0) @binding(1) var<storage, read> prefixes: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> sel: Select;
@group(0) @binding(4) var<storage, read_write> found: array<vec2<u32>>;

// Ascending keys in the CPU path's order: numbers by value (-0 as 0), every NaN last.
fn order_key(bits: u32) -> u32 {
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return 0xffffffffu;
    }
    var b = bits;
    if (b == 0x80000000u) {
        b = 0u;
    }
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

@compute @workgroup_size(64)
fn histogram(@builtin(global_invocation_id) id: vec3<u32>) {
    let row = id.x;
    let q = id.y;
    if (row >= sel.rows || q >= sel.queries) {
        return;
    }
    let key = order_key(bitcast<u32>(dists[q * sel.rows + row]));
    let p = prefixes[q];
    if ((key & p.y) != p.x) {
        return;
    }
    atomicAdd(&counts[q * 256u + ((key >> sel.shift) & 255u)], 1u);
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) id: vec3<u32>) {
    let row = id.x;
    let q = id.y;
    if (row >= sel.rows || q >= sel.queries) {
        return;
    }
    let bits = bitcast<u32>(dists[q * sel.rows + row]);
    if (order_key(bits) > prefixes[q].x) {
        return;
    }
    let slot = atomicAdd(&counts[q], 1u);
    if (slot < sel.cap) {
        found[q * sel.cap + slot] = vec2<u32>(row, bits);
    }
}
"#;

const WORKGROUP: u32 = 64;

/// One query's gathered rows: (row within the chunk, distance).
type Gathered = Vec<(u32, f32)>;

fn metric_code(metric: Metric) -> Result<u32> {
    match metric {
        Metric::L2 => Ok(0),
        Metric::Cosine => Ok(1),
        Metric::InnerProduct => Ok(2),
        Metric::L1 => Ok(3),
        other => Err(Error::invalid(format!(
            "the wgpu backend searches float vectors; metric '{other}' compares binary ones"
        ))),
    }
}

/// An opened device with the distance shader compiled.
pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    histogram: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
    name: String,
    software: bool,
    max_binding: u64,
    max_groups: u32,
}

static DEVICE: OnceLock<std::result::Result<WgpuDevice, String>> = OnceLock::new();

/// The process's wgpu device, opened on first use; why there is none when no adapter answers.
pub fn device() -> Result<&'static WgpuDevice> {
    DEVICE.get_or_init(WgpuDevice::open).as_ref().map_err(|why| Error::invalid(format!("no wgpu device: {why}")))
}

impl WgpuDevice {
    fn open() -> std::result::Result<WgpuDevice, String> {
        let instance = wgpu::Instance::default();
        let adapter = crate::runtime::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| e.to_string())?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("hyperstream"),
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) =
            crate::runtime::block_on(adapter.request_device(&descriptor)).map_err(|e| e.to_string())?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("hyperstream distances"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let select = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("hyperstream select"),
            source: wgpu::ShaderSource::Wgsl(SELECT_SHADER.into()),
        });
        let pipeline = |module: &wgpu::ShaderModule, entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let (distance, histogram, gather) =
            (pipeline(&module, "distance"), pipeline(&select, "histogram"), pipeline(&select, "gather"));
        Ok(WgpuDevice {
            pipeline: distance,
            histogram,
            gather,
            device,
            queue,
            name: format!("{} via {:?}", info.name, info.backend),
            software: info.device_type == wgpu::DeviceType::Cpu,
            max_binding: limits.max_storage_buffer_binding_size.min(limits.max_buffer_size),
            max_groups: limits.max_compute_workgroups_per_dimension,
        })
    }

    /// The adapter's name and graphics API.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the device is a CPU emulating one (a software driver): never faster than the CPU path.
    pub fn is_software(&self) -> bool {
        self.software
    }

    /// The `k` nearest of `vectors` (rows of `dim` floats) to each query, nearest first. Rows go to
    /// the device in chunks that fit its storage buffer limit; each chunk's nearest are selected there.
    pub fn top_k(
        &self,
        vectors: &[f32],
        dim: usize,
        metric: Metric,
        queries: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<Neighbor>>> {
        self.top_k_selected(vectors, dim, metric, queries, k, true)
    }

    /// As [`top_k`](Self::top_k); `on_device` false reads every distance back and selects on the CPU
    /// (the tests compare the two).
    fn top_k_selected(
        &self,
        vectors: &[f32],
        dim: usize,
        metric: Metric,
        queries: &[Vec<f32>],
        k: usize,
        on_device: bool,
    ) -> Result<Vec<Vec<Neighbor>>> {
        let code = metric_code(metric)?;
        let checked = queries.iter().map(|q| FloatQuery::new(metric, q.clone(), dim)).collect::<Result<Vec<_>>>()?;
        let nq = checked.len();
        let row_bytes = (dim * 4) as u64;
        let per_chunk = (self.max_binding / row_bytes)
            .min(self.max_binding / (nq as u64 * 4))
            .min(u64::from(self.max_groups) * u64::from(WORKGROUP)) as usize;
        if per_chunk == 0 || nq > self.max_groups as usize {
            return Err(Error::invalid(format!(
                "{nq} queries of {dim} dimensions do not fit the wgpu device's limits"
            )));
        }
        let flat: Vec<f32> = queries.iter().flatten().copied().collect();
        let query_buffer = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("queries"),
            contents: &to_bytes(&flat),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let mut tops: Vec<TopK> = (0..nq).map(|_| TopK::new(k)).collect();
        for (chunk, rows) in vectors.chunks(per_chunk * dim).enumerate() {
            let n = rows.len() / dim;
            let first = (chunk * per_chunk) as u64;
            let distances = self.distances(rows, n, dim, code, &query_buffer, nq)?;
            let selected = if on_device && k < n { self.select(&distances, n, nq, k)? } else { None };
            match selected {
                Some(found) => {
                    for (top, rows) in tops.iter_mut().zip(found) {
                        rows.into_iter().for_each(|(row, distance)| {
                            top.push(Neighbor { distance, ordinal: first + u64::from(row) })
                        });
                    }
                }
                None => {
                    let all = floats(&self.read_back(&distances, (n * nq * 4) as u64)?);
                    for (q, top) in tops.iter_mut().enumerate() {
                        for (i, d) in all[q * n..(q + 1) * n].iter().enumerate() {
                            top.push(Neighbor { distance: *d, ordinal: first + i as u64 });
                        }
                    }
                }
            }
        }
        Ok(tops.into_iter().map(TopK::into_sorted).collect())
    }

    /// Each query's rows whose distance is among the `k` smallest of the `n` in `distances` (ties at
    /// the k-th included), as (row, distance); None when those ties are too many to gather.
    fn select(&self, distances: &wgpu::Buffer, n: usize, nq: usize, k: usize) -> Result<Option<Vec<Gathered>>> {
        // Per query: the key prefix found so far and its mask; how many of the k lie at or past it.
        let mut prefixes = vec![[0u32; 2]; nq];
        let mut remaining = vec![k as u32; nq];
        let mut at_threshold = vec![0u32; nq];
        for pass in 0..4u32 {
            let shift = 24 - 8 * pass;
            let counts = self.run_select(&self.histogram, distances, n, nq, shift, &prefixes, nq * 256, 0)?.0;
            for q in 0..nq {
                let mut before = 0u32;
                for (bin, &count) in counts[q * 256..(q + 1) * 256].iter().enumerate() {
                    if before + count >= remaining[q] {
                        prefixes[q][0] |= (bin as u32) << shift;
                        prefixes[q][1] |= 0xff << shift;
                        remaining[q] -= before;
                        at_threshold[q] = count;
                        break;
                    }
                    before += count;
                }
            }
        }
        // The k-th key per query is now its prefix: gather the keys below it and every tie at it.
        let cap = (0..nq).map(|q| k as u32 - remaining[q] + at_threshold[q]).max().unwrap_or(0) as usize;
        if (nq * cap * 8) as u64 > self.max_binding {
            return Ok(None);
        }
        let thresholds: Vec<[u32; 2]> = prefixes.iter().map(|p| [p[0], 0]).collect();
        let (counts, found) = self.run_select(&self.gather, distances, n, nq, 0, &thresholds, nq, cap)?;
        Ok(Some(
            (0..nq)
                .map(|q| {
                    let taken = (counts[q] as usize).min(cap);
                    found[q * cap..q * cap + taken].iter().map(|&[row, bits]| (row, f32::from_bits(bits))).collect()
                })
                .collect(),
        ))
    }

    /// Runs one selection kernel over `n` rows × `nq` queries; returns its `counts` and, with a
    /// `cap`, the `found` rows (`cap` per query).
    #[allow(clippy::too_many_arguments)]
    fn run_select(
        &self,
        pipeline: &wgpu::ComputePipeline,
        distances: &wgpu::Buffer,
        n: usize,
        nq: usize,
        shift: u32,
        prefixes: &[[u32; 2]],
        counts: usize,
        cap: usize,
    ) -> Result<(Vec<u32>, Vec<[u32; 2]>)> {
        let init = |label, contents: &[u8], usage| {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
        };
        let prefix_bytes: Vec<u8> = prefixes.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
        let prefix_buffer = init("prefixes", &prefix_bytes, wgpu::BufferUsages::STORAGE);
        let count_buffer =
            init("counts", &vec![0u8; counts * 4], wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC);
        let params: Vec<u8> = [n as u32, nq as u32, shift, cap as u32].iter().flat_map(|v| v.to_le_bytes()).collect();
        let params = init("select", &params, wgpu::BufferUsages::UNIFORM);
        let found_bytes = (nq * cap.max(1) * 8) as u64;
        let found_buffer = (cap > 0).then(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("found"),
                size: found_bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        });
        let mut entries = vec![
            wgpu::BindGroupEntry { binding: 0, resource: distances.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: prefix_buffer.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: count_buffer.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: params.as_entire_binding() },
        ];
        if let Some(found) = &found_buffer {
            entries.push(wgpu::BindGroupEntry { binding: 4, resource: found.as_entire_binding() });
        }
        let bindings = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("select"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        self.dispatch(pipeline, &bindings, n, nq);
        let counts = self
            .read_back(&count_buffer, (counts * 4) as u64)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")))
            .collect();
        let found = match &found_buffer {
            Some(found) => self
                .read_back(found, found_bytes)?
                .chunks_exact(8)
                .map(|b| {
                    [
                        u32::from_le_bytes(b[..4].try_into().expect("four bytes")),
                        u32::from_le_bytes(b[4..].try_into().expect("four bytes")),
                    ]
                })
                .collect(),
            None => Vec::new(),
        };
        Ok((counts, found))
    }

    /// Runs `pipeline` over `n` rows × `nq` queries.
    fn dispatch(&self, pipeline: &wgpu::ComputePipeline, bindings: &wgpu::BindGroup, n: usize, nq: usize) {
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hyperstream") });
        {
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bindings, &[]);
            pass.dispatch_workgroups((n as u32).div_ceil(WORKGROUP), nq as u32, 1);
        }
        self.queue.submit([encoder.finish()]);
    }

    /// The distances of `n` rows to every query, query by query, left on the device.
    fn distances(
        &self,
        rows: &[f32],
        n: usize,
        dim: usize,
        metric: u32,
        queries: &wgpu::Buffer,
        nq: usize,
    ) -> Result<wgpu::Buffer> {
        let init = |label, contents: &[u8], usage| {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
        };
        let vectors = init("vectors", &to_bytes(rows), wgpu::BufferUsages::STORAGE);
        let out = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("distances"),
            size: (n * nq * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let params: Vec<u8> = [n as u32, dim as u32, nq as u32, metric].iter().flat_map(|v| v.to_le_bytes()).collect();
        let params = init("params", &params, wgpu::BufferUsages::UNIFORM);
        let bindings = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("distances"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: vectors.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: queries.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: out.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: params.as_entire_binding() },
            ],
        });
        self.dispatch(&self.pipeline, &bindings, n, nq);
        Ok(out)
    }

    /// The first `size` bytes of a device buffer, once the work queued before is done.
    fn read_back(&self, buffer: &wgpu::Buffer, size: u64) -> Result<Vec<u8>> {
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, size);
        self.queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |mapped| {
            let _ = sender.send(mapped);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map_err(|e| Error::Internal(format!("wgpu device: {e}")))?;
        receiver
            .recv()
            .map_err(|e| Error::Internal(format!("wgpu readback: {e}")))?
            .map_err(|e| Error::Internal(format!("wgpu readback: {e}")))?;
        let bytes = readback.get_mapped_range(..).map_err(|e| Error::Internal(format!("wgpu readback: {e}")))?.to_vec();
        readback.unmap();
        Ok(bytes)
    }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("four bytes"))).collect()
}

fn to_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::gpu::{batch_top_k, Backend};

    /// On a machine without a wgpu adapter (no GPU and no software Vulkan driver) this says so and
    /// checks nothing: install Mesa's lavapipe (Debian `mesa-vulkan-drivers`) to run it anywhere.
    #[test]
    fn wgpu_searches_answer_as_the_cpu_does() {
        let device = match device() {
            Ok(device) => device,
            Err(e) => {
                eprintln!("wgpu search test skipped: {e}");
                return;
            }
        };
        eprintln!("wgpu search test on {}", device.name());
        for dim in [1usize, 7, 64, 129] {
            let mut vectors = crate::vector::test_values(dim as u64, 700 * dim);
            vectors[3 * dim..4 * dim].fill(0.0); // a zero vector: cosine distance 1
            let queries: Vec<Vec<f32>> = (0..5).map(|i| crate::vector::test_values(100 + i, dim)).collect();
            for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
                let gpu = batch_top_k(&vectors, dim, metric, &queries, 25, Backend::Wgpu).unwrap();
                let cpu = batch_top_k(&vectors, dim, metric, &queries, 25, Backend::Cpu).unwrap();
                assert_eq!((gpu.backend, cpu.backend), ("wgpu", "cpu"));
                for ((g, c), q) in gpu.neighbors.iter().zip(&cpu.neighbors).zip(&queries) {
                    let query = FloatQuery::new(metric, q.clone(), dim).unwrap();
                    let own = |r: u64| query.distance(&vectors[r as usize * dim..][..dim]);
                    crate::vector::gpu::assert_same_neighbors(g, c, own, &format!("{metric} dim {dim}"));
                }
            }
        }
        // Selection on the device equals selection over every distance read back, exactly: ties at
        // the k-th distance (identical rows), NaN distances (last), k past the row count.
        let dim = 5;
        let mut vectors = crate::vector::test_values(77, 900 * dim);
        for row in (0..900).step_by(7) {
            vectors[row * dim..(row + 1) * dim].copy_from_slice(&[0.25, -0.5, 1.0, 0.0, 2.0]);
        }
        vectors[11 * dim] = f32::NAN;
        vectors[12 * dim..13 * dim].fill(0.0);
        let queries: Vec<Vec<f32>> =
            vec![vec![0.25, -0.5, 1.0, 0.0, 2.0], crate::vector::test_values(5, dim), vec![0.0, 0.0, 0.0, 0.0, 1.0]];
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            for k in [1, 3, 130, 140, 899, 900, 1000] {
                let selected = device.top_k_selected(&vectors, dim, metric, &queries, k, true).unwrap();
                let read_back = device.top_k_selected(&vectors, dim, metric, &queries, k, false).unwrap();
                for (a, b) in selected.iter().zip(&read_back) {
                    let pairs =
                        |v: &Vec<Neighbor>| v.iter().map(|n| (n.distance.to_bits(), n.ordinal)).collect::<Vec<_>>();
                    assert_eq!(pairs(a), pairs(b), "{metric} k {k}");
                    assert_eq!(a.len(), k.min(900));
                }
            }
        }
        let err = device.top_k(&[0.0; 8], 8, Metric::Hamming, &[vec![0.0; 8]], 1).unwrap_err();
        assert!(err.to_string().contains("binary"), "{err}");
    }
}
