//! Tables: what a scan reads from. The Iceberg format model (schemas so far) and the generated
//! sample table, which the demo and the engine tests read through the same split-and-stream path
//! that stored tables will use.

mod sample;
pub mod deletes;
pub mod lineage;
pub mod iceberg;
pub mod manifest;
pub mod metadata;
pub mod partition;
pub mod schema;

pub use sample::SampleTable;
