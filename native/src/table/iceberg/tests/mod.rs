//! Tests of the table, one file per concern, over the helpers here.

use arrow::array::{AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatchIterator, StringArray};
use arrow::datatypes::{Field, Float32Type, Float64Type, Int32Type, Int64Type};

use super::*;

pub(super) fn schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("embedding", DataType::FixedSizeList(item, 3), false),
    ]))
}

pub(super) fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
    let n = (ids.end - ids.start) as usize;
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let names: Vec<Option<String>> = ids.clone().map(|i| (i % 4 != 0).then(|| format!("n{i}"))).collect();
    let values: Vec<f32> = ids.clone().flat_map(|i| [i as f32, 0.5, -(i as f32)]).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(FixedSizeListArray::new(item, 3, Arc::new(Float32Array::from(values)), None)),
        ],
    )
    .inspect(|b| {
        assert_eq!(b.num_rows(), n);
    })
    .unwrap()
}

pub(super) fn reader(batches: Vec<RecordBatch>) -> impl RecordBatchReader {
    RecordBatchIterator::new(batches.into_iter().map(Ok), schema())
}

/// What a MERGE without a filter read: snapshot `snapshot` (None: an empty table).
pub(super) fn read_at(snapshot: Option<i64>) -> ChangeRead<'static> {
    ChangeRead { snapshot, operation: RowOperation::Merge, filter: None }
}

pub(super) fn ids(table: &Table, snapshot: Option<&Snapshot>) -> Vec<i64> {
    let files = table.data_files(snapshot).unwrap();
    let mut ids: Vec<i64> = table
        .scan_files(files, Some(&["id".to_owned()]), 1000)
        .unwrap()
        .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    ids.sort_unstable();
    ids
}

use crate::rand::SplitMix64 as Rng;

/// The table of the random pruning tests: a key `k` and nullable `b`, `s`, `x`.
pub(super) fn kbsx_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("b", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
    ]))
}

pub(super) fn kbsx_rows(
    k: Vec<i64>,
    b: Vec<Option<i32>>,
    s: Vec<Option<String>>,
    x: Vec<Option<f64>>,
) -> impl RecordBatchReader {
    use arrow::array::{Float64Array, Int32Array};
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(k)),
        Arc::new(Int32Array::from(b)),
        Arc::new(StringArray::from(s)),
        Arc::new(Float64Array::from(x)),
    ];
    RecordBatchIterator::new(vec![RecordBatch::try_new(kbsx_schema(), columns)], kbsx_schema())
}

pub(super) fn random_predicate(rng: &mut Rng, depth: u32) -> Predicate {
    random_predicate_over(rng, depth, 1200)
}

/// A random predicate over columns k (values below `k_span`), b, s and x.
pub(super) fn random_predicate_over(rng: &mut Rng, depth: u32, k_span: u64) -> Predicate {
    let column = ["k", "b", "s", "x"][rng.below(4) as usize].to_owned();
    let value = |rng: &mut Rng, column: &str| -> serde_json::Value {
        match column {
            "k" => serde_json::json!(rng.below(k_span) as i64 - 100),
            "b" => {
                if rng.below(10) == 0 {
                    serde_json::json!(rng.below(50) as f64 + 0.5)
                } else {
                    serde_json::json!(rng.below(60) as i64)
                }
            }
            "s" => serde_json::json!(format!("s{}", rng.below(40))),
            _ => serde_json::json!((rng.below(2000) as f64 - 1000.0) / 10.0),
        }
    };
    if depth > 0 && rng.below(3) == 0 {
        let args = (0..1 + rng.below(3)).map(|_| random_predicate_over(rng, depth - 1, k_span)).collect();
        return match rng.below(3) {
            0 => Predicate::And { args },
            1 => Predicate::Or { args },
            _ => Predicate::Not { arg: Box::new(random_predicate_over(rng, depth - 1, k_span)) },
        };
    }
    let v = value(rng, &column);
    match rng.below(11) {
        0 => Predicate::Eq { column, value: v },
        1 => Predicate::Ne { column, value: v },
        2 => Predicate::Lt { column, value: v },
        3 => Predicate::Le { column, value: v },
        4 => Predicate::Gt { column, value: v },
        5 => Predicate::Ge { column, value: v },
        6 => Predicate::In { values: (0..3).map(|_| value(rng, &column)).collect(), column },
        7 => Predicate::IsNull { column },
        8 => Predicate::NotNull { column },
        9 => Predicate::StartsWith { column: "s".into(), prefix: format!("s{}", rng.below(5)) },
        _ => Predicate::Eq { column, value: serde_json::Value::Null },
    }
}

pub(super) fn ids_of(table: &Table, snapshot: Option<i64>) -> Vec<i64> {
    ids(table, table.metadata().snapshot(snapshot.unwrap()).ok())
}

mod delete;
mod evolve;
mod maintenance;
mod row_changes;
mod scan;
mod search;
mod stats;
mod write;
