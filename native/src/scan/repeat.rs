//! A stream that replays a fixed pool of batches: the bridge benchmark moves many gigabytes through
//! the C stream interface without generating (or holding) them all.

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchReader};

use crate::{Error, Result};

/// A pool of same-schema batches replayed in turn until a row count is reached.
#[derive(Debug, Clone)]
pub struct RepeatedBatches {
    schema: SchemaRef,
    pool: Vec<RecordBatch>,
}

impl RepeatedBatches {
    /// A pool of at least one batch, all with the schema of the first.
    pub fn new(pool: Vec<RecordBatch>) -> Result<Self> {
        let first = pool.first().ok_or_else(|| Error::invalid("batch pool is empty"))?;
        let schema = first.schema();
        if pool.iter().any(|b| b.schema() != schema || b.num_rows() == 0) {
            return Err(Error::invalid("batch pool must hold non-empty batches of one schema"));
        }
        Ok(Self { schema, pool })
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// A reader that yields `total_rows` rows, cycling through the pool (the last batch is sliced).
    pub fn reader(&self, total_rows: u64) -> Replay {
        Replay { batches: self.clone(), remaining: total_rows, next: 0 }
    }

    /// The reference the bridge is measured against: copies the same bytes a `reader(total_rows)`
    /// would hand over into `dst` (one buffer per column buffer, reused), returning the bytes copied.
    pub fn copy_into(&self, total_rows: u64, dst: &mut Vec<u8>) -> u64 {
        let mut copied = 0u64;
        for batch in self.reader(total_rows) {
            let batch = batch.expect("replayed batches are valid");
            for column in batch.columns() {
                copied += copy_array(&column.to_data(), dst);
            }
        }
        copied
    }
}

fn copy_array(data: &arrow::array::ArrayData, dst: &mut Vec<u8>) -> u64 {
    let mut copied = 0u64;
    for buffer in data.buffers() {
        let bytes = buffer.as_slice();
        if dst.len() < bytes.len() {
            dst.resize(bytes.len(), 0);
        }
        dst[..bytes.len()].copy_from_slice(bytes);
        copied += bytes.len() as u64;
    }
    for child in data.child_data() {
        copied += copy_array(child, dst);
    }
    copied
}

/// The reader returned by [`RepeatedBatches::reader`].
#[derive(Debug)]
pub struct Replay {
    batches: RepeatedBatches,
    remaining: u64,
    next: usize,
}

impl Iterator for Replay {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let batch = &self.batches.pool[self.next % self.batches.pool.len()];
        self.next += 1;
        let rows = (batch.num_rows() as u64).min(self.remaining);
        self.remaining -= rows;
        Some(Ok(batch.slice(0, rows as usize)))
    }
}

impl RecordBatchReader for Replay {
    fn schema(&self) -> SchemaRef {
        self.batches.schema()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(values: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))]).unwrap()
    }

    #[test]
    fn replays_the_pool_until_the_row_count_and_slices_the_tail() {
        let pool = RepeatedBatches::new(vec![batch(vec![1, 2, 3]), batch(vec![4, 5])]).unwrap();
        let rows: Vec<usize> = pool.reader(9).map(|b| b.unwrap().num_rows()).collect();
        assert_eq!(rows, vec![3, 2, 3, 1]);
        let mut dst = Vec::new();
        assert_eq!(pool.copy_into(9, &mut dst), 9 * 8);
    }

    #[test]
    fn rejects_an_empty_pool() {
        assert!(RepeatedBatches::new(vec![]).is_err());
    }
}
