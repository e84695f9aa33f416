//! Partition specs and sort orders: Iceberg's transforms (identity, bucket, truncate, year, month,
//! day, hour, void) over Arrow columns; the layouts users declare in the engines' own words
//! (`bucket(id, 16)`, `day(ts)`, `name DESC NULLS LAST`); the split of written rows into one data file
//! per partition, each sorted by the table's sort order; and partition pruning of data files.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BinaryArray, Date32Array, Int32Array, RecordBatch, StringArray,
};
use arrow::compute::{lexsort_to_indices, take, take_record_batch, SortColumn, SortOptions};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Int32Type, Int64Type, Schema as ArrowSchema, TimeUnit,
    TimestampMicrosecondType,
};
use arrow::row::{RowConverter, SortField as RowField};

use super::manifest::PartitionType;
use super::metadata::{PartitionField, PartitionSpec, SortField, SortOrder, TableMetadata};
use super::schema::PARQUET_FIELD_ID;
use crate::{Error, Result};

const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;
/// Partition field ids start here (Iceberg's convention).
pub const FIRST_PARTITION_FIELD_ID: i32 = 1000;

/// An Iceberg partition (or sort) transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(u32),
    Truncate(u32),
    Year,
    Month,
    Day,
    Hour,
    Void,
}

impl std::fmt::Display for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transform::Identity => f.write_str("identity"),
            Transform::Bucket(n) => write!(f, "bucket[{n}]"),
            Transform::Truncate(w) => write!(f, "truncate[{w}]"),
            Transform::Year => f.write_str("year"),
            Transform::Month => f.write_str("month"),
            Transform::Day => f.write_str("day"),
            Transform::Hour => f.write_str("hour"),
            Transform::Void => f.write_str("void"),
        }
    }
}

impl Transform {
    /// Parses Iceberg's metadata form (`identity`, `bucket[16]`, `truncate[4]`, `day`, ...).
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let width = |prefix: &str| {
            text.strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|n| n.trim().parse::<u32>().ok())
                .filter(|n| *n > 0)
        };
        Ok(match text {
            "identity" => Transform::Identity,
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "void" => Transform::Void,
            _ => match (width("bucket["), width("truncate[")) {
                (Some(n), _) => Transform::Bucket(n),
                (_, Some(w)) => Transform::Truncate(w),
                _ => return Err(Error::invalid(format!("unknown partition transform '{text}'"))),
            },
        })
    }

    /// Whether the transform keeps order (`a <= b` implies `t(a) <= t(b)`), so that ranges project.
    pub(crate) fn monotonic(self) -> bool {
        !matches!(self, Transform::Bucket(_) | Transform::Void)
    }

    /// The type of the transform's values for a source column of type `source`; refused where the
    /// transform does not apply to it.
    pub fn result_type(self, source: &DataType, column: &str) -> Result<DataType> {
        use DataType as T;
        let micros = |t: &DataType| matches!(t, T::Timestamp(TimeUnit::Microsecond, _));
        let refuse = || {
            Err(Error::invalid(format!(
                "partition transform {self} does not apply to column '{column}' of type {source}"
            )))
        };
        match self {
            Transform::Identity | Transform::Void => match source {
                T::Boolean | T::Int32 | T::Int64 | T::Float32 | T::Float64 | T::Date32 | T::Utf8 | T::Binary => {
                    Ok(source.clone())
                }
                t if micros(t) => Ok(source.clone()),
                _ => refuse(),
            },
            Transform::Bucket(_) => match source {
                T::Int32 | T::Int64 | T::Date32 | T::Utf8 | T::Binary | T::Decimal128(..) => Ok(T::Int32),
                t if micros(t) => Ok(T::Int32),
                _ => refuse(),
            },
            Transform::Truncate(_) => match source {
                T::Int32 | T::Int64 | T::Utf8 | T::Binary => Ok(source.clone()),
                _ => refuse(),
            },
            Transform::Year | Transform::Month => match source {
                T::Date32 => Ok(T::Int32),
                t if micros(t) => Ok(T::Int32),
                _ => refuse(),
            },
            Transform::Day => match source {
                T::Date32 => Ok(T::Date32),
                t if micros(t) => Ok(T::Date32),
                _ => refuse(),
            },
            Transform::Hour => match source {
                t if micros(t) => Ok(T::Int32),
                _ => refuse(),
            },
        }
    }

    /// The transform of every value of `column` (nulls stay null).
    pub fn apply(self, column: &ArrayRef) -> Result<ArrayRef> {
        let unsupported = || {
            Error::invalid(format!(
                "partition transform {self} does not apply to values of type {}",
                column.data_type()
            ))
        };
        let days_of = |column: &ArrayRef| -> Option<Date32Array> {
            match column.data_type() {
                DataType::Date32 => Some(column.as_primitive::<Date32Type>().clone()),
                DataType::Timestamp(TimeUnit::Microsecond, _) => Some(
                    column.as_primitive::<TimestampMicrosecondType>().unary(|us| us.div_euclid(MICROS_PER_DAY) as i32),
                ),
                _ => None,
            }
        };
        Ok(match self {
            Transform::Identity => column.clone(),
            Transform::Void => new_null_array(column.data_type(), column.len()),
            Transform::Bucket(n) => {
                let buckets: Int32Array = (0..column.len())
                    .map(|i| match column.is_null(i) {
                        true => Ok(None),
                        false => Ok(Some((bucket_hash(column, i).ok_or_else(unsupported)? & i32::MAX) % n as i32)),
                    })
                    .collect::<Result<_>>()?;
                Arc::new(buckets)
            }
            Transform::Truncate(w) => match column.data_type() {
                DataType::Int32 => {
                    Arc::new(column.as_primitive::<Int32Type>().unary::<_, Int32Type>(|v| v - v.rem_euclid(w as i32)))
                }
                DataType::Int64 => Arc::new(
                    column.as_primitive::<Int64Type>().unary::<_, Int64Type>(|v| v - v.rem_euclid(i64::from(w))),
                ),
                DataType::Utf8 => Arc::new(
                    column
                        .as_string::<i32>()
                        .iter()
                        .map(|s| s.map(|s| s.char_indices().nth(w as usize).map_or(s, |(at, _)| &s[..at])))
                        .collect::<StringArray>(),
                ),
                DataType::Binary => Arc::new(
                    column
                        .as_binary::<i32>()
                        .iter()
                        .map(|b| b.map(|b| &b[..b.len().min(w as usize)]))
                        .collect::<BinaryArray>(),
                ),
                _ => return Err(unsupported()),
            },
            Transform::Day => Arc::new(days_of(column).ok_or_else(unsupported)?),
            Transform::Year | Transform::Month => {
                let days = days_of(column).ok_or_else(unsupported)?;
                let year = self == Transform::Year;
                Arc::new(days.iter().map(|d| d.map(|d| months_or_years(d, year))).collect::<Int32Array>())
            }
            Transform::Hour => match column.data_type() {
                DataType::Timestamp(TimeUnit::Microsecond, _) => Arc::new(
                    column
                        .as_primitive::<TimestampMicrosecondType>()
                        .unary::<_, Int32Type>(|us| us.div_euclid(MICROS_PER_HOUR) as i32),
                ),
                _ => return Err(unsupported()),
            },
        })
    }
}

/// The date `days` after 1970-01-01.
fn civil(days: i32) -> chrono::NaiveDate {
    chrono::NaiveDate::from_num_days_from_ce_opt(days.saturating_add(719_163)).unwrap_or_default()
}

/// Whole years (or months) from 1970 (January 1970) to the day `days` after 1970-01-01.
fn months_or_years(days: i32, year: bool) -> i32 {
    use chrono::Datelike;
    let date = civil(days);
    match year {
        true => date.year() - 1970,
        false => (date.year() - 1970) * 12 + date.month0() as i32,
    }
}

/// Iceberg's bucket hash (32-bit Murmur3, seed 0) of row `i` of `column`: integers, dates and
/// timestamps hash as 8-byte little-endian longs, strings as UTF-8, decimals as their unscaled
/// value's minimal big-endian two's complement bytes.
fn bucket_hash(column: &ArrayRef, i: usize) -> Option<i32> {
    let long = |v: i64| murmur(&v.to_le_bytes());
    Some(match column.data_type() {
        DataType::Int32 => long(i64::from(column.as_primitive::<Int32Type>().value(i))),
        DataType::Date32 => long(i64::from(column.as_primitive::<Date32Type>().value(i))),
        DataType::Int64 => long(column.as_primitive::<Int64Type>().value(i)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            long(column.as_primitive::<TimestampMicrosecondType>().value(i))
        }
        DataType::Utf8 => murmur(column.as_string::<i32>().value(i).as_bytes()),
        DataType::Binary => murmur(column.as_binary::<i32>().value(i)),
        DataType::Decimal128(..) => {
            let bytes = column.as_primitive::<Decimal128Type>().value(i).to_be_bytes();
            // Drop leading bytes that only repeat the sign.
            let mut start = 0;
            while start < 15
                && ((bytes[start] == 0 && bytes[start + 1] & 0x80 == 0)
                    || (bytes[start] == 0xff && bytes[start + 1] & 0x80 != 0))
            {
                start += 1;
            }
            murmur(&bytes[start..])
        }
        _ => return None,
    })
}

fn murmur(bytes: &[u8]) -> i32 {
    murmur3::murmur3_32(&mut std::io::Cursor::new(bytes), 0).unwrap_or(0) as i32
}

/// Row `i` of `column` in Iceberg's single-value serialization (None for null).
pub fn single_value(column: &ArrayRef, i: usize) -> Option<Vec<u8>> {
    if column.is_null(i) {
        return None;
    }
    Some(match column.data_type() {
        DataType::Boolean => vec![column.as_boolean().value(i) as u8],
        DataType::Int32 => column.as_primitive::<Int32Type>().value(i).to_le_bytes().to_vec(),
        DataType::Date32 => column.as_primitive::<Date32Type>().value(i).to_le_bytes().to_vec(),
        DataType::Int64 => column.as_primitive::<Int64Type>().value(i).to_le_bytes().to_vec(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            column.as_primitive::<TimestampMicrosecondType>().value(i).to_le_bytes().to_vec()
        }
        DataType::Float32 => column.as_primitive::<arrow::datatypes::Float32Type>().value(i).to_le_bytes().to_vec(),
        DataType::Float64 => column.as_primitive::<arrow::datatypes::Float64Type>().value(i).to_le_bytes().to_vec(),
        DataType::Utf8 => column.as_string::<i32>().value(i).as_bytes().to_vec(),
        DataType::Binary => column.as_binary::<i32>().value(i).to_vec(),
        _ => return None,
    })
}

/// A partition value as a directory name: `name=value`, dates and hours written out, other
/// characters than letters, digits, `-`, `_` and `.` replaced (the manifest holds the exact value).
fn path_segment(name: &str, transform: Transform, data_type: &DataType, value: Option<&[u8]>) -> String {
    let Some(bytes) = value else { return format!("{name}=null") };
    let int = || bytes.try_into().map(i32::from_le_bytes).unwrap_or(0);
    let text = match (transform, data_type) {
        (Transform::Day, _) | (_, DataType::Date32) => civil(int()).format("%Y-%m-%d").to_string(),
        (Transform::Hour, _) => {
            let hours = i64::from(int());
            format!("{}-{:02}", civil(hours.div_euclid(24) as i32).format("%Y-%m-%d"), hours.rem_euclid(24))
        }
        (Transform::Month, _) => format!("{}-{:02}", 1970 + int().div_euclid(12), int().rem_euclid(12) + 1),
        (Transform::Year, _) => (1970 + int()).to_string(),
        (_, DataType::Int32) => int().to_string(),
        (_, DataType::Int64 | DataType::Timestamp(..)) => {
            bytes.try_into().map(i64::from_le_bytes).unwrap_or(0).to_string()
        }
        (_, DataType::Boolean) => (bytes.first() == Some(&1)).to_string(),
        (_, DataType::Utf8) => String::from_utf8_lossy(bytes).into_owned(),
        _ => bytes.iter().take(16).map(|b| format!("{b:02x}")).collect(),
    };
    let clean: String = text
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    format!("{name}={clean}")
}

/// A partition field resolved against the table's columns.
#[derive(Debug, Clone)]
pub struct Part {
    pub field: PartitionField,
    pub transform: Transform,
    /// The source column's name and position in the table's Arrow schema.
    pub column: String,
    position: usize,
    pub(crate) source: DataType,
    pub result: DataType,
}

/// The columns of `schema` by field id: name, position and type.
fn by_field_id(schema: &ArrowSchema) -> HashMap<i32, (String, usize, DataType)> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let id = f.metadata().get(PARQUET_FIELD_ID)?.parse().ok()?;
            Some((id, (f.name().clone(), i, f.data_type().clone())))
        })
        .collect()
}

/// The fields of `spec` over the table's columns (`schema`, with field ids); a field whose
/// source column is gone is left out.
pub fn resolve(spec: &PartitionSpec, schema: &ArrowSchema) -> Result<Vec<Part>> {
    let columns = by_field_id(schema);
    spec.fields
        .iter()
        .filter_map(|field| {
            let (column, position, data_type) = columns.get(&field.source_id)?.clone();
            Some((|| {
                let transform = Transform::parse(&field.transform)?;
                let result = transform.result_type(&data_type, &column)?;
                Ok(Part { field: field.clone(), transform, column, position, source: data_type, result })
            })())
        })
        .collect()
}

/// The manifest's partition struct of `spec` (the partition types of its fields).
pub fn partition_types(spec: &PartitionSpec, schema: &ArrowSchema) -> Result<Vec<PartitionType>> {
    let parts = resolve(spec, schema)?;
    spec.fields
        .iter()
        .map(|field| {
            let part = parts.iter().find(|p| p.field.field_id == field.field_id).ok_or_else(|| {
                Error::invalid(format!(
                    "partition field '{}' has no source column {} in the table",
                    field.name, field.source_id
                ))
            })?;
            Ok(PartitionType { field_id: field.field_id, name: field.name.clone(), data_type: part.result.clone() })
        })
        .collect()
}

/// Splits a comma-separated list at the commas outside parentheses.
fn split_list(text: &str) -> Vec<String> {
    let (mut items, mut depth, mut current) = (Vec::new(), 0i32, String::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items.into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

/// The column of `schema` that `name` names (exactly, else ignoring case), with its field id.
fn column<'a>(schema: &'a ArrowSchema, name: &str, what: &str) -> Result<(i32, &'a arrow::datatypes::Field)> {
    let name = name.trim().trim_matches('"').trim_matches('`');
    let field = schema
        .fields()
        .iter()
        .find(|f| f.name() == name)
        .or_else(|| schema.fields().iter().find(|f| f.name().eq_ignore_ascii_case(name)))
        .ok_or_else(|| Error::invalid(format!("{what} names column '{name}', which the table does not have")))?;
    let id = field
        .metadata()
        .get(PARQUET_FIELD_ID)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Internal(format!("column '{name}' has no field id")))?;
    Ok((id, field))
}

/// Parses a declared partitioning (`category, bucket(id, 16), day(ts)`: Trino's Iceberg
/// connector's words; `bucket(16, id)` as Spark writes it is taken too; `days`/`hours`/`months`/
/// `years` as well) into a spec over `schema`'s columns.
pub fn parse_partitioning(text: &str, schema: &ArrowSchema) -> Result<PartitionSpec> {
    let mut fields: Vec<PartitionField> = Vec::new();
    for item in split_list(text) {
        let bad = || Error::invalid(format!("partitioning '{item}' is not a column or transform(column[, n])"));
        let (function, args) = match item.find('(') {
            None => ("identity".to_owned(), vec![item.clone()]),
            Some(open) => {
                let inner = item[open + 1..].strip_suffix(')').ok_or_else(bad)?;
                (item[..open].trim().to_ascii_lowercase(), inner.split(',').map(|a| a.trim().to_owned()).collect())
            }
        };
        let (column_name, width) = match args.as_slice() {
            [c] => (c.clone(), None),
            [a, b] => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(n), Err(_)) => (b.clone(), Some(n)),
                (Err(_), Ok(n)) => (a.clone(), Some(n)),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        let (source_id, field) = column(schema, &column_name, "partitioning")?;
        let (transform, suffix) = match (function.as_str(), width) {
            ("identity", None) => (Transform::Identity, ""),
            ("bucket", Some(n)) if n > 0 => (Transform::Bucket(n), "_bucket"),
            ("truncate", Some(w)) if w > 0 => (Transform::Truncate(w), "_trunc"),
            ("year" | "years", None) => (Transform::Year, "_year"),
            ("month" | "months", None) => (Transform::Month, "_month"),
            ("day" | "days", None) => (Transform::Day, "_day"),
            ("hour" | "hours", None) => (Transform::Hour, "_hour"),
            _ => return Err(Error::invalid(format!(
                "partitioning '{item}': use a column, bucket(column, n), truncate(column, n), year(column), month(column), day(column) or hour(column)"
            ))),
        };
        transform.result_type(field.data_type(), field.name())?;
        let name = format!("{}{suffix}", field.name());
        if fields.iter().any(|f| f.name == name) {
            return Err(Error::invalid(format!("partitioning names '{name}' twice")));
        }
        let field_id = FIRST_PARTITION_FIELD_ID + fields.len() as i32;
        fields.push(PartitionField {
            source_id,
            field_id,
            name,
            transform: transform.to_string(),
            other: Default::default(),
        });
    }
    Ok(PartitionSpec { spec_id: 0, fields, other: Default::default() })
}

/// Parses a declared sort order (`id, ts DESC NULLS LAST`; ASC is NULLS FIRST and DESC NULLS
/// LAST unless said) into Iceberg sort fields over `schema`'s columns.
pub fn parse_sort_order(text: &str, schema: &ArrowSchema) -> Result<Vec<SortField>> {
    split_list(text)
        .into_iter()
        .map(|item| {
            let words: Vec<String> = item.split_whitespace().map(str::to_ascii_uppercase).collect();
            let name = item.split_whitespace().next().unwrap_or_default();
            let (source_id, field) = column(schema, name, "sort order")?;
            let (direction, nulls) = match &words[1..].iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] | ["ASC"] => ("asc", "nulls-first"),
                ["DESC"] => ("desc", "nulls-last"),
                ["NULLS", "FIRST"] | ["ASC", "NULLS", "FIRST"] => ("asc", "nulls-first"),
                ["NULLS", "LAST"] | ["ASC", "NULLS", "LAST"] => ("asc", "nulls-last"),
                ["DESC", "NULLS", "FIRST"] => ("desc", "nulls-first"),
                ["DESC", "NULLS", "LAST"] => ("desc", "nulls-last"),
                _ => {
                    return Err(Error::invalid(format!(
                        "sort order '{item}' is not 'column [ASC|DESC] [NULLS FIRST|NULLS LAST]'"
                    )))
                }
            };
            if matches!(
                field.data_type(),
                DataType::FixedSizeList(..) | DataType::List(_) | DataType::Struct(_) | DataType::Map(..)
            ) {
                return Err(Error::invalid(format!(
                    "sort order names column '{}' of type {}, which does not sort",
                    field.name(),
                    field.data_type()
                )));
            }
            Ok(SortField {
                transform: "identity".to_owned(),
                source_id,
                direction: direction.to_owned(),
                null_order: nulls.to_owned(),
                other: Default::default(),
            })
        })
        .collect()
}

/// A partition field in the words [`parse_partitioning`] reads (`bucket(id, 16)`).
pub fn describe_partition_field(part: &Part) -> String {
    match part.transform {
        Transform::Identity => part.column.clone(),
        Transform::Bucket(n) => format!("bucket({}, {n})", part.column),
        Transform::Truncate(w) => format!("truncate({}, {w})", part.column),
        t => format!("{t}({})", part.column),
    }
}

/// A sort field in the words [`parse_sort_order`] reads (`ts DESC NULLS LAST`).
pub fn describe_sort_field(field: &SortField, schema: &ArrowSchema) -> Option<String> {
    let (name, _, _) = by_field_id(schema).remove(&field.source_id)?;
    let direction = if field.direction == "desc" { "DESC" } else { "ASC" };
    let nulls = if field.null_order == "nulls-last" { "NULLS LAST" } else { "NULLS FIRST" };
    Some(format!("{name} {direction} {nulls}"))
}

/// How a table lays new rows out: the default partition spec and sort order, resolved.
pub struct Layout {
    spec_id: i32,
    parts: Vec<Part>,
    order_id: i32,
    sort: Vec<(Transform, usize, SortOptions)>,
}

/// Rows of one partition, ready to become one data file.
pub struct PartitionRows {
    pub partition: BTreeMap<i32, Vec<u8>>,
    /// The data file's directory under `data/` (empty for an unpartitioned table).
    pub directory: String,
    pub rows: RecordBatch,
}

impl Layout {
    pub fn of(metadata: &TableMetadata, schema: &ArrowSchema) -> Result<Self> {
        let spec =
            metadata.partition_specs.iter().find(|s| s.spec_id == metadata.default_spec_id).ok_or_else(|| {
                Error::Corrupt(format!("default partition spec {} is missing", metadata.default_spec_id))
            })?;
        let parts = resolve(spec, schema)?;
        if parts.len() != spec.fields.len() {
            return Err(Error::invalid("a partition source column of the table is gone".to_owned()));
        }
        let columns = by_field_id(schema);
        let order: Option<&SortOrder> =
            metadata.sort_orders.iter().find(|o| o.order_id == metadata.default_sort_order_id);
        let sort = order
            .map(|o| &o.fields[..])
            .unwrap_or_default()
            .iter()
            .map(|f| {
                let (_, position, _) = columns
                    .get(&f.source_id)
                    .ok_or_else(|| Error::invalid(format!("the sort order's source column {} is gone", f.source_id)))?;
                let transform = Transform::parse(&f.transform)?;
                let options =
                    SortOptions { descending: f.direction == "desc", nulls_first: f.null_order != "nulls-last" };
                Ok((transform, *position, options))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { spec_id: spec.spec_id, parts, order_id: metadata.default_sort_order_id, sort })
    }

    /// Whether rows are written as they come: no partitions, no sort order.
    pub fn is_plain(&self) -> bool {
        self.parts.is_empty() && self.sort.is_empty()
    }

    pub fn spec_id(&self) -> i32 {
        self.spec_id
    }

    /// The sort order files are written in (None when unsorted).
    pub fn sort_order_id(&self) -> Option<i32> {
        (!self.sort.is_empty()).then_some(self.order_id)
    }

    /// `batch` (in the table's schema) split into its partitions, in order of first appearance,
    /// each sorted by the sort order.
    pub fn split(&self, batch: &RecordBatch) -> Result<Vec<PartitionRows>> {
        let arrow = |e: arrow::error::ArrowError| Error::Internal(format!("partitioning rows: {e}"));
        let mut groups: Vec<(BTreeMap<i32, Vec<u8>>, String, Vec<u32>)> = Vec::new();
        if self.parts.is_empty() {
            groups.push((BTreeMap::new(), String::new(), (0..batch.num_rows() as u32).collect()));
        } else {
            let keys =
                self.parts.iter().map(|p| p.transform.apply(batch.column(p.position))).collect::<Result<Vec<_>>>()?;
            let converter = RowConverter::new(keys.iter().map(|k| RowField::new(k.data_type().clone())).collect())
                .map_err(arrow)?;
            let rows = converter.convert_columns(&keys).map_err(arrow)?;
            let mut seen: HashMap<arrow::row::Row<'_>, usize> = HashMap::new();
            for i in 0..batch.num_rows() {
                let group = *seen.entry(rows.row(i)).or_insert_with(|| {
                    let values: Vec<Option<Vec<u8>>> = keys.iter().map(|k| single_value(k, i)).collect();
                    let partition = self
                        .parts
                        .iter()
                        .zip(&values)
                        .filter_map(|(p, v)| Some((p.field.field_id, v.clone()?)))
                        .collect();
                    let directory = self
                        .parts
                        .iter()
                        .zip(&values)
                        .map(|(p, v)| path_segment(&p.field.name, p.transform, &p.result, v.as_deref()))
                        .collect::<Vec<_>>()
                        .join("/");
                    groups.push((partition, directory, Vec::new()));
                    groups.len() - 1
                });
                groups[group].2.push(i as u32);
            }
        }
        groups
            .into_iter()
            .map(|(partition, directory, indices)| {
                let rows = match self.parts.is_empty() {
                    true => batch.clone(),
                    false => take_record_batch(batch, &arrow::array::UInt32Array::from(indices)).map_err(arrow)?,
                };
                Ok(PartitionRows { partition, directory, rows: self.sorted(rows)? })
            })
            .collect()
    }

    fn sorted(&self, rows: RecordBatch) -> Result<RecordBatch> {
        if self.sort.is_empty() || rows.num_rows() < 2 {
            return Ok(rows);
        }
        let arrow = |e: arrow::error::ArrowError| Error::Internal(format!("sorting rows: {e}"));
        let columns = self
            .sort
            .iter()
            .map(|(t, position, options)| {
                Ok(SortColumn { values: t.apply(rows.column(*position))?, options: Some(*options) })
            })
            .collect::<Result<Vec<_>>>()?;
        let order = lexsort_to_indices(&columns, None).map_err(arrow)?;
        let taken = rows
            .columns()
            .iter()
            .map(|c| take(c, &order, None))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(arrow)?;
        RecordBatch::try_new(rows.schema(), taken).map_err(arrow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, Int64Array, TimestampMicrosecondArray};
    use arrow::datatypes::Field;

    fn hash_of(column: ArrayRef) -> i32 {
        bucket_hash(&column, 0).unwrap()
    }

    #[test]
    fn bucket_hashes_match_the_iceberg_spec() {
        // The spec's appendix B values.
        assert_eq!(hash_of(Arc::new(Int32Array::from(vec![34]))), 2017239379);
        assert_eq!(hash_of(Arc::new(Int64Array::from(vec![34]))), 2017239379);
        assert_eq!(
            hash_of(Arc::new(Decimal128Array::from(vec![1420]).with_precision_and_scale(9, 2).unwrap())),
            -500754589
        );
        assert_eq!(hash_of(Arc::new(Date32Array::from(vec![17486]))), -653330422);
        assert_eq!(hash_of(Arc::new(TimestampMicrosecondArray::from(vec![1_510_871_468_000_000]))), -2047944441);
        assert_eq!(hash_of(Arc::new(StringArray::from(vec!["iceberg"]))), 1210000089);
        assert_eq!(hash_of(Arc::new(BinaryArray::from(vec![&[0u8, 1, 2, 3][..]]))), -188683207);
    }

    #[test]
    fn transforms_follow_iceberg_semantics_nulls_included() {
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![Some(1_510_871_468_000_000), Some(-1), None]));
        let apply = |t: &str, c: &ArrayRef| Transform::parse(t).unwrap().apply(c).unwrap();
        let day = apply("day", &ts);
        assert_eq!(day.as_primitive::<Date32Type>().iter().collect::<Vec<_>>(), vec![Some(17486), Some(-1), None]);
        let hour = apply("hour", &ts);
        assert_eq!(hour.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(), vec![Some(419686), Some(-1), None]);
        let month = apply("month", &ts);
        assert_eq!(
            month.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
            vec![Some(47 * 12 + 10), Some(-1), None]
        );
        let year = apply("year", &ts);
        assert_eq!(year.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(), vec![Some(47), Some(-1), None]);
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(-1), Some(10), None]));
        let truncated = apply("truncate[10]", &ints);
        assert_eq!(
            truncated.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
            vec![Some(0), Some(-10), Some(10), None]
        );
        let strings: ArrayRef = Arc::new(StringArray::from(vec![Some("iceberg"), Some("é€x"), None]));
        let truncated = apply("truncate[2]", &strings);
        assert_eq!(truncated.as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("ic"), Some("é€"), None]);
        let buckets = apply("bucket[16]", &ints);
        assert!(buckets.as_primitive::<Int32Type>().iter().take(3).all(|b| (0..16).contains(&b.unwrap())));
        assert!(buckets.is_null(3));
        assert!(Transform::parse("bucket[0]").is_err() && Transform::parse("zorder").is_err());
    }

    fn schema() -> ArrowSchema {
        let field = |name: &str, t: DataType, id: i32| {
            Field::new(name, t, true).with_metadata([(PARQUET_FIELD_ID.to_owned(), id.to_string())])
        };
        ArrowSchema::new(vec![
            field("id", DataType::Int64, 1),
            field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), 2),
            field("name", DataType::Utf8, 3),
            field("score", DataType::Float64, 4),
        ])
    }

    #[test]
    fn declared_layouts_parse_in_either_engines_words_and_describe_back() {
        let spec = parse_partitioning("name, bucket(id, 16), days(ts)", &schema()).unwrap();
        let names: Vec<_> = spec.fields.iter().map(|f| (f.name.as_str(), f.transform.as_str(), f.field_id)).collect();
        assert_eq!(names, vec![("name", "identity", 1000), ("id_bucket", "bucket[16]", 1001), ("ts_day", "day", 1002)]);
        let spark = parse_partitioning("bucket(16, id), hours(ts), truncate(name, 3)", &schema()).unwrap();
        let described: Vec<String> = resolve(&spark, &schema()).unwrap().iter().map(describe_partition_field).collect();
        assert_eq!(described, vec!["bucket(id, 16)", "hour(ts)", "truncate(name, 3)"]);
        for (bad, why) in [
            ("nope", "does not have"),
            ("hour(name)", "does not apply"),
            ("bucket(id)", "use a column"),
            ("id, id", "twice"),
            ("day(ts", "not a column"),
        ] {
            let err = parse_partitioning(bad, &schema()).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let order = parse_sort_order("id, ts desc, name ASC NULLS LAST", &schema()).unwrap();
        let described: Vec<String> = order.iter().filter_map(|f| describe_sort_field(f, &schema())).collect();
        assert_eq!(described, vec!["id ASC NULLS FIRST", "ts DESC NULLS LAST", "name ASC NULLS LAST"]);
        assert!(parse_sort_order("id sideways", &schema()).unwrap_err().to_string().contains("not 'column"));
    }
}
