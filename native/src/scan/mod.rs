//! Scans: the predicate model, file pruning by column statistics, split planning and Arrow record-batch streams, the form in which every
//! read leaves the library.

mod aggregate;
mod predicate;
pub(crate) mod prune;
mod repeat;
mod split;
mod summary;

pub use aggregate::{aggregate_from_metadata, MetadataAggregate};
pub use predicate::{filtered, Predicate};
pub(crate) use predicate::literal_for;
pub use prune::{bloom_may_match, file_may_match, pages_may_match, prune_files, row_groups_may_match};
pub use repeat::RepeatedBatches;
pub use split::{plan_row_splits, RowSplit};
pub use summary::{summarize, StreamSummary};

use arrow::record_batch::RecordBatchReader;

/// A stream of record batches that may cross the JNI boundary (through the Arrow C stream interface).
pub type BatchStream = Box<dyn RecordBatchReader + Send>;
