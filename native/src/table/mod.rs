//! Tables: what a scan reads from. For now the generated sample table, which the demo and the engine
//! tests read through the same split-and-stream path that stored tables will use.

mod sample;

pub use sample::SampleTable;
