//! Iceberg's metadata tables of a table, with Iceberg's names and columns (`snapshots`, `history`,
//! `files`, `manifests`, `partitions`, `refs`, `properties`), and `indexes`, HyperStream's own:
//! the index files beside each data file and their sizes. Each is one Arrow batch, read from the
//! table's metadata, manifests and index files (no data file); the engines show them as
//! `"t$files"` (Trino) and `lake.db.t.files` (Spark). Where Iceberg has a map or a struct column
//! (a snapshot's `summary`, a file's `partition`), the column here is its text.

use arrow::array::{BooleanArray, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{Field, TimeUnit};

use super::*;

/// The metadata tables every table has, by name.
pub const METADATA_TABLES: [&str; 8] =
    ["snapshots", "history", "files", "manifests", "partitions", "refs", "properties", "indexes"];

/// The columns of metadata table `name` (an invalid argument naming the tables for another name).
pub fn metadata_table_schema(name: &str) -> Result<SchemaRef> {
    let timestamp = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let columns: Vec<(&str, DataType, bool)> = match name {
        "snapshots" => vec![
            ("committed_at", timestamp(), false),
            ("snapshot_id", DataType::Int64, false),
            ("parent_id", DataType::Int64, true),
            ("operation", DataType::Utf8, true),
            ("manifest_list", DataType::Utf8, false),
            ("summary", DataType::Utf8, false),
            ("sequence_number", DataType::Int64, false),
        ],
        "history" => vec![
            ("made_current_at", timestamp(), false),
            ("snapshot_id", DataType::Int64, false),
            ("parent_id", DataType::Int64, true),
            ("is_current_ancestor", DataType::Boolean, false),
        ],
        "files" => vec![
            ("content", DataType::Int32, false),
            ("file_path", DataType::Utf8, false),
            ("file_format", DataType::Utf8, false),
            ("spec_id", DataType::Int32, false),
            ("partition", DataType::Utf8, false),
            ("record_count", DataType::Int64, false),
            ("file_size_in_bytes", DataType::Int64, false),
            ("referenced_data_file", DataType::Utf8, true),
            ("content_offset", DataType::Int64, true),
            ("content_size_in_bytes", DataType::Int64, true),
        ],
        "manifests" => vec![
            ("content", DataType::Int32, false),
            ("path", DataType::Utf8, false),
            ("length", DataType::Int64, false),
            ("partition_spec_id", DataType::Int32, false),
            ("added_snapshot_id", DataType::Int64, false),
            ("added_data_files_count", DataType::Int32, false),
            ("existing_data_files_count", DataType::Int32, false),
            ("deleted_data_files_count", DataType::Int32, false),
            ("added_delete_files_count", DataType::Int32, false),
            ("existing_delete_files_count", DataType::Int32, false),
            ("deleted_delete_files_count", DataType::Int32, false),
        ],
        "partitions" => vec![
            ("partition", DataType::Utf8, false),
            ("spec_id", DataType::Int32, false),
            ("record_count", DataType::Int64, false),
            ("file_count", DataType::Int32, false),
            ("total_data_file_size_in_bytes", DataType::Int64, false),
            ("position_delete_record_count", DataType::Int64, false),
            ("position_delete_file_count", DataType::Int32, false),
        ],
        "refs" => vec![
            ("name", DataType::Utf8, false),
            ("type", DataType::Utf8, false),
            ("snapshot_id", DataType::Int64, false),
        ],
        "properties" => vec![("key", DataType::Utf8, false), ("value", DataType::Utf8, false)],
        "indexes" => vec![
            ("data_file", DataType::Utf8, false),
            ("column_name", DataType::Utf8, true),
            ("kind", DataType::Utf8, false),
            ("path", DataType::Utf8, false),
            ("size_in_bytes", DataType::Int64, false),
        ],
        _ => {
            return Err(Error::invalid(format!(
                "'{name}' is not a metadata table; there are {}",
                METADATA_TABLES.join(", ")
            )))
        }
    };
    Ok(Arc::new(ArrowSchema::new(
        columns.into_iter().map(|(n, t, nullable)| Field::new(n, t, nullable)).collect::<Vec<_>>(),
    )))
}

fn text<'a>(values: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

fn longs(values: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

fn ints(values: impl IntoIterator<Item = i32>) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(values))
}

fn times(values: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter_values(values.into_iter().map(|ms| ms * 1000)).with_timezone("UTC"))
}

impl Table {
    /// Metadata table `name` of the current snapshot (see [`METADATA_TABLES`]).
    pub fn metadata_table(&self, name: &str) -> Result<RecordBatch> {
        let schema = metadata_table_schema(name)?;
        let metadata = &self.metadata;
        let columns: Vec<ArrayRef> = match name {
            "snapshots" => {
                let s = &metadata.snapshots;
                let summaries: Vec<String> = s
                    .iter()
                    .map(|s| serde_json::to_string(&s.summary).map_err(|e| Error::Internal(e.to_string())))
                    .collect::<Result<_>>()?;
                vec![
                    times(s.iter().map(|s| s.timestamp_ms)),
                    longs(s.iter().map(|s| s.snapshot_id)),
                    Arc::new(s.iter().map(|s| s.parent_snapshot_id).collect::<Int64Array>()),
                    Arc::new(s.iter().map(|s| s.summary.get("operation").cloned()).collect::<StringArray>()),
                    text(s.iter().map(|s| s.manifest_list.as_str())),
                    text(summaries.iter().map(String::as_str)),
                    longs(s.iter().map(|s| s.sequence_number)),
                ]
            }
            "history" => {
                let log = &metadata.snapshot_log;
                let mut ancestors = std::collections::HashSet::new();
                let mut at = metadata.current_snapshot_id;
                while let Some(id) = at.filter(|id| ancestors.insert(*id)) {
                    at = metadata.snapshots.iter().find(|s| s.snapshot_id == id).and_then(|s| s.parent_snapshot_id);
                }
                let parent = |id: i64| metadata.snapshots.iter().find(|s| s.snapshot_id == id)?.parent_snapshot_id;
                vec![
                    times(log.iter().map(|e| e.timestamp_ms)),
                    longs(log.iter().map(|e| e.snapshot_id)),
                    Arc::new(log.iter().map(|e| parent(e.snapshot_id)).collect::<Int64Array>()),
                    Arc::new(log.iter().map(|e| Some(ancestors.contains(&e.snapshot_id))).collect::<BooleanArray>()),
                ]
            }
            "files" => {
                let data = self.data_files(metadata.current_snapshot())?;
                let deletes = delete_files_of(&data);
                let files: Vec<DataFile> = data.into_iter().chain(deletes).collect();
                let partitions: Vec<String> = files.iter().map(|f| self.partition_text(f)).collect::<Result<_>>()?;
                vec![
                    ints(files.iter().map(|f| f.content)),
                    text(files.iter().map(|f| f.file_path.as_str())),
                    text(files.iter().map(|f| f.file_format.as_str())),
                    ints(files.iter().map(|f| f.spec_id)),
                    text(partitions.iter().map(String::as_str)),
                    longs(files.iter().map(|f| f.record_count)),
                    longs(files.iter().map(|f| f.file_size_in_bytes)),
                    Arc::new(
                        files
                            .iter()
                            .map(|f| {
                                f.referenced_data_file
                                    .clone()
                                    .or_else(|| target(f).map(|t| String::from_utf8_lossy(t).into_owned()))
                            })
                            .collect::<StringArray>(),
                    ),
                    Arc::new(files.iter().map(|f| f.content_offset).collect::<Int64Array>()),
                    Arc::new(files.iter().map(|f| f.content_size_in_bytes).collect::<Int64Array>()),
                ]
            }
            "manifests" => {
                let manifests = match metadata.current_snapshot() {
                    Some(s) => self.manifests(s)?,
                    None => Vec::new(),
                };
                let count = |content: i32, pick: fn(&ManifestFile) -> i32| {
                    ints(manifests.iter().map(move |m| if m.content == content { pick(m) } else { 0 }))
                };
                vec![
                    ints(manifests.iter().map(|m| m.content)),
                    text(manifests.iter().map(|m| m.manifest_path.as_str())),
                    longs(manifests.iter().map(|m| m.manifest_length)),
                    ints(manifests.iter().map(|m| m.partition_spec_id)),
                    longs(manifests.iter().map(|m| m.added_snapshot_id)),
                    count(0, |m| m.added_files_count),
                    count(0, |m| m.existing_files_count),
                    count(0, |m| m.deleted_files_count),
                    count(1, |m| m.added_files_count),
                    count(1, |m| m.existing_files_count),
                    count(1, |m| m.deleted_files_count),
                ]
            }
            "partitions" => {
                // partition text -> (spec, rows, files, bytes, deleted rows, delete files)
                let mut groups: BTreeMap<(String, i32), (i64, i32, i64, i64, i32)> = BTreeMap::new();
                let data = self.data_files(metadata.current_snapshot())?;
                for file in &data {
                    let group = groups.entry((self.partition_text(file)?, file.spec_id)).or_default();
                    group.0 += file.record_count;
                    group.1 += 1;
                    group.2 += file.file_size_in_bytes;
                }
                for delete in delete_files_of(&data) {
                    let group = groups.entry((self.partition_text(&delete)?, delete.spec_id)).or_default();
                    group.3 += delete.record_count;
                    group.4 += 1;
                }
                vec![
                    text(groups.keys().map(|k| k.0.as_str())),
                    ints(groups.keys().map(|k| k.1)),
                    longs(groups.values().map(|g| g.0)),
                    ints(groups.values().map(|g| g.1)),
                    longs(groups.values().map(|g| g.2)),
                    longs(groups.values().map(|g| g.3)),
                    ints(groups.values().map(|g| g.4)),
                ]
            }
            "refs" => {
                let mut refs: BTreeMap<&str, (&str, i64)> =
                    metadata.refs.iter().map(|(n, r)| (n.as_str(), (r.ref_type.as_str(), r.snapshot_id))).collect();
                if let Some(current) = metadata.current_snapshot_id {
                    refs.entry("main").or_insert(("branch", current));
                }
                vec![
                    text(refs.keys().copied()),
                    text(refs.values().map(|r| r.0.to_uppercase()).collect::<Vec<_>>().iter().map(String::as_str)),
                    longs(refs.values().map(|r| r.1)),
                ]
            }
            "properties" => vec![
                text(metadata.properties.keys().map(String::as_str)),
                text(metadata.properties.values().map(String::as_str)),
            ],
            _ => {
                // "indexes": every index file beside a live data file, with its size.
                let schema = self.arrow_schema()?;
                let column_of = |id: i32| {
                    schema.fields().iter().find(|f| reader::field_id(f) == Some(id)).map(|f| f.name().clone())
                };
                let mut kinds: Vec<(i32, &str, fn(&str, i32) -> String)> = Vec::new();
                for id in self.vectors().into_keys() {
                    kinds.push((id, "vector sidecar", sidecar_path));
                    kinds.push((id, "hnsw graph", hnsw_path));
                }
                for id in self.scalar_indexes() {
                    kinds.push((id, "scalar index", crate::index::scalar_index_path));
                }
                kinds.sort_by_key(|k| (k.0, k.1));
                let mut rows: Vec<(String, Option<String>, &str, String, i64)> = Vec::new();
                for file in self.data_files(metadata.current_snapshot())? {
                    let data = self.storage.relative(&file.file_path)?;
                    let mut beside: Vec<(Option<String>, &str, String)> =
                        kinds.iter().map(|(id, kind, path)| (column_of(*id), *kind, path(data, *id))).collect();
                    beside.push((None, "ndv sketch", crate::index::ndv::ndv_path(data)));
                    for (column, kind, path) in beside {
                        if let Some(size) = self.storage.size(&path)? {
                            rows.push((file.file_path.clone(), column, kind, self.storage.uri(&path), size as i64));
                        }
                    }
                }
                vec![
                    text(rows.iter().map(|r| r.0.as_str())),
                    Arc::new(rows.iter().map(|r| r.1.clone()).collect::<StringArray>()),
                    text(rows.iter().map(|r| r.2)),
                    text(rows.iter().map(|r| r.3.as_str())),
                    longs(rows.iter().map(|r| r.4)),
                ]
            }
        };
        Ok(RecordBatch::try_new(schema, columns)?)
    }

    /// A file's partition as Iceberg shows a partition struct: `{name=value, ...}` (`{}` unpartitioned).
    fn partition_text(&self, file: &DataFile) -> Result<String> {
        let Some(spec) = self.metadata.partition_specs.iter().find(|s| s.spec_id == file.spec_id) else {
            return Ok("{}".to_owned());
        };
        let types = partition_types(spec, self.arrow_schema()?.as_ref())?;
        let values: Vec<String> = types
            .iter()
            .map(|t| {
                let value = match file.partition.get(&t.field_id) {
                    None => "null".to_owned(),
                    Some(bytes) => match crate::spec::bounds::bound(&t.data_type, bytes) {
                        Some(crate::spec::bounds::Key::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
                        Some(crate::spec::bounds::Key::Int(i)) => i.to_string(),
                        Some(crate::spec::bounds::Key::Float(f)) => f.to_string(),
                        Some(crate::spec::bounds::Key::Bool(b)) => b.to_string(),
                        None => format!("{bytes:?}"),
                    },
                };
                format!("{}={value}", t.name)
            })
            .collect();
        Ok(format!("{{{}}}", values.join(", ")))
    }
}
