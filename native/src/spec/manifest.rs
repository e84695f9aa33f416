//! Iceberg manifests and manifest lists (Avro), format version 2, or 3 with its row lineage and
//! deletion vector fields, with every field id Iceberg readers look for and the header keys they
//! need (`schema`, `partition-spec`, ...).

use std::collections::BTreeMap;

use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;
use apache_avro::{Reader, Schema as AvroSchema};
use arrow::datatypes::DataType;

use crate::{Error, Result};

/// Iceberg's `manifest_entry` status.
pub const STATUS_EXISTING: i32 = 0;
pub const STATUS_ADDED: i32 = 1;
pub const STATUS_DELETED: i32 = 2;

/// A data (or delete) file as a manifest records it. Its JSON form carries written files from the
/// engine tasks that wrote them to the driver that commits them.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct DataFile {
    /// 0 data, 1 position deletes, 2 equality deletes.
    pub content: i32,
    pub file_path: String,
    pub file_format: String,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub column_sizes: BTreeMap<i32, i64>,
    pub value_counts: BTreeMap<i32, i64>,
    pub null_value_counts: BTreeMap<i32, i64>,
    /// Single-value serialization of each column's bounds, by field id.
    pub lower_bounds: BTreeMap<i32, Vec<u8>>,
    pub upper_bounds: BTreeMap<i32, Vec<u8>>,
    /// Scan planning only, never written to a manifest: the position delete files that apply to
    /// this data file, so that a split carries what its scan must leave out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<DataFile>,
    /// The partition spec the file was written under (its manifest's), and its partition value for
    /// each field of that spec, by partition field id, in single-value serialization (a null value
    /// has no entry).
    #[serde(default)]
    pub spec_id: i32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub partition: BTreeMap<i32, Vec<u8>>,
    /// The sort order the file's rows were written in, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order_id: Option<i32>,
    /// Format version 3: the row id of the file's first row (row `p` has `first_row_id + p` unless
    /// the file stores `_row_id`); None in a manifest means inherited from the manifest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_row_id: Option<i64>,
    /// A delete file that applies to one data file names it; a deletion vector (a blob of a
    /// Puffin file) also gives where its blob lies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referenced_data_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_size_in_bytes: Option<i64>,
    /// Scan planning only, never written to a manifest: the data sequence number of the file's
    /// entry (a row's `_last_updated_sequence_number` unless the file stores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<i64>,
    /// The rest of the spec's fields, kept as another writer wrote them: NaN counts by field id, the
    /// encryption key metadata, the row groups' offsets, and an equality delete file's key columns.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nan_value_counts: BTreeMap<i32, i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_metadata: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_offsets: Option<Vec<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equality_ids: Option<Vec<i32>>,
    /// Scan planning only, never written to a manifest: a split of a big file reads only its row
    /// groups `[first, end)`, and `record_count` is then theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_groups: Option<[usize; 2]>,
}

/// A field of a manifest's partition struct: its partition field id, name and value type.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionType {
    pub field_id: i32,
    pub name: String,
    pub data_type: DataType,
}

/// A manifest list's summary of one partition field over a manifest's files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: Option<bool>,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
}

/// One row of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    pub status: i32,
    pub snapshot_id: Option<i64>,
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    pub data_file: DataFile,
}

/// One row of a manifest list.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    pub manifest_path: String,
    pub manifest_length: i64,
    pub partition_spec_id: i32,
    /// 0 data, 1 deletes.
    pub content: i32,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files_count: i32,
    pub existing_files_count: i32,
    pub deleted_files_count: i32,
    pub added_rows_count: i64,
    pub existing_rows_count: i64,
    pub deleted_rows_count: i64,
    /// One summary per partition field of the manifest's spec (None as some writers leave it).
    pub partitions: Option<Vec<FieldSummary>>,
    /// Format version 3, data manifests: the row id its files' first row ids are inherited from
    /// (None until the manifest list that first lists it assigns it).
    pub first_row_id: Option<i64>,
}

fn int_long_map(name: &str, key_id: i32, value_id: i32, field_id: i32, value_type: &str) -> String {
    format!(
        r#"{{"name":"{name}","type":["null",{{"type":"array","logicalType":"map","items":{{"type":"record","name":"k{key_id}_v{value_id}","fields":[{{"name":"key","type":"int","field-id":{key_id}}},{{"name":"value","type":"{value_type}","field-id":{value_id}}}]}}}}],"default":null,"field-id":{field_id}}}"#
    )
}

/// The Avro type of a partition value of `data_type`.
fn avro_type(data_type: &DataType) -> Result<&'static str> {
    Ok(match data_type {
        DataType::Boolean => r#""boolean""#,
        DataType::Int32 => r#""int""#,
        DataType::Int64 => r#""long""#,
        DataType::Float32 => r#""float""#,
        DataType::Float64 => r#""double""#,
        DataType::Date32 => r#"{"type":"int","logicalType":"date"}"#,
        DataType::Timestamp(_, None) => r#"{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":false}"#,
        DataType::Timestamp(_, Some(_)) => r#"{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":true}"#,
        DataType::Utf8 => r#""string""#,
        DataType::Binary => r#""bytes""#,
        other => {
            return Err(Error::invalid(format!("partition values of type {other} cannot be written to a manifest")))
        }
    })
}

/// A partition value (single-value serialization) as the Avro value of `data_type`.
fn avro_value(data_type: &DataType, bytes: &[u8], name: &str) -> Result<Value> {
    let bad = || Error::Corrupt(format!("partition value of '{name}' does not fit its type {data_type}"));
    let four = || <[u8; 4]>::try_from(bytes).map_err(|_| bad());
    let eight = || <[u8; 8]>::try_from(bytes).map_err(|_| bad());
    Ok(match data_type {
        DataType::Boolean => Value::Boolean(bytes.first().is_some_and(|b| *b != 0)),
        DataType::Int32 => Value::Int(i32::from_le_bytes(four()?)),
        DataType::Date32 => Value::Date(i32::from_le_bytes(four()?)),
        DataType::Int64 => Value::Long(i64::from_le_bytes(eight()?)),
        DataType::Timestamp(..) => Value::TimestampMicros(i64::from_le_bytes(eight()?)),
        DataType::Float32 => Value::Float(f32::from_le_bytes(four()?)),
        DataType::Float64 => Value::Double(f64::from_le_bytes(eight()?)),
        DataType::Utf8 => Value::String(String::from_utf8(bytes.to_vec()).map_err(|_| bad())?),
        DataType::Binary => Value::Bytes(bytes.to_vec()),
        other => {
            return Err(Error::invalid(format!("partition values of type {other} cannot be written to a manifest")))
        }
    })
}

/// An Avro partition value read from a manifest in single-value serialization (None for null).
fn partition_bytes(value: Value, path: &str) -> Result<Option<Vec<u8>>> {
    Ok(Some(match unwrap_union(value) {
        Value::Null => return Ok(None),
        Value::Boolean(b) => vec![b as u8],
        Value::Int(v) | Value::Date(v) => v.to_le_bytes().to_vec(),
        Value::Long(v) | Value::TimestampMicros(v) | Value::TimeMicros(v) | Value::LocalTimestampMicros(v) => {
            v.to_le_bytes().to_vec()
        }
        Value::Float(v) => v.to_le_bytes().to_vec(),
        Value::Double(v) => v.to_le_bytes().to_vec(),
        Value::String(s) => s.into_bytes(),
        Value::Bytes(b) | Value::Fixed(_, b) => b,
        Value::Uuid(u) => u.as_bytes().to_vec(),
        Value::Decimal(d) => Vec::<u8>::try_from(d).map_err(|e| corrupt(path, format!("partition decimal: {e}")))?,
        other => return Err(corrupt(path, format!("partition value {other:?} has a type HyperStream does not read"))),
    }))
}

/// The Avro schema of a V2 manifest whose partition struct has `partition`'s fields, as JSON
/// (written verbatim into the header).
fn manifest_schema(partition: &[PartitionType], format_version: u8) -> Result<String> {
    let partition_fields = partition
        .iter()
        .map(|p| {
            Ok(format!(
                r#"{{"name":{},"type":["null",{}],"default":null,"field-id":{}}}"#,
                serde_json::Value::from(avro_name(&p.name)),
                avro_type(&p.data_type)?,
                p.field_id
            ))
        })
        .collect::<Result<Vec<_>>>()?
        .join(",");
    let data_file = format!(
        r#"{{"type":"record","name":"r2","fields":[
            {{"name":"content","type":"int","field-id":134}},
            {{"name":"file_path","type":"string","field-id":100}},
            {{"name":"file_format","type":"string","field-id":101}},
            {{"name":"partition","type":{{"type":"record","name":"r102","fields":[{partition_fields}]}},"field-id":102}},
            {{"name":"record_count","type":"long","field-id":103}},
            {{"name":"file_size_in_bytes","type":"long","field-id":104}},
            {column_sizes},
            {value_counts},
            {null_value_counts},
            {nan_value_counts},
            {lower_bounds},
            {upper_bounds},
            {{"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":131}},
            {{"name":"split_offsets","type":["null",{{"type":"array","items":"long","element-id":133}}],"default":null,"field-id":132}},
            {{"name":"equality_ids","type":["null",{{"type":"array","items":"int","element-id":136}}],"default":null,"field-id":135}},
            {{"name":"sort_order_id","type":["null","int"],"default":null,"field-id":140}}{v3}
        ]}}"#,
        v3 = match format_version >= 3 {
            true =>
                r#",
            {"name":"first_row_id","type":["null","long"],"default":null,"field-id":142},
            {"name":"referenced_data_file","type":["null","string"],"default":null,"field-id":143},
            {"name":"content_offset","type":["null","long"],"default":null,"field-id":144},
            {"name":"content_size_in_bytes","type":["null","long"],"default":null,"field-id":145}"#,
            false => "",
        },
        column_sizes = int_long_map("column_sizes", 117, 118, 108, "long"),
        value_counts = int_long_map("value_counts", 119, 120, 109, "long"),
        null_value_counts = int_long_map("null_value_counts", 121, 122, 110, "long"),
        nan_value_counts = int_long_map("nan_value_counts", 138, 139, 137, "long"),
        lower_bounds = int_long_map("lower_bounds", 126, 127, 125, "bytes"),
        upper_bounds = int_long_map("upper_bounds", 129, 130, 128, "bytes"),
    );
    let entry = format!(
        r#"{{"type":"record","name":"manifest_entry","fields":[
            {{"name":"status","type":"int","field-id":0}},
            {{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1}},
            {{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3}},
            {{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4}},
            {{"name":"data_file","type":{data_file},"field-id":2}}
        ]}}"#
    );
    Ok(entry)
}

/// A partition field name as a valid Avro name (letters, digits and `_`, not starting with a digit).
fn avro_name(name: &str) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

fn manifest_list_schema(format_version: u8) -> String {
    let v3 = match format_version >= 3 {
        true => {
            r#",
        {"name":"first_row_id","type":["null","long"],"default":null,"field-id":520}"#
        }
        false => "",
    };
    r#"{"type":"record","name":"manifest_file","fields":[
        {"name":"manifest_path","type":"string","field-id":500},
        {"name":"manifest_length","type":"long","field-id":501},
        {"name":"partition_spec_id","type":"int","field-id":502},
        {"name":"content","type":"int","field-id":517},
        {"name":"sequence_number","type":"long","field-id":515},
        {"name":"min_sequence_number","type":"long","field-id":516},
        {"name":"added_snapshot_id","type":"long","field-id":503},
        {"name":"added_files_count","type":"int","field-id":504},
        {"name":"existing_files_count","type":"int","field-id":505},
        {"name":"deleted_files_count","type":"int","field-id":506},
        {"name":"added_rows_count","type":"long","field-id":512},
        {"name":"existing_rows_count","type":"long","field-id":513},
        {"name":"deleted_rows_count","type":"long","field-id":514},
        {"name":"partitions","type":["null",{"type":"array","items":{"type":"record","name":"r508","fields":[
            {"name":"contains_null","type":"boolean","field-id":509},
            {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
            {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
            {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]},"element-id":508}],"default":null,"field-id":507},
        {"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":519}V3
    ]}"#
    .replace("V3", v3)
}

fn opt_long(v: Option<i64>) -> Value {
    match v {
        Some(v) => Value::Union(1, Box::new(Value::Long(v))),
        None => Value::Union(0, Box::new(Value::Null)),
    }
}

fn map_value<T: Clone>(map: &BTreeMap<i32, T>, wrap: impl Fn(T) -> Value) -> Value {
    if map.is_empty() {
        return Value::Union(0, Box::new(Value::Null));
    }
    let items = map
        .iter()
        .map(|(k, v)| Value::Record(vec![("key".into(), Value::Int(*k)), ("value".into(), wrap(v.clone()))]))
        .collect();
    Value::Union(1, Box::new(Value::Array(items)))
}

fn null() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

fn opt_array<T>(values: Option<&[T]>, wrap: impl Fn(&T) -> Value) -> Value {
    match values {
        Some(values) => Value::Union(1, Box::new(Value::Array(values.iter().map(wrap).collect()))),
        None => null(),
    }
}

/// An Avro object container file built by hand around apache-avro's datum encoder, so that the
/// header carries the schema JSON exactly as written: apache-avro's own writer drops attributes such
/// as `"logicalType": "map"` on arrays, which Iceberg readers use to tell maps from lists.
struct AvroContainer {
    schema_json: String,
    schema: AvroSchema,
    what: &'static str,
    metadata: Vec<(String, Vec<u8>)>,
    rows: u64,
    block: Vec<u8>,
}

/// The file's sync marker; any 16 bytes serve, as long as they are the same throughout the file.
const SYNC: [u8; 16] = *b"HyperStreamSync!";

impl AvroContainer {
    fn new(schema_json: String, what: &'static str) -> Result<Self> {
        let schema = AvroSchema::parse_str(&schema_json).map_err(|e| Error::Internal(format!("{what} schema: {e}")))?;
        Ok(Self { schema_json, schema, what, metadata: Vec::new(), rows: 0, block: Vec::new() })
    }

    fn metadata(&mut self, key: &str, value: String) {
        self.metadata.push((key.to_owned(), value.into_bytes()));
    }

    fn append(&mut self, value: Value) -> Result<()> {
        let datum = GenericDatumWriter::builder(&self.schema)
            .build()
            .and_then(|writer| writer.write_value_to_vec(value))
            .map_err(|e| Error::Internal(format!("writing {}: {e}", self.what)))?;
        self.block.extend_from_slice(&datum);
        self.rows += 1;
        Ok(())
    }

    fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.block.len() + self.schema_json.len() + 256);
        out.extend_from_slice(b"Obj\x01");
        let mut entries = vec![
            ("avro.schema".to_owned(), self.schema_json.into_bytes()),
            ("avro.codec".to_owned(), b"null".to_vec()),
        ];
        entries.extend(self.metadata);
        put_long(&mut out, entries.len() as i64);
        for (key, value) in entries {
            put_bytes(&mut out, key.as_bytes());
            put_bytes(&mut out, &value);
        }
        put_long(&mut out, 0);
        out.extend_from_slice(&SYNC);
        if self.rows > 0 {
            put_long(&mut out, self.rows as i64);
            put_long(&mut out, self.block.len() as i64);
            out.extend_from_slice(&self.block);
            out.extend_from_slice(&SYNC);
        }
        out
    }
}

fn put_long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_long(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

/// Writes a manifest of `entries`; `schema_json` is the table schema and `spec_json` the partition
/// spec's fields array, both as the `schema` and `partition-spec` header keys want them; `partition`
/// the spec's fields with their value types.
#[allow(clippy::too_many_arguments)]
pub fn write_manifest(
    entries: &[ManifestEntry],
    schema_json: &str,
    schema_id: i32,
    spec_json: &str,
    spec_id: i32,
    partition: &[PartitionType],
    content: &str,
    format_version: u8,
) -> Result<Vec<u8>> {
    let mut container = AvroContainer::new(manifest_schema(partition, format_version)?, "manifest")?;
    for (key, value) in [
        ("schema", schema_json.to_owned()),
        ("schema-id", schema_id.to_string()),
        ("partition-spec", spec_json.to_owned()),
        ("partition-spec-id", spec_id.to_string()),
        ("format-version", format_version.max(2).to_string()),
        ("content", content.to_owned()),
    ] {
        container.metadata(key, value);
    }
    for entry in entries {
        let f = &entry.data_file;
        let mut fields = vec![
            ("content".into(), Value::Int(f.content)),
            ("file_path".into(), Value::String(f.file_path.clone())),
            ("file_format".into(), Value::String(f.file_format.clone())),
            (
                "partition".into(),
                Value::Record(
                    partition
                        .iter()
                        .map(|p| {
                            let value = match f.partition.get(&p.field_id) {
                                Some(bytes) => Value::Union(1, Box::new(avro_value(&p.data_type, bytes, &p.name)?)),
                                None => null(),
                            };
                            Ok((avro_name(&p.name), value))
                        })
                        .collect::<Result<Vec<_>>>()?,
                ),
            ),
            ("record_count".into(), Value::Long(f.record_count)),
            ("file_size_in_bytes".into(), Value::Long(f.file_size_in_bytes)),
            ("column_sizes".into(), map_value(&f.column_sizes, Value::Long)),
            ("value_counts".into(), map_value(&f.value_counts, Value::Long)),
            ("null_value_counts".into(), map_value(&f.null_value_counts, Value::Long)),
            ("nan_value_counts".into(), map_value(&f.nan_value_counts, Value::Long)),
            ("lower_bounds".into(), map_value(&f.lower_bounds, Value::Bytes)),
            ("upper_bounds".into(), map_value(&f.upper_bounds, Value::Bytes)),
            (
                "key_metadata".into(),
                match &f.key_metadata {
                    Some(bytes) => Value::Union(1, Box::new(Value::Bytes(bytes.clone()))),
                    None => null(),
                },
            ),
            ("split_offsets".into(), opt_array(f.split_offsets.as_deref(), |v| Value::Long(*v))),
            ("equality_ids".into(), opt_array(f.equality_ids.as_deref(), |v| Value::Int(*v))),
            (
                "sort_order_id".into(),
                match f.sort_order_id {
                    Some(id) => Value::Union(1, Box::new(Value::Int(id))),
                    None => null(),
                },
            ),
        ];
        if format_version >= 3 {
            fields.extend([
                ("first_row_id".into(), opt_long(f.first_row_id)),
                (
                    "referenced_data_file".into(),
                    match &f.referenced_data_file {
                        Some(path) => Value::Union(1, Box::new(Value::String(path.clone()))),
                        None => null(),
                    },
                ),
                ("content_offset".into(), opt_long(f.content_offset)),
                ("content_size_in_bytes".into(), opt_long(f.content_size_in_bytes)),
            ]);
        }
        let data_file = Value::Record(fields);
        let record = Value::Record(vec![
            ("status".into(), Value::Int(entry.status)),
            ("snapshot_id".into(), opt_long(entry.snapshot_id)),
            ("sequence_number".into(), opt_long(entry.sequence_number)),
            ("file_sequence_number".into(), opt_long(entry.file_sequence_number)),
            ("data_file".into(), data_file),
        ]);
        container.append(record)?;
    }
    Ok(container.finish())
}

/// Writes a manifest list.
pub fn write_manifest_list(
    manifests: &[ManifestFile],
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    first_row_id: Option<i64>,
) -> Result<Vec<u8>> {
    let format_version = if first_row_id.is_some() { 3 } else { 2 };
    let mut container = AvroContainer::new(manifest_list_schema(format_version), "manifest list")?;
    container.metadata("snapshot-id", snapshot_id.to_string());
    container.metadata("parent-snapshot-id", parent_snapshot_id.map_or_else(|| "null".to_owned(), |p| p.to_string()));
    container.metadata("sequence-number", sequence_number.to_string());
    if let Some(first) = first_row_id {
        container.metadata("first-row-id", first.to_string());
    }
    container.metadata("format-version", format_version.to_string());
    for m in manifests {
        let mut fields = vec![
            ("manifest_path".into(), Value::String(m.manifest_path.clone())),
            ("manifest_length".into(), Value::Long(m.manifest_length)),
            ("partition_spec_id".into(), Value::Int(m.partition_spec_id)),
            ("content".into(), Value::Int(m.content)),
            ("sequence_number".into(), Value::Long(m.sequence_number)),
            ("min_sequence_number".into(), Value::Long(m.min_sequence_number)),
            ("added_snapshot_id".into(), Value::Long(m.added_snapshot_id)),
            ("added_files_count".into(), Value::Int(m.added_files_count)),
            ("existing_files_count".into(), Value::Int(m.existing_files_count)),
            ("deleted_files_count".into(), Value::Int(m.deleted_files_count)),
            ("added_rows_count".into(), Value::Long(m.added_rows_count)),
            ("existing_rows_count".into(), Value::Long(m.existing_rows_count)),
            ("deleted_rows_count".into(), Value::Long(m.deleted_rows_count)),
            (
                "partitions".into(),
                match &m.partitions {
                    None => null(),
                    Some(fields) => Value::Union(1, Box::new(Value::Array(fields.iter().map(summary_value).collect()))),
                },
            ),
            ("key_metadata".into(), null()),
        ];
        if format_version >= 3 {
            fields.push(("first_row_id".into(), opt_long(m.first_row_id)));
        }
        container.append(Value::Record(fields))?;
    }
    Ok(container.finish())
}

fn summary_value(s: &FieldSummary) -> Value {
    let opt_bytes = |b: &Option<Vec<u8>>| match b {
        Some(b) => Value::Union(1, Box::new(Value::Bytes(b.clone()))),
        None => null(),
    };
    Value::Record(vec![
        ("contains_null".into(), Value::Boolean(s.contains_null)),
        (
            "contains_nan".into(),
            match s.contains_nan {
                Some(b) => Value::Union(1, Box::new(Value::Boolean(b))),
                None => null(),
            },
        ),
        ("lower_bound".into(), opt_bytes(&s.lower_bound)),
        ("upper_bound".into(), opt_bytes(&s.upper_bound)),
    ])
}

// ---- reading (ours and other writers': by field name, tolerant of extra fields) -----------------

fn corrupt(path: &str, what: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("{path}: {what}"))
}

fn fields(value: Value, path: &str) -> Result<BTreeMap<String, Value>> {
    match value {
        Value::Record(fields) => Ok(fields.into_iter().collect()),
        other => Err(corrupt(path, format!("expected a record, found {other:?}"))),
    }
}

fn unwrap_union(value: Value) -> Value {
    match value {
        Value::Union(_, inner) => *inner,
        other => other,
    }
}

fn take_long(map: &mut BTreeMap<String, Value>, key: &str, path: &str) -> Result<Option<i64>> {
    match map.remove(key).map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Long(v)) => Ok(Some(v)),
        Some(Value::Int(v)) => Ok(Some(i64::from(v))),
        Some(other) => Err(corrupt(path, format!("{key} is not a long: {other:?}"))),
    }
}

fn req_long(map: &mut BTreeMap<String, Value>, key: &str, path: &str) -> Result<i64> {
    take_long(map, key, path)?.ok_or_else(|| corrupt(path, format!("{key} is missing")))
}

fn req_int(map: &mut BTreeMap<String, Value>, key: &str, path: &str) -> Result<i32> {
    i32::try_from(req_long(map, key, path)?).map_err(|_| corrupt(path, format!("{key} is out of range")))
}

fn req_string(map: &mut BTreeMap<String, Value>, key: &str, path: &str) -> Result<String> {
    match map.remove(key).map(unwrap_union) {
        Some(Value::String(s)) => Ok(s),
        other => Err(corrupt(path, format!("{key} is not a string: {other:?}"))),
    }
}

fn take_array<T>(
    map: &mut BTreeMap<String, Value>,
    key: &str,
    path: &str,
    convert: impl Fn(Value) -> Option<T>,
) -> Result<Option<Vec<T>>> {
    match map.remove(key).map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| convert(v).ok_or_else(|| corrupt(path, format!("{key} holds a value of the wrong type"))))
            .collect::<Result<Vec<T>>>()
            .map(Some),
        Some(other) => Err(corrupt(path, format!("{key} is not an array: {other:?}"))),
    }
}

fn take_map<T>(
    map: &mut BTreeMap<String, Value>,
    key: &str,
    path: &str,
    convert: impl Fn(Value) -> Option<T>,
) -> Result<BTreeMap<i32, T>> {
    let mut out = BTreeMap::new();
    let items = match map.remove(key).map(unwrap_union) {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Array(items)) => items,
        Some(Value::Map(_)) => {
            return Err(corrupt(path, format!("{key} uses an Avro map, expected an array of pairs")))
        }
        Some(other) => return Err(corrupt(path, format!("{key} is not an array: {other:?}"))),
    };
    for item in items {
        let mut pair = fields(item, path)?;
        let k = req_int(&mut pair, "key", path)?;
        let v = pair.remove("value").map(unwrap_union).and_then(&convert);
        out.insert(k, v.ok_or_else(|| corrupt(path, format!("{key} has a bad value for field {k}")))?);
    }
    Ok(out)
}

/// Reads a manifest's entries; `path` names it in errors.
pub fn read_manifest(bytes: &[u8], path: &str) -> Result<Vec<ManifestEntry>> {
    let reader = Reader::new(bytes).map_err(|e| corrupt(path, e))?;
    let header = |key: &str| reader.user_metadata().get(key).map(|v| String::from_utf8_lossy(v).into_owned());
    let spec_id = header("partition-spec-id").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    // Partition values are named in the record; the header's spec gives each name its field id.
    let field_ids: BTreeMap<String, i32> = header("partition-spec")
        .and_then(|json| serde_json::from_str::<serde_json::Value>(&json).ok())
        .and_then(|spec| {
            let fields = spec.get("fields").cloned().unwrap_or(spec);
            Some(
                fields
                    .as_array()?
                    .iter()
                    .filter_map(|f| {
                        Some((avro_name(f.get("name")?.as_str()?), i32::try_from(f.get("field-id")?.as_i64()?).ok()?))
                    })
                    .collect(),
            )
        })
        .unwrap_or_default();
    let mut entries = Vec::new();
    for value in reader {
        let mut entry = fields(value.map_err(|e| corrupt(path, e))?, path)?;
        let mut file = fields(entry.remove("data_file").ok_or_else(|| corrupt(path, "data_file is missing"))?, path)?;
        let long = |v: Value| match v {
            Value::Long(l) => Some(l),
            Value::Int(i) => Some(i64::from(i)),
            _ => None,
        };
        let bytes_of = |v: Value| match v {
            Value::Bytes(b) | Value::Fixed(_, b) => Some(b),
            _ => None,
        };
        let mut partition = BTreeMap::new();
        if let Some(Value::Record(values)) = file.remove("partition").map(unwrap_union) {
            for (position, (name, value)) in values.into_iter().enumerate() {
                let id = field_ids.get(&name).copied().unwrap_or(1000 + position as i32);
                if let Some(bytes) = partition_bytes(value, path)? {
                    partition.insert(id, bytes);
                }
            }
        }
        let sort_order_id = take_long(&mut file, "sort_order_id", path)?.map(|v| v as i32);
        let referenced_data_file = match file.remove("referenced_data_file").map(unwrap_union) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => return Err(corrupt(path, format!("referenced_data_file is not a string: {other:?}"))),
        };
        entries.push(ManifestEntry {
            status: req_int(&mut entry, "status", path)?,
            snapshot_id: take_long(&mut entry, "snapshot_id", path)?,
            sequence_number: take_long(&mut entry, "sequence_number", path)?,
            file_sequence_number: take_long(&mut entry, "file_sequence_number", path)?,
            data_file: DataFile {
                content: take_long(&mut file, "content", path)?.unwrap_or(0) as i32,
                file_path: req_string(&mut file, "file_path", path)?,
                file_format: req_string(&mut file, "file_format", path)?,
                record_count: req_long(&mut file, "record_count", path)?,
                file_size_in_bytes: req_long(&mut file, "file_size_in_bytes", path)?,
                column_sizes: take_map(&mut file, "column_sizes", path, long)?,
                value_counts: take_map(&mut file, "value_counts", path, long)?,
                null_value_counts: take_map(&mut file, "null_value_counts", path, long)?,
                lower_bounds: take_map(&mut file, "lower_bounds", path, bytes_of)?,
                upper_bounds: take_map(&mut file, "upper_bounds", path, bytes_of)?,
                deletes: Vec::new(),
                spec_id,
                partition,
                sort_order_id,
                first_row_id: take_long(&mut file, "first_row_id", path)?,
                referenced_data_file,
                content_offset: take_long(&mut file, "content_offset", path)?,
                content_size_in_bytes: take_long(&mut file, "content_size_in_bytes", path)?,
                nan_value_counts: take_map(&mut file, "nan_value_counts", path, long)?,
                key_metadata: file.remove("key_metadata").map(unwrap_union).and_then(bytes_of),
                split_offsets: take_array(&mut file, "split_offsets", path, long)?,
                equality_ids: take_array(&mut file, "equality_ids", path, |v| {
                    long(v).and_then(|l| i32::try_from(l).ok())
                })?,
                sequence_number: None,
                row_groups: None,
            },
        });
    }
    Ok(entries)
}

/// Reads a manifest list; `path` names it in errors.
pub fn read_manifest_list(bytes: &[u8], path: &str) -> Result<Vec<ManifestFile>> {
    let reader = Reader::new(bytes).map_err(|e| corrupt(path, e))?;
    let mut files = Vec::new();
    for value in reader {
        let mut m = fields(value.map_err(|e| corrupt(path, e))?, path)?;
        let count = |m: &mut BTreeMap<String, Value>, new: &str, old: &str| -> Result<i32> {
            match req_int(m, new, path) {
                Ok(v) => Ok(v),
                Err(_) => req_int(m, old, path),
            }
        };
        let rows =
            |m: &mut BTreeMap<String, Value>, key: &str| -> Result<i64> { Ok(take_long(m, key, path)?.unwrap_or(0)) };
        let sequence_number = take_long(&mut m, "sequence_number", path)?.unwrap_or(0);
        files.push(ManifestFile {
            manifest_path: req_string(&mut m, "manifest_path", path)?,
            manifest_length: req_long(&mut m, "manifest_length", path)?,
            partition_spec_id: req_int(&mut m, "partition_spec_id", path)?,
            content: take_long(&mut m, "content", path)?.unwrap_or(0) as i32,
            sequence_number,
            min_sequence_number: take_long(&mut m, "min_sequence_number", path)?.unwrap_or(sequence_number),
            added_snapshot_id: req_long(&mut m, "added_snapshot_id", path)?,
            added_files_count: count(&mut m, "added_files_count", "added_data_files_count")?,
            existing_files_count: count(&mut m, "existing_files_count", "existing_data_files_count")?,
            deleted_files_count: count(&mut m, "deleted_files_count", "deleted_data_files_count")?,
            added_rows_count: rows(&mut m, "added_rows_count")?,
            existing_rows_count: rows(&mut m, "existing_rows_count")?,
            deleted_rows_count: rows(&mut m, "deleted_rows_count")?,
            partitions: summaries(m.remove("partitions"), path)?,
            first_row_id: take_long(&mut m, "first_row_id", path)?,
        });
    }
    Ok(files)
}

fn summaries(value: Option<Value>, path: &str) -> Result<Option<Vec<FieldSummary>>> {
    let items = match value.map(unwrap_union) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(corrupt(path, format!("partitions is not an array: {other:?}"))),
    };
    let bytes = |v: Option<Value>| match v.map(unwrap_union) {
        Some(Value::Bytes(b) | Value::Fixed(_, b)) => Some(b),
        _ => None,
    };
    items
        .into_iter()
        .map(|item| {
            let mut f = fields(item, path)?;
            Ok(FieldSummary {
                contains_null: matches!(f.remove("contains_null").map(unwrap_union), Some(Value::Boolean(true))),
                contains_nan: match f.remove("contains_nan").map(unwrap_union) {
                    Some(Value::Boolean(b)) => Some(b),
                    _ => None,
                },
                lower_bound: bytes(f.remove("lower_bound")),
                upper_bound: bytes(f.remove("upper_bound")),
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, rows: i64) -> ManifestEntry {
        ManifestEntry {
            status: STATUS_ADDED,
            snapshot_id: Some(42),
            sequence_number: None,
            file_sequence_number: None,
            data_file: DataFile {
                content: 0,
                file_path: path.to_owned(),
                file_format: "PARQUET".to_owned(),
                record_count: rows,
                file_size_in_bytes: 1234,
                column_sizes: BTreeMap::from([(1, 800)]),
                value_counts: BTreeMap::from([(1, rows), (2, rows)]),
                null_value_counts: BTreeMap::from([(1, 0), (2, 3)]),
                lower_bounds: BTreeMap::from([(1, 5i64.to_le_bytes().to_vec())]),
                upper_bounds: BTreeMap::from([(1, 99i64.to_le_bytes().to_vec())]),
                ..DataFile::default()
            },
        }
    }

    #[test]
    fn manifests_round_trip_and_carry_field_ids_and_header_keys() {
        let entries = vec![entry("/t/data/a.parquet", 10), entry("/t/data/b.parquet", 20)];
        let bytes = write_manifest(&entries, r#"{"type":"struct"}"#, 0, "[]", 0, &[], "data", 2).unwrap();
        assert_eq!(read_manifest(&bytes, "m.avro").unwrap(), entries);
        // Format version 3 carries row lineage and deletion vector fields.
        let mut v3 = entries.clone();
        v3[0].data_file.first_row_id = Some(77);
        v3[1].data_file = DataFile {
            content: 1,
            file_format: "PUFFIN".into(),
            referenced_data_file: Some("/t/data/a.parquet".into()),
            content_offset: Some(4),
            content_size_in_bytes: Some(40),
            ..v3[1].data_file.clone()
        };
        let bytes = write_manifest(&v3, r#"{"type":"struct"}"#, 0, "[]", 0, &[], "data", 3).unwrap();
        assert_eq!(read_manifest(&bytes, "m.avro").unwrap(), v3);
        assert_eq!(Reader::new(&bytes[..]).unwrap().user_metadata()["format-version"], b"3");
        let bytes = write_manifest(&entries, r#"{"type":"struct"}"#, 0, "[]", 0, &[], "data", 2).unwrap();
        let reader = Reader::new(&bytes[..]).unwrap();
        let meta = reader.user_metadata();
        assert_eq!(meta["partition-spec"], b"[]");
        assert_eq!(meta["format-version"], b"2");
        drop(reader);
        let header = String::from_utf8_lossy(&bytes[..bytes.len().min(8192)]).into_owned();
        let schema = header;
        for id in [
            r#""field-id":0"#,
            r#""field-id":134"#,
            r#""field-id":117"#,
            r#""element-id":133"#,
            r#""logicalType":"map""#,
        ] {
            assert!(schema.contains(id), "{id} missing from {schema}");
        }
    }

    #[test]
    fn manifest_lists_round_trip() {
        let m = ManifestFile {
            manifest_path: "/t/metadata/m0.avro".into(),
            manifest_length: 4096,
            partition_spec_id: 0,
            content: 0,
            sequence_number: 3,
            min_sequence_number: 1,
            added_snapshot_id: 42,
            added_files_count: 2,
            existing_files_count: 1,
            deleted_files_count: 0,
            added_rows_count: 30,
            existing_rows_count: 7,
            deleted_rows_count: 0,
            partitions: Some(vec![FieldSummary {
                contains_null: true,
                contains_nan: None,
                lower_bound: Some(vec![1, 0, 0, 0]),
                upper_bound: None,
            }]),
            first_row_id: None,
        };
        let bytes = write_manifest_list(std::slice::from_ref(&m), 42, Some(41), 3, None).unwrap();
        assert_eq!(read_manifest_list(&bytes, "snap.avro").unwrap(), vec![m.clone()]);
        let reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.user_metadata()["parent-snapshot-id"], b"41");
        assert_eq!(reader.user_metadata()["format-version"], b"2");
        let m = ManifestFile { first_row_id: Some(500), ..m };
        let bytes = write_manifest_list(std::slice::from_ref(&m), 42, Some(41), 3, Some(480)).unwrap();
        assert_eq!(read_manifest_list(&bytes, "snap.avro").unwrap(), vec![m]);
        let reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(
            (reader.user_metadata()["format-version"].as_slice(), reader.user_metadata()["first-row-id"].as_slice()),
            (&b"3"[..], &b"480"[..])
        );
    }

    #[test]
    fn partitioned_manifests_round_trip_every_value_type_and_null() {
        let types = [
            (DataType::Int32, 5i32.to_le_bytes().to_vec()),
            (DataType::Date32, 19_000i32.to_le_bytes().to_vec()),
            (DataType::Int64, (-7i64).to_le_bytes().to_vec()),
            (
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("+00:00".into())),
                1i64.to_le_bytes().to_vec(),
            ),
            (DataType::Utf8, b"caf\xc3\xa9".to_vec()),
            (DataType::Binary, vec![0, 255]),
            (DataType::Boolean, vec![1]),
            (DataType::Float64, 2.5f64.to_le_bytes().to_vec()),
        ];
        let partition: Vec<PartitionType> = types
            .iter()
            .enumerate()
            .map(|(i, (t, _))| PartitionType {
                field_id: 1000 + i as i32,
                name: format!("p-{i}"),
                data_type: t.clone(),
            })
            .collect();
        let spec_json = serde_json::to_string(
            &partition.iter().map(|p| serde_json::json!({"name": p.name, "field-id": p.field_id, "source-id": 1, "transform": "identity"})).collect::<Vec<_>>(),
        )
        .unwrap();
        let mut with_values = entry("/t/data/p=1/a.parquet", 10);
        with_values.data_file.spec_id = 3;
        with_values.data_file.sort_order_id = Some(1);
        with_values.data_file.partition =
            types.iter().enumerate().map(|(i, (_, b))| (1000 + i as i32, b.clone())).collect();
        let mut nulls = entry("/t/data/p=null/b.parquet", 20);
        nulls.data_file.spec_id = 3;
        let entries = vec![with_values, nulls];
        let bytes = write_manifest(&entries, r#"{"type":"struct"}"#, 0, &spec_json, 3, &partition, "data", 2).unwrap();
        assert_eq!(read_manifest(&bytes, "m.avro").unwrap(), entries);
        let mut bad = entry("/t/data/x.parquet", 1);
        bad.data_file.partition = BTreeMap::from([(1000, vec![1, 2])]);
        let err = write_manifest(&[bad], "{}", 0, &spec_json, 3, &partition, "data", 2).unwrap_err();
        assert!(err.to_string().contains("p-0"), "{err}");
    }

    #[test]
    fn garbage_is_reported_as_corrupt_with_the_path() {
        let err = read_manifest(b"not avro", "s3://b/t/metadata/m1.avro").unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)));
        assert!(err.to_string().contains("m1.avro"));
    }
}
