//! HyperStream native engine: storage, tables, indexes, scans, vector search and the array store,
//! with a JNI face (`jni`) that the Spark and Trino connectors call.
//!
//! Every module outside `jni` is plain Rust and knows nothing about the JVM.

/// Records a file system operation for the power-loss tests (`storage/power_loss.rs`): in test
/// builds only; elsewhere the operation is not even built.
#[cfg(test)]
macro_rules! traced {
    ($op:expr) => {{
        use crate::storage::power_loss::Op;
        crate::storage::power_loss::record($op)
    }};
}
#[cfg(not(test))]
macro_rules! traced {
    ($op:expr) => {};
}

pub mod array;
pub mod error;
pub mod index;
pub mod limits;
pub mod memory;
pub mod rand;
pub mod runtime;
pub mod scan;
pub mod spec;
pub mod storage;
pub mod table;
pub mod vector;

mod jni;

pub use error::{Error, Result};

/// The library version, as the JARs that bundle it report it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
