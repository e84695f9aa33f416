//! Scans: the predicate model, split planning and Arrow record-batch streams, the form in which every
//! read leaves the library.

mod predicate;
mod repeat;
mod split;
mod summary;

pub use predicate::{filtered, Predicate};
pub use repeat::RepeatedBatches;
pub use split::{plan_row_splits, RowSplit};
pub use summary::{summarize, StreamSummary};

use arrow::record_batch::RecordBatchReader;

/// A stream of record batches that may cross the JNI boundary (through the Arrow C stream interface).
pub type BatchStream = Box<dyn RecordBatchReader + Send>;
