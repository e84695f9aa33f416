//! Iceberg table metadata (`metadata/vN.metadata.json`), format version 2, or 3 with row lineage:
//! the snapshot history, schemas, partition specs and sort orders of a table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::Schema;
use crate::{Error, Result};

/// The metadata file's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableMetadata {
    pub format_version: u8,
    pub table_uuid: String,
    pub location: String,
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    pub schemas: Vec<Schema>,
    pub current_schema_id: i32,
    pub partition_specs: Vec<PartitionSpec>,
    pub default_spec_id: i32,
    pub last_partition_id: i32,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// `-1` (what Iceberg Java writes) or absent when the table has no snapshot.
    #[serde(default, deserialize_with = "snapshot_id_or_none", serialize_with = "snapshot_id_or_minus_one")]
    pub current_snapshot_id: Option<i64>,
    #[serde(default)]
    pub snapshots: Vec<Snapshot>,
    #[serde(default)]
    pub snapshot_log: Vec<SnapshotLogEntry>,
    #[serde(default)]
    pub metadata_log: Vec<MetadataLogEntry>,
    pub sort_orders: Vec<SortOrder>,
    pub default_sort_order_id: i32,
    #[serde(default)]
    pub refs: BTreeMap<String, SnapshotRef>,
    /// Kept as read; HyperStream never lists its sidecar indexes here (pyiceberg refuses unknown
    /// blob types).
    #[serde(default)]
    pub statistics: Vec<Value>,
    #[serde(default)]
    pub partition_statistics: Vec<Value>,
    /// Format version 3 (row lineage): the first row id the next snapshot's new rows get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
    /// Every field this library does not model (`encryption-keys`, a later format's fields, another
    /// writer's own), kept as read and written back unchanged by every commit.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

fn snapshot_id_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<i64>, D::Error> {
    Ok(Option::<i64>::deserialize(d)?.filter(|id| *id != -1))
}

fn snapshot_id_or_minus_one<S: serde::Serializer>(id: &Option<i64>, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_i64(id.unwrap_or(-1))
}

/// One committed version of the table's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Snapshot {
    pub snapshot_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    pub manifest_list: String,
    /// Always holds `operation` (`append`, `overwrite`, `delete`, `replace`).
    pub summary: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_id: Option<i32>,
    /// Format version 3 (row lineage): the first row id of the rows this snapshot added, and how
    /// many ids it took from the table's `next-row-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_rows: Option<i64>,
    /// Fields not modelled here (an encrypted manifest list's `key-id`, ...), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Snapshot {
    pub fn operation(&self) -> &str {
        self.summary.get("operation").map_or("", String::as_str)
    }
}

/// What a snapshot did to its parent's rows, as its summary's `operation` names it (the spec's four).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Only data files added.
    Append,
    /// Files rewritten without changing a row any read returns (compaction).
    Replace,
    /// Rows replaced: files removed and others added (an overwrite, a table replaced).
    Overwrite,
    /// Rows removed: data files removed or delete files added.
    Delete,
}

impl Operation {
    /// The summary's name of the operation.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Append => "append",
            Operation::Replace => "replace",
            Operation::Overwrite => "overwrite",
            Operation::Delete => "delete",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PartitionSpec {
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
    /// Fields this library does not model (a later format's, another writer's own), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PartitionField {
    pub source_id: i32,
    pub field_id: i32,
    pub name: String,
    pub transform: String,
    /// Fields this library does not model (a later format's, another writer's own), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SortOrder {
    pub order_id: i32,
    pub fields: Vec<SortField>,
    /// Fields this library does not model (a later format's, another writer's own), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SortField {
    pub transform: String,
    pub source_id: i32,
    pub direction: String,
    pub null_order: String,
    /// Fields this library does not model (a later format's, another writer's own), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotLogEntry {
    pub timestamp_ms: i64,
    pub snapshot_id: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MetadataLogEntry {
    pub timestamp_ms: i64,
    pub metadata_file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotRef {
    pub snapshot_id: i64,
    #[serde(rename = "type")]
    pub ref_type: String,
    /// A branch's retention: the fewest snapshots of it that expiry keeps, and the age past
    /// which its older snapshots may go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_snapshots_to_keep: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snapshot_age_ms: Option<i64>,
    /// The age past which the ref itself (not `main`) expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ref_age_ms: Option<i64>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl SnapshotRef {
    /// A branch at `snapshot_id` with no retention of its own.
    pub fn branch(snapshot_id: i64) -> Self {
        Self {
            snapshot_id,
            ref_type: "branch".to_owned(),
            min_snapshots_to_keep: None,
            max_snapshot_age_ms: None,
            max_ref_age_ms: None,
            other: BTreeMap::new(),
        }
    }

    pub fn is_branch(&self) -> bool {
        self.ref_type == "branch"
    }
}

impl TableMetadata {
    /// Metadata of a new, empty table: unpartitioned, unsorted, format version 2.
    pub fn new_table(
        location: &str,
        table_uuid: &str,
        schema: Schema,
        properties: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<Self> {
        let metadata = Self {
            format_version: 2,
            table_uuid: table_uuid.to_owned(),
            location: location.trim_end_matches('/').to_owned(),
            last_sequence_number: 0,
            last_updated_ms: now_ms,
            last_column_id: schema.highest_field_id(),
            current_schema_id: schema.schema_id,
            schemas: vec![schema],
            partition_specs: vec![PartitionSpec { spec_id: 0, fields: Vec::new(), other: BTreeMap::new() }],
            default_spec_id: 0,
            // Partition field ids start at 1000.
            last_partition_id: 999,
            properties,
            current_snapshot_id: None,
            snapshots: Vec::new(),
            snapshot_log: Vec::new(),
            metadata_log: Vec::new(),
            sort_orders: vec![SortOrder { order_id: 0, fields: Vec::new(), other: BTreeMap::new() }],
            default_sort_order_id: 0,
            refs: BTreeMap::new(),
            statistics: Vec::new(),
            partition_statistics: Vec::new(),
            next_row_id: None,
            other: BTreeMap::new(),
        };
        metadata.validate()?;
        Ok(metadata)
    }

    /// Parses and checks a metadata file; `path` names it in errors.
    pub fn from_json(bytes: &[u8], path: &str) -> Result<Self> {
        let metadata: TableMetadata = serde_json::from_slice(bytes)
            .map_err(|e| Error::Corrupt(format!("table metadata {path} is not valid: {e}")))?;
        metadata.validate().map_err(|e| Error::Corrupt(format!("table metadata {path}: {e}")))?;
        Ok(metadata)
    }

    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(|e| Error::Internal(format!("metadata serialization: {e}")))
    }

    fn validate(&self) -> Result<()> {
        if !(1..=3).contains(&self.format_version) {
            return Err(Error::invalid(format!("unsupported format version {}", self.format_version)));
        }
        if self.format_version >= 3 && self.next_row_id.is_none() {
            return Err(Error::invalid("format version 3 metadata has no next-row-id"));
        }
        self.current_schema()?;
        if !self.partition_specs.iter().any(|s| s.spec_id == self.default_spec_id) {
            return Err(Error::invalid(format!("default partition spec {} is missing", self.default_spec_id)));
        }
        if let Some(id) = self.current_snapshot_id {
            self.snapshot(id)?;
        }
        Ok(())
    }

    pub fn current_schema(&self) -> Result<&Schema> {
        self.schema(self.current_schema_id)
    }

    pub fn schema(&self, id: i32) -> Result<&Schema> {
        self.schemas
            .iter()
            .find(|s| s.schema_id == id)
            .ok_or_else(|| Error::NotFound(format!("schema {id} is not in the table metadata")))
    }

    pub fn snapshot(&self, id: i64) -> Result<&Snapshot> {
        self.snapshots
            .iter()
            .find(|s| s.snapshot_id == id)
            .ok_or_else(|| Error::NotFound(format!("snapshot {id} does not exist")))
    }

    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        self.current_snapshot_id.and_then(|id| self.snapshot(id).ok())
    }

    /// The snapshot that was current at `timestamp_ms` (time travel by timestamp).
    pub fn snapshot_as_of(&self, timestamp_ms: i64) -> Result<&Snapshot> {
        let entry = self
            .snapshot_log
            .iter()
            .filter(|e| e.timestamp_ms <= timestamp_ms)
            .max_by_key(|e| e.timestamp_ms)
            .ok_or_else(|| Error::NotFound(format!("the table has no snapshot at or before {timestamp_ms} ms")))?;
        self.snapshot(entry.snapshot_id)
    }

    /// Makes an existing snapshot current (of the `main` branch) as of `timestamp_ms` (a rollback).
    pub fn set_current_snapshot(&mut self, snapshot_id: i64, timestamp_ms: i64) {
        self.last_updated_ms = timestamp_ms;
        self.current_snapshot_id = Some(snapshot_id);
        self.snapshot_log.push(SnapshotLogEntry { timestamp_ms, snapshot_id });
        // The branch moves; its retention and anything else it carries stay.
        self.refs.entry("main".to_owned()).or_insert_with(|| SnapshotRef::branch(snapshot_id)).snapshot_id =
            snapshot_id;
    }

    /// Records `snapshot` as the new current snapshot (of the `main` branch).
    pub fn add_snapshot(&mut self, snapshot: Snapshot) {
        self.last_sequence_number = snapshot.sequence_number;
        self.set_current_snapshot(snapshot.snapshot_id, snapshot.timestamp_ms);
        self.snapshots.push(snapshot);
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{NestedField, Primitive, Type};
    use super::*;

    fn table() -> TableMetadata {
        let schema = Schema::new(
            0,
            vec![
                NestedField::new(1, "id", Type::Primitive(Primitive::Long), true),
                NestedField::new(2, "name", Type::Primitive(Primitive::String), false),
            ],
        )
        .unwrap();
        TableMetadata::new_table("/tmp/t/", "9c12d441-03fe-4693-9a96-a0705ddf69c1", schema, BTreeMap::new(), 1_000)
            .unwrap()
    }

    fn snapshot(id: i64, parent: Option<i64>, seq: i64, at: i64) -> Snapshot {
        Snapshot {
            snapshot_id: id,
            parent_snapshot_id: parent,
            sequence_number: seq,
            timestamp_ms: at,
            manifest_list: format!("/tmp/t/metadata/snap-{id}.avro"),
            summary: BTreeMap::from([("operation".to_owned(), "append".to_owned())]),
            schema_id: Some(0),
            first_row_id: None,
            added_rows: None,
            other: BTreeMap::new(),
        }
    }

    #[test]
    fn a_new_table_serializes_with_the_fields_readers_require() {
        let metadata = table();
        let json: Value = serde_json::from_slice(&metadata.to_json().unwrap()).unwrap();
        for key in [
            "format-version",
            "table-uuid",
            "location",
            "last-sequence-number",
            "last-updated-ms",
            "last-column-id",
            "schemas",
            "current-schema-id",
            "partition-specs",
            "default-spec-id",
            "last-partition-id",
            "sort-orders",
            "default-sort-order-id",
            "current-snapshot-id",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["location"], "/tmp/t");
        assert_eq!(json["current-snapshot-id"], -1);
        assert_eq!(json["last-column-id"], 2);
        assert_eq!(json["partition-specs"][0]["fields"], Value::Array(vec![]));
        assert_eq!(TableMetadata::from_json(&metadata.to_json().unwrap(), "v1").unwrap(), metadata);
    }

    #[test]
    fn snapshots_time_travel_by_id_and_timestamp() {
        let mut metadata = table();
        metadata.add_snapshot(snapshot(11, None, 1, 2_000));
        metadata.add_snapshot(snapshot(22, Some(11), 2, 3_000));
        assert_eq!(metadata.current_snapshot().unwrap().snapshot_id, 22);
        assert_eq!(metadata.snapshot_as_of(2_500).unwrap().snapshot_id, 11);
        assert_eq!(metadata.snapshot_as_of(3_000).unwrap().snapshot_id, 22);
        assert!(metadata.snapshot_as_of(1_999).is_err());
        assert!(matches!(metadata.snapshot(33), Err(Error::NotFound(_))));
        let round = TableMetadata::from_json(&metadata.to_json().unwrap(), "v3").unwrap();
        assert_eq!(round, metadata);
        assert_eq!(round.refs["main"].snapshot_id, 22);
    }

    #[test]
    fn corrupt_metadata_is_named_in_the_error() {
        let err =
            TableMetadata::from_json(b"{\"format-version\": 2", "s3://b/t/metadata/v7.metadata.json").unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)));
        assert!(err.to_string().contains("v7.metadata.json"), "{err}");
        let mut json: Value = serde_json::from_slice(&table().to_json().unwrap()).unwrap();
        json["current-snapshot-id"] = Value::from(5);
        let err = TableMetadata::from_json(json.to_string().as_bytes(), "v2.metadata.json").unwrap_err();
        assert!(err.to_string().contains("snapshot 5"), "{err}");
    }
}
