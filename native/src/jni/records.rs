//! Results with fields cross to Java as Arrow rows, a column per field named as the field (Java's
//! `Records` binds them to a record by component name): the shapes of those results, and the one
//! conversion. Integers cross as Int64, strings as Utf8.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use jni::sys::jlong;
use serde::Serialize;
use serde_json::Value;

use crate::Error;

use super::*;

/// One snapshot of a table (`NativeTable.SnapshotInfo`); `parent_id` -1 for the first.
#[derive(Serialize, Default)]
pub(super) struct SnapshotRow {
    pub snapshot_id: i64,
    pub parent_id: i64,
    pub timestamp_millis: i64,
    pub sequence_number: i64,
}

/// A column's statistics (`NativeTable.ColumnStatistics`); -1 where unknown.
#[derive(Serialize, Default)]
pub(super) struct ColumnStatisticsRow {
    pub column: String,
    pub distinct_values: i64,
    pub nulls: i64,
}

/// What a delete committed (`NativeTable.DeleteResult`); `snapshot_id` -1 when no row matched.
#[derive(Serialize, Default)]
pub(super) struct DeleteRow {
    pub snapshot_id: i64,
    pub deleted_rows: i64,
}

/// What a compaction committed (`NativeTable.Rewrite`); `snapshot_id` -1 when no file needed it.
#[derive(Serialize, Default)]
pub(super) struct RewriteRow {
    pub snapshot_id: i64,
    pub files_rewritten: i64,
    pub files_written: i64,
}

/// A range of rows `[start, end)` of a split plan (`Limits.RowRange`).
#[derive(Serialize, Default)]
pub(super) struct RowRangeRow {
    pub start: i64,
    pub end: i64,
}

/// Exports a split plan as [`RowRangeRow`]s.
pub(super) fn export_splits(splits: &[crate::scan::RowSplit], address: jlong) -> JniResult<()> {
    let rows: Vec<RowRangeRow> = splits
        .iter()
        .map(|s| RowRangeRow {
            start: i64::try_from(s.start).unwrap_or(i64::MAX),
            end: i64::try_from(s.end).unwrap_or(i64::MAX),
        })
        .collect();
    export_records(&rows, address)
}

/// The HNSW graphs built through a handle (`NativeTable.IndexBuilds`).
#[derive(Serialize, Default)]
pub(super) struct IndexBuildsRow {
    pub files: i64,
    pub vectors: i64,
    pub nanos: i64,
}

fn object<T: Serialize>(row: &T) -> Result<serde_json::Map<String, Value>, Error> {
    match serde_json::to_value(row).map_err(|e| Error::Internal(e.to_string()))? {
        Value::Object(fields) => Ok(fields),
        other => Err(Error::Internal(format!("a result row is not a struct: {other}"))),
    }
}

/// `rows` as one batch, a column per field of `T` (in the order serde lists them).
pub(super) fn batch_of<T: Serialize + Default>(rows: &[T]) -> Result<RecordBatch, Error> {
    let shape = object(&T::default())?;
    let rows = rows.iter().map(object).collect::<Result<Vec<_>, _>>()?;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (name, example) in &shape {
        let values = rows.iter().map(|row| row.get(name).cloned().unwrap_or(Value::Null));
        match example {
            Value::String(_) => {
                fields.push(Field::new(name, DataType::Utf8, false));
                columns.push(Arc::new(values.map(|v| v.as_str().map(str::to_owned)).collect::<StringArray>()));
            }
            _ => {
                fields.push(Field::new(name, DataType::Int64, false));
                columns.push(Arc::new(values.map(|v| v.as_i64()).collect::<Int64Array>()));
            }
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

/// Exports `rows` (see [`batch_of`]) into the stream Java allocated at `address`.
pub(super) fn export_records<T: Serialize + Default>(rows: &[T], address: jlong) -> JniResult<()> {
    export_result(batch_of(rows)?, address)
}

/// Exports one batch of a call's result (not a table's data) into the stream at `address`.
pub(super) fn export_result(batch: RecordBatch, address: jlong) -> JniResult<()> {
    let schema = batch.schema();
    let stream = Box::new(arrow::record_batch::RecordBatchIterator::new([Ok(batch)], schema));
    export_foreign(crate::scan::ForeignStream::of_results(stream), address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_a_column_per_field_named_as_the_field() {
        let rows = [
            ColumnStatisticsRow { column: "id".into(), distinct_values: 10, nulls: 0 },
            ColumnStatisticsRow { column: "note".into(), distinct_values: -1, nulls: 3 },
        ];
        let batch = batch_of(&rows).unwrap();
        let mut sorted: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        sorted.sort_unstable();
        assert_eq!(sorted, ["column", "distinct_values", "nulls"]);
        assert_eq!(batch.num_rows(), 2);
        let nulls = batch.column_by_name("nulls").unwrap();
        assert_eq!(nulls.as_any().downcast_ref::<Int64Array>().unwrap().values(), &[0, 3]);
        let empty = batch_of::<SnapshotRow>(&[]).unwrap();
        assert_eq!((empty.num_rows(), empty.num_columns()), (0, 4));
    }
}
