//! Iceberg schemas: nested fields with ids, their JSON form (table metadata) and their Arrow form
//! (Parquet files carry each field id as `PARQUET:field_id`).
//!
//! Vector columns are Iceberg `list<float>` with a required element; the table records their
//! dimension so that scans hand them out as Arrow fixed-size lists.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, TimeUnit};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

use crate::{Error, Result};

/// The Arrow field-metadata key under which Parquet files carry Iceberg field ids.
pub const PARQUET_FIELD_ID: &str = "PARQUET:field_id";

/// An Iceberg primitive type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal { precision: u8, scale: u8 },
    Date,
    Time,
    Timestamp,
    TimestampTz,
    String,
    Uuid,
    Fixed(u32),
    Binary,
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Primitive::Boolean => f.write_str("boolean"),
            Primitive::Int => f.write_str("int"),
            Primitive::Long => f.write_str("long"),
            Primitive::Float => f.write_str("float"),
            Primitive::Double => f.write_str("double"),
            Primitive::Decimal { precision, scale } => write!(f, "decimal({precision}, {scale})"),
            Primitive::Date => f.write_str("date"),
            Primitive::Time => f.write_str("time"),
            Primitive::Timestamp => f.write_str("timestamp"),
            Primitive::TimestampTz => f.write_str("timestamptz"),
            Primitive::String => f.write_str("string"),
            Primitive::Uuid => f.write_str("uuid"),
            Primitive::Fixed(len) => write!(f, "fixed[{len}]"),
            Primitive::Binary => f.write_str("binary"),
        }
    }
}

impl FromStr for Primitive {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::Corrupt(format!("unknown Iceberg type {s:?}"));
        Ok(match s {
            "boolean" => Primitive::Boolean,
            "int" => Primitive::Int,
            "long" => Primitive::Long,
            "float" => Primitive::Float,
            "double" => Primitive::Double,
            "date" => Primitive::Date,
            "time" => Primitive::Time,
            "timestamp" => Primitive::Timestamp,
            "timestamptz" => Primitive::TimestampTz,
            "string" => Primitive::String,
            "uuid" => Primitive::Uuid,
            "binary" => Primitive::Binary,
            _ if s.starts_with("fixed[") && s.ends_with(']') => {
                Primitive::Fixed(s[6..s.len() - 1].trim().parse().map_err(|_| bad())?)
            }
            _ if s.starts_with("decimal(") && s.ends_with(')') => {
                let (p, sc) = s[8..s.len() - 1].split_once(',').ok_or_else(bad)?;
                let precision: u8 = p.trim().parse().map_err(|_| bad())?;
                let scale: u8 = sc.trim().parse().map_err(|_| bad())?;
                if precision == 0 || precision > 38 || scale > precision {
                    return Err(bad());
                }
                Primitive::Decimal { precision, scale }
            }
            _ => return Err(bad()),
        })
    }
}

/// An Iceberg type: a primitive or a nested list, map or struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Primitive(Primitive),
    List { element_id: i32, element_required: bool, element: Box<Type> },
    Map { key_id: i32, key: Box<Type>, value_id: i32, value_required: bool, value: Box<Type> },
    Struct(Vec<NestedField>),
}

/// A named field with its Iceberg id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub field_type: Type,
    pub doc: Option<String>,
    /// Format version 3 defaults, in the spec's JSON single-value form: the value of rows written
    /// before the field existed (`initial-default`), and of rows a writer gives none
    /// (`write-default`).
    pub initial_default: Option<Value>,
    pub write_default: Option<Value>,
}

impl NestedField {
    pub fn new(id: i32, name: impl Into<String>, field_type: Type, required: bool) -> Self {
        Self { id, name: name.into(), required, field_type, doc: None, initial_default: None, write_default: None }
    }
}

/// A table schema: its id and top-level fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub schema_id: i32,
    pub fields: Vec<NestedField>,
    pub identifier_field_ids: Vec<i32>,
}

impl Schema {
    pub fn new(schema_id: i32, fields: Vec<NestedField>) -> Result<Self> {
        let schema = Self { schema_id, fields, identifier_field_ids: Vec::new() };
        schema.validate()?;
        Ok(schema)
    }

    /// The highest field id anywhere in the schema (0 for an empty schema).
    pub fn highest_field_id(&self) -> i32 {
        let mut ids = Vec::new();
        collect_ids(&self.fields, &mut ids);
        ids.into_iter().max().unwrap_or(0)
    }

    /// A top-level field by name.
    pub fn field(&self, name: &str) -> Result<&NestedField> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| Error::NotFound(format!("column '{name}' is not in the table schema")))
    }

    fn validate(&self) -> Result<()> {
        let mut ids = Vec::new();
        collect_ids(&self.fields, &mut ids);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::invalid(format!("field id {} is used twice in the schema", pair[0])));
        }
        if let Some(bad) = ids.iter().find(|&&id| id <= 0) {
            return Err(Error::invalid(format!("field id {bad} is not positive")));
        }
        let mut names = HashMap::new();
        for field in &self.fields {
            if names.insert(field.name.as_str(), ()).is_some() {
                return Err(Error::invalid(format!("column '{}' appears twice", field.name)));
            }
        }
        Ok(())
    }

    /// The Arrow schema of data files: every field carries its id as `PARQUET:field_id`; vector
    /// columns (by field id, with their dimension) become fixed-size lists.
    pub fn to_arrow(&self, vectors: &HashMap<i32, i32>) -> Result<ArrowSchema> {
        let fields = self.fields.iter().map(|f| field_to_arrow(f, vectors)).collect::<Result<Vec<_>>>()?;
        Ok(ArrowSchema::new(fields))
    }
}

impl Schema {
    /// An Iceberg schema for an Arrow schema, with fresh field ids (top-level fields first, then
    /// nested ones), and the dimension of each vector column (`fixed_size_list<float>`) by field id.
    pub fn from_arrow(arrow: &ArrowSchema) -> Result<(Self, HashMap<i32, i32>)> {
        let mut ids = IdAllocator { next: arrow.fields().len() as i32 + 1 };
        let mut vectors = HashMap::new();
        let mut fields = Vec::with_capacity(arrow.fields().len());
        for (i, field) in arrow.fields().iter().enumerate() {
            let id = i as i32 + 1;
            if let DataType::FixedSizeList(item, dim) = field.data_type() {
                if item.data_type() == &DataType::Float32 {
                    vectors.insert(id, *dim);
                }
            }
            fields.push(NestedField::new(
                id,
                field.name(),
                arrow_to_type(field.data_type(), field.name(), &mut ids)?,
                !field.is_nullable(),
            ));
        }
        Ok((Schema::new(0, fields)?, vectors))
    }
}

impl Schema {
    /// This schema with every field id (nested ones too) raised by `offset`: the columns of a
    /// replacement definition, numbered past every id the table has used.
    pub fn shifted(&self, offset: i32) -> Schema {
        fn shift_type(t: &Type, offset: i32) -> Type {
            match t {
                Type::Primitive(p) => Type::Primitive(*p),
                Type::List { element_id, element_required, element } => Type::List {
                    element_id: element_id + offset,
                    element_required: *element_required,
                    element: Box::new(shift_type(element, offset)),
                },
                Type::Map { key_id, key, value_id, value_required, value } => Type::Map {
                    key_id: key_id + offset,
                    key: Box::new(shift_type(key, offset)),
                    value_id: value_id + offset,
                    value_required: *value_required,
                    value: Box::new(shift_type(value, offset)),
                },
                Type::Struct(fields) => Type::Struct(fields.iter().map(|f| shift_field(f, offset)).collect()),
            }
        }
        fn shift_field(f: &NestedField, offset: i32) -> NestedField {
            NestedField { id: f.id + offset, field_type: shift_type(&f.field_type, offset), ..f.clone() }
        }
        Schema {
            schema_id: self.schema_id,
            fields: self.fields.iter().map(|f| shift_field(f, offset)).collect(),
            identifier_field_ids: self.identifier_field_ids.iter().map(|id| id + offset).collect(),
        }
    }

    /// This schema with the Arrow `field` added last as column `id` (its nested fields numbered
    /// from `id + 1`) under `schema_id`; returns it with the highest id it used.
    pub fn with_column(&self, schema_id: i32, field: &Field, id: i32) -> Result<(Self, i32)> {
        if self.fields.iter().any(|f| f.name == *field.name()) {
            return Err(Error::invalid(format!("column '{}' is already in the table schema", field.name())));
        }
        let mut ids = IdAllocator { next: id + 1 };
        let field_type = arrow_to_type(field.data_type(), field.name(), &mut ids)?;
        let mut fields = self.fields.clone();
        fields.push(NestedField::new(id, field.name(), field_type, !field.is_nullable()));
        let schema = Self { schema_id, fields, identifier_field_ids: self.identifier_field_ids.clone() };
        schema.validate()?;
        Ok((schema, ids.next - 1))
    }
}

struct IdAllocator {
    next: i32,
}

impl IdAllocator {
    fn take(&mut self) -> i32 {
        self.next += 1;
        self.next - 1
    }
}

fn arrow_to_type(data_type: &DataType, column: &str, ids: &mut IdAllocator) -> Result<Type> {
    let p = |p| Ok(Type::Primitive(p));
    match data_type {
        DataType::Boolean => p(Primitive::Boolean),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => p(Primitive::Int),
        DataType::Int64 | DataType::UInt32 => p(Primitive::Long),
        DataType::Float16 | DataType::Float32 => p(Primitive::Float),
        DataType::Float64 => p(Primitive::Double),
        DataType::Decimal128(precision, scale) if *scale >= 0 => {
            p(Primitive::Decimal { precision: *precision, scale: *scale as u8 })
        }
        DataType::Date32 | DataType::Date64 => p(Primitive::Date),
        DataType::Time64(_) | DataType::Time32(_) => p(Primitive::Time),
        DataType::Timestamp(_, None) => p(Primitive::Timestamp),
        DataType::Timestamp(_, Some(_)) => p(Primitive::TimestampTz),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => p(Primitive::String),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => p(Primitive::Binary),
        DataType::FixedSizeBinary(16) if column.ends_with("uuid") => p(Primitive::Uuid),
        DataType::FixedSizeBinary(n) => p(Primitive::Fixed(*n as u32)),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            if let DataType::FixedSizeList(_, dim) = data_type {
                crate::limits::dimension(&format!("vector column '{column}'"), i64::from(*dim))?;
            }
            let element_id = ids.take();
            Ok(Type::List {
                element_id,
                element_required: !item.is_nullable(),
                element: Box::new(arrow_to_type(item.data_type(), column, ids)?),
            })
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(Error::invalid(format!("column '{column}' has a malformed map type")));
            };
            let (key_id, value_id) = (ids.take(), ids.take());
            Ok(Type::Map {
                key_id,
                key: Box::new(arrow_to_type(kv[0].data_type(), column, ids)?),
                value_id,
                value_required: !kv[1].is_nullable(),
                value: Box::new(arrow_to_type(kv[1].data_type(), column, ids)?),
            })
        }
        DataType::Struct(children) => {
            let child_ids: Vec<i32> = children.iter().map(|_| ids.take()).collect();
            let fields = children
                .iter()
                .zip(child_ids)
                .map(|(child, id)| {
                    Ok(NestedField::new(
                        id,
                        child.name(),
                        arrow_to_type(child.data_type(), child.name(), ids)?,
                        !child.is_nullable(),
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Type::Struct(fields))
        }
        other => {
            Err(Error::invalid(format!("column '{column}' has type {other}, which HyperStream tables cannot store")))
        }
    }
}

fn collect_ids(fields: &[NestedField], ids: &mut Vec<i32>) {
    for field in fields {
        ids.push(field.id);
        collect_type_ids(&field.field_type, ids);
    }
}

fn collect_type_ids(t: &Type, ids: &mut Vec<i32>) {
    match t {
        Type::Primitive(_) => {}
        Type::List { element_id, element, .. } => {
            ids.push(*element_id);
            collect_type_ids(element, ids);
        }
        Type::Map { key_id, key, value_id, value, .. } => {
            ids.push(*key_id);
            ids.push(*value_id);
            collect_type_ids(key, ids);
            collect_type_ids(value, ids);
        }
        Type::Struct(fields) => collect_ids(fields, ids),
    }
}

fn with_id(field: Field, id: i32) -> Field {
    let mut metadata = field.metadata().clone();
    metadata.insert(PARQUET_FIELD_ID.to_owned(), id.to_string());
    field.with_metadata(metadata)
}

fn field_to_arrow(field: &NestedField, vectors: &HashMap<i32, i32>) -> Result<Field> {
    let data_type = match (&field.field_type, vectors.get(&field.id)) {
        (Type::List { element_id, element, element_required: true }, Some(&dim))
            if **element == Type::Primitive(Primitive::Float) =>
        {
            let item = with_id(Field::new("element", DataType::Float32, false), *element_id);
            DataType::FixedSizeList(Arc::new(item), dim)
        }
        (_, Some(_)) => {
            return Err(Error::invalid(format!(
                "column '{}' is declared a vector but is not a list of required floats",
                field.name
            )));
        }
        (t, None) => type_to_arrow(t, vectors)?,
    };
    Ok(with_id(Field::new(&field.name, data_type, !field.required), field.id))
}

fn type_to_arrow(t: &Type, vectors: &HashMap<i32, i32>) -> Result<DataType> {
    Ok(match t {
        Type::Primitive(p) => match p {
            Primitive::Boolean => DataType::Boolean,
            Primitive::Int => DataType::Int32,
            Primitive::Long => DataType::Int64,
            Primitive::Float => DataType::Float32,
            Primitive::Double => DataType::Float64,
            Primitive::Decimal { precision, scale } => DataType::Decimal128(*precision, *scale as i8),
            Primitive::Date => DataType::Date32,
            Primitive::Time => DataType::Time64(TimeUnit::Microsecond),
            Primitive::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            Primitive::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            Primitive::String => DataType::Utf8,
            Primitive::Uuid => DataType::FixedSizeBinary(16),
            Primitive::Fixed(len) => DataType::FixedSizeBinary(*len as i32),
            Primitive::Binary => DataType::Binary,
        },
        Type::List { element_id, element_required, element } => {
            let item = Field::new("element", type_to_arrow(element, vectors)?, !element_required);
            DataType::List(Arc::new(with_id(item, *element_id)))
        }
        Type::Map { key_id, key, value_id, value_required, value } => {
            let key = with_id(Field::new("key", type_to_arrow(key, vectors)?, false), *key_id);
            let value = with_id(Field::new("value", type_to_arrow(value, vectors)?, !value_required), *value_id);
            let entries = Field::new("key_value", DataType::Struct(Fields::from(vec![key, value])), false);
            DataType::Map(Arc::new(entries), false)
        }
        Type::Struct(fields) => DataType::Struct(Fields::from(
            fields.iter().map(|f| field_to_arrow(f, vectors)).collect::<Result<Vec<_>>>()?,
        )),
    })
}

/// A column of `rows` copies of a default value (a field's `initial-default` or `write-default`)
/// given in the spec's JSON single-value form, as Arrow type `data_type`; `column` names it in
/// errors.
pub fn default_column(
    column: &str,
    value: &Value,
    data_type: &DataType,
    rows: usize,
) -> Result<arrow::array::ArrayRef> {
    use arrow::array::{Array, BinaryArray, StringArray, UInt32Array};
    let bad = |why: &str| Error::Corrupt(format!("the default {value} of column '{column}' {why}"));
    let one: arrow::array::ArrayRef = match (value, data_type) {
        (Value::String(hex), DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_)) => {
            let hex: String = hex.chars().filter(|c| *c != '-').collect();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| bad("is not hexadecimal"))?;
            let binary = BinaryArray::from_iter_values([bytes]);
            arrow::compute::cast(&binary, data_type).map_err(|e| bad(&e.to_string()))?
        }
        (Value::String(_) | Value::Bool(_) | Value::Number(_), _) => {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
            arrow::compute::cast_with_options(&StringArray::from(vec![text]), data_type, &options)
                .map_err(|e| bad(&e.to_string()))?
        }
        _ => return Err(bad(&format!("is not a single value of type {data_type}"))),
    };
    if one.is_null(0) {
        return Err(bad(&format!("is not a value of type {data_type}")));
    }
    Ok(arrow::compute::take(&one, &UInt32Array::from(vec![0u32; rows]), None)?)
}

// ---- JSON, as Iceberg table metadata spells it -------------------------------------------------

fn type_to_json(t: &Type) -> Value {
    match t {
        Type::Primitive(p) => Value::String(p.to_string()),
        Type::List { element_id, element_required, element } => json!({
            "type": "list",
            "element-id": element_id,
            "element-required": element_required,
            "element": type_to_json(element),
        }),
        Type::Map { key_id, key, value_id, value_required, value } => json!({
            "type": "map",
            "key-id": key_id,
            "key": type_to_json(key),
            "value-id": value_id,
            "value-required": value_required,
            "value": type_to_json(value),
        }),
        Type::Struct(fields) => json!({
            "type": "struct",
            "fields": fields.iter().map(field_to_json).collect::<Vec<_>>(),
        }),
    }
}

fn field_to_json(f: &NestedField) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), json!(f.id));
    map.insert("name".into(), json!(f.name));
    map.insert("required".into(), json!(f.required));
    map.insert("type".into(), type_to_json(&f.field_type));
    if let Some(doc) = &f.doc {
        map.insert("doc".into(), json!(doc));
    }
    if let Some(value) = &f.initial_default {
        map.insert("initial-default".into(), value.clone());
    }
    if let Some(value) = &f.write_default {
        map.insert("write-default".into(), value.clone());
    }
    Value::Object(map)
}

fn get<'a>(v: &'a Value, key: &str) -> Result<&'a Value> {
    v.get(key).ok_or_else(|| Error::Corrupt(format!("schema JSON lacks '{key}': {v}")))
}

fn get_i32(v: &Value, key: &str) -> Result<i32> {
    get(v, key)?
        .as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| Error::Corrupt(format!("schema JSON '{key}' is not an int: {v}")))
}

fn get_bool(v: &Value, key: &str) -> Result<bool> {
    get(v, key)?.as_bool().ok_or_else(|| Error::Corrupt(format!("schema JSON '{key}' is not a bool: {v}")))
}

fn type_from_json(v: &Value) -> Result<Type> {
    if let Some(s) = v.as_str() {
        return Ok(Type::Primitive(s.parse()?));
    }
    match get(v, "type")?.as_str() {
        Some("list") => Ok(Type::List {
            element_id: get_i32(v, "element-id")?,
            element_required: get_bool(v, "element-required")?,
            element: Box::new(type_from_json(get(v, "element")?)?),
        }),
        Some("map") => Ok(Type::Map {
            key_id: get_i32(v, "key-id")?,
            key: Box::new(type_from_json(get(v, "key")?)?),
            value_id: get_i32(v, "value-id")?,
            value_required: get_bool(v, "value-required")?,
            value: Box::new(type_from_json(get(v, "value")?)?),
        }),
        Some("struct") => Ok(Type::Struct(fields_from_json(get(v, "fields")?)?)),
        _ => Err(Error::Corrupt(format!("unknown Iceberg type {v}"))),
    }
}

fn fields_from_json(v: &Value) -> Result<Vec<NestedField>> {
    v.as_array()
        .ok_or_else(|| Error::Corrupt(format!("schema 'fields' is not an array: {v}")))?
        .iter()
        .map(|f| {
            Ok(NestedField {
                id: get_i32(f, "id")?,
                name: get(f, "name")?
                    .as_str()
                    .ok_or_else(|| Error::Corrupt(format!("field name is not a string: {f}")))?
                    .to_owned(),
                required: get_bool(f, "required")?,
                field_type: type_from_json(get(f, "type")?)?,
                doc: f.get("doc").and_then(Value::as_str).map(str::to_owned),
                initial_default: f.get("initial-default").cloned(),
                write_default: f.get("write-default").cloned(),
            })
        })
        .collect()
}

impl Schema {
    /// The schema as table metadata's `schemas` entries spell it (as Iceberg Java does, without
    /// `identifier-field-ids` when there are none).
    pub fn to_json(&self) -> Value {
        let mut schema = json!({
            "type": "struct",
            "schema-id": self.schema_id,
            "fields": self.fields.iter().map(field_to_json).collect::<Vec<_>>(),
        });
        if !self.identifier_field_ids.is_empty() {
            schema["identifier-field-ids"] = json!(self.identifier_field_ids);
        }
        schema
    }

    /// Parses a `schemas` entry of table metadata.
    pub fn from_json(v: &Value) -> Result<Self> {
        let identifier_field_ids = match v.get("identifier-field-ids") {
            Some(ids) => ids
                .as_array()
                .ok_or_else(|| Error::Corrupt("identifier-field-ids is not an array".into()))?
                .iter()
                .map(|id| id.as_i64().map(|n| n as i32).ok_or_else(|| Error::Corrupt("bad identifier field id".into())))
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        let schema = Schema {
            schema_id: v.get("schema-id").and_then(Value::as_i64).unwrap_or(0) as i32,
            fields: fields_from_json(get(v, "fields")?)?,
            identifier_field_ids,
        };
        schema.validate().map_err(|e| Error::Corrupt(e.to_string()))?;
        Ok(schema)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Schema::from_json(&value).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Schema {
        Schema::new(
            0,
            vec![
                NestedField::new(1, "id", Type::Primitive(Primitive::Long), true),
                NestedField::new(2, "price", Type::Primitive(Primitive::Decimal { precision: 12, scale: 2 }), false),
                NestedField::new(
                    3,
                    "tags",
                    Type::List {
                        element_id: 6,
                        element_required: false,
                        element: Box::new(Type::Primitive(Primitive::String)),
                    },
                    false,
                ),
                NestedField::new(
                    4,
                    "embedding",
                    Type::List {
                        element_id: 7,
                        element_required: true,
                        element: Box::new(Type::Primitive(Primitive::Float)),
                    },
                    true,
                ),
                NestedField::new(
                    5,
                    "attrs",
                    Type::Map {
                        key_id: 8,
                        key: Box::new(Type::Primitive(Primitive::String)),
                        value_id: 9,
                        value_required: false,
                        value: Box::new(Type::Struct(vec![NestedField::new(
                            10,
                            "at",
                            Type::Primitive(Primitive::TimestampTz),
                            false,
                        )])),
                    },
                    false,
                ),
            ],
        )
        .unwrap()
    }

    #[test]
    fn json_round_trips_and_spells_types_as_the_spec_does() {
        let schema = sample();
        let json = schema.to_json();
        assert_eq!(json["fields"][1]["type"], "decimal(12, 2)");
        assert_eq!(json["fields"][2]["type"]["element-id"], 6);
        assert_eq!(json["fields"][4]["type"]["value"]["fields"][0]["type"], "timestamptz");
        assert_eq!(Schema::from_json(&json).unwrap(), schema);
        let text = serde_json::to_string(&schema).unwrap();
        assert_eq!(serde_json::from_str::<Schema>(&text).unwrap(), schema);
        assert_eq!(schema.highest_field_id(), 10);
    }

    #[test]
    fn parses_the_specs_own_example() {
        let json: Value = serde_json::from_str(
            r#"{"type":"struct","schema-id":1,"fields":[
                {"id":1,"name":"x","required":true,"type":"fixed[16]"},
                {"id":2,"name":"y","required":false,"type":"uuid","doc":"why"}]}"#,
        )
        .unwrap();
        let schema = Schema::from_json(&json).unwrap();
        assert_eq!(schema.fields[0].field_type, Type::Primitive(Primitive::Fixed(16)));
        assert_eq!(schema.fields[1].doc.as_deref(), Some("why"));
    }

    #[test]
    fn arrow_fields_carry_ids_and_vectors_become_fixed_size_lists() {
        let arrow = sample().to_arrow(&HashMap::from([(4, 128)])).unwrap();
        let id = arrow.field_with_name("id").unwrap();
        assert_eq!(id.metadata()[PARQUET_FIELD_ID], "1");
        assert!(!id.is_nullable());
        match arrow.field_with_name("embedding").unwrap().data_type() {
            DataType::FixedSizeList(item, 128) => assert_eq!(item.metadata()[PARQUET_FIELD_ID], "7"),
            other => panic!("embedding is {other}"),
        }
        match arrow.field_with_name("tags").unwrap().data_type() {
            DataType::List(item) => assert_eq!(item.metadata()[PARQUET_FIELD_ID], "6"),
            other => panic!("tags is {other}"),
        }
        let err = sample().to_arrow(&HashMap::from([(3, 4)])).unwrap_err();
        assert!(err.to_string().contains("tags"));
    }

    #[test]
    fn arrow_schemas_get_fresh_ids_and_vector_dimensions() {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let arrow = ArrowSchema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("tags", DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), true),
            Field::new("embedding", DataType::FixedSizeList(item, 16), false),
            Field::new("at", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        ]);
        let (schema, vectors) = Schema::from_arrow(&arrow).unwrap();
        assert_eq!(schema.fields.iter().map(|f| f.id).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        assert_eq!(vectors, HashMap::from([(3, 16)]));
        assert!(matches!(schema.fields[1].field_type, Type::List { element_id: 5, .. }));
        assert!(matches!(schema.fields[2].field_type, Type::List { element_id: 6, element_required: true, .. }));
        assert_eq!(schema.fields[3].field_type, Type::Primitive(Primitive::TimestampTz));
        let back = schema.to_arrow(&vectors).unwrap();
        assert!(matches!(back.field(2).data_type(), DataType::FixedSizeList(_, 16)));
        let bad = ArrowSchema::new(vec![Field::new("d", DataType::Duration(TimeUnit::Second), true)]);
        assert!(Schema::from_arrow(&bad).unwrap_err().to_string().contains("'d'"));
    }

    #[test]
    fn duplicate_ids_names_and_bad_types_are_rejected() {
        let dup = Schema::new(
            0,
            vec![
                NestedField::new(1, "a", Type::Primitive(Primitive::Int), true),
                NestedField::new(1, "b", Type::Primitive(Primitive::Int), true),
            ],
        );
        assert!(dup.unwrap_err().to_string().contains("field id 1"));
        let names = Schema::new(
            0,
            vec![
                NestedField::new(1, "a", Type::Primitive(Primitive::Int), true),
                NestedField::new(2, "a", Type::Primitive(Primitive::Int), true),
            ],
        );
        assert!(names.unwrap_err().to_string().contains("'a'"));
        for bad in ["decimal(40, 2)", "decimal(5, 6)", "fixed[x]", "varchar"] {
            assert!(bad.parse::<Primitive>().is_err(), "{bad}");
        }
        assert!(Schema::from_json(&json!({"fields": [{"id": 1, "name": "a"}]})).is_err());
    }
}
