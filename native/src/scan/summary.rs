//! A checksum over a batch stream: how the bridge tests show that data taken from Java arrived whole.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int32Type, Int64Type};
use arrow::record_batch::RecordBatchReader;

use crate::{Error, Result};

/// What a stream held: counts and order-independent sums over its values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StreamSummary {
    pub rows: u64,
    pub batches: u64,
    /// Null slots across all columns (top level and list children).
    pub nulls: u64,
    /// Wrapping sum of every non-null integer value (Int32 and Int64 columns).
    pub int_sum: i64,
    /// Sum of every non-null floating-point value (Float32 and Float64, list children included).
    pub float_sum: f64,
    /// Total bytes of every non-null UTF-8 value.
    pub utf8_bytes: u64,
}

/// Reads the stream to its end and summarizes it.
pub fn summarize(reader: impl RecordBatchReader) -> Result<StreamSummary> {
    let mut summary = StreamSummary::default();
    for batch in reader {
        let batch = batch?;
        summary.rows += batch.num_rows() as u64;
        summary.batches += 1;
        for column in batch.columns() {
            add_array(&mut summary, column.as_ref())?;
        }
    }
    Ok(summary)
}

fn add_array(summary: &mut StreamSummary, array: &dyn Array) -> Result<()> {
    summary.nulls += array.null_count() as u64;
    match array.data_type() {
        DataType::Int32 => {
            let values = array.as_primitive::<Int32Type>();
            summary.int_sum = values.iter().flatten().fold(summary.int_sum, |acc, v| acc.wrapping_add(i64::from(v)));
        }
        DataType::Int64 => {
            let values = array.as_primitive::<Int64Type>();
            summary.int_sum = values.iter().flatten().fold(summary.int_sum, i64::wrapping_add);
        }
        DataType::Float32 => {
            let values = array.as_primitive::<Float32Type>();
            summary.float_sum += values.iter().flatten().map(f64::from).sum::<f64>();
        }
        DataType::Float64 => {
            let values = array.as_primitive::<Float64Type>();
            summary.float_sum += values.iter().flatten().sum::<f64>();
        }
        DataType::Utf8 => {
            let values = array.as_string::<i32>();
            summary.utf8_bytes += values.iter().flatten().map(|s| s.len() as u64).sum::<u64>();
        }
        DataType::FixedSizeList(..) => {
            let list = array.as_fixed_size_list();
            for row in 0..list.len() {
                if list.is_valid(row) {
                    add_array(summary, list.value(row).as_ref())?;
                }
            }
        }
        DataType::Boolean | DataType::Null => {}
        other => {
            return Err(Error::invalid(format!("summary does not support column type {other}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatchIterator, StringArray};
    use arrow::datatypes::{Field, Schema};
    use arrow::record_batch::RecordBatch;

    use super::*;

    #[test]
    fn sums_every_column_kind_and_counts_nulls() {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("v", DataType::FixedSizeList(item.clone(), 2), true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(5)])),
                Arc::new(StringArray::from(vec![Some("ab"), Some("c"), None])),
                Arc::new(FixedSizeListArray::new(
                    item,
                    2,
                    Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0, 0.5, 0.25])),
                    None,
                )),
            ],
        )
        .unwrap();
        let reader = RecordBatchIterator::new(vec![Ok(batch.clone()), Ok(batch)], schema);
        let summary = summarize(reader).unwrap();
        assert_eq!(summary.rows, 6);
        assert_eq!(summary.batches, 2);
        assert_eq!(summary.nulls, 4);
        assert_eq!(summary.int_sum, 12);
        assert_eq!(summary.utf8_bytes, 6);
        assert_eq!(summary.float_sum, 21.5);
    }
}
