//! Iceberg's single-value serialization of bounds: the lower and upper bound of an Arrow column,
//! and how two serialized values order.

use std::cmp::Ordering;

use arrow::array::{Array, ArrayRef};
use arrow::compute::{max, max_boolean, max_string, min, min_boolean, min_string};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};

/// How many NaN values a float column holds (None for other types): its `nan_value_counts` entry.
pub(crate) fn nan_count(column: &ArrayRef) -> Option<i64> {
    use arrow::array::AsArray;
    match column.data_type() {
        DataType::Float32 => {
            Some(column.as_primitive::<Float32Type>().iter().flatten().filter(|v| v.is_nan()).count() as i64)
        }
        DataType::Float64 => {
            Some(column.as_primitive::<Float64Type>().iter().flatten().filter(|v| v.is_nan()).count() as i64)
        }
        _ => None,
    }
}

/// Iceberg single-value serialization of a column's min and max, for the types bounds serve.
pub(crate) fn bounds(column: &ArrayRef) -> Option<(Vec<u8>, Vec<u8>)> {
    use arrow::array::AsArray;
    match column.data_type() {
        DataType::Int32 => {
            let a = column.as_primitive::<Int32Type>();
            Some((min(a)?.to_le_bytes().to_vec(), max(a)?.to_le_bytes().to_vec()))
        }
        DataType::Date32 => {
            let a = column.as_primitive::<Date32Type>();
            Some((min(a)?.to_le_bytes().to_vec(), max(a)?.to_le_bytes().to_vec()))
        }
        DataType::Int64 => {
            let a = column.as_primitive::<Int64Type>();
            Some((min(a)?.to_le_bytes().to_vec(), max(a)?.to_le_bytes().to_vec()))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            let a = column.as_primitive::<TimestampMicrosecondType>();
            Some((min(a)?.to_le_bytes().to_vec(), max(a)?.to_le_bytes().to_vec()))
        }
        // A zero bound is written as the zero that admits both (-0.0 below, +0.0 above), as
        // Iceberg's Parquet writers do: SQL compares -0.0 equal to 0.0, and a reader pruning by
        // total order must not rule out a file of -0.0 for `= 0.0`.
        // NaN is left out of the bounds and counted apart (`nan_value_counts`, [`nan_count`]), as the
        // spec says: the bounds cover every other value.
        DataType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            let (lo, hi) = a
                .iter()
                .flatten()
                .filter(|v| !v.is_nan())
                .fold(None, |b: Option<(f32, f32)>, v| Some(b.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))?;
            let (lo, hi) = (if lo == 0.0 { -0.0f32 } else { lo }, if hi == 0.0 { 0.0f32 } else { hi });
            Some((lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
        }
        DataType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            let (lo, hi) = a
                .iter()
                .flatten()
                .filter(|v| !v.is_nan())
                .fold(None, |b: Option<(f64, f64)>, v| Some(b.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))?;
            let (lo, hi) = (if lo == 0.0 { -0.0f64 } else { lo }, if hi == 0.0 { 0.0f64 } else { hi });
            Some((lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
        }
        DataType::Boolean => {
            let a = column.as_boolean();
            Some((vec![min_boolean(a)? as u8], vec![max_boolean(a)? as u8]))
        }
        DataType::Utf8 => {
            // Long strings would need truncated bounds; they get none rather than wrong ones.
            let a = column.as_string::<i32>();
            let (lo, hi) = (min_string(a)?, max_string(a)?);
            (lo.len() <= 64 && hi.len() <= 64).then(|| (lo.as_bytes().to_vec(), hi.as_bytes().to_vec()))
        }
        _ => None,
    }
}

/// Whether serialized bound `a` sorts before `b` for `data_type`.
pub(crate) fn less(data_type: &DataType, a: &[u8], b: &[u8]) -> bool {
    fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
        v.try_into().unwrap_or([0; N])
    }
    match data_type {
        DataType::Int32 | DataType::Date32 => i32::from_le_bytes(arr(a)) < i32::from_le_bytes(arr(b)),
        DataType::Int64 | DataType::Timestamp(..) => i64::from_le_bytes(arr(a)) < i64::from_le_bytes(arr(b)),
        DataType::Float32 => f32::from_le_bytes(arr(a)) < f32::from_le_bytes(arr(b)),
        DataType::Float64 => f64::from_le_bytes(arr(a)) < f64::from_le_bytes(arr(b)),
        _ => a < b,
    }
}

/// A bound or literal in a form that orders like the column's values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Key {
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
    Bool(bool),
}

pub(crate) fn order(a: &Key, b: &Key) -> Option<Ordering> {
    match (a, b) {
        (Key::Int(x), Key::Int(y)) => Some(x.cmp(y)),
        // Floats order as the filter kernels compare them: IEEE 754 total order.
        (Key::Float(x), Key::Float(y)) => Some(x.total_cmp(y)),
        (Key::Int(x), Key::Float(y)) => Some((*x as f64).total_cmp(y)),
        (Key::Float(x), Key::Int(y)) => Some(x.total_cmp(&(*y as f64))),
        (Key::Bytes(x), Key::Bytes(y)) => Some(x.cmp(y)),
        (Key::Bool(x), Key::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// A serialized Iceberg bound (single-value binary form) as a key; None for NaN or other types.
pub(crate) fn bound(data_type: &DataType, bytes: &[u8]) -> Option<Key> {
    let key = match data_type {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Date32 => {
            Key::Int(i32::from_le_bytes(bytes.try_into().ok()?) as i64)
        }
        DataType::Int64 | DataType::Timestamp(..) => Key::Int(i64::from_le_bytes(bytes.try_into().ok()?)),
        DataType::Float32 => Key::Float(f32::from_le_bytes(bytes.try_into().ok()?) as f64),
        DataType::Float64 => Key::Float(f64::from_le_bytes(bytes.try_into().ok()?)),
        DataType::Utf8 | DataType::LargeUtf8 => Key::Bytes(bytes.to_vec()),
        DataType::Boolean => Key::Bool(*bytes.first()? != 0),
        _ => return None,
    };
    match key {
        Key::Float(f) if f.is_nan() => None,
        key => Some(key),
    }
}
