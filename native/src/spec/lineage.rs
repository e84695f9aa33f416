//! Row lineage (Iceberg format version 3): every row has an id, `_row_id`, and the sequence number
//! of the snapshot that last wrote it, `_last_updated_sequence_number`. A data file stores neither
//! until compaction moves its rows (then it stores both, so that they survive the move); until then
//! a row's id is its file's first row id plus its position, and its sequence number the file's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::datatypes::{DataType, Field, Int64Type};

use super::schema::PARQUET_FIELD_ID;

pub const ROW_ID: &str = "_row_id";
pub const LAST_UPDATED_SEQUENCE_NUMBER: &str = "_last_updated_sequence_number";
/// Iceberg's reserved field ids of the two columns.
pub const ROW_ID_FIELD: i32 = 2147483540;
pub const LAST_UPDATED_SEQUENCE_NUMBER_FIELD: i32 = 2147483539;

/// The two columns, as a read names them and a data file stores them.
pub fn fields() -> [Field; 2] {
    let field = |name: &str, id: i32| {
        Field::new(name, DataType::Int64, true)
            .with_metadata(std::collections::HashMap::from([(PARQUET_FIELD_ID.to_owned(), id.to_string())]))
    };
    [field(ROW_ID, ROW_ID_FIELD), field(LAST_UPDATED_SEQUENCE_NUMBER, LAST_UPDATED_SEQUENCE_NUMBER_FIELD)]
}

pub fn is_lineage(name: &str) -> bool {
    name == ROW_ID || name == LAST_UPDATED_SEQUENCE_NUMBER
}

/// The values of lineage column `name` for rows at `positions` of a data file whose first row id
/// and data sequence number are `first_row_id` and `sequence_number`: the file's own values where
/// it stores them (`stored`, non-null), else the inherited ones (null where the file has none).
pub fn values(
    name: &str,
    stored: Option<&ArrayRef>,
    positions: &Int64Array,
    first_row_id: Option<i64>,
    sequence_number: Option<i64>,
) -> ArrayRef {
    let stored = stored.and_then(|s| s.as_primitive_opt::<Int64Type>());
    let inherited = |i: usize| match name {
        ROW_ID => first_row_id.map(|first| first + positions.value(i)),
        _ => sequence_number,
    };
    Arc::new(
        (0..positions.len())
            .map(|i| match stored {
                Some(s) if s.is_valid(i) => Some(s.value(i)),
                _ => inherited(i),
            })
            .collect::<Int64Array>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_values_win_and_the_rest_are_inherited() {
        let positions = Int64Array::from(vec![0, 3, 7]);
        let ids = values(ROW_ID, None, &positions, Some(100), Some(4));
        assert_eq!(ids.as_primitive::<Int64Type>().values().to_vec(), vec![100, 103, 107]);
        let stored: ArrayRef = Arc::new(Int64Array::from(vec![Some(9), None, Some(11)]));
        let ids = values(ROW_ID, Some(&stored), &positions, Some(100), Some(4));
        assert_eq!(ids.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), vec![Some(9), Some(103), Some(11)]);
        let seqs = values(LAST_UPDATED_SEQUENCE_NUMBER, None, &positions, Some(100), Some(4));
        assert_eq!(seqs.as_primitive::<Int64Type>().values().to_vec(), vec![4, 4, 4]);
        assert_eq!(values(ROW_ID, None, &positions, None, None).null_count(), 3, "no first row id: no id");
    }
}
