//! Exact top-k: the k nearest of a set of contiguous vectors, over all cores, and the merge of
//! partial results from several files or splits.
//!
//! Order is by distance, NaN last; ties go to the lower row ordinal, so every answer is deterministic
//! and equal to sorting every (distance, ordinal) pair and keeping the first k.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use arrow::buffer::BooleanBuffer;
use rayon::prelude::*;

use super::metric::FloatQuery;

/// Rows per parallel task; below twice this a search runs on the calling thread.
const CHUNK_ROWS: usize = 16 * 1024;

/// The largest k a search takes.
pub use crate::limits::MAX_K;

/// One candidate: its distance and its row ordinal.
#[derive(Debug, Clone, Copy)]
pub struct Neighbor {
    pub distance: f32,
    pub ordinal: u64,
}

/// The order of results: distance (NaN after every number), then ordinal.
pub fn result_order(a: &Neighbor, b: &Neighbor) -> Ordering {
    let by_distance = match (a.distance.is_nan(), b.distance.is_nan()) {
        (false, false) => a.distance.partial_cmp(&b.distance).expect("neither is NaN"),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    };
    by_distance.then(a.ordinal.cmp(&b.ordinal))
}

impl PartialEq for Neighbor {
    fn eq(&self, other: &Self) -> bool {
        result_order(self, other) == Ordering::Equal
    }
}

impl Eq for Neighbor {}

impl PartialOrd for Neighbor {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Neighbor {
    fn cmp(&self, other: &Self) -> Ordering {
        result_order(self, other)
    }
}

/// The k best candidates seen so far (a max-heap whose top is the worst kept).
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Neighbor>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(MAX_K) + 1) }
    }

    #[inline]
    pub fn push(&mut self, candidate: Neighbor) {
        if self.heap.len() < self.k {
            self.heap.push(candidate);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if candidate < *worst {
                *worst = candidate;
            }
        }
    }

    /// Folds `other`'s candidates in.
    pub fn merge(&mut self, other: TopK) {
        for candidate in other.heap {
            self.push(candidate);
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The kept candidates, best first.
    pub fn into_sorted(self) -> Vec<Neighbor> {
        self.heap.into_sorted_vec()
    }
}

/// The `k` nearest to `query` among `vectors` (rows of `query.dimension()` floats, back to back),
/// skipping rows that `allowed` marks false. Row `i` has ordinal `first_ordinal + i`.
pub fn exact_top_k(
    query: &FloatQuery,
    vectors: &[f32],
    allowed: Option<&BooleanBuffer>,
    first_ordinal: u64,
    k: usize,
) -> TopK {
    let dim = query.dimension();
    assert!(dim > 0 && vectors.len().is_multiple_of(dim), "vectors are not whole rows of {dim}");
    let rows = vectors.len() / dim;
    if let Some(mask) = allowed {
        assert_eq!(mask.len(), rows, "mask and vectors disagree on the row count");
    }
    let scan = |start: usize, end: usize| {
        let mut top = TopK::new(k);
        for row in start..end {
            if allowed.is_some_and(|m| !m.value(row)) {
                continue;
            }
            let v = &vectors[row * dim..(row + 1) * dim];
            top.push(Neighbor { distance: query.distance(v), ordinal: first_ordinal + row as u64 });
        }
        top
    };
    if rows < 2 * CHUNK_ROWS {
        return scan(0, rows);
    }
    (0..rows.div_ceil(CHUNK_ROWS))
        .into_par_iter()
        .map(|c| scan(c * CHUNK_ROWS, ((c + 1) * CHUNK_ROWS).min(rows)))
        .reduce(
            || TopK::new(k),
            |mut a, b| {
                a.merge(b);
                a
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::kernels::available;
    use crate::vector::metric::{reference_distance, Metric};
    use crate::vector::test_values as values;

    /// Sorts every row by the float64 reference and keeps k: the obviously correct twin.
    fn reference_top_k(
        metric: Metric,
        query: &[f32],
        vectors: &[f32],
        allowed: Option<&[bool]>,
        k: usize,
    ) -> Vec<(f64, u64)> {
        let dim = query.len();
        let mut all: Vec<(f64, u64)> = vectors
            .chunks_exact(dim)
            .enumerate()
            .filter(|(i, _)| allowed.is_none_or(|a| a[*i]))
            .map(|(i, v)| (reference_distance(metric, query, v), i as u64))
            .collect();
        all.sort_by(|a, b| match (a.0.is_nan(), b.0.is_nan()) {
            (false, false) => a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)),
            (x, y) => x.cmp(&y).then(a.1.cmp(&b.1)),
        });
        all.truncate(k);
        all
    }

    /// Checks `got` against the reference: same length, distances equal within rounding, and any row
    /// that differs is a near-tie (its reference distance equals the expected one within rounding).
    fn assert_matches(metric: Metric, query: &[f32], vectors: &[f32], got: &[Neighbor], want: &[(f64, u64)]) {
        assert_eq!(got.len(), want.len());
        let dim = query.len();
        let tol = |d: f64| 1e-4 * (1.0 + d.abs()) * (dim as f64).sqrt();
        for (g, w) in got.iter().zip(want) {
            if w.0.is_nan() {
                assert!(g.distance.is_nan());
                continue;
            }
            assert!(
                (g.distance as f64 - w.0).abs() <= tol(w.0),
                "{metric} dim {dim}: distance {} vs {}",
                g.distance,
                w.0
            );
            if g.ordinal != w.1 {
                let row = g.ordinal as usize;
                let exact = reference_distance(metric, query, &vectors[row * dim..(row + 1) * dim]);
                assert!(
                    (exact - w.0).abs() <= tol(w.0),
                    "{metric} dim {dim}: row {row} at {exact} is not a tie of {}",
                    w.0
                );
            }
        }
    }

    #[test]
    fn exact_top_k_equals_a_float64_sort_for_every_metric_and_instruction_set() {
        let metrics = [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1];
        for (case, dim) in [1usize, 2, 3, 7, 16, 31, 100, 384, 769, 2048].into_iter().enumerate() {
            let rows = if dim > 1000 { 300 } else { 2_000 };
            let vectors = values(case as u64, rows * dim);
            let query = values(case as u64 + 77, dim);
            let allowed: Vec<bool> = (0..rows).map(|i| i % 10 == 3).collect();
            let mask = BooleanBuffer::from(allowed.clone());
            for metric in metrics {
                for kernels in available() {
                    for k in [1, 10, 1000] {
                        let q = FloatQuery::with_kernels(metric, query.clone(), dim, kernels).unwrap();
                        let got = exact_top_k(&q, &vectors, None, 0, k).into_sorted();
                        assert_matches(
                            metric,
                            &query,
                            &vectors,
                            &got,
                            &reference_top_k(metric, &query, &vectors, None, k),
                        );
                        let got = exact_top_k(&q, &vectors, Some(&mask), 0, k).into_sorted();
                        let want = reference_top_k(metric, &query, &vectors, Some(&allowed), k);
                        assert_matches(metric, &query, &vectors, &got, &want);
                        assert!(got.iter().all(|n| allowed[n.ordinal as usize]), "a filtered-out row came back");
                    }
                }
            }
        }
    }

    #[test]
    fn parallel_search_equals_the_single_thread_answer() {
        let dim = 24;
        let rows = 5 * CHUNK_ROWS + 123;
        let vectors = values(9, rows * dim);
        let q = FloatQuery::new(Metric::L2, values(10, dim), dim).unwrap();
        let parallel = exact_top_k(&q, &vectors, None, 1_000, 50).into_sorted();
        let mut single = TopK::new(50);
        for (i, v) in vectors.chunks_exact(dim).enumerate() {
            single.push(Neighbor { distance: q.distance(v), ordinal: 1_000 + i as u64 });
        }
        let single = single.into_sorted();
        assert_eq!(
            parallel.iter().map(|n| n.ordinal).collect::<Vec<_>>(),
            single.iter().map(|n| n.ordinal).collect::<Vec<_>>()
        );
    }

    #[test]
    fn ties_go_to_the_lower_ordinal_and_nan_comes_last() {
        // Rows 0..6: duplicates of two points, a NaN row and a zero row.
        let vectors = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, f32::NAN, 0.0, 0.0, 1.0, 0.0, 0.0];
        let q = FloatQuery::new(Metric::Cosine, vec![1.0, 0.0], 2).unwrap();
        let got = exact_top_k(&q, &vectors, None, 0, 10).into_sorted();
        let order: Vec<u64> = got.iter().map(|n| n.ordinal).collect();
        // Distances: 0, 1, 0, NaN, 1, 1 (zero vector) -> 0, 2, 1, 4, 5, 3.
        assert_eq!(order, vec![0, 2, 1, 4, 5, 3]);
        assert!(got[5].distance.is_nan());
        assert_eq!(
            exact_top_k(&q, &vectors, None, 0, 2).into_sorted().iter().map(|n| n.ordinal).collect::<Vec<_>>(),
            vec![0, 2]
        );
    }

    #[test]
    fn k_is_checked() {
        assert!(crate::limits::top_k("k", 0)
            .unwrap_err()
            .to_string()
            .contains("k must be between 1 and 100000, got 0"));
        assert!(crate::limits::top_k("k", -3).is_err());
        assert!(crate::limits::top_k("k", MAX_K as i64 + 1).unwrap_err().to_string().contains("got 100001"));
        assert_eq!(crate::limits::top_k("k", 1000).unwrap(), 1000);
    }
}
