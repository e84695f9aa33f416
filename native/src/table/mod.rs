//! Tables: what a scan reads from. The Iceberg format model (schemas so far) and the generated
//! sample table, which the demo and the engine tests read through the same split-and-stream path
//! that stored tables will use.

pub mod deletes;
pub mod iceberg;
pub mod lineage;
pub mod manifest;
pub mod metadata;
pub mod partition;
mod sample;
pub mod schema;

pub use sample::SampleTable;
