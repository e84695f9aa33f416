//! Scans: the predicate model, file pruning by column statistics, split planning and Arrow record-batch streams, the form in which every
//! read leaves the library.

mod aggregate;
mod partition;
mod predicate;
pub(crate) mod prune;
mod repeat;
mod split;
mod summary;

pub use aggregate::{aggregate_from_metadata, bound_truncation, MetadataAggregate};
pub use partition::PartitionPruner;
pub use predicate::{filtered, Predicate};
pub use prune::{bloom_may_match, file_may_match, pages_may_match, prune_files, row_groups_may_match};
pub use repeat::RepeatedBatches;
pub use split::{plan_row_splits, RowSplit};
pub use summary::{summarize, StreamSummary};

use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchReader};

use crate::error::{panic_message, TaggedError};
use crate::Error;

/// A stream of record batches that may cross the JNI boundary (through the Arrow C stream interface).
pub type BatchStream = Box<dyn RecordBatchReader + Send>;

/// A stream made safe to hand to foreign code, which pulls its batches through `extern "C"` callbacks
/// that must not unwind: a panic while producing a batch (a decoder meeting a damaged page, a bug)
/// ends the stream with an internal error carrying the panic's message instead of aborting the
/// process, and every error leaves tagged with its kind ([`TaggedError`]). Dropping it (the
/// stream's release callback) cannot unwind either.
pub struct ForeignStream {
    inner: ManuallyDrop<BatchStream>,
    failed: bool,
    batches: i64,
    /// The batch at which this stream panics on purpose ([`arm_stream_panic`]); -1: none.
    panic_at: i64,
}

/// The batch at which the next stream made foreign panics; -1 when none is armed.
static ARMED_PANIC: AtomicI64 = AtomicI64::new(-1);

/// A test hook (Java: `NativeLibrary.armStreamPanic`): the next stream handed to foreign code panics
/// when asked for its batch `after_batches` (from 0), inside the same guard a real panic meets, so the
/// engines' handling of a stream that dies part way can be tested end to end.
pub fn arm_stream_panic(after_batches: i64) {
    ARMED_PANIC.store(after_batches.max(-1), Ordering::SeqCst);
}

impl ForeignStream {
    /// A stream of a table's or an array's rows (it takes a panic armed for the next stream).
    pub fn new(inner: BatchStream) -> Self {
        let panic_at = ARMED_PANIC.swap(-1, Ordering::SeqCst);
        Self { inner: ManuallyDrop::new(inner), failed: false, batches: 0, panic_at }
    }

    /// A stream of a call's result rows (an explain, snapshots, a split plan): a panic armed for the
    /// next stream is left for the next stream of data.
    pub fn of_results(inner: BatchStream) -> Self {
        Self { inner: ManuallyDrop::new(inner), failed: false, batches: 0, panic_at: -1 }
    }
}

impl Iterator for ForeignStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let armed = self.batches == self.panic_at;
        self.batches += 1;
        let next = match catch_unwind(AssertUnwindSafe(|| {
            if armed {
                panic!("armed by NativeLibrary.armStreamPanic");
            }
            self.inner.next()
        })) {
            Ok(next) => next,
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                // Dropping a payload can itself panic; leak it rather than unwind into foreign code.
                std::mem::forget(payload);
                let error = Error::Internal(format!("native panic while reading a batch: {message}"));
                Some(Err(ArrowError::ExternalError(Box::new(error))))
            }
        };
        match next {
            Some(Err(e)) => {
                // A stream that failed (or panicked part way) is not asked again.
                self.failed = true;
                Some(Err(ArrowError::ExternalError(Box::new(TaggedError(Error::from(e))))))
            }
            other => other,
        }
    }
}

impl RecordBatchReader for ForeignStream {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}

impl Drop for ForeignStream {
    fn drop(&mut self) {
        // SAFETY: `inner` is dropped once, here, and never used again.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(&mut self.inner) }));
        if let Err(payload) = dropped {
            log::error!("a native stream panicked while it was released: {}", panic_message(payload.as_ref()));
            std::mem::forget(payload);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};

    use super::*;

    /// Batches 0, 1, ... then, at batch `fail_at`, a panic or an error of the library.
    struct Failing {
        schema: SchemaRef,
        next: i64,
        fail_at: i64,
        panic: bool,
    }

    impl Iterator for Failing {
        type Item = Result<RecordBatch, ArrowError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.next += 1;
            if self.next - 1 == self.fail_at {
                if self.panic {
                    panic!("a decoder met a damaged page");
                }
                return Some(Err(ArrowError::ExternalError(Box::new(Error::Corrupt("page 3 of f.parquet".into())))));
            }
            Some(Ok(
                RecordBatch::try_new(self.schema.clone(), vec![Arc::new(Int64Array::from(vec![self.next]))]).unwrap()
            ))
        }
    }

    impl RecordBatchReader for Failing {
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
    }

    /// What a foreign reader (the C stream interface, as Java pulls it) gets from a failing stream.
    fn pulled_through_ffi(panic: bool) -> (usize, String) {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let failing = Failing { schema, next: 0, fail_at: 2, panic };
        let mut ffi = FFI_ArrowArrayStream::new(Box::new(ForeignStream::new(Box::new(failing))));
        // SAFETY: `ffi` is a live stream that from_raw moves out of, leaving it released.
        let reader = unsafe { RecordBatchStreamReader::from_raw(&mut ffi) }.unwrap();
        let mut batches = 0;
        for next in reader {
            match next {
                Ok(_) => batches += 1,
                Err(e) => return (batches, e.to_string()),
            }
        }
        (batches, String::new())
    }

    #[test]
    fn a_panic_while_producing_a_batch_ends_the_stream_with_an_internal_error() {
        let (batches, error) = pulled_through_ffi(true);
        assert_eq!(batches, 2);
        assert!(
            error.contains(
                "[INTERNAL] internal error: native panic while reading a batch: a decoder met a damaged page"
            ),
            "{error}"
        );
    }

    #[test]
    fn errors_leave_a_stream_tagged_with_their_kind() {
        let (batches, error) = pulled_through_ffi(false);
        assert_eq!(batches, 2);
        assert!(error.contains("[CORRUPT] corrupt data: page 3 of f.parquet"), "{error}");
    }
}
