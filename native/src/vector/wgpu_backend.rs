//! The wgpu backend: batched float distances in a WGSL compute shader, on whatever device wgpu finds
//! (Vulkan, Metal, DX12, or a software Vulkan driver such as Mesa's lavapipe), and each query's exact
//! top-k selected on the CPU from the distances read back (one pass over them per query, with the CPU
//! path's `TopK`).
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

const WORKGROUP: u32 = 64;

fn metric_code(metric: Metric) -> Result<u32> {
    match metric {
        Metric::L2 => Ok(0),
        Metric::Cosine => Ok(1),
        Metric::InnerProduct => Ok(2),
        Metric::L1 => Ok(3),
        other => Err(Error::invalid(format!("the wgpu backend searches float vectors; metric '{other}' compares binary ones"))),
    }
}

/// An opened device with the distance shader compiled.
pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    name: String,
    software: bool,
    max_binding: u64,
    max_groups: u32,
}

static DEVICE: OnceLock<std::result::Result<WgpuDevice, String>> = OnceLock::new();

/// The process's wgpu device, opened on first use; why there is none when no adapter answers.
pub fn device() -> Result<&'static WgpuDevice> {
    DEVICE
        .get_or_init(WgpuDevice::open)
        .as_ref()
        .map_err(|why| Error::invalid(format!("no wgpu device: {why}")))
}

impl WgpuDevice {
    fn open() -> std::result::Result<WgpuDevice, String> {
        let instance = wgpu::Instance::default();
        let adapter = crate::runtime::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).map_err(|e| e.to_string())?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let descriptor = wgpu::DeviceDescriptor { label: Some("hyperstream"), required_limits: limits.clone(), ..Default::default() };
        let (device, queue) = crate::runtime::block_on(adapter.request_device(&descriptor)).map_err(|e| e.to_string())?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("hyperstream distances"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("hyperstream distances"),
            layout: None,
            module: &module,
            entry_point: Some("distance"),
            compilation_options: Default::default(),
            cache: None,
        });
        Ok(WgpuDevice {
            device,
            queue,
            pipeline,
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
    /// the device in chunks that fit its storage buffer limit.
    pub fn top_k(&self, vectors: &[f32], dim: usize, metric: Metric, queries: &[Vec<f32>], k: usize) -> Result<Vec<Vec<Neighbor>>> {
        let code = metric_code(metric)?;
        let checked = queries.iter().map(|q| FloatQuery::new(metric, q.clone(), dim)).collect::<Result<Vec<_>>>()?;
        let nq = checked.len();
        let row_bytes = (dim * 4) as u64;
        let per_chunk = (self.max_binding / row_bytes)
            .min(self.max_binding / (nq as u64 * 4))
            .min(u64::from(self.max_groups) * u64::from(WORKGROUP)) as usize;
        if per_chunk == 0 || nq > self.max_groups as usize {
            return Err(Error::invalid(format!("{nq} queries of {dim} dimensions do not fit the wgpu device's limits")));
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
            let distances = self.distances(rows, n, dim, code, &query_buffer, nq)?;
            let first = (chunk * per_chunk) as u64;
            for (q, top) in tops.iter_mut().enumerate() {
                for (i, d) in distances[q * n..(q + 1) * n].iter().enumerate() {
                    top.push(Neighbor { distance: *d, ordinal: first + i as u64 });
                }
            }
        }
        Ok(tops.into_iter().map(TopK::into_sorted).collect())
    }

    /// The distances of `n` rows to every query, query by query.
    fn distances(&self, rows: &[f32], n: usize, dim: usize, metric: u32, queries: &wgpu::Buffer, nq: usize) -> Result<Vec<f32>> {
        let storage = |label, contents: &[u8]| {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage: wgpu::BufferUsages::STORAGE })
        };
        let vectors = storage("vectors", &to_bytes(rows));
        let size = (n * nq * 4) as u64;
        let out = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("distances"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params: Vec<u8> = [n as u32, dim as u32, nq as u32, metric].iter().flat_map(|v| v.to_le_bytes()).collect();
        let params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: &params,
            usage: wgpu::BufferUsages::UNIFORM,
        });
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
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("distances") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("distances"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bindings, &[]);
            pass.dispatch_workgroups((n as u32).div_ceil(WORKGROUP), nq as u32, 1);
        }
        encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, size);
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
        let bytes = readback.get_mapped_range(..).map_err(|e| Error::Internal(format!("wgpu readback: {e}")))?;
        let distances = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("four bytes"))).collect();
        drop(bytes);
        readback.unmap();
        Ok(distances)
    }
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
                    assert_eq!(g.len(), c.len());
                    let query = FloatQuery::new(metric, q.clone(), dim).unwrap();
                    for (a, b) in g.iter().zip(c) {
                        let tolerance = 1e-4 * (1.0 + b.distance.abs());
                        assert!((a.distance - b.distance).abs() <= tolerance, "{metric} dim {dim}: {a:?} vs {b:?}");
                        // The same row, or one as near by the CPU's own distance (a tie within rounding).
                        let row = &vectors[a.ordinal as usize * dim..][..dim];
                        assert!(a.ordinal == b.ordinal || (query.distance(row) - b.distance).abs() <= tolerance, "{metric} dim {dim}: {a:?} vs {b:?}");
                    }
                }
            }
        }
        let err = device.top_k(&[0.0; 8], 8, Metric::Hamming, &[vec![0.0; 8]], 1).unwrap_err();
        assert!(err.to_string().contains("binary"), "{err}");
    }
}
