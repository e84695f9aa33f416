//! Partition pruning: whether a data file may hold a row a predicate passes, judged by the
//! partition values its manifest entry carries.

use std::collections::HashMap;

use arrow::array::Array;
use arrow::datatypes::Schema as ArrowSchema;
use serde_json::Value;

use super::predicate::{literal_for, Predicate};
use crate::spec::bounds::{bound, order};
use crate::spec::manifest::DataFile;
use crate::spec::metadata::TableMetadata;
use crate::spec::partition::{resolve, single_value, Part, Transform};

/// Partition pruning: the partition fields of every spec of a table, resolved against its columns.
pub struct PartitionPruner {
    specs: HashMap<i32, Vec<Part>>,
}

impl PartitionPruner {
    pub fn new(metadata: &TableMetadata, schema: &ArrowSchema) -> Self {
        let specs = metadata
            .partition_specs
            .iter()
            .filter(|s| !s.fields.is_empty())
            .filter_map(|s| Some((s.spec_id, resolve(s, schema).ok()?)))
            .collect();
        Self { specs }
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Whether `file` may hold a row `predicate` passes, judged by its partition values: a row
    /// with `column = v` has partition value `t(v)` for every transform t of that column, and for
    /// an order-keeping transform `column < v` means `t(column) <= t(v)` (and so on).
    pub fn may_match(&self, predicate: &Predicate, file: &DataFile) -> bool {
        match self.specs.get(&file.spec_id) {
            Some(parts) => may_match(predicate, file, parts),
            None => true,
        }
    }
}

fn may_match(predicate: &Predicate, file: &DataFile, parts: &[Part]) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let held = |part: &Part| file.partition.get(&part.field.field_id);
    let all = |column: &str, test: &dyn Fn(&Part) -> bool| {
        parts.iter().filter(|p| p.column == column && p.transform != Transform::Void).all(test)
    };
    match predicate {
        Predicate::True => true,
        Predicate::False => false,
        Predicate::And { args } => args.iter().all(|a| may_match(a, file, parts)),
        Predicate::Or { args } => args.is_empty() || args.iter().any(|a| may_match(a, file, parts)),
        Predicate::Not { .. } | Predicate::Ne { .. } | Predicate::StartsWith { .. } => true,
        Predicate::Eq { column, value } => holds(column, value, file, parts, &|o| o == Equal, false),
        Predicate::In { column, values } => {
            values.iter().any(|v| holds(column, v, file, parts, &|o| o == Equal, false))
        }
        Predicate::Lt { column, value } | Predicate::Le { column, value } => {
            holds(column, value, file, parts, &|o| o != Greater, true)
        }
        Predicate::Gt { column, value } | Predicate::Ge { column, value } => {
            holds(column, value, file, parts, &|o| o != Less, true)
        }
        Predicate::IsNull { column } => all(column, &|p| held(p).is_none()),
        Predicate::NotNull { column } => all(column, &|p| held(p).is_some()),
    }
}

/// Whether every partition field over `column` lets a row compare with `value` as asked: the
/// file's partition value, ordered against the transform of `value`, passes `ok` (for a range,
/// only order-keeping transforms judge).
fn holds(
    column: &str,
    value: &Value,
    file: &DataFile,
    parts: &[Part],
    ok: &dyn Fn(std::cmp::Ordering) -> bool,
    ranged: bool,
) -> bool {
    parts.iter().filter(|p| p.column == column && p.transform != Transform::Void).all(|part| {
        if ranged && !part.transform.monotonic() {
            return true;
        }
        let Some(literal) = transformed(part, value) else { return true };
        // A comparison with null passes no row; nor does one over a file whose values are all null.
        let (Some(literal), Some(held)) = (literal, file.partition.get(&part.field.field_id)) else { return false };
        match (bound(&part.result, held), bound(&part.result, &literal)) {
            (Some(h), Some(l)) => order(&h, &l).is_none_or(ok),
            _ => ranged || held == &literal,
        }
    })
}

/// The transform of a filter literal, serialized: None when it cannot be judged (a literal of
/// another type than the column's, say), Some(None) for a null literal.
fn transformed(part: &Part, value: &Value) -> Option<Option<Vec<u8>>> {
    let source = part.source.clone();
    let literal = match literal_for(&part.column, &source, value) {
        Ok(Some(literal)) => literal,
        Ok(None) => return Some(None),
        Err(_) => return None,
    };
    if literal.data_type() != &source {
        return None;
    }
    let t = part.transform.apply(&literal).ok()?;
    Some(single_value(&t, 0))
}
