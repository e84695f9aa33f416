//! Distance metrics: their names, their definitions and the prepared form of a query.
//!
//! Every metric is a distance: smaller is nearer, and top-k returns the k smallest.
//! - `l2`: Euclidean distance √Σ(aᵢ−bᵢ)² (Trino `euclidean_distance`, pgvector `<->`).
//! - `cosine`: 1 − a·b / (‖a‖‖b‖), in [0, 2] (pgvector `<=>`). A stored zero vector is at distance 1.
//! - `inner_product`: −a·b, the negated dot product, so that larger products rank first (pgvector `<#>`).
//! - `l1`: Σ|aᵢ−bᵢ| (pgvector `<+>`).
//! - `hamming`, `jaccard`: over bit-packed binary vectors (pgvector `<~>`, `<%>`).
//!
//! A stored vector holding NaN gets a NaN distance, which orders after every number.

use std::fmt;

use super::kernels::{hamming, jaccard, kernels, Kernels, NarrowKernels};
use crate::{Error, Result};

/// A distance metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    L2,
    Cosine,
    InnerProduct,
    L1,
    Hamming,
    Jaccard,
}

impl Metric {
    /// Every metric, in the order the docs list them.
    pub const ALL: [Metric; 6] =
        [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1, Metric::Hamming, Metric::Jaccard];

    /// The metric's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "l2",
            Metric::Cosine => "cosine",
            Metric::InnerProduct => "inner_product",
            Metric::L1 => "l1",
            Metric::Hamming => "hamming",
            Metric::Jaccard => "jaccard",
        }
    }

    /// Parses a metric by its name, its distance-function name or its usual alias (case-insensitive).
    pub fn parse(name: &str) -> Result<Metric> {
        let metric = match name.trim().to_ascii_lowercase().as_str() {
            "l2" | "euclidean" | "l2_distance" | "euclidean_distance" => Metric::L2,
            "cosine" | "cosine_distance" => Metric::Cosine,
            "inner_product" | "ip" | "dot" | "dot_product" | "negative_inner_product" => Metric::InnerProduct,
            "l1" | "manhattan" | "l1_distance" => Metric::L1,
            "hamming" | "hamming_distance" => Metric::Hamming,
            "jaccard" | "jaccard_distance" => Metric::Jaccard,
            other => {
                let known = Metric::ALL.map(Metric::name).join(", ");
                return Err(Error::invalid(format!("unknown distance metric '{other}' (known: {known})")));
            }
        };
        Ok(metric)
    }

    /// Whether the metric compares bit-packed binary vectors rather than floats.
    pub fn is_binary(self) -> bool {
        matches!(self, Metric::Hamming | Metric::Jaccard)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A float query checked against a metric and a column's dimension, with what every distance to it
/// needs computed once.
#[derive(Debug, Clone)]
pub struct FloatQuery {
    metric: Metric,
    vector: Vec<f32>,
    norm: f32,
    kernels: Kernels,
}

impl FloatQuery {
    /// Checks `vector` for `metric` over a column of `dimension`: the lengths agree, every value is
    /// finite, and a cosine query is not the zero vector.
    pub fn new(metric: Metric, vector: Vec<f32>, dimension: usize) -> Result<Self> {
        Self::with_kernels(metric, vector, dimension, *kernels())
    }

    /// As [`FloatQuery::new`], with the given kernels (tests compare instruction sets through it).
    pub fn with_kernels(metric: Metric, vector: Vec<f32>, dimension: usize, kernels: Kernels) -> Result<Self> {
        if metric.is_binary() {
            return Err(Error::invalid(format!("metric '{metric}' compares binary vectors, not float vectors")));
        }
        if vector.len() != dimension {
            return Err(Error::invalid(format!(
                "query vector has {} dimensions but the column has {dimension}",
                vector.len()
            )));
        }
        if let Some(i) = vector.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(format!("query vector holds {} at position {i}", vector[i])));
        }
        let norm = (kernels.dot)(&vector, &vector).sqrt();
        if metric == Metric::Cosine && norm == 0.0 {
            return Err(Error::invalid("cosine distance to a zero query vector is undefined"));
        }
        Ok(FloatQuery { metric, vector, norm, kernels })
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    pub fn dimension(&self) -> usize {
        self.vector.len()
    }

    /// The query vector as given.
    pub fn vector(&self) -> &[f32] {
        &self.vector
    }

    /// The query's Euclidean norm (what cosine distances divide by).
    pub fn norm(&self) -> f32 {
        self.norm
    }

    /// The distance from the query to `v` (which has the query's dimension).
    #[inline]
    pub fn distance(&self, v: &[f32]) -> f32 {
        let k = &self.kernels;
        match self.metric {
            Metric::L2 => (k.l2_squared)(&self.vector, v).sqrt(),
            Metric::InnerProduct => -(k.dot)(&self.vector, v),
            Metric::L1 => (k.l1)(&self.vector, v),
            Metric::Cosine => self.cosine((k.dot_and_norm)(&self.vector, v)),
            Metric::Hamming | Metric::Jaccard => unreachable!("binary metrics are refused in FloatQuery::new"),
        }
    }

    /// As [`distance`](Self::distance), to a row stored narrower than `f32` (float16 bits, int8) through
    /// kernels that widen it in registers.
    #[inline]
    pub fn distance_narrow<T>(&self, v: &[T], k: &NarrowKernels<T>) -> f32 {
        match self.metric {
            Metric::L2 => (k.l2_squared)(&self.vector, v).sqrt(),
            Metric::InnerProduct => -(k.dot)(&self.vector, v),
            Metric::L1 => (k.l1)(&self.vector, v),
            Metric::Cosine => self.cosine((k.dot_and_norm)(&self.vector, v)),
            Metric::Hamming | Metric::Jaccard => unreachable!("binary metrics are refused in FloatQuery::new"),
        }
    }

    /// The cosine distance from the query's dot product with a row and the row's squared norm.
    #[inline]
    fn cosine(&self, (dot, norm_sq): (f32, f32)) -> f32 {
        if norm_sq == 0.0 {
            1.0
        } else {
            // Rounding can push the cosine just past ±1; the distance stays in [0, 2].
            (1.0 - dot / (self.norm * norm_sq.sqrt())).clamp(0.0, 2.0)
        }
    }
}

/// The float64 definition of every float metric, the reference the kernels are tested against.
pub fn reference_distance(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
    let pairs = || a.iter().zip(b).map(|(x, y)| (*x as f64, *y as f64));
    match metric {
        Metric::L2 => pairs().map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt(),
        Metric::InnerProduct => -pairs().map(|(x, y)| x * y).sum::<f64>(),
        Metric::L1 => pairs().map(|(x, y)| (x - y).abs()).sum(),
        Metric::Cosine => {
            let dot: f64 = pairs().map(|(x, y)| x * y).sum();
            let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
            let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
            if nb == 0.0 {
                1.0
            } else {
                (1.0 - dot / (na * nb)).clamp(0.0, 2.0)
            }
        }
        Metric::Hamming | Metric::Jaccard => panic!("binary metric {metric} has no float reference"),
    }
}

/// A query for bit-packed binary vectors (`hamming`, `jaccard`), checked against its metric.
#[derive(Debug, Clone)]
pub struct BitQuery {
    metric: Metric,
    bits: Vec<u8>,
}

impl BitQuery {
    /// A query from its bytes given as numbers 0..=255 (how engines pass a binary query beside float ones).
    pub fn new(metric: Metric, bytes: &[f32]) -> Result<Self> {
        if !metric.is_binary() {
            return Err(Error::invalid(format!(
                "metric '{metric}' compares float vectors, not bit-packed binary vectors"
            )));
        }
        if bytes.is_empty() {
            return Err(Error::invalid("binary query vector is empty"));
        }
        Ok(BitQuery { metric, bits: binary_query(bytes)? })
    }

    /// The distance from the query to `row`, which must be as long as the query.
    pub fn distance(&self, row: &[u8]) -> Result<f32> {
        if row.len() != self.bits.len() {
            return Err(Error::invalid(format!(
                "{}: bit vectors of {} and {} bytes",
                self.metric,
                self.bits.len(),
                row.len()
            )));
        }
        Ok(match self.metric {
            Metric::Hamming => hamming(&self.bits, row) as f32,
            _ => jaccard(&self.bits, row),
        })
    }
}

/// A binary query's bytes from their values as numbers (each a whole number in 0..=255).
pub fn binary_query(values: &[f32]) -> Result<Vec<u8>> {
    values
        .iter()
        .map(|&v| {
            if (0.0..=255.0).contains(&v) && v.fract() == 0.0 {
                Ok(v as u8)
            } else {
                Err(Error::invalid(format!("binary query byte {v} is not in 0..=255")))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_parse_by_name_and_alias() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()).unwrap(), m);
        }
        assert_eq!(Metric::parse("Euclidean_Distance").unwrap(), Metric::L2);
        assert_eq!(Metric::parse("dot_product").unwrap(), Metric::InnerProduct);
        let err = Metric::parse("chebyshev").unwrap_err();
        assert!(err.to_string().contains("'chebyshev'") && err.to_string().contains("cosine"), "{err}");
    }

    #[test]
    fn bad_queries_are_refused_naming_the_problem() {
        let err = FloatQuery::new(Metric::L2, vec![1.0, 2.0], 3).unwrap_err();
        assert!(err.to_string().contains("2 dimensions") && err.to_string().contains("3"), "{err}");
        let err = FloatQuery::new(Metric::L2, vec![1.0, f32::NAN], 2).unwrap_err();
        assert!(err.to_string().contains("NaN at position 1"), "{err}");
        let err = FloatQuery::new(Metric::Cosine, vec![0.0, 0.0], 2).unwrap_err();
        assert!(err.to_string().contains("zero query vector"), "{err}");
        assert!(FloatQuery::new(Metric::Hamming, vec![1.0], 1).is_err());
        // A zero query is fine for the other metrics.
        assert_eq!(FloatQuery::new(Metric::L2, vec![0.0, 0.0], 2).unwrap().distance(&[3.0, 4.0]), 5.0);
    }

    #[test]
    fn zero_and_nan_stored_vectors_follow_the_documented_rules() {
        let q = FloatQuery::new(Metric::Cosine, vec![1.0, 0.0], 2).unwrap();
        assert_eq!(q.distance(&[0.0, 0.0]), 1.0);
        assert!((q.distance(&[-2.0, 0.0]) - 2.0).abs() < 1e-6);
        assert!(q.distance(&[f32::NAN, 0.0]).is_nan());
        let q = FloatQuery::new(Metric::InnerProduct, vec![1.0, 2.0], 2).unwrap();
        assert_eq!(q.distance(&[3.0, 4.0]), -11.0);
    }
}
