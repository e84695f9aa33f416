//! Aggregates answered from metadata: `COUNT(*)`, `COUNT(column)`, `MIN` and `MAX` of a snapshot
//! from its manifests' record counts, value and null counts and bounds, without reading a data file.
//! Only where that answer is exact: a bound stands for a value only when no row of its file is
//! deleted, its counts are recorded and its type's bounds are never truncated or NaN-blind.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    new_null_array, ArrayRef, BooleanArray, Date32Array, Int16Array, Int32Array, Int64Array, Int8Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

use crate::spec::bounds::{bound, order, Key};
use crate::spec::manifest::DataFile;
use crate::spec::schema::PARQUET_FIELD_ID;
use crate::{Error, Result};

/// One aggregate over a whole snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataAggregate {
    CountStar,
    Count(String),
    Min(String),
    Max(String),
}

impl MetadataAggregate {
    /// `count_star`, or `count`, `min` or `max` with a column.
    pub fn parse(kind: &str, column: Option<&str>) -> Result<MetadataAggregate> {
        let column =
            || column.map(str::to_owned).ok_or_else(|| Error::invalid(format!("aggregate {kind} needs a column")));
        Ok(match kind {
            "count_star" => MetadataAggregate::CountStar,
            "count" => MetadataAggregate::Count(column()?),
            "min" => MetadataAggregate::Min(column()?),
            "max" => MetadataAggregate::Max(column()?),
            other => {
                return Err(Error::invalid(format!(
                    "unknown aggregate '{other}': expected count_star, count, min or max"
                )))
            }
        })
    }

    fn name(&self) -> String {
        match self {
            MetadataAggregate::CountStar => "count(*)".to_owned(),
            MetadataAggregate::Count(c) => format!("count({c})"),
            MetadataAggregate::Min(c) => format!("min({c})"),
            MetadataAggregate::Max(c) => format!("max({c})"),
        }
    }
}

/// Whether a string bound may have been truncated by its writer, which cuts bounds to `length`
/// characters (Iceberg's metrics mode `truncate(length)`, 16 by default; None: `full`, never cut;
/// this library writes whole bounds or none).
fn maybe_truncated(bytes: &[u8], length: Option<usize>) -> bool {
    length.is_some_and(|n| std::str::from_utf8(bytes).map_or(true, |s| s.chars().count() >= n))
}

/// How Iceberg's writers keep a column's bounds under table `properties`
/// (`write.metadata.metrics.column.<name>`, else `write.metadata.metrics.default`, else
/// `truncate(16)`): the length string bounds are cut to, None for `full`, Some(0) where no bound is
/// kept (`counts`, `none`) or the mode is not understood (nothing is then trusted).
pub fn bound_truncation(properties: &std::collections::BTreeMap<String, String>, column: &str) -> Option<usize> {
    let mode = properties
        .get(&format!("write.metadata.metrics.column.{column}"))
        .or_else(|| properties.get("write.metadata.metrics.default"))
        .map_or("truncate(16)", |m| m.trim());
    if mode.eq_ignore_ascii_case("full") {
        return None;
    }
    let length = mode.strip_prefix("truncate(").and_then(|r| r.strip_suffix(')')).and_then(|n| n.trim().parse().ok());
    Some(length.unwrap_or(0))
}

/// Types whose bounds are exact values of the column: not floats (NaN is outside every bound),
/// not decimals or binary (not decoded here).
fn exact_bounds(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Boolean
            | DataType::Utf8
    ) || matches!(data_type, DataType::Timestamp(TimeUnit::Microsecond, _))
}

/// A column's metadata across the files: values counted and its least and greatest bound.
struct Column {
    non_null: i64,
    lowest: Option<(Key, Vec<u8>)>,
    highest: Option<(Key, Vec<u8>)>,
}

/// Reads `column`'s counts and bounds from every file; None where any file lacks what an exact
/// answer needs.
fn column_of(
    files: &[DataFile],
    schema: &Schema,
    column: &str,
    needs_bounds: bool,
    truncation: Option<usize>,
) -> Result<Option<Column>> {
    let field = schema.field_with_name(column).map_err(|_| Error::invalid(format!("unknown column '{column}'")))?;
    let Some(id) = field.metadata().get(PARQUET_FIELD_ID).and_then(|id| id.parse::<i32>().ok()) else {
        return Ok(None);
    };
    if needs_bounds && !exact_bounds(field.data_type()) {
        return Ok(None);
    }
    let mut out = Column { non_null: 0, lowest: None, highest: None };
    for file in files {
        if file.record_count == 0 {
            continue;
        }
        let (Some(values), Some(nulls)) = (file.value_counts.get(&id), file.null_value_counts.get(&id)) else {
            return Ok(None); // written before the column existed, or without statistics
        };
        let non_null = values - nulls;
        out.non_null += non_null;
        if !needs_bounds || non_null == 0 {
            continue;
        }
        let (Some(lower), Some(upper)) = (file.lower_bounds.get(&id), file.upper_bounds.get(&id)) else {
            return Ok(None);
        };
        if field.data_type() == &DataType::Utf8
            && (maybe_truncated(lower, truncation) || maybe_truncated(upper, truncation))
        {
            return Ok(None);
        }
        let (Some(lo), Some(hi)) = (bound(field.data_type(), lower), bound(field.data_type(), upper)) else {
            return Ok(None);
        };
        if out.lowest.as_ref().is_none_or(|(k, _)| order(&lo, k) == Some(Ordering::Less)) {
            out.lowest = Some((lo, lower.clone()));
        }
        if out.highest.as_ref().is_none_or(|(k, _)| order(&hi, k) == Some(Ordering::Greater)) {
            out.highest = Some((hi, upper.clone()));
        }
    }
    Ok(Some(out))
}

/// A serialized bound as a one-value array of `data_type` (null for none).
fn value_array(data_type: &DataType, bytes: Option<&[u8]>) -> Result<ArrayRef> {
    let Some(b) = bytes else {
        return Ok(new_null_array(data_type, 1));
    };
    let int = || -> Result<i32> {
        Ok(i32::from_le_bytes(b.try_into().map_err(|_| Error::invalid("a malformed int bound"))?))
    };
    let long = || -> Result<i64> {
        Ok(i64::from_le_bytes(b.try_into().map_err(|_| Error::invalid("a malformed long bound"))?))
    };
    Ok(match data_type {
        DataType::Int8 => Arc::new(Int8Array::from(vec![int()? as i8])),
        DataType::Int16 => Arc::new(Int16Array::from(vec![int()? as i16])),
        DataType::Int32 => Arc::new(Int32Array::from(vec![int()?])),
        DataType::Date32 => Arc::new(Date32Array::from(vec![int()?])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![long()?])),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            Arc::new(TimestampMicrosecondArray::from(vec![long()?]).with_timezone_opt(zone.clone()))
        }
        DataType::Boolean => Arc::new(BooleanArray::from(vec![b.first().is_some_and(|v| *v != 0)])),
        DataType::Utf8 => Arc::new(StringArray::from(vec![
            std::str::from_utf8(b).map_err(|_| Error::invalid("a malformed string bound"))?
        ])),
        other => return Err(Error::invalid(format!("no metadata aggregate over {other}"))),
    })
}

/// The aggregates over `files` (a snapshot's data files, each with the delete files that apply to
/// it) as one row, a column each in order; `live_rows` is the snapshot's exact row count. None when
/// the metadata cannot answer every aggregate exactly: the caller then aggregates the rows.
pub fn aggregate_from_metadata(
    files: &[DataFile],
    schema: &Schema,
    live_rows: u64,
    aggregates: &[MetadataAggregate],
    truncation: &dyn Fn(&str) -> Option<usize>,
) -> Result<Option<RecordBatch>> {
    for aggregate in aggregates {
        if let MetadataAggregate::Count(column) | MetadataAggregate::Min(column) | MetadataAggregate::Max(column) =
            aggregate
        {
            schema.field_with_name(column).map_err(|_| Error::invalid(format!("unknown column '{column}'")))?;
        }
    }
    let deletes = files.iter().any(|f| !f.deletes.is_empty());
    let mut fields = Vec::with_capacity(aggregates.len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(aggregates.len());
    for aggregate in aggregates {
        let (data_type, array): (DataType, ArrayRef) = match aggregate {
            MetadataAggregate::CountStar => (DataType::Int64, Arc::new(Int64Array::from(vec![live_rows as i64]))),
            _ if deletes => return Ok(None), // a deleted row may hold the bound, or count
            MetadataAggregate::Count(column) => match column_of(files, schema, column, false, None)? {
                Some(c) => (DataType::Int64, Arc::new(Int64Array::from(vec![c.non_null]))),
                None => return Ok(None),
            },
            MetadataAggregate::Min(column) | MetadataAggregate::Max(column) => {
                let Some(c) = column_of(files, schema, column, true, truncation(column))? else {
                    return Ok(None);
                };
                let data_type = schema
                    .field_with_name(column)
                    .map_err(|_| Error::invalid(format!("unknown column '{column}'")))?
                    .data_type()
                    .clone();
                let chosen = if matches!(aggregate, MetadataAggregate::Min(_)) { c.lowest } else { c.highest };
                let array = value_array(&data_type, chosen.as_ref().map(|(_, bytes)| bytes.as_slice()))?;
                (data_type, array)
            }
        };
        fields.push(Field::new(aggregate.name(), data_type, true));
        columns.push(array);
    }
    Ok(Some(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?))
}
