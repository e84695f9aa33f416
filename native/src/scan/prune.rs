//! File and row-group pruning: whether a data file (or a Parquet row group) may hold a row a predicate
//! passes, from the column statistics its manifest entry (or the Parquet footer) carries: lower and
//! upper bounds, value and null counts. The answer is conservative:
//! `false` only when no row can pass; missing or unusable statistics keep the file. Float bounds
//! prune only `=`, `<` and `<=` (NaN is outside every bound and passes the others).

use std::cmp::Ordering;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Schema,
    TimestampMicrosecondType,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use serde_json::Value;

use super::predicate::{literal_for, Predicate};
use crate::spec::bounds::{bound, order, Key};
use crate::spec::manifest::DataFile;

/// A column's statistics in one file.
struct Stats {
    lower: Option<Key>,
    upper: Option<Key>,
    nulls: Option<i64>,
    rows: i64,
    data_type: DataType,
}

impl Stats {
    fn of(file: &DataFile, schema: &Schema, column: &str) -> Option<Stats> {
        let field = schema.field_with_name(column).ok()?;
        let id: i32 = field.metadata().get(crate::spec::schema::PARQUET_FIELD_ID)?.parse().ok()?;
        let decode = |bytes: Option<&Vec<u8>>| bytes.and_then(|b| bound(field.data_type(), b));
        // A zero bound may stand for -0.0 or +0.0, which total order tells apart: widen it.
        let widen = |key: Option<Key>, zero: f64| match key {
            Some(Key::Float(0.0)) => Some(Key::Float(zero)),
            other => other,
        };
        Some(Stats {
            lower: widen(decode(file.lower_bounds.get(&id)), -0.0),
            upper: widen(decode(file.upper_bounds.get(&id)), 0.0),
            nulls: file.null_value_counts.get(&id).copied(),
            rows: file.record_count,
            data_type: field.data_type().clone(),
        })
    }

    fn all_null(&self) -> bool {
        self.nulls == Some(self.rows)
    }
}

/// A filter literal as a key of the column's type (or Float for an integer column against a
/// fractional value). None when it cannot be compared with the statistics; Some(None) for null.
fn literal(stats: &Stats, column: &str, value: &Value) -> Option<Option<Key>> {
    literal_key(&stats.data_type, column, value)
}

/// A filter literal as a key of a column of `data_type` (see [`literal`]).
pub(crate) fn literal_key(data_type: &DataType, column: &str, value: &Value) -> Option<Option<Key>> {
    let array = match literal_for(column, data_type, value) {
        Ok(Some(array)) => array,
        Ok(None) => return Some(None),
        Err(_) => return None,
    };
    let key = match array.data_type() {
        DataType::Int8 => Key::Int(array.as_primitive::<Int8Type>().value(0) as i64),
        DataType::Int16 => Key::Int(array.as_primitive::<Int16Type>().value(0) as i64),
        DataType::Int32 => Key::Int(array.as_primitive::<Int32Type>().value(0) as i64),
        DataType::Date32 => Key::Int(array.as_primitive::<Date32Type>().value(0) as i64),
        DataType::Int64 => Key::Int(array.as_primitive::<Int64Type>().value(0)),
        DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, _) => {
            Key::Int(array.as_primitive::<TimestampMicrosecondType>().value(0))
        }
        DataType::Float32 => Key::Float(array.as_primitive::<Float32Type>().value(0) as f64),
        DataType::Float64 => Key::Float(array.as_primitive::<Float64Type>().value(0)),
        DataType::Utf8 => Key::Bytes(array.as_string::<i32>().value(0).as_bytes().to_vec()),
        DataType::Boolean => Key::Bool(array.as_boolean().value(0)),
        _ => return None,
    };
    if array.is_null(0) || matches!(key, Key::Float(f) if f.is_nan()) {
        return None;
    }
    Some(Some(key))
}

/// Whether a row group may hold a row `predicate` passes, by its columns' Parquet bloom filters:
/// `probe(column, literal)` says whether the column's filter may hold `literal` (a one-value array of
/// the column's type), None where the column has none. Only `=` and `IN` consult a filter (under AND
/// and OR); float columns never do (NaN and signed zeros hash apart from values that compare equal).
pub fn bloom_may_match(
    predicate: &Predicate,
    schema: &Schema,
    probe: &mut dyn FnMut(&str, &dyn Array) -> Option<bool>,
) -> bool {
    let may_hold = |column: &str, value: &Value, probe: &mut dyn FnMut(&str, &dyn Array) -> Option<bool>| -> bool {
        let Ok(field) = schema.field_with_name(column) else {
            return true;
        };
        if matches!(field.data_type(), DataType::Float16 | DataType::Float32 | DataType::Float64) {
            return true;
        }
        match literal_for(column, field.data_type(), value) {
            Ok(Some(array)) if array.data_type() == field.data_type() && array.is_valid(0) => {
                probe(column, &array).unwrap_or(true)
            }
            _ => true,
        }
    };
    match predicate {
        Predicate::And { args } => args.iter().all(|a| bloom_may_match(a, schema, probe)),
        Predicate::Or { args } => args.is_empty() || args.iter().any(|a| bloom_may_match(a, schema, probe)),
        Predicate::Eq { column, value } => may_hold(column, value, probe),
        Predicate::In { column, values } => values.iter().any(|v| may_hold(column, v, probe)),
        _ => true,
    }
}

#[derive(Clone, Copy)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Whether `file` may hold a row that `predicate` passes, for a table whose columns are `schema`.
pub fn file_may_match(predicate: &Predicate, file: &DataFile, schema: &Schema) -> bool {
    match predicate {
        Predicate::True => true,
        Predicate::False => false,
        Predicate::And { args } => args.iter().all(|a| file_may_match(a, file, schema)),
        Predicate::Or { args } => args.is_empty() || args.iter().any(|a| file_may_match(a, file, schema)),
        // NOT over bounds would need the complement's statistics; keep the file.
        Predicate::Not { .. } => true,
        Predicate::Eq { column, value } => compare_may_match(file, schema, column, Op::Eq, value),
        Predicate::Ne { column, value } => compare_may_match(file, schema, column, Op::Ne, value),
        Predicate::Lt { column, value } => compare_may_match(file, schema, column, Op::Lt, value),
        Predicate::Le { column, value } => compare_may_match(file, schema, column, Op::Le, value),
        Predicate::Gt { column, value } => compare_may_match(file, schema, column, Op::Gt, value),
        Predicate::Ge { column, value } => compare_may_match(file, schema, column, Op::Ge, value),
        Predicate::In { column, values } => values.iter().any(|v| compare_may_match(file, schema, column, Op::Eq, v)),
        Predicate::IsNull { column } => Stats::of(file, schema, column).is_none_or(|s| s.nulls != Some(0)),
        Predicate::NotNull { column } => Stats::of(file, schema, column).is_none_or(|s| !s.all_null()),
        Predicate::StartsWith { column, prefix } => {
            let Some(stats) = Stats::of(file, schema, column) else { return true };
            if stats.all_null() {
                return false;
            }
            let p = prefix.as_bytes();
            // Strings with prefix p lie between p and p followed by anything; the file holds [lower, upper].
            let below = matches!(&stats.upper, Some(Key::Bytes(hi)) if hi.as_slice() < p);
            let above = matches!(&stats.lower, Some(Key::Bytes(lo)) if lo.as_slice() > p && !lo.starts_with(p));
            !(below || above)
        }
    }
}

fn compare_may_match(file: &DataFile, schema: &Schema, column: &str, op: Op, value: &Value) -> bool {
    let Some(stats) = Stats::of(file, schema, column) else { return true };
    let Some(literal) = literal(&stats, column, value) else { return true };
    // A comparison with NULL, or over a column that is all null in this file, passes no row.
    let Some(v) = literal else { return false };
    if stats.all_null() {
        return false;
    }
    // Float bounds leave NaN out, and NaN passes `<>`, `>` and `>=` under total order: those keep the file.
    if matches!(stats.data_type, DataType::Float32 | DataType::Float64) && matches!(op, Op::Ne | Op::Gt | Op::Ge) {
        return true;
    }
    let lower = stats.lower.as_ref().and_then(|lo| order(lo, &v));
    let upper = stats.upper.as_ref().and_then(|hi| order(hi, &v));
    match op {
        Op::Eq => lower != Some(Ordering::Greater) && upper != Some(Ordering::Less),
        Op::Ne => !(lower == Some(Ordering::Equal) && upper == Some(Ordering::Equal)),
        Op::Lt => !matches!(lower, Some(Ordering::Greater | Ordering::Equal)),
        Op::Le => lower != Some(Ordering::Greater),
        Op::Gt => !matches!(upper, Some(Ordering::Less | Ordering::Equal)),
        Op::Ge => upper != Some(Ordering::Less),
    }
}

/// The files of `files` that may hold a row `predicate` passes.
pub fn prune_files(files: Vec<DataFile>, predicate: &Predicate, schema: &Schema) -> Vec<DataFile> {
    files.into_iter().filter(|f| file_may_match(predicate, f, schema)).collect()
}

/// The row groups of a Parquet file that may hold a row `predicate` passes, judged like files are,
/// from each row group's column statistics in the footer (min, max and null count of every
/// top-level column that carries a field id). Truncated string bounds are not used.
pub fn row_groups_may_match(predicate: &Predicate, metadata: &ParquetMetaData, schema: &Schema) -> Vec<usize> {
    let descr = metadata.file_metadata().schema_descr();
    let ids: Vec<Option<i32>> = (0..descr.num_columns())
        .map(|i| {
            let column = descr.column(i);
            let info = column.self_type().get_basic_info();
            (column.path().parts().len() == 1 && info.has_id()).then(|| info.id())
        })
        .collect();
    (0..metadata.num_row_groups())
        .filter(|&g| {
            let group = metadata.row_group(g);
            let mut stats = DataFile { record_count: group.num_rows(), ..DataFile::default() };
            for (i, id) in ids.iter().enumerate() {
                let (Some(id), Some(s)) = (id, group.column(i).statistics()) else { continue };
                if let Some(nulls) = s.null_count_opt() {
                    stats.null_value_counts.insert(*id, nulls as i64);
                }
                if let Some((lower, upper)) = bounds_of(s) {
                    stats.lower_bounds.insert(*id, lower);
                    stats.upper_bounds.insert(*id, upper);
                }
            }
            file_may_match(predicate, &stats, schema)
        })
        .collect()
}

/// The rows of row group `group` that may hold a row `predicate` passes, judged page by page from
/// the column index (each page's min, max and null count) of the columns it reads, as ascending
/// ranges of row numbers within the group; None where none of those columns has a column index.
/// Pages of different columns start at different rows: the group is cut at every page start of any
/// of them, and each piece is judged, as a file is, with each column's statistics of the page that
/// holds it. Column index bounds may be truncated, but stay bounds: they only ever keep rows.
pub fn pages_may_match(
    predicate: &Predicate,
    metadata: &ParquetMetaData,
    group: usize,
    schema: &Schema,
) -> Option<Vec<std::ops::Range<usize>>> {
    use parquet::file::page_index::column_index::ColumnIndexMetaData as Index;
    let index = metadata.page_index()?;
    let descr = metadata.file_metadata().schema_descr();
    let rows = metadata.row_group(group).num_rows().max(0) as usize;
    // (field id, page first rows, column index) of each predicate column the file indexes.
    let mut columns = Vec::new();
    for name in predicate.columns() {
        let Some(id) = schema
            .field_with_name(&name)
            .ok()
            .and_then(|f| f.metadata().get(crate::spec::schema::PARQUET_FIELD_ID)?.parse::<i32>().ok())
        else {
            continue;
        };
        let leaf = (0..descr.num_columns()).find(|&c| {
            let info = descr.column(c).self_type().get_basic_info().clone();
            descr.column(c).path().parts().len() == 1 && info.has_id() && info.id() == id
        });
        let Some(leaf) = leaf else { continue };
        let (Some(pages), Some(column_index)) = (index.page_locations(group, leaf), index.column_index(group, leaf))
        else {
            continue;
        };
        if pages.is_empty() || column_index.num_pages() as usize != pages.len() {
            continue;
        }
        columns.push((id, pages.iter().map(|p| p.first_row_index.max(0) as usize).collect::<Vec<_>>(), column_index));
    }
    if columns.is_empty() {
        return None;
    }
    let mut cuts: Vec<usize> = columns
        .iter()
        .flat_map(|(_, firsts, _)| firsts.iter().copied())
        .chain([0, rows])
        .filter(|&r| r <= rows)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut kept: Vec<std::ops::Range<usize>> = Vec::new();
    for piece in cuts.windows(2) {
        let (start, end) = (piece[0], piece[1]);
        // One row stands for the piece: null counts say only "none", "all" or unknown.
        let mut stats = DataFile { record_count: 1, ..DataFile::default() };
        for (id, firsts, column_index) in &columns {
            let page = firsts.partition_point(|&f| f <= start).saturating_sub(1);
            if column_index.is_null_page(page) {
                stats.null_value_counts.insert(*id, 1);
                continue;
            }
            if column_index.null_count(page) == Some(0) {
                stats.null_value_counts.insert(*id, 0);
            }
            let bounds = match column_index {
                Index::BOOLEAN(v) => {
                    v.min_value(page).zip(v.max_value(page)).map(|(lo, hi)| (vec![u8::from(*lo)], vec![u8::from(*hi)]))
                }
                Index::INT32(v) => v
                    .min_value(page)
                    .zip(v.max_value(page))
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())),
                Index::INT64(v) => v
                    .min_value(page)
                    .zip(v.max_value(page))
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())),
                Index::FLOAT(v) => v
                    .min_value(page)
                    .zip(v.max_value(page))
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())),
                Index::DOUBLE(v) => v
                    .min_value(page)
                    .zip(v.max_value(page))
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())),
                Index::BYTE_ARRAY(v) => {
                    v.min_value(page).zip(v.max_value(page)).map(|(lo, hi)| (lo.to_vec(), hi.to_vec()))
                }
                _ => None,
            };
            if let Some((lower, upper)) = bounds {
                stats.lower_bounds.insert(*id, lower);
                stats.upper_bounds.insert(*id, upper);
            }
        }
        if file_may_match(predicate, &stats, schema) {
            match kept.last_mut() {
                Some(last) if last.end == start => last.end = end,
                _ => kept.push(start..end),
            }
        }
    }
    Some(kept)
}

/// A row group's min and max in Iceberg's single-value form (what [`bound`] reads back for the
/// column's type; a physical type that does not fit it yields no key there, so no pruning).
fn bounds_of(statistics: &Statistics) -> Option<(Vec<u8>, Vec<u8>)> {
    Some(match statistics {
        Statistics::Boolean(v) => (vec![u8::from(*v.min_opt()?)], vec![u8::from(*v.max_opt()?)]),
        Statistics::Int32(v) => (v.min_opt()?.to_le_bytes().to_vec(), v.max_opt()?.to_le_bytes().to_vec()),
        Statistics::Int64(v) => (v.min_opt()?.to_le_bytes().to_vec(), v.max_opt()?.to_le_bytes().to_vec()),
        Statistics::Float(v) => (v.min_opt()?.to_le_bytes().to_vec(), v.max_opt()?.to_le_bytes().to_vec()),
        Statistics::Double(v) => (v.min_opt()?.to_le_bytes().to_vec(), v.max_opt()?.to_le_bytes().to_vec()),
        Statistics::ByteArray(v) if v.min_is_exact() && v.max_is_exact() => {
            (v.min_opt()?.data().to_vec(), v.max_opt()?.data().to_vec())
        }
        _ => return None,
    })
}
