//! What the benchmark examples share.
// Each example uses only part of what is here.
#![allow(dead_code)]

/// Reads a raw file of little-endian f32 values (as the bench scripts write them).
pub fn read_f32(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The arguments every vector benchmark starts with:
/// `<vectors.f32> <queries.f32> <dim> <k> <metric>`, read, and the further ones as given.
pub struct Inputs {
    pub vectors_path: String,
    pub vectors: Vec<f32>,
    pub queries: Vec<f32>,
    pub dim: usize,
    pub k: usize,
    pub metric: hyperstream::vector::Metric,
    pub rest: Vec<String>,
}

impl Inputs {
    /// Reads them, or prints the usage (`name` and the names of `more` arguments) and exits.
    pub fn from_args(name: &str, more: &[&str]) -> Inputs {
        let args: Vec<String> = std::env::args().collect();
        if args.len() != 6 + more.len() {
            eprintln!("usage: {name} <vectors.f32> <queries.f32> <dim> <k> <metric> {}", more.join(" "));
            std::process::exit(2);
        }
        Inputs {
            vectors_path: args[1].clone(),
            vectors: read_f32(&args[1]),
            queries: read_f32(&args[2]),
            dim: args[3].parse().expect("dim"),
            k: args[4].parse().expect("k"),
            metric: hyperstream::vector::Metric::parse(&args[5]).expect("metric"),
            rest: args[6..].to_vec(),
        }
    }
}
