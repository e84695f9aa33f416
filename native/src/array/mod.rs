//! The array store: named N-d arrays of numpy's fixed-width dtypes in a directory, changed in place
//! (append, replace, drop) without rewriting, readable while one writer writes, and searchable.

pub mod batch;
pub mod batches;
mod changes;
pub mod dtype;
mod file;
pub mod npy;
pub mod search;
pub mod store;

pub use batch::ArrayBatch;
pub use changes::ArrayChanges;
pub use dtype::DType;
pub use store::{ArrayData, ArrayInfo, ArrayStore, LazyArray, StoreOptions};

#[cfg(test)]
mod tests;
