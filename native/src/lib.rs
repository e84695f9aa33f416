//! HyperStream native engine: storage, tables, indexes, scans, vector search and the array store,
//! with a JNI face (`jni`) that the Spark and Trino connectors call.
//!
//! Every module outside `jni` is plain Rust and knows nothing about the JVM.

pub mod array;
pub mod error;
pub mod index;
pub mod limits;
pub mod memory;
pub mod rand;
pub mod runtime;
pub mod scan;
pub mod storage;
pub mod table;
pub mod vector;

mod jni;

pub use error::{Error, Result};

/// The library version, as the JARs that bundle it report it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
