//! Exact top-k over a stored (or in-memory) 2-d array: one pass over the rows for any number of
//! queries, over all cores, with the vector engine's metrics and result order.
//!
//! Float metrics take `float32` rows as they lie (no copy) and `float16` / `float64` / `int8` (quantized)
//! rows converted a chunk at a time; `hamming` and `jaccard` take `uint8` rows as bit-packed binary vectors.

use std::borrow::Cow;

use half::f16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

use super::dtype::DType;
use super::store::{ArrayData, ArrayInfo, ArrayStore};
use crate::vector::gpu::{batch_top_k, Backend, BatchResult};
use crate::vector::kernels::{byte_kernels, half_kernels, hamming, jaccard, NarrowKernels};
use crate::vector::metric::binary_query;
use crate::vector::{FloatQuery, Metric, Neighbor, TopK};
use crate::{Error, Result};

/// Rows per parallel task.
const CHUNK_ROWS: usize = 8 * 1024;

/// The queries of one search, checked against the array they search.
#[derive(Debug, Clone)]
pub struct Queries {
    metric: Metric,
    float: Vec<FloatQuery>,
    binary: Vec<Vec<u8>>,
}

impl Queries {
    /// Checks `queries` (each a vector of the array's row width: floats for the float metrics, bytes
    /// holding 0..=255 for `hamming` and `jaccard`) against array `info`.
    pub fn new(info: &ArrayInfo, metric: Metric, queries: &[Vec<f32>]) -> Result<Queries> {
        if info.row_shape().len() != 1 {
            return Err(Error::invalid(format!(
                "vector search needs a 2-d array of vectors, but '{}' has shape {:?}",
                info.name, info.shape
            )));
        }
        if queries.is_empty() {
            return Err(Error::invalid("vector search needs at least one query vector"));
        }
        let dim = info.row_elements();
        let float_types = [DType::I8, DType::F16, DType::F32, DType::F64];
        if metric.is_binary() {
            if info.dtype != DType::U8 {
                return Err(Error::invalid(format!(
                    "metric '{metric}' compares bit-packed uint8 rows, but '{}' holds {}",
                    info.name, info.dtype
                )));
            }
            let binary = queries
                .iter()
                .map(|q| {
                    if q.len() != dim {
                        return Err(Error::invalid(format!(
                            "query vector has {} bytes but the rows of '{}' have {dim}",
                            q.len(),
                            info.name
                        )));
                    }
                    binary_query(q)
                })
                .collect::<Result<_>>()?;
            return Ok(Queries { metric, float: Vec::new(), binary });
        }
        if !float_types.contains(&info.dtype) {
            return Err(Error::invalid(format!(
                "metric '{metric}' compares float vectors, but '{}' holds {}",
                info.name, info.dtype
            )));
        }
        let float = queries.iter().map(|q| FloatQuery::new(metric, q.clone(), dim)).collect::<Result<_>>()?;
        Ok(Queries { metric, float, binary: Vec::new() })
    }

    fn len(&self) -> usize {
        self.float.len().max(self.binary.len())
    }

    /// Pushes rows `first..` (their bytes in `data`) into one top-k per query.
    fn scan(&self, dtype: DType, dim: usize, data: &[u8], first: u64, skip: &[u64], tops: &mut [TopK]) {
        let width = dim * dtype.size();
        let skipped = |row: u64| !skip.is_empty() && skip.binary_search(&row).is_ok();
        if self.metric.is_binary() {
            for (i, row) in data.chunks_exact(width).enumerate() {
                let ordinal = first + i as u64;
                if skipped(ordinal) {
                    continue;
                }
                for (q, top) in self.binary.iter().zip(tops.iter_mut()) {
                    let distance =
                        if self.metric == Metric::Hamming { hamming(q, row) as f32 } else { jaccard(q, row) };
                    top.push(Neighbor { distance, ordinal });
                }
            }
            return;
        }
        // float16 and int8 rows widened in registers, where the CPU can.
        let widened = match (dtype, half_kernels(), byte_kernels()) {
            // SAFETY: every bit pattern is a valid u16 / i8; align_to only yields the aligned middle part.
            (DType::F16, Some(k), _) => {
                self.scan_narrow(unsafe { data.align_to::<u16>() }, k, dim, first, &skipped, tops)
            }
            (DType::I8, _, Some(k)) => {
                self.scan_narrow(unsafe { data.align_to::<i8>() }, k, dim, first, &skipped, tops)
            }
            _ => false,
        };
        if widened {
            return;
        }
        let mut push = |ordinal: u64, v: &[f32]| {
            for (q, top) in self.float.iter().zip(tops.iter_mut()) {
                top.push(Neighbor { distance: q.distance(v), ordinal });
            }
        };
        let aligned = if dtype == DType::F32 { bytes_as_f32(data) } else { None };
        match aligned {
            Some(floats) => {
                for (i, v) in floats.chunks_exact(dim).enumerate() {
                    let ordinal = first + i as u64;
                    if !skipped(ordinal) {
                        push(ordinal, v);
                    }
                }
            }
            None => {
                // One row at a time into a buffer that stays in cache, so that the rows are read
                // from memory once, at their own width.
                let mut row = vec![0f32; dim];
                for (i, bytes) in data.chunks_exact(width).enumerate() {
                    let ordinal = first + i as u64;
                    if !skipped(ordinal) {
                        convert_into(dtype, bytes, &mut row);
                        push(ordinal, &row);
                    }
                }
            }
        }
    }

    /// Pushes rows of a narrow type (`parts`: `data` split where it is aligned for it) through kernels that
    /// widen them in registers; false, leaving it to the caller, when `data` is not aligned.
    fn scan_narrow<T>(
        &self,
        (head, rows, tail): (&[u8], &[T], &[u8]),
        kernels: &NarrowKernels<T>,
        dim: usize,
        first: u64,
        skipped: &impl Fn(u64) -> bool,
        tops: &mut [TopK],
    ) -> bool {
        if !head.is_empty() || !tail.is_empty() || cfg!(target_endian = "big") {
            return false;
        }
        for (i, v) in rows.chunks_exact(dim).enumerate() {
            let ordinal = first + i as u64;
            if !skipped(ordinal) {
                for (q, top) in self.float.iter().zip(tops.iter_mut()) {
                    top.push(Neighbor { distance: q.distance_narrow(v, kernels), ordinal });
                }
            }
        }
        true
    }

    /// The k nearest rows of `data` (the rows of `info`) to each query, skipping the sorted rows `skip`.
    pub fn search(&self, info: &ArrayInfo, data: &[u8], k: usize, skip: &[u64]) -> Vec<TopK> {
        let (dim, width) = (info.row_elements(), info.row_bytes());
        let rows = data.len() / width;
        let fresh = || (0..self.len()).map(|_| TopK::new(k)).collect::<Vec<_>>();
        let merge = |mut a: Vec<TopK>, b: Vec<TopK>| {
            a.iter_mut().zip(b).for_each(|(x, y)| x.merge(y));
            a
        };
        (0..rows.div_ceil(CHUNK_ROWS))
            .into_par_iter()
            .map(|c| {
                let (start, end) = (c * CHUNK_ROWS, ((c + 1) * CHUNK_ROWS).min(rows));
                let mut tops = fresh();
                self.scan(info.dtype, dim, &data[start * width..end * width], start as u64, skip, &mut tops);
                tops
            })
            .reduce(fresh, merge)
    }
}

/// Rows of a float-metric array (`float32`, `float64`, `float16` or quantized `int8`) as `f32`: borrowed
/// when they already are and lie aligned, converted otherwise.
fn floats_of(dtype: DType, data: &[u8]) -> Cow<'_, [f32]> {
    if let Some(floats) = bytes_as_f32(data).filter(|_| dtype == DType::F32) {
        return Cow::Borrowed(floats);
    }
    let mut out = vec![0f32; data.len() / dtype.size()];
    convert_into(dtype, data, &mut out);
    Cow::Owned(out)
}

/// Little-endian values of a float-metric dtype into `out` (as many as it holds) as `f32`; `float16`
/// 8 at a time with the F16C instructions where the CPU has them (the `half` crate checks at run time).
fn convert_into(dtype: DType, data: &[u8], out: &mut [f32]) {
    match dtype {
        DType::F16 => {
            // SAFETY: every bit pattern is a valid f16 (a u16); align_to only yields the aligned middle part.
            let (head, halves, tail) = unsafe { data.align_to::<f16>() };
            if head.is_empty() && tail.is_empty() && cfg!(target_endian = "little") {
                halves.convert_to_f32_slice(out);
            } else {
                out.iter_mut()
                    .zip(data.chunks_exact(2))
                    .for_each(|(o, b)| *o = f16::from_le_bytes([b[0], b[1]]).to_f32());
            }
        }
        DType::F32 => out
            .iter_mut()
            .zip(data.chunks_exact(4))
            .for_each(|(o, b)| *o = f32::from_le_bytes(b.try_into().expect("4 bytes"))),
        DType::F64 => out
            .iter_mut()
            .zip(data.chunks_exact(8))
            .for_each(|(o, b)| *o = f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32),
        DType::I8 => out.iter_mut().zip(data).for_each(|(o, &b)| *o = b as i8 as f32),
        other => unreachable!("Queries::new refuses float metrics over {other}"),
    }
}

/// `data` as floats, when it is aligned for them (rows read from a store always are).
fn bytes_as_f32(data: &[u8]) -> Option<&[f32]> {
    // SAFETY: every bit pattern is a valid f32; align_to only yields the aligned middle part.
    let (head, floats, tail) = unsafe { data.align_to::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(floats)
}

/// The k nearest rows of an in-memory array to each query, nearest first.
pub fn top_k_in_memory(
    array: &ArrayData,
    metric: Metric,
    queries: &[Vec<f32>],
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    let queries = Queries::new(&array.info, metric, queries)?;
    Ok(queries.search(&array.info, &array.bytes, k, &[]).into_iter().map(TopK::into_sorted).collect())
}

impl ArrayStore {
    /// The k nearest rows of array `name` to each query, nearest first, read straight from the
    /// memory-mapped file (nothing is loaded first), on the backend [`Backend::Auto`] picks.
    pub fn top_k(&self, name: &str, metric: Metric, queries: &[Vec<f32>], k: usize) -> Result<Vec<Vec<Neighbor>>> {
        Ok(self.top_k_on(name, metric, queries, k, Backend::Auto)?.neighbors)
    }

    /// As [`top_k`](Self::top_k), on `backend`, and saying which backend ran. A GPU compares the
    /// rows as `f32` (converted first when the array holds another float type); bit-packed rows
    /// (`hamming`, `jaccard`) are compared on the CPU only.
    pub fn top_k_on(
        &self,
        name: &str,
        metric: Metric,
        queries: &[Vec<f32>],
        k: usize,
        backend: Backend,
    ) -> Result<BatchResult> {
        if metric.is_binary() && matches!(backend, Backend::Cuda | Backend::Wgpu) {
            return Err(Error::invalid(format!(
                "metric '{metric}' runs on the CPU only; the {} backend compares float vectors",
                backend.name()
            )));
        }
        // The queries are checked against the array as it is read, not as it was a moment before.
        let (_, tops, ran) = self.read_rows(
            name,
            |info, data, replacing| {
                let checked = Queries::new(info, metric, queries)?;
                let elements = data.len() / info.dtype.size();
                let ran = if metric.is_binary() || elements == 0 {
                    Backend::Cpu
                } else {
                    backend.choose(queries.len().saturating_mul(elements))
                };
                let tops = match ran {
                    Backend::Cpu | Backend::Auto => checked.search(info, data, k, replacing),
                    gpu => {
                        // Rows a replace is still writing are left out here and compared, new, below.
                        let found = batch_top_k(
                            &floats_of(info.dtype, data),
                            info.row_elements(),
                            metric,
                            queries,
                            k + replacing.len(),
                            gpu,
                        )?;
                        found
                            .neighbors
                            .into_iter()
                            .map(|hits| {
                                let mut top = TopK::new(k);
                                hits.into_iter()
                                    .filter(|n| replacing.binary_search(&n.ordinal).is_err())
                                    .for_each(|n| top.push(n));
                                top
                            })
                            .collect()
                    }
                };
                Ok((checked, tops, ran))
            },
            |(checked, tops, _), info, row, new| checked.scan(info.dtype, info.row_elements(), new, row, &[], tops),
        )?;
        Ok(BatchResult { neighbors: tops.into_iter().map(TopK::into_sorted).collect(), backend: ran.name() })
    }
}
