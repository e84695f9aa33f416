//! Tables: a stored HyperStream table (an Iceberg table with index sidecars, [`iceberg::Table`])
//! and the generated sample table, which the demo and the engine tests read through the same
//! split-and-stream path.

pub mod iceberg;
pub mod rest;
mod sample;

pub use sample::SampleTable;
