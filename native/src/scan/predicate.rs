//! The native predicate model: the filter every engine translates its own into, evaluated exactly on
//! record batches with SQL's three-valued logic (a row passes only when the predicate is true).
//!
//! Its JSON form is what crosses the JNI boundary, for example
//! `{"op":"and","args":[{"op":"eq","column":"category","value":3},{"op":"not_null","column":"name"}]}`.
//! Literals are JSON numbers, strings, booleans or null, cast to the column's type (strings parse as
//! dates and timestamps).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, Scalar, StringArray};
use arrow::compute::kernels::{boolean, cmp, comparison};
use arrow::compute::{cast, is_not_null, is_null};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::BatchStream;
use crate::{Error, Result};

/// A filter over a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    True,
    False,
    And { args: Vec<Predicate> },
    Or { args: Vec<Predicate> },
    Not { arg: Box<Predicate> },
    Eq { column: String, value: Value },
    Ne { column: String, value: Value },
    Lt { column: String, value: Value },
    Le { column: String, value: Value },
    Gt { column: String, value: Value },
    Ge { column: String, value: Value },
    In { column: String, values: Vec<Value> },
    IsNull { column: String },
    NotNull { column: String },
    StartsWith { column: String, prefix: String },
}

#[derive(Clone, Copy)]
enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Predicate {
    /// Parses the JSON form, naming what is wrong.
    pub fn from_json(json: &str) -> Result<Predicate> {
        serde_json::from_str(json).map_err(|e| Error::invalid(format!("bad filter {json}: {e}")))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("predicates serialize")
    }

    /// The columns the predicate reads.
    pub fn columns(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns(&self, out: &mut BTreeSet<String>) {
        match self {
            Predicate::True | Predicate::False => {}
            Predicate::And { args } | Predicate::Or { args } => args.iter().for_each(|a| a.collect_columns(out)),
            Predicate::Not { arg } => arg.collect_columns(out),
            Predicate::Eq { column, .. }
            | Predicate::Ne { column, .. }
            | Predicate::Lt { column, .. }
            | Predicate::Le { column, .. }
            | Predicate::Gt { column, .. }
            | Predicate::Ge { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull { column }
            | Predicate::NotNull { column }
            | Predicate::StartsWith { column, .. } => {
                out.insert(column.clone());
            }
        }
    }

    /// The predicate's value on every row of `batch` (null where SQL says unknown).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let rows = batch.num_rows();
        Ok(match self {
            Predicate::True => BooleanArray::from(vec![true; rows]),
            Predicate::False => BooleanArray::from(vec![false; rows]),
            Predicate::And { args } => fold(args, batch, true, boolean::and_kleene)?,
            Predicate::Or { args } => fold(args, batch, false, boolean::or_kleene)?,
            Predicate::Not { arg } => boolean::not(&arg.evaluate(batch)?)?,
            Predicate::Eq { column, value } => compare(batch, column, Comparison::Eq, value)?,
            Predicate::Ne { column, value } => compare(batch, column, Comparison::Ne, value)?,
            Predicate::Lt { column, value } => compare(batch, column, Comparison::Lt, value)?,
            Predicate::Le { column, value } => compare(batch, column, Comparison::Le, value)?,
            Predicate::Gt { column, value } => compare(batch, column, Comparison::Gt, value)?,
            Predicate::Ge { column, value } => compare(batch, column, Comparison::Ge, value)?,
            Predicate::In { column, values } => {
                let mut result = BooleanArray::from(vec![false; rows]);
                for value in values {
                    result = boolean::or_kleene(&result, &compare(batch, column, Comparison::Eq, value)?)?;
                }
                result
            }
            Predicate::IsNull { column } => is_null(column_of(batch, column)?.as_ref())?,
            Predicate::NotNull { column } => is_not_null(column_of(batch, column)?.as_ref())?,
            Predicate::StartsWith { column, prefix } => {
                let values = column_of(batch, column)?;
                if !matches!(values.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                    return Err(Error::invalid(format!(
                        "prefix match needs a string column, but '{column}' is {}",
                        values.data_type()
                    )));
                }
                let pattern = cast(&StringArray::from(vec![prefix.as_str()]), values.data_type())?;
                comparison::starts_with(&values, &Scalar::new(pattern))?
            }
        })
    }

    /// The rows of `batch` the predicate passes.
    pub fn filter(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        Ok(arrow::compute::filter_record_batch(batch, &self.evaluate(batch)?)?)
    }
}

/// `inner` with only the rows `predicate` passes, projected to `output` (column indices of `inner`).
pub fn filtered(inner: BatchStream, predicate: Predicate, output: Vec<usize>) -> Result<BatchStream> {
    let schema = Arc::new(inner.schema().project(&output)?);
    Ok(Box::new(Filtered { inner, predicate, output, schema }))
}

struct Filtered {
    inner: BatchStream,
    predicate: Predicate,
    output: Vec<usize>,
    schema: SchemaRef,
}

impl Filtered {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        // Batches the filter empties are skipped rather than handed out.
        for batch in self.inner.by_ref() {
            let passed = self.predicate.filter(&batch?)?;
            if passed.num_rows() > 0 {
                return Ok(Some(passed.project(&self.output)?));
            }
        }
        Ok(None)
    }
}

impl Iterator for Filtered {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().map_err(|e| ArrowError::ExternalError(Box::new(e))).transpose()
    }
}

impl RecordBatchReader for Filtered {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

fn fold(
    args: &[Predicate],
    batch: &RecordBatch,
    identity: bool,
    op: fn(&BooleanArray, &BooleanArray) -> std::result::Result<BooleanArray, arrow::error::ArrowError>,
) -> Result<BooleanArray> {
    let mut result = BooleanArray::from(vec![identity; batch.num_rows()]);
    for arg in args {
        result = op(&result, &arg.evaluate(batch)?)?;
    }
    Ok(result)
}

fn column_of(batch: &RecordBatch, column: &str) -> Result<ArrayRef> {
    batch
        .schema()
        .index_of(column)
        .map(|i| batch.column(i).clone())
        .map_err(|_| Error::NotFound(format!("filter column '{column}' is not in the table schema")))
}

/// `value` as a one-element array of the type a column of `column_type` compares in: the column's
/// own type, except that an integer column against a fractional literal compares as floats (`x < 1.5`
/// must keep x = 1). None for a null literal, which compares as unknown.
pub(crate) fn literal_for(column: &str, column_type: &DataType, value: &Value) -> Result<Option<ArrayRef>> {
    let literal: ArrayRef = match value {
        Value::Null => return Ok(None),
        Value::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Value::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Arc::new(Int64Array::from(vec![i])),
            None => Arc::new(Float64Array::from(vec![n.as_f64().unwrap_or(f64::NAN)])),
        },
        Value::Array(_) | Value::Object(_) => {
            return Err(Error::invalid(format!("filter on '{column}' compares with {value}, which is not a scalar")))
        }
    };
    let target = if column_type.is_integer() && literal.data_type() == &DataType::Float64 {
        DataType::Float64
    } else {
        column_type.clone()
    };
    let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
    let literal = arrow::compute::cast_with_options(&literal, &target, &options)
        .map_err(|e| Error::invalid(format!("filter on '{column}' ({target}) cannot use the value {value}: {e}")))?;
    Ok(Some(literal))
}

fn compare(batch: &RecordBatch, column: &str, op: Comparison, value: &Value) -> Result<BooleanArray> {
    let values = column_of(batch, column)?;
    let Some(literal) = literal_for(column, values.data_type(), value)? else {
        // Comparing with NULL is unknown on every row.
        return Ok(BooleanArray::new_null(batch.num_rows()));
    };
    let values = if literal.data_type() != values.data_type() { cast(&values, literal.data_type())? } else { values };
    // SQL compares -0.0 equal to 0.0 where the kernels' total order tells them apart: both sides'
    // zeros compare as +0.0. NaN keeps its total-order place (equal to itself, above every number),
    // as Spark compares; an engine that follows IEEE (Trino) re-checks float comparisons itself.
    let (values, literal) = (zeros_as_one(values), zeros_as_one(literal));
    let literal = Scalar::new(literal);
    Ok(match op {
        Comparison::Eq => cmp::eq(&values, &literal)?,
        Comparison::Ne => cmp::neq(&values, &literal)?,
        Comparison::Lt => cmp::lt(&values, &literal)?,
        Comparison::Le => cmp::lt_eq(&values, &literal)?,
        Comparison::Gt => cmp::gt(&values, &literal)?,
        Comparison::Ge => cmp::gt_eq(&values, &literal)?,
    })
}

/// A float column with every -0.0 made +0.0 (other columns as they are).
fn zeros_as_one(values: ArrayRef) -> ArrayRef {
    use arrow::array::AsArray;
    use arrow::datatypes::{Float32Type, Float64Type};
    match values.data_type() {
        DataType::Float32 => Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float32Type>(|v| v + 0.0)),
        DataType::Float64 => Arc::new(values.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| v + 0.0)),
        _ => values,
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, Int32Array};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("score", DataType::Float64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5])),
                Arc::new(StringArray::from(vec![Some("apple"), None, Some("apricot"), Some("banana"), Some("cherry")])),
                Arc::new(Float64Array::from(vec![Some(0.5), Some(1.5), None, Some(3.0), Some(-1.0)])),
            ],
        )
        .unwrap()
    }

    fn ids(json: &str) -> Vec<i32> {
        let p = Predicate::from_json(json).unwrap();
        let out = p.filter(&batch()).unwrap();
        out.column(0).as_primitive::<arrow::datatypes::Int32Type>().values().to_vec()
    }

    #[test]
    fn comparisons_combinations_and_null_logic() {
        assert_eq!(ids(r#"{"op":"eq","column":"id","value":3}"#), vec![3]);
        assert_eq!(ids(r#"{"op":"lt","column":"id","value":2.5}"#), vec![1, 2]);
        assert_eq!(ids(r#"{"op":"ge","column":"score","value":1}"#), vec![2, 4]);
        assert_eq!(ids(r#"{"op":"in","column":"name","values":["banana","cherry","kiwi"]}"#), vec![4, 5]);
        assert_eq!(ids(r#"{"op":"starts_with","column":"name","prefix":"ap"}"#), vec![1, 3]);
        assert_eq!(ids(r#"{"op":"is_null","column":"name"}"#), vec![2]);
        // NOT(name = 'apple') is unknown where name is null, so row 2 stays out.
        assert_eq!(ids(r#"{"op":"not","arg":{"op":"eq","column":"name","value":"apple"}}"#), vec![3, 4, 5]);
        assert_eq!(
            ids(
                r#"{"op":"or","args":[{"op":"eq","column":"id","value":1},{"op":"and","args":[{"op":"gt","column":"score","value":0},{"op":"ne","column":"id","value":4}]}]}"#
            ),
            vec![1, 2]
        );
        assert_eq!(ids(r#"{"op":"eq","column":"score","value":null}"#), Vec::<i32>::new());
        assert_eq!(ids(r#"{"op":"true"}"#).len(), 5);
    }

    #[test]
    fn float_comparisons_take_signed_zeros_as_equal_and_nan_above_every_number() {
        let schema = Arc::new(Schema::new(vec![Field::new("d", DataType::Float64, true)]));
        let values = [f64::NAN, -0.0, 0.0, 2.0, f64::NEG_INFINITY, f64::INFINITY];
        let column = Float64Array::from_iter(values.iter().map(|v| Some(*v)).chain([None]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(column)]).unwrap();
        let rows = |json: &str| -> Vec<usize> {
            let passed = Predicate::from_json(json).unwrap().evaluate(&batch).unwrap();
            (0..passed.len()).filter(|&i| passed.is_valid(i) && passed.value(i)).collect()
        };
        assert_eq!(rows(r#"{"op":"eq","column":"d","value":0.0}"#), [1, 2], "-0.0 = 0.0");
        assert_eq!(rows(r#"{"op":"eq","column":"d","value":-0.0}"#), [1, 2]);
        assert_eq!(rows(r#"{"op":"lt","column":"d","value":0.0}"#), [4], "-0.0 is not below 0.0");
        assert_eq!(rows(r#"{"op":"le","column":"d","value":-0.0}"#), [1, 2, 4]);
        assert_eq!(rows(r#"{"op":"ne","column":"d","value":0}"#), [0, 3, 4, 5]);
        assert_eq!(rows(r#"{"op":"gt","column":"d","value":1.0}"#), [0, 3, 5], "NaN sorts above every number");
        assert_eq!(rows(r#"{"op":"in","column":"d","values":[0.0, 2]}"#), [1, 2, 3]);
    }

    #[test]
    fn bad_filters_name_what_is_wrong() {
        let err = Predicate::from_json(r#"{"op":"like","column":"id"}"#).unwrap_err();
        assert!(err.to_string().contains("like"), "{err}");
        let p = Predicate::from_json(r#"{"op":"eq","column":"colour","value":1}"#).unwrap();
        assert!(matches!(p.evaluate(&batch()).unwrap_err(), Error::NotFound(m) if m.contains("'colour'")));
        let p = Predicate::from_json(r#"{"op":"eq","column":"id","value":"seven"}"#).unwrap();
        let err = p.evaluate(&batch()).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("'id'") && m.contains("seven")), "{err}");
        let p = Predicate::from_json(r#"{"op":"starts_with","column":"id","prefix":"1"}"#).unwrap();
        assert!(p.evaluate(&batch()).is_err());
    }

    #[test]
    fn json_round_trips_and_lists_columns() {
        let p = Predicate::And {
            args: vec![
                Predicate::Eq { column: "a".into(), value: 1.into() },
                Predicate::Not { arg: Box::new(Predicate::IsNull { column: "b".into() }) },
            ],
        };
        assert_eq!(Predicate::from_json(&p.to_json()).unwrap(), p);
        assert_eq!(p.columns().into_iter().collect::<Vec<_>>(), vec!["a", "b"]);
        let strings = batch().column(1).as_string::<i32>().len();
        assert_eq!(strings, 5);
    }
}
