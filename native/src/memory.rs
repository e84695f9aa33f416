//! Memory that table writers hold: copies of the rows they keep (so the engine's buffers go back to it
//! as soon as a batch is handed over), and one budget for the whole process, so that many concurrent
//! writers (a Spark executor's cores, a Trino worker's writer tasks) together buffer a bounded amount.

use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{make_array, Array, ArrayRef, MutableArrayData, RecordBatch, RecordBatchOptions};

use crate::{Error, Result};

/// The process's write budget unless an engine sets another: 1 GiB.
pub const DEFAULT_WRITE_MEMORY: usize = 1 << 30;

/// The smallest write budget an engine may set: 16 MiB.
pub const MIN_WRITE_MEMORY: usize = 16 << 20;

/// What writers together may buffer, and what they buffer now.
#[derive(Debug)]
pub struct WriteBudget {
    limit: AtomicUsize,
    held: AtomicUsize,
}

/// The budget of every table writer in the process.
pub static WRITE_BUDGET: WriteBudget = WriteBudget::new(DEFAULT_WRITE_MEMORY);

impl WriteBudget {
    pub const fn new(limit: usize) -> WriteBudget {
        WriteBudget { limit: AtomicUsize::new(limit), held: AtomicUsize::new(0) }
    }

    /// Sets what the writers together may buffer (bytes, at least [`MIN_WRITE_MEMORY`]).
    pub fn set_limit(&self, bytes: i64) -> Result<()> {
        let bytes = usize::try_from(bytes).ok().filter(|&b| b >= MIN_WRITE_MEMORY).ok_or_else(|| {
            Error::invalid(format!("the write memory limit must be at least {MIN_WRITE_MEMORY} bytes, got {bytes}"))
        })?;
        self.limit.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// What the writers buffer now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A share of this budget for one writer, holding nothing yet.
    pub fn reserve(&'static self) -> WriteReservation {
        WriteReservation { budget: self, held: 0 }
    }
}

/// One writer's share of a [`WriteBudget`]: what it holds now, given back when dropped.
#[derive(Debug)]
pub struct WriteReservation {
    budget: &'static WriteBudget,
    held: usize,
}

impl WriteReservation {
    /// Records that the writer now holds `bytes`; true when the budget's writers together hold more
    /// than its limit (the writer should then turn what it holds into files).
    pub fn hold(&mut self, bytes: usize) -> bool {
        let held = &self.budget.held;
        let total = if bytes >= self.held {
            held.fetch_add(bytes - self.held, Ordering::Relaxed) + (bytes - self.held)
        } else {
            held.fetch_sub(self.held - bytes, Ordering::Relaxed) - (self.held - bytes)
        };
        self.held = bytes;
        total > self.budget.limit()
    }
}

impl Drop for WriteReservation {
    fn drop(&mut self) {
        self.hold(0);
    }
}

/// A copy of `array` in buffers of its own: keeping it does not keep the buffers `array` came in
/// (an engine's, imported through the C Data Interface, or a whole batch a column was sliced from).
pub fn copied(array: &dyn Array) -> Result<ArrayRef> {
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, data.len());
    copy.try_extend(0, 0, data.len())?;
    Ok(make_array(copy.freeze()))
}

/// A copy of `batch` in buffers of its own (see [`copied`]).
pub fn copied_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch.columns().iter().map(|c| copied(c.as_ref())).collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(batch.schema(), columns, &options)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn copies_own_their_buffers_and_equal_the_original() {
        let items = Arc::new(Float32Array::from((0..40).map(|i| i as f32).collect::<Vec<_>>()));
        let vectors = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), 4, items, None);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("v", vectors.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(0..10)),
                Arc::new(StringArray::from_iter((0..10).map(|i| (i % 3 != 0).then(|| format!("row {i}"))))),
                Arc::new(vectors),
            ],
        )
        .unwrap();
        let slice = batch.slice(3, 5);
        let copy = copied_batch(&slice).unwrap();
        assert_eq!(copy, slice);
        // The first buffer of an array, or of its first child (a list's values).
        fn first(d: &arrow::array::ArrayData) -> *const u8 {
            d.buffers().first().map_or_else(|| first(&d.child_data()[0]), |b| b.as_ptr())
        }
        for (a, b) in copy.columns().iter().zip(slice.columns()) {
            assert_ne!(first(&a.to_data()), first(&b.to_data()));
        }
        // A sliced copy holds only its rows.
        assert!(copy.get_array_memory_size() < batch.get_array_memory_size());
    }

    #[test]
    fn reservations_add_up_are_given_back_and_tell_when_past_the_limit() {
        let budget: &'static WriteBudget = Box::leak(Box::new(WriteBudget::new(MIN_WRITE_MEMORY)));
        let mut a = budget.reserve();
        let mut b = budget.reserve();
        assert!(!a.hold(1000));
        assert!(!b.hold(500));
        assert_eq!(budget.held(), 1500);
        assert!(!a.hold(10));
        assert_eq!(budget.held(), 510);
        assert!(b.hold(MIN_WRITE_MEMORY), "past the limit together");
        drop(b);
        assert_eq!(budget.held(), 10);
        drop(a);
        assert_eq!(budget.held(), 0);
        for bad in [1, -5, MIN_WRITE_MEMORY as i64 - 1] {
            let e = budget.set_limit(bad).unwrap_err().to_string();
            assert!(e.contains("write memory limit") && e.contains(&bad.to_string()), "{e}");
        }
        budget.set_limit(64 << 20).unwrap();
        assert_eq!(budget.limit(), 64 << 20);
    }
}
