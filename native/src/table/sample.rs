//! A generated table whose every value is a documented function of its row id, so that tests in any
//! language can check what reached them without fixtures.
//!
//! Columns, for row `id` (0-based) of a table with seed `seed` and dimension `dim`:
//! - `id: int64` = `id`
//! - `value: float64` = `id * 0.5`
//! - `category: utf8` = `"cat-" + (id % 7)`, null when `id % 10 == 9`
//! - `flag: bool` = `id % 3 == 0`
//! - `embedding: fixed_size_list<float32>[dim]`, element `j` = `((id * 31 + j * 17 + seed) % 1000) / 1000`

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int64Array, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions, RecordBatchReader};

use crate::scan::{plan_row_splits, RowSplit};
use crate::{Error, Result};

/// The generated table: a row count, a vector dimension and a seed.
#[derive(Debug, Clone)]
pub struct SampleTable {
    rows: u64,
    dim: usize,
    seed: u64,
    schema: SchemaRef,
}

impl SampleTable {
    pub fn new(rows: i64, dim: i32, seed: i64) -> Result<Self> {
        let rows = u64::try_from(rows).map_err(|_| Error::invalid(format!("sample rows must be >= 0, got {rows}")))?;
        let dim = crate::limits::dimension("the sample table's embedding", i64::from(dim))?;
        let seed = seed as u64;
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("value", DataType::Float64, false),
            Field::new("category", DataType::Utf8, true),
            Field::new("flag", DataType::Boolean, false),
            Field::new("embedding", DataType::FixedSizeList(item, dim as i32), false),
        ]));
        Ok(Self { rows, dim, seed, schema })
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Splits of at most `target_rows` rows each.
    pub fn plan_splits(&self, target_rows: i64) -> Result<Vec<RowSplit>> {
        let target = u64::try_from(target_rows)
            .map_err(|_| Error::invalid(format!("target rows per split must be positive, got {target_rows}")))?;
        plan_row_splits(self.rows, target)
    }

    /// Streams rows `range` in batches of `batch_rows`, keeping only the columns at `projection`
    /// (all columns, in order, when `None`).
    pub fn scan(&self, range: Range<i64>, batch_rows: i32, projection: Option<Vec<usize>>) -> Result<SampleReader> {
        let (start, end) = (range.start, range.end);
        if start < 0 || end < start || end as u64 > self.rows {
            return Err(Error::invalid(format!("row range {start}..{end} is outside the table's 0..{}", self.rows)));
        }
        let batch_rows = crate::limits::batch_rows("batch rows", i64::from(batch_rows))?;
        let columns = projection.unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        if let Some(bad) = columns.iter().find(|&&c| c >= self.schema.fields().len()) {
            return Err(Error::invalid(format!(
                "column index {bad} is out of range for a table of {} columns",
                self.schema.fields().len()
            )));
        }
        let schema = Arc::new(self.schema.project(&columns)?);
        Ok(SampleReader {
            table: self.clone(),
            schema,
            columns,
            next: start as u64,
            end: end as u64,
            batch_rows: batch_rows as u64,
        })
    }

    fn build(&self, ids: Range<u64>, columns: &[usize], schema: SchemaRef) -> Result<RecordBatch> {
        let len = (ids.end - ids.start) as usize;
        let arrays = columns.iter().map(|&c| self.column(c, ids.clone())).collect::<Vec<ArrayRef>>();
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        Ok(RecordBatch::try_new_with_options(schema, arrays, &options)?)
    }

    fn column(&self, index: usize, ids: Range<u64>) -> ArrayRef {
        match index {
            0 => Arc::new(Int64Array::from_iter_values(ids.map(|id| id as i64))),
            1 => Arc::new(Float64Array::from_iter_values(ids.map(|id| id as f64 * 0.5))),
            2 => {
                let mut names = StringBuilder::with_capacity((ids.end - ids.start) as usize, 0);
                for id in ids {
                    if id % 10 == 9 {
                        names.append_null();
                    } else {
                        names.append_value(format!("cat-{}", id % 7));
                    }
                }
                Arc::new(names.finish())
            }
            3 => Arc::new(BooleanArray::from_iter(ids.map(|id| Some(id % 3 == 0)))),
            _ => {
                let dim = self.dim as u64;
                let seed = self.seed;
                let values = Float32Array::from_iter_values(ids.flat_map(move |id| {
                    (0..dim).map(move |j| {
                        (id.wrapping_mul(31).wrapping_add(j * 17).wrapping_add(seed) % 1000) as f32 / 1000.0
                    })
                }));
                let item = Arc::new(Field::new("item", DataType::Float32, false));
                Arc::new(FixedSizeListArray::new(item, self.dim as i32, Arc::new(values), None))
            }
        }
    }
}

/// The reader returned by [`SampleTable::scan`].
#[derive(Debug)]
pub struct SampleReader {
    table: SampleTable,
    schema: SchemaRef,
    columns: Vec<usize>,
    next: u64,
    end: u64,
    batch_rows: u64,
}

impl Iterator for SampleReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let stop = (self.next + self.batch_rows).min(self.end);
        let ids = self.next..stop;
        self.next = stop;
        Some(
            self.table
                .build(ids, &self.columns, self.schema.clone())
                .map_err(|e| ArrowError::ExternalError(Box::new(e))),
        )
    }
}

impl RecordBatchReader for SampleReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float32Type, Int64Type};

    use super::*;

    #[test]
    fn values_follow_the_documented_formulas() {
        let table = SampleTable::new(25, 3, 7).unwrap();
        let batches: Vec<RecordBatch> = table.scan(0..25, 10, None).unwrap().map(Result::unwrap).collect();
        assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), vec![10, 10, 5]);
        let last = &batches[2];
        let ids = last.column(0).as_primitive::<Int64Type>();
        assert_eq!(ids.value(0), 20);
        assert_eq!(last.column(1).as_primitive::<arrow::datatypes::Float64Type>().value(4), 12.0);
        let category = last.column(2).as_string::<i32>();
        assert_eq!(category.value(0), "cat-6");
        assert!(!category.is_null(4), "id 24 has a category");
        assert!(batches[1].column(2).as_string::<i32>().is_null(9)); // id 19
        let embedding = last.column(4).as_fixed_size_list();
        let row = embedding.value(1); // id 21
        let row = row.as_primitive::<Float32Type>();
        assert_eq!(row.value(2), (21 * 31 + 2 * 17 + 7) as f32 / 1000.0);
    }

    #[test]
    fn projection_keeps_only_the_named_columns_in_the_given_order() {
        let table = SampleTable::new(5, 2, 0).unwrap();
        let mut reader = table.scan(1..3, 100, Some(vec![4, 0])).unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert_eq!(batch.schema().field(0).name(), "embedding");
        assert_eq!(batch.schema().field(1).name(), "id");
        assert_eq!(batch.column(1).as_primitive::<Int64Type>().values(), &[1, 2]);
        assert!(reader.next().is_none());
        // An empty projection still counts rows.
        let batch = table.scan(0..5, 100, Some(vec![])).unwrap().next().unwrap().unwrap();
        assert_eq!((batch.num_rows(), batch.num_columns()), (5, 0));
    }

    #[test]
    fn bad_arguments_are_rejected_with_the_value_named() {
        let msg = |r: Result<SampleTable>| r.unwrap_err().to_string();
        assert!(msg(SampleTable::new(-1, 4, 0)).contains("-1"));
        assert!(msg(SampleTable::new(10, 0, 0)).contains("dimension"));
        let table = SampleTable::new(10, 4, 0).unwrap();
        assert!(table.scan(5..11, 10, None).unwrap_err().to_string().contains("5..11"));
        assert!(table.scan(0..10, 0, None).is_err());
        assert!(table.scan(0..10, 5, Some(vec![5])).unwrap_err().to_string().contains("index 5"));
        assert!(table.plan_splits(0).is_err());
    }
}
