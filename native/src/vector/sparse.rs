//! Sparse vectors: a vector given by the positions of its non-zero elements (strictly increasing,
//! non-negative) and their values, compared by the float metrics through a merge of the two position
//! lists, so that the cost follows the non-zeros, not the dimension.
//!
//! A table column of sparse vectors is a struct of two lists, `indices` (int) and `values` (float),
//! of one length per row. A query travels as its (position, value) pairs flattened into floats, the
//! positions as whole numbers below 2^24 (where every such number is exact as a float).

use super::metric::Metric;
use crate::{Error, Result};

/// The largest position a sparse query can name (floats are exact whole numbers up to 2^24).
pub const MAX_QUERY_POSITION: u32 = 1 << 24;

/// A sparse query checked against its metric: positions strictly increasing, values finite.
#[derive(Debug, Clone)]
pub struct SparseQuery {
    metric: Metric,
    indices: Vec<u32>,
    values: Vec<f32>,
    norm: f64,
}

impl SparseQuery {
    /// A query from (position, value) pairs flattened into floats, in any order.
    pub fn from_pairs(metric: Metric, pairs: &[f32]) -> Result<Self> {
        if !pairs.len().is_multiple_of(2) {
            return Err(Error::invalid(format!(
                "a sparse query is (position, value) pairs, but it holds {} numbers",
                pairs.len()
            )));
        }
        let mut entries = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks_exact(2) {
            let (position, value) = (pair[0], pair[1]);
            if !(0.0..MAX_QUERY_POSITION as f32).contains(&position) || position.fract() != 0.0 {
                return Err(Error::invalid(format!(
                    "sparse query position {position} is not a whole number in 0..{MAX_QUERY_POSITION}"
                )));
            }
            entries.push((position as u32, value));
        }
        entries.sort_by_key(|e| e.0);
        let indices: Vec<u32> = entries.iter().map(|e| e.0).collect();
        let values: Vec<f32> = entries.iter().map(|e| e.1).collect();
        Self::new(metric, indices, values)
    }

    /// A query from its positions (strictly increasing) and values.
    pub fn new(metric: Metric, indices: Vec<u32>, values: Vec<f32>) -> Result<Self> {
        if metric.is_binary() {
            return Err(Error::invalid(format!("metric '{metric}' compares binary vectors, not sparse float vectors")));
        }
        if let Some(w) = indices.windows(2).find(|w| w[0] >= w[1]) {
            return Err(Error::invalid(format!("sparse query names position {} twice or out of order", w[1])));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::invalid(format!("sparse query holds {v}")));
        }
        let norm = values.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt();
        if metric == Metric::Cosine && norm == 0.0 {
            return Err(Error::invalid("cosine distance to a zero query vector is undefined"));
        }
        Ok(SparseQuery { metric, indices, values, norm })
    }

    /// The distance from the query to the row with non-zeros `values` at `indices`; the row must
    /// have as many of each, its positions strictly increasing and non-negative.
    pub fn distance(&self, indices: &[i32], values: &[f32]) -> Result<f32> {
        if indices.len() != values.len() {
            return Err(Error::invalid(format!(
                "sparse vector has {} indices but {} values",
                indices.len(),
                values.len()
            )));
        }
        if let Some(&i) = indices.iter().find(|&&i| i < 0) {
            return Err(Error::invalid(format!("sparse vector has a negative index {i}")));
        }
        if let Some(w) = indices.windows(2).find(|w| w[0] >= w[1]) {
            return Err(Error::invalid(format!("sparse vector indices are not strictly increasing at {}", w[1])));
        }
        Ok(distance(self.metric, &self.indices, &self.values, indices, values, self.norm))
    }
}

/// A metric's distance between two sparse vectors (positions strictly increasing), in f64 then rounded.
fn distance(metric: Metric, qi: &[u32], qv: &[f32], ri: &[i32], rv: &[f32], query_norm: f64) -> f32 {
    let (mut dot, mut l2, mut l1, mut row_norm) = (0f64, 0f64, 0f64, 0f64);
    let (mut a, mut b) = (0, 0);
    while a < qi.len() || b < ri.len() {
        let (x, y) = match (qi.get(a), ri.get(b).map(|&i| i as u32)) {
            (Some(&i), Some(j)) if i == j => {
                a += 1;
                b += 1;
                (f64::from(qv[a - 1]), f64::from(rv[b - 1]))
            }
            (Some(&i), Some(j)) if i < j => {
                a += 1;
                (f64::from(qv[a - 1]), 0.0)
            }
            (Some(_), None) => {
                a += 1;
                (f64::from(qv[a - 1]), 0.0)
            }
            _ => {
                b += 1;
                (0.0, f64::from(rv[b - 1]))
            }
        };
        dot += x * y;
        l2 += (x - y) * (x - y);
        l1 += (x - y).abs();
        row_norm += y * y;
    }
    let d = match metric {
        Metric::L2 => l2.sqrt(),
        Metric::L1 => l1,
        Metric::InnerProduct => -dot,
        Metric::Cosine if row_norm == 0.0 => 1.0,
        Metric::Cosine => (1.0 - dot / (query_norm * row_norm.sqrt())).clamp(0.0, 2.0),
        Metric::Hamming | Metric::Jaccard => unreachable!("binary metrics are refused in SparseQuery::new"),
    };
    d as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::metric::reference_distance;

    /// The sparse distances equal the dense ones of the same vectors, on random vectors.
    #[test]
    fn sparse_distances_equal_the_dense_reference() {
        let mut rng = crate::rand::SplitMix64(3);
        let dim = 40;
        let sparse = |rng: &mut crate::rand::SplitMix64| -> (Vec<u32>, Vec<f32>, Vec<f32>) {
            let mut dense = vec![0f32; dim];
            let (mut idx, mut val) = (Vec::new(), Vec::new());
            for (i, slot) in dense.iter_mut().enumerate() {
                if rng.next_u64().is_multiple_of(4) {
                    let v = (rng.next_u64() % 2000) as f32 / 100.0 - 10.0;
                    *slot = v;
                    idx.push(i as u32);
                    val.push(v);
                }
            }
            (idx, val, dense)
        };
        for _ in 0..200 {
            let (qi, qv, qd) = sparse(&mut rng);
            let (ri, rv, rd) = sparse(&mut rng);
            let ri: Vec<i32> = ri.iter().map(|&i| i as i32).collect();
            for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
                let Ok(query) = SparseQuery::new(metric, qi.clone(), qv.clone()) else {
                    assert_eq!(metric, Metric::Cosine);
                    continue;
                };
                let got = query.distance(&ri, &rv).unwrap();
                let want =
                    if metric == Metric::Cosine && rv.is_empty() { 1.0 } else { reference_distance(metric, &qd, &rd) };
                assert!((f64::from(got) - want).abs() <= 1e-5 * (1.0 + want.abs()), "{metric}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn bad_sparse_vectors_are_named() {
        let err = |r: Result<SparseQuery>| r.unwrap_err().to_string();
        assert!(err(SparseQuery::from_pairs(Metric::L2, &[1.0, 0.5, 2.0])).contains("holds 3 numbers"));
        assert!(err(SparseQuery::from_pairs(Metric::L2, &[1.5, 0.5])).contains("position 1.5 is not a whole number"));
        assert!(err(SparseQuery::from_pairs(Metric::L2, &[2.0, 0.5, 2.0, 1.0])).contains("position 2 twice"));
        assert!(err(SparseQuery::from_pairs(Metric::Hamming, &[2.0, 0.5])).contains("binary"));
        assert!(err(SparseQuery::from_pairs(Metric::Cosine, &[])).contains("zero query vector"));
        let q = SparseQuery::from_pairs(Metric::L1, &[5.0, 1.0, 2.0, -1.0]).unwrap();
        assert_eq!(q.distance(&[2, 5], &[-1.0, 1.0]).unwrap(), 0.0);
        assert!(q.distance(&[5, 2], &[1.0, 1.0]).unwrap_err().to_string().contains("not strictly increasing at 2"));
        assert!(q.distance(&[1], &[1.0, 1.0]).unwrap_err().to_string().contains("1 indices but 2 values"));
        assert!(q.distance(&[-1], &[1.0]).unwrap_err().to_string().contains("negative index -1"));
    }
}
