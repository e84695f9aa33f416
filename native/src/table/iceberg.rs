//! A HyperStream table: a genuine Iceberg V2 table (Parquet data files with field ids, Avro
//! manifests, `metadata/vN.metadata.json`, `metadata/version-hint.text`) under one location.
//!
//! Commits write every new file first, then create the next metadata file with a create-if-absent
//! put; a writer that loses the race reloads the winner's metadata and retries on top of it. A crash
//! at any point leaves the table at the previous or the next version.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::take_record_batch;
use arrow::compute::{cast, max, max_boolean, max_string, min, min_boolean, min_string};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int32Type, Int64Type, Schema as ArrowSchema, SchemaRef, TimeUnit,
    TimestampMicrosecondType,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::metadata::PageIndexPolicy;

use super::deletes::{is_deletion_vector, target, CONTENT_EQUALITY_DELETES, CONTENT_POSITION_DELETES};
use super::lineage;
use super::manifest::{
    read_manifest, read_manifest_list, write_manifest, write_manifest_list, DataFile, FieldSummary, ManifestEntry,
    ManifestFile, STATUS_ADDED, STATUS_DELETED, STATUS_EXISTING,
};
use super::metadata::{MetadataLogEntry, PartitionSpec, Snapshot, SortField, SortOrder, TableMetadata};
use super::partition::{
    describe_partition_field, describe_sort_field, parse_partitioning, parse_sort_order, partition_types, resolve,
    PartitionPruner,
};
use super::schema::{Schema, PARQUET_FIELD_ID};
use crate::runtime::{progress, warn};
use crate::scan::{filtered, prune_files, row_groups_may_match, BatchStream, Predicate};
use crate::storage::Storage;
use crate::vector::hnsw::{hnsw_path, HnswGraph, HnswParams};
use crate::vector::search::{search_batches, search_row_batches, with_distances, Hits, Prepared, VectorSearch};
use crate::vector::sidecar::{sidecar_path, Sidecar, SidecarBuilder};
use crate::vector::{FloatQuery, Neighbor};
use crate::{Error, Result};
use rayon::prelude::*;
use roaring::RoaringTreemap;

mod write;
pub use write::{TableWriter, DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE};

const VERSION_HINT: &str = "metadata/version-hint.text";
/// Table property: the most rows a Parquet row group of a new data file holds (the unit that footer
/// statistics prune), and its default.
pub const ROW_GROUP_ROWS: &str = "hyperstream.write.row-group-rows";
const DEFAULT_ROW_GROUP_ROWS: usize = 1024 * 1024;
/// Iceberg's table properties for Parquet bloom filters, per column by name:
/// `write.parquet.bloom-filter-enabled.column.<name>` = `true` writes one per row group of new data
/// files, at the false positive probability `write.parquet.bloom-filter-fpp.column.<name>` (default
/// 0.01, Iceberg's). Equality and IN filters skip the row groups whose bloom filter rules them out.
pub const BLOOM_ENABLED_PREFIX: &str = "write.parquet.bloom-filter-enabled.column.";
pub const BLOOM_FPP_PREFIX: &str = "write.parquet.bloom-filter-fpp.column.";
const DEFAULT_BLOOM_FPP: f64 = 0.01;

/// Iceberg's table properties of the data files' Parquet codec (zstd, as Iceberg's default) and its
/// level (zstd 1 to 22, 1 by default; gzip 0 to 9, 6 by default).
pub const COMPRESSION_CODEC: &str = "write.parquet.compression-codec";
pub const COMPRESSION_LEVEL: &str = "write.parquet.compression-level";

/// The Parquet compression table `properties` ask for.
fn compression(properties: &BTreeMap<String, String>) -> Result<Compression> {
    let level = match properties.get(COMPRESSION_LEVEL) {
        None => None,
        Some(v) => Some(v.trim().parse::<i32>().map_err(|_| {
            Error::invalid(format!("table property {COMPRESSION_LEVEL} must be an integer, got '{v}'"))
        })?),
    };
    let bad_level =
        |e: parquet::errors::ParquetError| Error::invalid(format!("table property {COMPRESSION_LEVEL}: {e}"));
    let codec = properties.get(COMPRESSION_CODEC).map_or("zstd", |v| v.trim());
    Ok(match codec.to_ascii_lowercase().as_str() {
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(level.unwrap_or(1)).map_err(bad_level)?),
        "snappy" => Compression::SNAPPY,
        "gzip" => Compression::GZIP(GzipLevel::try_new(level.unwrap_or(6).max(0) as u32).map_err(bad_level)?),
        "uncompressed" => Compression::UNCOMPRESSED,
        _ => {
            return Err(Error::invalid(format!(
                "table property {COMPRESSION_CODEC} must be zstd, snappy, gzip or uncompressed, got '{codec}'"
            )))
        }
    })
}

/// Whether `key` is one of Iceberg's write properties this table takes (`write.parquet.*`,
/// [`TARGET_FILE_SIZE`]): what engines pass through from a CREATE and an ALTER.
pub fn is_write_property(key: &str) -> bool {
    key.starts_with("write.parquet.") || key == TARGET_FILE_SIZE
}

/// Refuses a bloom filter probability outside (0, 1), and a codec or level that does not exist.
fn check_write_property(key: &str, value: &str) -> Result<()> {
    if key.starts_with(BLOOM_FPP_PREFIX) && value.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 1.0).is_none()
    {
        return Err(Error::invalid(format!(
            "table property {key} must be a probability between 0 and 1, got '{value}'"
        )));
    }
    if key == COMPRESSION_CODEC || key == COMPRESSION_LEVEL {
        compression(&BTreeMap::from([(key.to_owned(), value.to_owned())]))?;
    }
    if key == TARGET_FILE_SIZE {
        write::target_file_size(&BTreeMap::from([(key.to_owned(), value.to_owned())]))?;
    }
    Ok(())
}
/// Rows per Parquet data page at most.
const DATA_PAGE_ROWS: usize = 8 * 1024;
const COMMIT_ATTEMPTS: usize = 50;

/// Table property that records a vector column's dimension, by field id.
pub fn vector_property(field_id: i32) -> String {
    format!("hyperstream.vector.{field_id}.dimension")
}

/// The vector columns (field id → dimension) that table `properties` declare.
fn vectors_of(properties: &BTreeMap<String, String>) -> HashMap<i32, i32> {
    properties
        .iter()
        .filter_map(|(k, v)| {
            let id = k.strip_prefix("hyperstream.vector.")?.strip_suffix(".dimension")?.parse().ok()?;
            Some((id, v.parse().ok()?))
        })
        .collect()
}

/// Table property that declares a vector column's index, by field id (the JSON of [`HnswParams`]).
pub fn index_property(field_id: i32) -> String {
    format!("hyperstream.vector.{field_id}.index")
}

/// The table property, given at creation, that names the columns to give a scalar index
/// (comma-separated); it is stored as one [`scalar_index_property`] per column.
pub const INDEX_COLUMNS: &str = "hyperstream.index.columns";

/// Properties given at creation (never stored as such): the table's partitioning, as in
/// `category, bucket(id, 16), day(ts)` (identity, bucket, truncate, year, month, day, hour), and its
/// sort order, as in `id, ts DESC NULLS LAST`; they become the Iceberg partition spec and sort order.
pub const PARTITIONING: &str = "hyperstream.partitioning";
pub const SORTED_BY: &str = "hyperstream.sorted-by";

/// Iceberg's creation property for the table's format version: 2 (the default) or 3, which adds
/// row lineage (every row keeps an id, `_row_id`, across compaction) and writes deletes as deletion
/// vectors.
pub const FORMAT_VERSION: &str = "format-version";

/// The table property that declares a scalar index on field `field_id` (its value: `inverted`).
pub fn scalar_index_property(field_id: i32) -> String {
    format!("hyperstream.scalar.{field_id}.index")
}

/// An index search is left for exact search when the filter leaves fewer rows than this many
/// times ef (exact is then as cheap and has no misses) ...
const EXACT_BELOW_EF_TIMES: usize = 64;
/// ... or passes less than this share of the file's rows (a graph walk would wade through rows the
/// filter refuses).
const EXACT_BELOW_SHARE: f64 = 0.02;

/// An open table at one metadata version.
#[derive(Debug, Clone)]
pub struct Table {
    storage: Storage,
    metadata: TableMetadata,
    version: u64,
    /// The snapshot a time-travel handle was opened at ([`Table::load_at`]): reads see it as
    /// current, with its schema; nothing is written through such a handle.
    pinned: Option<i64>,
    /// HNSW graphs this handle (and its clones) built: what engines report as index build progress.
    index_builds: Arc<IndexBuilds>,
}

/// Counts of the HNSW graphs built through one table handle, as written and as declared.
#[derive(Debug, Default)]
pub struct IndexBuilds {
    files: std::sync::atomic::AtomicU64,
    vectors: std::sync::atomic::AtomicU64,
    nanos: std::sync::atomic::AtomicU64,
}

impl IndexBuilds {
    fn add(&self, vectors: usize, took: std::time::Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        self.files.fetch_add(1, Relaxed);
        self.vectors.fetch_add(vectors as u64, Relaxed);
        self.nanos.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// Graphs built so far: (data files, vectors in them, nanoseconds spent building).
    pub fn totals(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.files.load(Relaxed), self.vectors.load(Relaxed), self.nanos.load(Relaxed))
    }
}

/// Refuses a column named as a row lineage column in a format version 3 table, where reads give
/// those names to the lineage columns.
fn check_lineage_names(schema: &Schema, format_version: u8) -> Result<()> {
    match schema.fields.iter().find(|f| format_version >= 3 && lineage::is_lineage(&f.name)) {
        Some(f) => Err(Error::invalid(format!(
            "column name '{}' is reserved for row lineage in a format version 3 table",
            f.name
        ))),
        None => Ok(()),
    }
}

/// A table definition as CREATE TABLE declares it: the Iceberg schema (field ids from
/// `first_id + 1`), the properties to keep (vector dimensions and scalar indexes by field id, write
/// properties), the partition spec and sort order, and the format version asked for.
struct Definition {
    schema: Schema,
    properties: BTreeMap<String, String>,
    spec: Option<PartitionSpec>,
    order: Option<Vec<SortField>>,
    format_version: Option<u8>,
}

impl Definition {
    fn of(schema: &ArrowSchema, mut properties: BTreeMap<String, String>, first_id: i32) -> Result<Definition> {
        if let Some(v) = properties.get(ROW_GROUP_ROWS) {
            if v.parse::<usize>().ok().filter(|&n| n > 0).is_none() {
                return Err(Error::invalid(format!(
                    "table property {ROW_GROUP_ROWS} must be a positive number of rows, got '{v}'"
                )));
            }
        }
        for (key, value) in &properties {
            check_write_property(key, value)?;
        }
        let (iceberg, vectors) = Schema::from_arrow(schema)?;
        let iceberg = iceberg.shifted(first_id);
        for (id, dim) in vectors {
            properties.insert(vector_property(id + first_id), dim.to_string());
        }
        let with_ids = iceberg.to_arrow(&vectors_of(&properties))?;
        if let Some(names) = properties.remove(INDEX_COLUMNS) {
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let field = with_ids.field_with_name(name).map_err(|_| {
                    Error::NotFound(format!("{INDEX_COLUMNS}: column '{name}' is not in the table schema"))
                })?;
                if !crate::index::indexable(field.data_type()) {
                    return Err(Error::invalid(format!(
                        "{INDEX_COLUMNS}: column '{name}' of type {} cannot have a scalar index",
                        field.data_type()
                    )));
                }
                let id = field_id(field).ok_or_else(|| Error::Internal(format!("column '{name}' has no field id")))?;
                properties.insert(scalar_index_property(id), "inverted".to_owned());
            }
        }
        let spec = properties.remove(PARTITIONING).map(|text| parse_partitioning(&text, &with_ids)).transpose()?;
        let order = properties.remove(SORTED_BY).map(|text| parse_sort_order(&text, &with_ids)).transpose()?;
        let format_version = match properties.remove(FORMAT_VERSION).as_deref().map(str::trim) {
            None => None,
            Some("2") => Some(2),
            Some("3") => Some(3),
            Some(other) => {
                return Err(Error::invalid(format!("table property {FORMAT_VERSION} must be 2 or 3, got '{other}'")))
            }
        };
        check_lineage_names(&iceberg, format_version.unwrap_or(2))?;
        Ok(Definition { schema: iceberg, properties, spec, order, format_version })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn metadata_file(version: u64) -> String {
    format!("metadata/v{version}.metadata.json")
}

/// Puts a new metadata version at `path` if none is there; `Ok(false)` when another writer's is.
///
/// An object store can store a put and still fail to answer it (a 5xx, a dropped connection), and
/// its client retries: a retried conditional put then finds the version "already there", put there
/// by itself. What is at the path decides: our own bytes (which name a fresh snapshot id and time)
/// are our commit; other bytes are another writer's; nothing there after a failure is no commit (the
/// failure stands); and when reading it back fails, the outcome is unknown
/// ([`Error::CommitStateUnknown`]): whether the put failed or found a version there, that version
/// may be ours.
fn put_version(storage: &Storage, path: &str, bytes: Bytes) -> Result<bool> {
    let failed = match storage.put_if_absent(path, bytes.clone()) {
        Ok(true) => return Ok(true),
        Ok(false) => None,
        Err(e) => Some(e),
    };
    match storage.get(path) {
        Ok(found) => Ok(found == bytes),
        Err(Error::NotFound(_)) => match failed {
            Some(e) => Err(e),
            None => Ok(false), // answered "there" but gone since: a race with a drop; the caller retries
        },
        Err(unknown) => {
            let put = match failed {
                Some(e) => format!("failed ({e})"),
                None => "found a version there (perhaps its own, stored by a retry)".to_owned(),
            };
            Err(Error::CommitStateUnknown(format!(
                "the put of {} {put} and reading it back failed ({unknown}): reload the table to see whether the \
                 commit took effect, and keep the files it names",
                storage.uri(path)
            )))
        }
    }
}

/// The version `path` holds when it is a metadata version file (`metadata/v<N>.metadata.json`).
fn metadata_version(path: &str) -> Option<u64> {
    path.strip_prefix("metadata/v")?.strip_suffix(".metadata.json")?.parse().ok()
}

impl Table {
    /// Creates an empty table at `location` with the columns of `schema`; fails if a table is there.
    pub fn create(
        location: &str,
        schema: &ArrowSchema,
        properties: BTreeMap<String, String>,
        options: &HashMap<String, String>,
    ) -> Result<Self> {
        let storage = Storage::open(location, options)?;
        let definition = Definition::of(schema, properties, 0)?;
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut metadata =
            TableMetadata::new_table(storage.location(), &uuid, definition.schema, definition.properties, now_ms())?;
        if let Some(spec) = definition.spec.filter(|s| !s.fields.is_empty()) {
            metadata.last_partition_id =
                spec.fields.iter().map(|f| f.field_id).max().unwrap_or(metadata.last_partition_id);
            metadata.partition_specs = vec![spec];
        }
        if let Some(fields) = definition.order.filter(|o| !o.is_empty()) {
            metadata.sort_orders.push(SortOrder { order_id: 1, fields });
            metadata.default_sort_order_id = 1;
        }
        if definition.format_version == Some(3) {
            metadata.format_version = 3;
            metadata.next_row_id = Some(0);
        }
        if !put_version(&storage, &metadata_file(1), Bytes::from(metadata.to_json()?))? {
            return Err(Error::invalid(format!("a table already exists at {}", storage.location())));
        }
        storage.put(VERSION_HINT, Bytes::from_static(b"1"))?;
        Ok(Self { storage, metadata, version: 1, pinned: None, index_builds: Arc::default() })
    }

    /// Replaces the table's definition and rows in one snapshot (CREATE OR REPLACE TABLE): the
    /// columns of `schema` (with fresh field ids), the partitioning, sort order, indexes and write
    /// properties `properties` declare (as [`Table::create`] takes them, merged over the table's
    /// properties), and no rows. The snapshots before it stay for time travel, each read under its
    /// own schema. Returns the new snapshot's id.
    pub fn replace(&mut self, schema: &ArrowSchema, properties: BTreeMap<String, String>) -> Result<i64> {
        self.writable()?;
        Definition::of(schema, properties.clone(), 0)?; // refused before anything is written
        let redefine = |next: &mut TableMetadata| -> Result<()> {
            let definition = Definition::of(schema, properties.clone(), next.last_column_id)?;
            if definition.format_version.is_some_and(|v| v != next.format_version) {
                return Err(Error::invalid(format!(
                    "a replacement keeps the table's format version {}",
                    next.format_version
                )));
            }
            check_lineage_names(&definition.schema, next.format_version)?;
            let schema_id = next.schemas.iter().map(|s| s.schema_id).max().unwrap_or(0) + 1;
            next.last_column_id = next.last_column_id.max(definition.schema.highest_field_id());
            next.current_schema_id = schema_id;
            next.schemas.push(Schema { schema_id, ..definition.schema });
            next.properties.extend(definition.properties);
            // A new spec (its fields numbered past every partition field so far), unless an
            // unpartitioned one is wanted and there is one.
            let mut fields = definition.spec.map(|s| s.fields).unwrap_or_default();
            match next.partition_specs.iter().find(|s| fields.is_empty() && s.fields.is_empty()) {
                Some(unpartitioned) => next.default_spec_id = unpartitioned.spec_id,
                None => {
                    for field in &mut fields {
                        next.last_partition_id += 1;
                        field.field_id = next.last_partition_id;
                    }
                    let spec_id = next.partition_specs.iter().map(|s| s.spec_id).max().unwrap_or(0) + 1;
                    next.partition_specs.push(PartitionSpec { spec_id, fields });
                    next.default_spec_id = spec_id;
                }
            }
            next.default_sort_order_id = match definition.order.filter(|o| !o.is_empty()) {
                None => 0,
                Some(fields) => {
                    let order_id = next.sort_orders.iter().map(|o| o.order_id).max().unwrap_or(0) + 1;
                    next.sort_orders.push(SortOrder { order_id, fields });
                    order_id
                }
            };
            Ok(())
        };
        self.commit_snapshot_with("overwrite", Vec::new(), &redefine)
    }

    /// Opens the latest version of the table at `location`.
    pub fn load(location: &str, options: &HashMap<String, String>) -> Result<Self> {
        Self::load_from(Storage::open(location, options)?)
    }

    /// Opens the table as it was at snapshot `snapshot_id`, or at the one current at `as_of_ms`
    /// (time travel; the latest version when neither is given). Reads through it see that
    /// snapshot as current under the schema it was written with: a column added since is absent, a
    /// column dropped since is there, a renamed one has its old name. Nothing can be written
    /// through it.
    pub fn load_at(
        location: &str,
        options: &HashMap<String, String>,
        snapshot_id: Option<i64>,
        as_of_ms: Option<i64>,
    ) -> Result<Self> {
        let mut table = Self::load(location, options)?;
        if snapshot_id.is_none() && as_of_ms.is_none() {
            return Ok(table);
        }
        let snapshot = table.snapshot(snapshot_id, as_of_ms)?.expect("a requested snapshot exists or fails").clone();
        if let Some(schema_id) = snapshot.schema_id {
            table.metadata.schema(schema_id)?;
            table.metadata.current_schema_id = schema_id;
        }
        table.metadata.current_snapshot_id = Some(snapshot.snapshot_id);
        table.pinned = Some(snapshot.snapshot_id);
        Ok(table)
    }

    fn load_from(storage: Storage) -> Result<Self> {
        let version = latest_version(&storage)?;
        let path = metadata_file(version);
        let metadata = TableMetadata::from_json(&storage.get(&path)?, &storage.uri(&path))?;
        Ok(Self { storage, metadata, version, pinned: None, index_builds: Arc::default() })
    }

    /// Refuses a write through a handle opened at an earlier snapshot.
    fn writable(&self) -> Result<()> {
        match self.pinned {
            None => Ok(()),
            Some(id) => Err(Error::invalid(format!(
                "{} is open at snapshot {id} for reading (time travel); write through the table's current version",
                self.location()
            ))),
        }
    }

    /// Moves to the latest committed version (a handle opened at a snapshot stays there).
    pub fn refresh(&mut self) -> Result<()> {
        if self.pinned.is_none() {
            // The build counts belong to the handle, not to the version.
            let builds = self.index_builds.clone();
            *self = Self::load_from(self.storage.clone())?;
            self.index_builds = builds;
        }
        Ok(())
    }

    pub fn metadata(&self) -> &TableMetadata {
        &self.metadata
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn location(&self) -> &str {
        self.storage.location()
    }

    /// Vector columns' dimensions by field id.
    pub fn vectors(&self) -> HashMap<i32, i32> {
        vectors_of(&self.metadata.properties)
    }

    /// The field ids of the columns with a declared scalar index.
    pub fn scalar_indexes(&self) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .metadata
            .properties
            .keys()
            .filter_map(|k| k.strip_prefix("hyperstream.scalar.")?.strip_suffix(".index")?.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The columns of `schema` that the table's properties give a Parquet bloom filter, each with its
    /// false positive probability. A property naming a column not in the schema is ignored (Iceberg's
    /// writers do the same); a probability outside (0, 1) is an error.
    fn bloom_columns(&self, schema: &ArrowSchema) -> Result<Vec<(String, f64)>> {
        let mut out = Vec::new();
        for (key, value) in &self.metadata.properties {
            let Some(column) = key.strip_prefix(BLOOM_ENABLED_PREFIX) else {
                continue;
            };
            if !value.trim().eq_ignore_ascii_case("true") || schema.field_with_name(column).is_err() {
                continue;
            }
            let fpp = match self.metadata.properties.get(&format!("{BLOOM_FPP_PREFIX}{column}")) {
                None => DEFAULT_BLOOM_FPP,
                Some(v) => v.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 1.0).ok_or_else(|| {
                    Error::invalid(format!(
                        "table property {BLOOM_FPP_PREFIX}{column} must be a probability between 0 and 1, got '{v}'"
                    ))
                })?,
            };
            out.push((column.to_owned(), fpp));
        }
        Ok(out)
    }

    /// The table's partitioning in the words [`PARTITIONING`] takes (`bucket(id, 16)`), one field each.
    pub fn partitioning(&self) -> Result<Vec<String>> {
        let spec = self.metadata.partition_specs.iter().find(|s| s.spec_id == self.metadata.default_spec_id);
        let Some(spec) = spec else { return Ok(Vec::new()) };
        Ok(resolve(spec, self.arrow_schema()?.as_ref())?.iter().map(describe_partition_field).collect())
    }

    /// The table's sort order in the words [`SORTED_BY`] takes (`ts DESC NULLS LAST`), one field each.
    pub fn sort_order(&self) -> Result<Vec<String>> {
        let schema = self.arrow_schema()?;
        Ok(self
            .metadata
            .sort_orders
            .iter()
            .filter(|o| o.order_id == self.metadata.default_sort_order_id)
            .flat_map(|o| &o.fields)
            .filter_map(|f| describe_sort_field(f, &schema))
            .collect())
    }

    /// The names of the columns with a scalar index, in table order.
    pub fn scalar_index_columns(&self) -> Result<Vec<String>> {
        let ids = self.scalar_indexes();
        let schema = self.arrow_schema()?;
        Ok(schema
            .fields()
            .iter()
            .filter(|f| field_id(f).is_some_and(|id| ids.contains(&id)))
            .map(|f| f.name().clone())
            .collect())
    }

    /// A column's field id and Arrow field, for a scalar index.
    fn scalar_column(&self, column: &str) -> Result<(i32, arrow::datatypes::Field)> {
        let schema = self.arrow_schema()?;
        let field = schema
            .field_with_name(column)
            .map_err(|_| Error::NotFound(format!("column '{column}' is not in the table schema")))?;
        let id = field_id(field).ok_or_else(|| Error::Internal(format!("column '{column}' has no field id")))?;
        if !crate::index::indexable(field.data_type()) {
            return Err(Error::invalid(format!(
                "column '{column}' of type {} cannot have a scalar index",
                field.data_type()
            )));
        }
        Ok((id, field.clone()))
    }

    /// Declares a scalar index on a column and builds it for every live data file from the column's
    /// values (no data file is rewritten). Files written from then on (appends, compaction) are
    /// indexed as they are written; filtered scans use the index to read only the rows that may
    /// pass. Returns the number of files indexed.
    pub fn create_scalar_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, field) = self.scalar_column(column)?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            let mut builder = crate::index::ScalarIndexBuilder::new(&field)?;
            for batch in self.scan_files(
                vec![DataFile { deletes: Vec::new(), ..file.clone() }],
                Some(&[column.to_owned()]),
                64 * 1024,
            )? {
                builder.append(batch?.column(0).as_ref())?;
            }
            let path = crate::index::scalar_index_path(self.storage.relative(&file.file_path)?, id);
            self.storage.put(&path, Bytes::from(builder.finish()?))?;
        }
        self.commit_properties(&[(scalar_index_property(id), Some("inverted".to_owned()))])?;
        Ok(files.len())
    }

    /// Drops a column's scalar index: scans stop using it and the live files' index files are
    /// deleted. Returns the number of files whose index was deleted.
    pub fn drop_scalar_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, _) = self.scalar_column(column)?;
        if !self.metadata.properties.contains_key(&scalar_index_property(id)) {
            return Err(Error::NotFound(format!("column '{column}' has no scalar index")));
        }
        self.commit_properties(&[(scalar_index_property(id), None)])?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            self.storage.delete(&crate::index::scalar_index_path(self.storage.relative(&file.file_path)?, id))?;
        }
        Ok(files.len())
    }

    /// The files kept beside data file `path`: sidecars and graphs of vector columns, scalar indexes,
    /// distinct-value sketches.
    fn files_beside(&self, path: &str) -> Vec<String> {
        let mut beside = Vec::new();
        for id in self.vectors().into_keys() {
            beside.push(sidecar_path(path, id));
            beside.push(hnsw_path(path, id));
        }
        for id in self.scalar_indexes() {
            beside.push(crate::index::scalar_index_path(path, id));
        }
        beside.push(crate::index::ndv::ndv_path(path));
        beside
    }

    pub fn vector_indexes(&self) -> HashMap<i32, HnswParams> {
        self.metadata
            .properties
            .iter()
            .filter_map(|(k, v)| {
                let id: i32 = k.strip_prefix("hyperstream.vector.")?.strip_suffix(".index")?.parse().ok()?;
                match HnswParams::from_json(v) {
                    Ok(params) => Some((id, params)),
                    Err(e) => {
                        warn(&format!("table {}: ignoring the index of field {id}: {e}", self.location()));
                        None
                    }
                }
            })
            .collect()
    }

    /// The field id and dimension of a float vector column.
    pub fn vector_column(&self, column: &str) -> Result<(i32, usize)> {
        let schema = self.arrow_schema()?;
        let field = schema
            .field_with_name(column)
            .map_err(|_| Error::NotFound(format!("vector column '{column}' is not in the table schema")))?;
        match (field.data_type(), field_id(field)) {
            (DataType::FixedSizeList(item, n), Some(id)) if item.data_type() == &DataType::Float32 => {
                Ok((id, *n as usize))
            }
            (other, _) => Err(Error::invalid(format!("column '{column}' is {other}, not a float vector column"))),
        }
    }

    /// Declares an HNSW index on a vector column and builds it for every live data file from its
    /// vector sidecar (no data file is rewritten; a missing or damaged sidecar is rebuilt from the
    /// Parquet column first). Files appended from then on are indexed as they are written. Returns
    /// the number of files indexed.
    pub fn create_vector_index(&mut self, column: &str, params: HnswParams) -> Result<usize> {
        self.writable()?;
        let params = params.validate()?;
        let (id, dimension) = self.vector_column(column)?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for (done, file) in files.iter().enumerate() {
            let started = std::time::Instant::now();
            self.index_file(file, column, id, dimension, params)?;
            progress(&format!(
                "HNSW index on {}.{column}: file {} of {} ({} rows) built in {:.2} s",
                self.location(),
                done + 1,
                files.len(),
                file.record_count,
                started.elapsed().as_secs_f64()
            ));
        }
        self.commit_properties(&[(index_property(id), Some(params.to_json()))])?;
        Ok(files.len())
    }

    /// Drops a vector column's index: searches are exact again, and the live files' graphs are
    /// deleted. Returns the number of files whose graph was deleted.
    pub fn drop_vector_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, _) = self.vector_column(column)?;
        if !self.metadata.properties.contains_key(&index_property(id)) {
            return Err(Error::NotFound(format!("column '{column}' has no vector index")));
        }
        self.commit_properties(&[(index_property(id), None)])?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            self.storage.delete(&hnsw_path(self.storage.relative(&file.file_path)?, id))?;
        }
        Ok(files.len())
    }

    /// The stored HNSW graph of the vectors in a sidecar's bytes, counted in [`Table::index_builds`].
    fn graph_of(&self, sidecar: &[u8], rows: usize, dimension: usize, params: HnswParams, name: &str) -> Result<Bytes> {
        let started = std::time::Instant::now();
        let sidecar = Sidecar::parse(sidecar, rows, dimension, name)?;
        let graph = HnswGraph::build(sidecar.vectors(), dimension, &sidecar.validity, params)?.to_bytes();
        self.index_builds.add(sidecar.validity.count_set_bits(), started.elapsed());
        Ok(graph)
    }

    /// The HNSW graphs built through this handle so far (by writes and by declaring indexes).
    pub fn index_builds(&self) -> &IndexBuilds {
        &self.index_builds
    }

    /// Builds and stores the graph of one data file's vector column.
    fn index_file(&self, file: &DataFile, column: &str, id: i32, dimension: usize, params: HnswParams) -> Result<()> {
        let path = self.storage.relative(&file.file_path)?.to_owned();
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let side = sidecar_path(&path, id);
        let stored = match self.storage.map(&side, false) {
            Ok(region) if Sidecar::parse(&region, rows, dimension, &side).is_ok() => Some(region),
            _ => None,
        };
        let region = match stored {
            Some(region) => region,
            None => {
                let mut builder = SidecarBuilder::new(id, dimension);
                for batch in self.scan_files(vec![file.clone()], Some(&[column.to_owned()]), 64 * 1024)? {
                    builder.append(batch?.column(0).as_ref())?;
                }
                let bytes = builder.finish();
                self.storage.put(&side, bytes.clone())?;
                bytes
            }
        };
        let graph = self.graph_of(&region, rows, dimension, params, &self.storage.uri(&side))?;
        self.storage.put(&hnsw_path(&path, id), graph)
    }

    /// The current schema as Arrow (field ids in `PARQUET:field_id`, vectors as fixed-size lists).
    pub fn arrow_schema(&self) -> Result<SchemaRef> {
        Ok(Arc::new(self.metadata.current_schema()?.to_arrow(&self.vectors())?))
    }

    /// The columns a read can name: the table's and, in a format version 3 table, the row lineage
    /// columns `_row_id` and `_last_updated_sequence_number` after them (read only when named).
    pub fn read_schema(&self) -> Result<SchemaRef> {
        let table = self.arrow_schema()?;
        if self.metadata.format_version < 3 {
            return Ok(table);
        }
        let mut fields: Vec<arrow::datatypes::Field> = table.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(lineage::fields());
        Ok(Arc::new(ArrowSchema::new_with_metadata(fields, table.metadata().clone())))
    }

    /// Commits written data files as one append snapshot; returns its id.
    pub fn commit_append(&mut self, files: Vec<DataFile>) -> Result<i64> {
        if files.is_empty() {
            return Err(Error::invalid("nothing to commit: no data files"));
        }
        for file in &files {
            self.storage.relative(&file.file_path).map_err(|_| {
                Error::invalid(format!("data file {} lies outside the table root {}", file.file_path, self.location()))
            })?;
        }
        self.commit_snapshot("append", files)
    }

    /// Removes the files under `data/` and `metadata/` that no version of the table references (what
    /// killed or aborted writers left) and that last changed before `older_than_ms`, which must be at
    /// least a day ago ([`limits::MIN_ORPHAN_AGE_MS`](crate::limits::MIN_ORPHAN_AGE_MS)): a writer
    /// that has written its files but not committed them yet keeps them. Returns their paths.
    /// Referenced are every metadata version up to the current one (and any newer one a writer
    /// committed meanwhile) and the version hint, and, for every snapshot, its manifest list, its
    /// manifests and their data files with the files kept beside them (vector sidecars, graphs);
    /// staged files a killed writer left (`<name>#<n>`) go too.
    pub fn remove_orphan_files(&mut self, older_than_ms: i64) -> Result<Vec<String>> {
        let cutoff = crate::limits::orphan_cutoff(older_than_ms, now_ms())?;
        self.remove_orphan_files_unchecked(cutoff)
    }

    /// [`Table::remove_orphan_files`] without the minimum age: only for a caller that knows no writer
    /// is running on the table (a test after its writer was killed, an operator with the table
    /// offline), as Iceberg's action API allows what its procedures refuse.
    pub fn remove_orphan_files_unchecked(&mut self, older_than_ms: i64) -> Result<Vec<String>> {
        self.writable()?;
        self.refresh()?;
        let mut referenced = self.files_of(&self.metadata.snapshots)?;
        referenced.extend((1..=self.version).map(metadata_file));
        referenced.insert(VERSION_HINT.to_owned());
        let stems: std::collections::HashSet<&str> =
            referenced.iter().filter_map(|p| p.strip_suffix(".parquet")).collect();
        // A sidecar or graph is `<data file stem>.<field id>.<kind>`.
        let beside_a_data_file = |path: &str| path.rsplitn(3, '.').nth(2).is_some_and(|stem| stems.contains(stem));
        // A version committed after the refresh above is another writer's newest: never an orphan.
        let newer_version = |path: &str| metadata_version(path).is_some_and(|v| v > self.version);
        let mut removed = Vec::new();
        for prefix in ["data", "metadata"] {
            for (path, modified_ms) in self.storage.list_modified(prefix)? {
                if modified_ms < older_than_ms
                    && !referenced.contains(&path)
                    && !beside_a_data_file(&path)
                    && !newer_version(&path)
                {
                    self.storage.delete(&path)?;
                    removed.push(path);
                }
            }
            for (path, modified_ms) in self.storage.list_staged(prefix)? {
                if modified_ms < older_than_ms {
                    self.storage.delete_staged(&path)?;
                    removed.push(path);
                }
            }
        }
        removed.sort();
        Ok(removed)
    }

    /// The files `snapshots` reference, relative to the table: their manifest lists, manifests and
    /// live data files (an entry marking a file deleted does not keep it: the snapshot before, while
    /// it exists, lists the file live).
    fn files_of(&self, snapshots: &[Snapshot]) -> Result<std::collections::HashSet<String>> {
        let mut referenced = std::collections::HashSet::new();
        for snapshot in snapshots {
            let list_path = self.storage.relative(&snapshot.manifest_list)?.to_owned();
            for manifest in read_manifest_list(&self.storage.get(&list_path)?, &snapshot.manifest_list)? {
                let manifest_path = self.storage.relative(&manifest.manifest_path)?.to_owned();
                if referenced.contains(&manifest_path) {
                    continue; // manifests carry over from snapshot to snapshot
                }
                for entry in read_manifest(&self.storage.get(&manifest_path)?, &manifest.manifest_path)? {
                    if entry.status != STATUS_DELETED {
                        referenced.insert(self.storage.relative(&entry.data_file.file_path)?.to_owned());
                    }
                }
                referenced.insert(manifest_path);
            }
            referenced.insert(list_path);
        }
        Ok(referenced)
    }

    /// Expires the snapshots older than `older_than_ms`, keeping at least the last `retain_last`
    /// (one at the least) and every snapshot a branch or tag points at, in a new metadata version;
    /// then deletes the files only the expired snapshots referenced (data files with their sidecars
    /// and graphs, manifests, manifest lists). Time travel to an expired snapshot fails afterwards.
    /// Returns the expired snapshots' ids.
    pub fn expire_snapshots(&mut self, older_than_ms: i64, retain_last: usize) -> Result<Vec<i64>> {
        self.writable()?;
        for _ in 0..COMMIT_ATTEMPTS {
            self.refresh()?;
            let mut newest: Vec<&Snapshot> = self.metadata.snapshots.iter().collect();
            newest.sort_by_key(|s| std::cmp::Reverse(s.sequence_number));
            let mut keep: std::collections::HashSet<i64> =
                newest.iter().take(retain_last.max(1)).map(|s| s.snapshot_id).collect();
            keep.extend(self.metadata.current_snapshot_id);
            keep.extend(self.metadata.refs.values().map(|r| r.snapshot_id));
            keep.extend(
                self.metadata.snapshots.iter().filter(|s| s.timestamp_ms >= older_than_ms).map(|s| s.snapshot_id),
            );
            let (kept, expired): (Vec<Snapshot>, Vec<Snapshot>) =
                self.metadata.snapshots.iter().cloned().partition(|s| keep.contains(&s.snapshot_id));
            if expired.is_empty() {
                return Ok(Vec::new());
            }
            let mut next = self.metadata.clone();
            next.snapshots = kept;
            next.snapshot_log.retain(|e| keep.contains(&e.snapshot_id));
            next.metadata_log.push(MetadataLogEntry {
                timestamp_ms: self.metadata.last_updated_ms,
                metadata_file: self.storage.uri(&metadata_file(self.version)),
            });
            next.last_updated_ms = now_ms().max(self.metadata.last_updated_ms + 1);
            let before = self.files_of(&self.metadata.snapshots)?;
            if !self.try_commit(next)? {
                continue;
            }
            let after = self.files_of(&self.metadata.snapshots)?;
            for path in before.difference(&after) {
                self.storage.delete(path)?;
                for beside in self.files_beside(path) {
                    self.storage.delete(&beside)?;
                }
            }
            return Ok(expired.iter().map(|s| s.snapshot_id).collect());
        }
        Err(Error::CommitConflict(format!(
            "gave up expiring snapshots of {} after {COMMIT_ATTEMPTS} lost races",
            self.storage.location()
        )))
    }

    /// Deletes uncommitted data files (an aborted write's).
    pub fn delete_files(&self, files: &[DataFile]) -> Result<()> {
        self.writable()?;
        for file in files {
            let path = self.storage.relative(&file.file_path)?;
            self.storage.delete(path)?;
            for beside in self.files_beside(path) {
                self.storage.delete(&beside)?;
            }
        }
        Ok(())
    }

    /// Creates the next metadata version as `next` unless another writer created it first (false).
    fn try_commit(&mut self, next: TableMetadata) -> Result<bool> {
        self.writable()?;
        let placed = put_version(&self.storage, &metadata_file(self.version + 1), Bytes::from(next.to_json()?))?;
        if !placed {
            return Ok(false);
        }
        self.metadata = next;
        self.version += 1;
        // The hint only speeds up loading; readers probe past a stale one.
        let _ = self.storage.put(VERSION_HINT, Bytes::from(self.version.to_string()));
        Ok(true)
    }

    /// Sets (Some) or removes (None) Iceberg's write properties ([`is_write_property`]: bloom filter
    /// columns, the Parquet codec, the target file size) as one commit; they apply to the files
    /// written after. Other keys are refused: the table's own settings change through their own calls.
    pub fn set_write_properties(&mut self, changes: &[(String, Option<String>)]) -> Result<()> {
        self.writable()?;
        for (key, value) in changes {
            if !is_write_property(key) {
                return Err(Error::invalid(format!(
                    "table property '{key}' cannot be changed here: only write.parquet.* and {TARGET_FILE_SIZE}"
                )));
            }
            if let Some(value) = value {
                check_write_property(key, value)?;
            }
        }
        self.commit_properties(changes)
    }

    fn commit_properties(&mut self, changes: &[(String, Option<String>)]) -> Result<()> {
        self.commit_metadata(|next| {
            set_properties(next, changes);
            Ok(())
        })
    }

    /// Commits the metadata `change` makes of the current version's, retried on top of the
    /// winner's when another writer commits first (`change` sees the latest metadata each time).
    fn commit_metadata(&mut self, change: impl Fn(&mut TableMetadata) -> Result<()>) -> Result<()> {
        for attempt in 0..COMMIT_ATTEMPTS {
            let mut next = self.metadata.clone();
            change(&mut next)?;
            next.metadata_log.push(MetadataLogEntry {
                timestamp_ms: self.metadata.last_updated_ms,
                metadata_file: self.storage.uri(&metadata_file(self.version)),
            });
            next.last_updated_ms = now_ms().max(self.metadata.last_updated_ms + 1);
            if self.try_commit(next)? {
                return Ok(());
            }
            self.refresh()?;
            backoff(attempt);
        }
        Err(Error::CommitConflict(format!(
            "gave up committing to {} after {COMMIT_ATTEMPTS} lost races",
            self.storage.location()
        )))
    }

    /// Commits `schema` as the current schema (a new schema id), with table property `changes`.
    fn commit_schema(
        &mut self,
        evolve: impl Fn(&Schema, i32, &TableMetadata) -> Result<(Schema, i32, Vec<(String, Option<String>)>)>,
    ) -> Result<()> {
        self.commit_metadata(|next| {
            let schema_id = next.schemas.iter().map(|s| s.schema_id).max().unwrap_or(0) + 1;
            let (schema, last_column_id, changes) = evolve(next.current_schema()?, schema_id, next)?;
            check_lineage_names(&schema, next.format_version)?;
            set_properties(next, &changes);
            next.last_column_id = next.last_column_id.max(last_column_id);
            next.current_schema_id = schema.schema_id;
            next.schemas.push(schema);
            Ok(())
        })
    }

    /// Schema evolution: adds `field` as the last column. It must be nullable: the rows written
    /// before read it as null (no data file is rewritten). A `fixed_size_list<float>` field is a
    /// vector column.
    pub fn add_column(&mut self, field: &arrow::datatypes::Field) -> Result<()> {
        if !field.is_nullable() {
            return Err(Error::invalid(format!(
                "new column '{}' must be nullable: the rows already written have no value for it",
                field.name()
            )));
        }
        self.commit_schema(|current, schema_id, metadata| {
            let id = metadata.last_column_id + 1;
            let (schema, last) = current.with_column(schema_id, field, id)?;
            let mut changes = Vec::new();
            if let DataType::FixedSizeList(item, dimension) = field.data_type() {
                if item.data_type() == &DataType::Float32 {
                    changes.push((vector_property(id), Some(dimension.to_string())));
                }
            }
            Ok((schema, last, changes))
        })
    }

    /// Schema evolution: drops a column (its data stays in the files written so far, unread; its
    /// vector index goes with it). The last column, and a row identifier, cannot be dropped.
    pub fn drop_column(&mut self, name: &str) -> Result<()> {
        self.commit_schema(|current, schema_id, metadata| {
            let field = current.field(name)?;
            if current.fields.len() == 1 {
                return Err(Error::invalid(format!("cannot drop '{name}': it is the table's only column")));
            }
            if current.identifier_field_ids.contains(&field.id) {
                return Err(Error::invalid(format!("cannot drop '{name}': it identifies rows")));
            }
            if metadata.partition_specs.iter().flat_map(|s| &s.fields).any(|f| f.source_id == field.id) {
                return Err(Error::invalid(format!("cannot drop '{name}': the table is partitioned by it")));
            }
            if metadata
                .sort_orders
                .iter()
                .filter(|o| o.order_id == metadata.default_sort_order_id)
                .flat_map(|o| &o.fields)
                .any(|f| f.source_id == field.id)
            {
                return Err(Error::invalid(format!("cannot drop '{name}': the table is sorted by it")));
            }
            let fields = current.fields.iter().filter(|f| f.name != name).cloned().collect();
            let schema = Schema { schema_id, fields, identifier_field_ids: current.identifier_field_ids.clone() };
            // A vector column's dimension stays declared (field ids are never reused): time travel
            // to a snapshot from before the drop reads the column as the vector it was.
            Ok((
                schema,
                metadata.last_column_id,
                vec![(index_property(field.id), None), (scalar_index_property(field.id), None)],
            ))
        })
    }

    /// Schema evolution: renames a column (by field id, so every data file keeps answering for it).
    pub fn rename_column(&mut self, name: &str, new_name: &str) -> Result<()> {
        if new_name.is_empty() {
            return Err(Error::invalid("a column name cannot be empty"));
        }
        self.commit_schema(|current, schema_id, metadata| {
            current.field(name)?;
            if current.fields.iter().any(|f| f.name == new_name) {
                return Err(Error::invalid(format!("cannot rename '{name}' to '{new_name}': that column exists")));
            }
            let fields = current
                .fields
                .iter()
                .map(|f| {
                    if f.name == name {
                        super::schema::NestedField { name: new_name.to_owned(), ..f.clone() }
                    } else {
                        f.clone()
                    }
                })
                .collect();
            Ok((
                Schema { schema_id, fields, identifier_field_ids: current.identifier_field_ids.clone() },
                metadata.last_column_id,
                Vec::new(),
            ))
        })
    }

    /// Commits written data files as one snapshot that replaces every row of the table (Spark's
    /// overwrite, Trino's TRUNCATE when there are none): the files live until now are marked
    /// deleted in it, so older snapshots keep them for time travel. Returns the snapshot id.
    pub fn commit_overwrite(&mut self, files: Vec<DataFile>) -> Result<i64> {
        for file in &files {
            self.storage.relative(&file.file_path).map_err(|_| {
                Error::invalid(format!("data file {} lies outside the table root {}", file.file_path, self.location()))
            })?;
        }
        self.commit_snapshot("overwrite", files)
    }

    /// Writes manifests of `entries` (`content`: 0 data files, 1 delete files), one per partition
    /// spec they were written under, and returns their entries for a manifest list.
    fn put_manifests(
        &self,
        entries: &[ManifestEntry],
        content: i32,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<Vec<ManifestFile>> {
        let mut by_spec: BTreeMap<i32, Vec<ManifestEntry>> = BTreeMap::new();
        for entry in entries {
            by_spec.entry(entry.data_file.spec_id).or_default().push(entry.clone());
        }
        by_spec
            .into_iter()
            .map(|(spec_id, entries)| self.put_manifest(&entries, spec_id, content, snapshot_id, sequence_number))
            .collect()
    }

    /// Writes one manifest of `entries`, all of partition spec `spec_id`.
    fn put_manifest(
        &self,
        entries: &[ManifestEntry],
        spec_id: i32,
        content: i32,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<ManifestFile> {
        let schema = self.metadata.current_schema()?;
        let schema_json = serde_json::to_string(&schema.to_json()).map_err(|e| Error::Internal(e.to_string()))?;
        let spec = self.metadata.partition_specs.iter().find(|s| s.spec_id == spec_id).ok_or_else(|| {
            Error::Corrupt(format!("{}: partition spec {spec_id} is not in the table metadata", self.location()))
        })?;
        let partition = partition_types(spec, self.arrow_schema()?.as_ref())?;
        let spec_json = serde_json::to_string(&spec.fields).map_err(|e| Error::Internal(e.to_string()))?;
        let kind = if content == 0 { "data" } else { "deletes" };
        let manifest = write_manifest(
            entries,
            &schema_json,
            schema.schema_id,
            &spec_json,
            spec_id,
            &partition,
            kind,
            self.metadata.format_version,
        )?;
        let manifest_path = format!("metadata/{}-m0.avro", uuid::Uuid::new_v4());
        let manifest_length = manifest.len() as i64;
        self.storage.put(&manifest_path, Bytes::from(manifest))?;
        let count = |status: i32| entries.iter().filter(move |e| e.status == status);
        let summaries = partition
            .iter()
            .map(|p| {
                let values = entries.iter().map(|e| e.data_file.partition.get(&p.field_id));
                let mut summary =
                    FieldSummary { contains_null: values.clone().any(|v| v.is_none()), ..Default::default() };
                for value in values.flatten() {
                    if summary.lower_bound.as_ref().is_none_or(|lo| less(&p.data_type, value, lo)) {
                        summary.lower_bound = Some(value.clone());
                    }
                    if summary.upper_bound.as_ref().is_none_or(|hi| less(&p.data_type, hi, value)) {
                        summary.upper_bound = Some(value.clone());
                    }
                }
                if matches!(p.data_type, DataType::Float32 | DataType::Float64) {
                    summary.contains_nan = Some(false);
                }
                summary
            })
            .collect();
        Ok(ManifestFile {
            manifest_path: self.storage.uri(&manifest_path),
            manifest_length,
            partition_spec_id: spec_id,
            content,
            sequence_number,
            // Entries kept from older snapshots carry their own (older) sequence numbers.
            min_sequence_number: entries
                .iter()
                .filter(|e| e.status != STATUS_DELETED)
                .map(|e| e.sequence_number.unwrap_or(sequence_number))
                .min()
                .unwrap_or(sequence_number),
            added_snapshot_id: snapshot_id,
            added_files_count: count(STATUS_ADDED).count() as i32,
            existing_files_count: count(STATUS_EXISTING).count() as i32,
            deleted_files_count: count(STATUS_DELETED).count() as i32,
            added_rows_count: count(STATUS_ADDED).map(|e| e.data_file.record_count).sum(),
            existing_rows_count: count(STATUS_EXISTING).map(|e| e.data_file.record_count).sum(),
            deleted_rows_count: count(STATUS_DELETED).map(|e| e.data_file.record_count).sum(),
            partitions: Some(summaries),
            // Assigned by the manifest list that first lists it.
            first_row_id: None,
        })
    }

    /// The manifests of a snapshot.
    fn manifests(&self, snapshot: &Snapshot) -> Result<Vec<ManifestFile>> {
        let list = &snapshot.manifest_list;
        // A list that is not there (or not inside the table) is the metadata version's fault.
        let version = self.storage.uri(&metadata_file(self.version));
        let bytes =
            self.storage.relative(list).and_then(|path| self.storage.get(path)).map_err(|e| e.within(&version))?;
        let manifests = read_manifest_list(&bytes, list)?;
        for manifest in &manifests {
            self.storage.relative(&manifest.manifest_path).map_err(|e| e.within(list))?;
        }
        Ok(manifests)
    }

    /// A manifest's entries, each with its sequence numbers (an entry added by the manifest's own
    /// snapshot inherits the manifest's) and, in a format version 3 table, each data file with its
    /// first row id (a file without one inherits the manifest's, past the rows of the files before
    /// it that inherit too).
    fn entries_of(&self, manifest: &ManifestFile) -> Result<Vec<ManifestEntry>> {
        let path = self.storage.relative(&manifest.manifest_path)?;
        let mut entries = read_manifest(&self.storage.get(path)?, &manifest.manifest_path)?;
        for entry in &entries {
            self.storage.relative(&entry.data_file.file_path).map_err(|e| e.within(&manifest.manifest_path))?;
        }
        let mut next_row_id = manifest.first_row_id;
        for entry in &mut entries {
            entry.data_file.spec_id = manifest.partition_spec_id;
            let sequence_number = *entry.sequence_number.get_or_insert(manifest.sequence_number);
            entry.file_sequence_number.get_or_insert(manifest.sequence_number);
            entry.data_file.sequence_number = Some(sequence_number);
            if let (0, None, Some(next)) = (entry.data_file.content, entry.data_file.first_row_id, next_row_id.as_mut())
            {
                entry.data_file.first_row_id = Some(*next);
                *next += entry.data_file.record_count;
            }
        }
        Ok(entries)
    }

    /// Commits a snapshot that adds `added` on top of the current snapshot's files ("append"), or in
    /// place of them ("overwrite": they and their delete files are listed as deleted).
    fn commit_snapshot(&mut self, operation: &str, added: Vec<DataFile>) -> Result<i64> {
        self.commit_snapshot_with(operation, added, &|_| Ok(()))
    }

    /// As [`Table::commit_snapshot`], with `redefine` applied to the metadata the snapshot is
    /// committed in (a replacement's new schema, spec and order), the same commit.
    fn commit_snapshot_with(
        &mut self,
        operation: &str,
        added: Vec<DataFile>,
        redefine: &dyn Fn(&mut TableMetadata) -> Result<()>,
    ) -> Result<i64> {
        let overwrite = operation == "overwrite";
        // Files written long before their commit (a slow task of a distributed write) may have been
        // taken for orphans meanwhile: a snapshot never names a file that is not there.
        for file in &added {
            if !self.storage.exists(self.storage.relative(&file.file_path)?)? {
                return Err(Error::NotFound(format!(
                    "cannot commit {}: it does not exist (was it removed as an orphan before its commit?)",
                    file.file_path
                )));
            }
        }
        let mut change = Change::new(&self.metadata);
        // The manifest of the added files does not depend on the parent: it is written once and
        // kept across lost races (its entries take the sequence number the list gives it), so a
        // retry costs little more than the manifest list.
        let added_manifests = {
            let entries: Vec<ManifestEntry> = added.iter().map(|f| change.entry(STATUS_ADDED, f)).collect();
            self.put_manifests(&entries, 0, change.snapshot_id, change.sequence_number)?
        };
        for attempt in 0..COMMIT_ATTEMPTS {
            change.rebase(&self.metadata);
            let parent = self.metadata.current_snapshot().cloned();
            let mut manifests: Vec<ManifestFile> = added_manifests.iter().map(|m| change.sequenced(m)).collect();
            let mut written = Vec::new();
            let added_rows: i64 = added.iter().map(|f| f.record_count).sum();
            let mut summary = BTreeMap::from([
                ("added-data-files".to_owned(), added.len().to_string()),
                ("added-records".to_owned(), added_rows.to_string()),
            ]);
            let mut totals = Totals::of(parent.as_ref());
            totals.records += added_rows;
            totals.data_files += added.len() as i64;
            if overwrite {
                let removed = self.data_files(parent.as_ref())?;
                let removed_deletes = delete_files_of(&removed);
                for (content, files) in [(0, &removed), (1, &removed_deletes)] {
                    if !files.is_empty() {
                        let entries: Vec<ManifestEntry> =
                            files.iter().map(|f| change.entry(STATUS_DELETED, f)).collect();
                        written.extend(self.put_manifests(
                            &entries,
                            content,
                            change.snapshot_id,
                            change.sequence_number,
                        )?);
                    }
                }
                summary.insert("deleted-data-files".to_owned(), removed.len().to_string());
                summary.insert(
                    "deleted-records".to_owned(),
                    removed.iter().map(|f| f.record_count).sum::<i64>().to_string(),
                );
                totals = Totals {
                    records: added_rows,
                    data_files: added.len() as i64,
                    delete_files: 0,
                    position_deletes: 0,
                };
            } else if let Some(p) = &parent {
                manifests.extend(self.manifests(p)?);
            }
            manifests.extend(written.iter().cloned());
            if self.commit_manifests(&change, operation, manifests, summary, totals, redefine)? {
                return Ok(change.snapshot_id);
            }
            self.discard(&written)?;
            self.refresh()?;
            backoff(attempt);
        }
        self.discard(&added_manifests)?;
        Err(Error::CommitConflict(format!(
            "gave up committing to {} after {COMMIT_ATTEMPTS} lost races",
            self.storage.location()
        )))
    }

    /// Deletes manifests a lost commit attempt wrote.
    fn discard(&self, manifests: &[ManifestFile]) -> Result<()> {
        for manifest in manifests {
            self.storage.delete(self.storage.relative(&manifest.manifest_path)?)?;
        }
        Ok(())
    }

    /// Writes the manifest list of `change`'s snapshot and commits the snapshot on top of the
    /// current one; false when another writer committed first (the list is removed again; the
    /// caller discards the manifests it wrote for this attempt, rebases and retries).
    fn commit_manifests(
        &mut self,
        change: &Change,
        operation: &str,
        manifests: Vec<ManifestFile>,
        mut summary: BTreeMap<String, String>,
        totals: Totals,
        redefine: &dyn Fn(&mut TableMetadata) -> Result<()>,
    ) -> Result<bool> {
        let parent = self.metadata.current_snapshot().cloned();
        let snapshot_id = change.snapshot_id;
        let mut next = self.metadata.clone();
        redefine(&mut next)?;
        // Row lineage (format version 3): the data manifests new to this snapshot take their
        // first row ids from the table's next-row-id, one per row they add or carry.
        let first_row_id = (self.metadata.format_version >= 3).then(|| self.metadata.next_row_id.unwrap_or(0));
        let mut next_row_id = first_row_id;
        let manifests: Vec<ManifestFile> = manifests
            .into_iter()
            .map(|m| match (m.content, m.first_row_id, next_row_id.as_mut()) {
                (0, None, Some(next)) => {
                    let first = *next;
                    *next += m.added_rows_count + m.existing_rows_count;
                    ManifestFile { first_row_id: Some(first), ..m }
                }
                _ => m,
            })
            .collect();
        let list = write_manifest_list(
            &manifests,
            snapshot_id,
            parent.as_ref().map(|p| p.snapshot_id),
            change.sequence_number,
            first_row_id,
        )?;
        let list_path = format!("metadata/snap-{snapshot_id}-1-{}.avro", uuid::Uuid::new_v4());
        self.storage.put(&list_path, Bytes::from(list))?;
        summary.insert("operation".to_owned(), operation.to_owned());
        summary.insert("total-records".to_owned(), totals.records.to_string());
        summary.insert("total-data-files".to_owned(), totals.data_files.to_string());
        summary.insert("total-delete-files".to_owned(), totals.delete_files.to_string());
        summary.insert("total-position-deletes".to_owned(), totals.position_deletes.to_string());
        summary.insert("total-equality-deletes".to_owned(), "0".to_owned());
        let now = now_ms().max(self.metadata.last_updated_ms + 1);
        next.metadata_log.push(MetadataLogEntry {
            timestamp_ms: self.metadata.last_updated_ms,
            metadata_file: self.storage.uri(&metadata_file(self.version)),
        });
        next.add_snapshot(Snapshot {
            snapshot_id,
            parent_snapshot_id: parent.as_ref().map(|p| p.snapshot_id),
            sequence_number: change.sequence_number,
            timestamp_ms: now,
            manifest_list: self.storage.uri(&list_path),
            summary,
            schema_id: Some(next.current_schema_id),
            first_row_id,
            added_rows: first_row_id.zip(next_row_id).map(|(first, next)| next - first),
        });
        if next_row_id.is_some() {
            next.next_row_id = next_row_id;
        }
        if self.try_commit(next)? {
            return Ok(true);
        }
        self.storage.delete(&list_path)?;
        Ok(false)
    }

    /// Deletes the rows `filter` passes (every row when None) from the current snapshot and commits
    /// that as a "delete" snapshot; returns it and how many rows it deleted (None and 0 when no row
    /// passed, and nothing is committed). Data files are never rewritten: a data file none of whose
    /// rows are left leaves the table, and the deleted rows of the others are listed in position
    /// delete files, one per data file (holding all of that file's deleted rows, so it replaces the
    /// one the file had). Older snapshots keep every row for time travel.
    pub fn delete_where(&mut self, filter: Option<&Predicate>) -> Result<(Option<i64>, u64)> {
        self.writable()?;
        if let Some(filter) = filter {
            self.read_set(Some(&[]), &filter.columns().into_iter().collect::<Vec<_>>())?;
        }
        for attempt in 0..COMMIT_ATTEMPTS {
            self.refresh()?;
            let change = Change::new(&self.metadata);
            let parent = self.metadata.current_snapshot().cloned();
            let mut removed: Vec<DataFile> = Vec::new();
            let mut replaced: Vec<DataFile> = Vec::new();
            let mut added: Vec<DataFile> = Vec::new();
            let mut deleted_rows = 0u64;
            for file in self.prune(self.data_files(parent.as_ref())?, filter)? {
                let before = deleted_positions(&self.storage, &file)?;
                let passing = self.positions_passing(&file, filter)? - &before;
                if passing.is_empty() {
                    continue;
                }
                deleted_rows += passing.len();
                let after = before | passing;
                replaced.extend(file.deletes.iter().cloned());
                if after.len() >= u64::try_from(file.record_count).unwrap_or(0) {
                    removed.push(file);
                    continue;
                }
                // Format version 3 deletes with deletion vectors; 2 with position delete files.
                let (bytes, mut description) = match self.metadata.format_version >= 3 {
                    true => super::deletes::write_deletion_vector(&file.file_path, &after)?,
                    false => super::deletes::write(&file.file_path, &after)?,
                };
                let extension = if is_deletion_vector(&description) { "puffin" } else { "parquet" };
                let path = format!("data/{}-deletes.{extension}", uuid::Uuid::new_v4());
                self.storage.put(&path, bytes)?;
                description.file_path = self.storage.uri(&path);
                // Iceberg readers match delete files to data files within a partition.
                description.spec_id = file.spec_id;
                description.partition = file.partition.clone();
                added.push(description);
            }
            if deleted_rows == 0 {
                return Ok((None, 0));
            }
            let replaced = unique_by_path(replaced);
            let delta = RowDelta {
                operation: "delete",
                removed: &removed,
                replaced: &replaced,
                added_deletes: &added,
                added: &[],
            };
            let committed = self.commit_row_delta(&change, parent.as_ref(), &delta)?;
            if committed {
                return Ok((Some(change.snapshot_id), deleted_rows));
            }
            for file in &added {
                self.storage.delete(self.storage.relative(&file.file_path)?)?;
            }
            backoff(attempt);
        }
        Err(Error::CommitConflict(format!(
            "gave up deleting from {} after {COMMIT_ATTEMPTS} lost races",
            self.storage.location()
        )))
    }

    /// The positions of the rows of one data file (deleted rows included) that `filter` passes.
    fn positions_passing(&self, file: &DataFile, filter: Option<&Predicate>) -> Result<RoaringTreemap> {
        let rows = u64::try_from(file.record_count).unwrap_or(0);
        let Some(filter) = filter else {
            return Ok((0..rows).collect());
        };
        let columns: Vec<String> = filter.columns().into_iter().collect();
        let whole = DataFile { deletes: Vec::new(), ..file.clone() };
        let mut positions = RoaringTreemap::new();
        let mut at = 0u64;
        for batch in self.scan_files(vec![whole], Some(&columns), 64 * 1024)? {
            let passed = filter.evaluate(&batch?)?;
            positions
                .extend((0..passed.len()).filter(|&i| passed.is_valid(i) && passed.value(i)).map(|i| at + i as u64));
            at += passed.len() as u64;
        }
        if at != rows {
            return Err(Error::Corrupt(format!(
                "data file {} holds {at} rows, its manifest says {rows}",
                file.file_path
            )));
        }
        Ok(positions)
    }

    /// Commits `change`'s snapshot on top of `parent`: `delta`'s removed data files and replaced
    /// delete files are listed as deleted (the manifests holding them are rewritten, the others
    /// carried over), its added files as added. False when another writer committed first.
    fn commit_row_delta(&mut self, change: &Change, parent: Option<&Snapshot>, delta: &RowDelta) -> Result<bool> {
        let gone: std::collections::HashSet<&str> =
            delta.removed.iter().chain(delta.replaced).map(|f| f.file_path.as_str()).collect();
        let mut manifests = Vec::new();
        let mut written = Vec::new();
        for manifest in match parent {
            Some(p) => self.manifests(p)?,
            None => Vec::new(),
        } {
            let list = parent.map(|p| p.manifest_list.as_str()).unwrap_or_default();
            let entries = self.entries_of(&manifest).map_err(|e| e.within(list))?;
            if !entries.iter().any(|e| e.status != STATUS_DELETED && gone.contains(e.data_file.file_path.as_str())) {
                manifests.push(manifest);
                continue;
            }
            let kept: Vec<ManifestEntry> = entries
                .into_iter()
                .filter(|e| e.status != STATUS_DELETED)
                .map(|e| match gone.contains(e.data_file.file_path.as_str()) {
                    true => ManifestEntry { status: STATUS_DELETED, snapshot_id: Some(change.snapshot_id), ..e },
                    false => ManifestEntry { status: STATUS_EXISTING, ..e },
                })
                .collect();
            written.extend(self.put_manifests(&kept, manifest.content, change.snapshot_id, change.sequence_number)?);
        }
        for (content, files) in [(0, delta.added), (1, delta.added_deletes)] {
            if !files.is_empty() {
                let entries: Vec<ManifestEntry> = files.iter().map(|f| change.entry(STATUS_ADDED, f)).collect();
                written.extend(self.put_manifests(&entries, content, change.snapshot_id, change.sequence_number)?);
            }
        }
        manifests.extend(written.iter().cloned());
        let rows = |files: &[DataFile]| files.iter().map(|f| f.record_count).sum::<i64>();
        let summary = BTreeMap::from([
            ("added-data-files".to_owned(), delta.added.len().to_string()),
            ("added-records".to_owned(), rows(delta.added).to_string()),
            ("deleted-data-files".to_owned(), delta.removed.len().to_string()),
            ("deleted-records".to_owned(), rows(delta.removed).to_string()),
            ("added-delete-files".to_owned(), delta.added_deletes.len().to_string()),
            ("added-position-delete-files".to_owned(), delta.added_deletes.len().to_string()),
            ("added-position-deletes".to_owned(), rows(delta.added_deletes).to_string()),
            ("removed-delete-files".to_owned(), delta.replaced.len().to_string()),
            ("removed-position-deletes".to_owned(), rows(delta.replaced).to_string()),
        ]);
        let mut totals = Totals::of(parent);
        totals.records += rows(delta.added) - rows(delta.removed);
        totals.data_files += delta.added.len() as i64 - delta.removed.len() as i64;
        totals.delete_files += delta.added_deletes.len() as i64 - delta.replaced.len() as i64;
        totals.position_deletes += rows(delta.added_deletes) - rows(delta.replaced);
        let committed = self.commit_manifests(change, delta.operation, manifests, summary, totals, &|_| Ok(()))?;
        if !committed {
            self.discard(&written)?;
        }
        Ok(committed)
    }

    /// Compaction: rewrites the live rows of the current snapshot's files that have deleted rows,
    /// and of its small files (fewer than `target_rows` rows, when there are two or more), into new
    /// files of up to `target_rows` rows (with their vector sidecars and graphs), committed as one
    /// "replace" snapshot: every read answers as before, from fewer files and without delete files.
    /// None when no file needs it. A concurrent change to a file being rewritten fails the commit
    /// (`CommitConflict`) and removes what was written; other concurrent commits are kept.
    pub fn rewrite_data_files(&mut self, target_rows: usize) -> Result<Option<Rewrite>> {
        self.writable()?;
        if target_rows == 0 {
            return Err(Error::invalid("target rows per file must be positive"));
        }
        self.refresh()?;
        let parent = self.metadata.current_snapshot().cloned();
        let files = self.data_files(parent.as_ref())?;
        let small = files.iter().filter(|f| f.deletes.is_empty() && (f.record_count as usize) < target_rows).count();
        let mut chosen: Vec<DataFile> = files
            .into_iter()
            .filter(|f| !f.deletes.is_empty() || (small >= 2 && (f.record_count as usize) < target_rows))
            .collect();
        // A partition's files are read one after another, so that each new file holds few partitions.
        chosen.sort_by(|a, b| (a.spec_id, &a.partition).cmp(&(b.spec_id, &b.partition)));
        if chosen.is_empty() {
            return Ok(None);
        }
        let replaced = delete_files_of(&chosen);
        // Every column, and in a format version 3 table each row's lineage, which moves with it.
        let read = self.read_schema()?;
        let names: Vec<String> = read.fields().iter().map(|f| f.name().clone()).collect();
        let mut rows = self.scan_files(chosen.clone(), Some(&names), 64 * 1024)?;
        let schema = rows.schema();
        let mut written = Vec::new();
        let mut leftover = None;
        loop {
            let chunk =
                Chunk { source: &mut rows, leftover: &mut leftover, remaining: target_rows, schema: schema.clone() };
            match self.write_rows(chunk, read.clone()) {
                Ok(files) => written.extend(files),
                Err(Error::InvalidArgument(m)) if m.starts_with("nothing to append") => break,
                Err(e) => {
                    self.delete_files(&written)?;
                    return Err(e);
                }
            }
        }
        let delta = RowDelta {
            operation: "replace",
            removed: &chosen,
            replaced: &replaced,
            added_deletes: &[],
            added: &written,
        };
        for _ in 0..COMMIT_ATTEMPTS {
            let change = Change::new(&self.metadata);
            let parent = self.metadata.current_snapshot().cloned();
            if self.commit_row_delta(&change, parent.as_ref(), &delta)? {
                return Ok(Some(Rewrite {
                    snapshot_id: change.snapshot_id,
                    rewritten: chosen.len(),
                    written: written.len(),
                }));
            }
            self.refresh()?;
            // Rebase only while every rewritten file is live as it was read (same delete files).
            let live = self.data_files(self.metadata.current_snapshot())?;
            let unchanged = chosen.iter().all(|c| {
                live.iter().any(|l| {
                    l.file_path == c.file_path
                        && l.deletes.iter().map(|d| &d.file_path).eq(c.deletes.iter().map(|d| &d.file_path))
                })
            });
            if !unchanged {
                self.delete_files(&written)?;
                return Err(Error::CommitConflict(format!(
                    "another writer changed files of {} while they were being rewritten; nothing was committed",
                    self.location()
                )));
            }
        }
        self.delete_files(&written)?;
        Err(Error::CommitConflict(format!(
            "gave up rewriting files of {} after {COMMIT_ATTEMPTS} lost races",
            self.location()
        )))
    }

    /// Makes an earlier snapshot of the table's history current again (an ancestor of the current
    /// one): reads see its rows; the snapshots after it stay for time travel until they expire.
    pub fn rollback_to(&mut self, snapshot_id: i64) -> Result<()> {
        self.writable()?;
        self.commit_metadata(|next| {
            next.snapshot(snapshot_id)?;
            let mut at = next.current_snapshot_id;
            while let Some(id) = at {
                if id == snapshot_id {
                    break;
                }
                at = next.snapshot(id).ok().and_then(|s| s.parent_snapshot_id);
            }
            if at.is_none() {
                return Err(Error::invalid(format!(
                    "snapshot {snapshot_id} is not an ancestor of the current snapshot"
                )));
            }
            next.set_current_snapshot(snapshot_id, now_ms().max(next.last_updated_ms + 1));
            Ok(())
        })
    }

    /// The snapshot a read sees: `snapshot_id`, the one current at `as_of_ms`, or the current one.
    pub fn snapshot(&self, snapshot_id: Option<i64>, as_of_ms: Option<i64>) -> Result<Option<&Snapshot>> {
        match (snapshot_id, as_of_ms) {
            (Some(id), _) => self.metadata.snapshot(id).map(Some),
            (None, Some(ts)) => self.metadata.snapshot_as_of(ts).map(Some),
            (None, None) => Ok(self.metadata.current_snapshot()),
        }
    }

    /// The live data files of a snapshot (none for an empty table), each with the position delete
    /// files that apply to it (position delete files and deletion vectors). A snapshot with equality deletes is refused
    /// rather than read with rows that should be gone.
    pub fn data_files(&self, snapshot: Option<&Snapshot>) -> Result<Vec<DataFile>> {
        let Some(snapshot) = snapshot else {
            return Ok(Vec::new());
        };
        let mut files = Vec::new();
        let mut deletes = Vec::new();
        for manifest in self.manifests(snapshot)? {
            for entry in self.entries_of(&manifest).map_err(|e| e.within(&snapshot.manifest_list))? {
                if entry.status == STATUS_DELETED {
                    continue;
                }
                let file = entry.data_file;
                self.storage.relative(&file.file_path)?;
                match file.content {
                    0 => files.push(file),
                    CONTENT_POSITION_DELETES
                        if file.file_format.eq_ignore_ascii_case("parquet") || is_deletion_vector(&file) =>
                    {
                        deletes.push(file)
                    }
                    CONTENT_EQUALITY_DELETES => {
                        return Err(Error::invalid(format!(
                            "{} has equality delete files (such as {}), which HyperStream does not read",
                            self.location(),
                            file.file_path
                        )))
                    }
                    _ => {
                        return Err(Error::invalid(format!(
                            "{} has delete files HyperStream does not read: {} ({})",
                            self.location(),
                            file.file_path,
                            file.file_format
                        )))
                    }
                }
            }
        }
        if !deletes.is_empty() {
            let (targeted, anywhere): (Vec<DataFile>, Vec<DataFile>) =
                deletes.into_iter().partition(|d| target(d).is_some());
            let mut by_target: HashMap<Vec<u8>, Vec<DataFile>> = HashMap::new();
            for delete in targeted {
                by_target.entry(target(&delete).expect("partitioned on it").to_vec()).or_default().push(delete);
            }
            for file in &mut files {
                file.deletes = by_target.remove(file.file_path.as_bytes()).unwrap_or_default();
                file.deletes.extend(anywhere.iter().cloned());
            }
        }
        Ok(files)
    }

    /// The rows `files` hold, less those their delete files delete: an exact count from the
    /// manifests and the delete files alone, without reading data (COUNT(*) answered from metadata).
    pub fn live_rows(&self, files: &[DataFile]) -> Result<u64> {
        files.iter().try_fold(0u64, |total, file| {
            let rows = u64::try_from(file.record_count).unwrap_or(0);
            let deleted = match file.deletes.is_empty() {
                true => 0,
                false => deleted_positions(&self.storage, file)?.range_cardinality(0..rows),
            };
            Ok(total + rows - deleted)
        })
    }

    /// `aggregates` over a snapshot's rows from its manifests alone, as one row; None when the
    /// metadata cannot answer them all exactly (see [`crate::scan::aggregate_from_metadata`]).
    pub fn aggregate_from_metadata(
        &self,
        snapshot: Option<&Snapshot>,
        aggregates: &[crate::scan::MetadataAggregate],
    ) -> Result<Option<RecordBatch>> {
        let files = self.data_files(snapshot)?;
        let live = self.live_rows(&files)?;
        crate::scan::aggregate_from_metadata(&files, &*self.arrow_schema()?, live, aggregates)
    }

    /// Each column's statistics over a snapshot's rows, from its manifests and the distinct-value
    /// sketches beside its data files: (column, estimated distinct values, null count). A count is
    /// None where a file lacks what it needs (a file written before sketches were kept, or before the
    /// column existed, or a damaged sketch, which is warned about); deleted rows are not subtracted
    /// (statistics, not answers).
    pub fn column_statistics(&self, snapshot: Option<&Snapshot>) -> Result<Vec<(String, Option<u64>, Option<u64>)>> {
        use crate::index::ndv::{ndv_path, parse, Sketch};
        let schema = self.arrow_schema()?;
        let files = self.data_files(snapshot)?;
        let ids: Vec<Option<i32>> = schema
            .fields()
            .iter()
            .map(|f| field_id(f).filter(|_| crate::index::ndv::sketched(f.data_type())))
            .collect();
        let mut merged: HashMap<i32, Option<Sketch>> =
            ids.iter().flatten().map(|&id| (id, Some(Sketch::default()))).collect();
        for file in &files {
            let path = ndv_path(self.storage.relative(&file.file_path)?);
            let sketches = match self.storage.get(&path) {
                Ok(bytes) => {
                    parse(&bytes, &path).map_err(|e| log::warn!("{e}; its columns get no distinct-value estimate")).ok()
                }
                Err(_) => None,
            };
            let sketches: HashMap<i32, Sketch> = sketches.unwrap_or_default().into_iter().collect();
            for (id, total) in merged.iter_mut() {
                match (total.as_mut(), sketches.get(id)) {
                    (Some(total), Some(sketch)) => total.merge(sketch),
                    _ => *total = None,
                }
            }
        }
        Ok(schema
            .fields()
            .iter()
            .zip(&ids)
            .map(|(field, id)| {
                let ndv = id.and_then(|id| merged.get(&id).cloned().flatten()).map(|s| s.estimate());
                let nulls = field_id(field).and_then(|id| {
                    files.iter().map(|f| f.null_value_counts.get(&id).map(|n| *n as u64)).sum::<Option<u64>>()
                });
                (field.name().clone(), ndv, nulls)
            })
            .collect())
    }

    /// Streams `files` with the columns named in `columns` (every column when `None`), as the
    /// current schema types them.
    pub fn scan_files(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        self.scan_row_groups(files, columns, batch_rows, None)
    }

    /// As [`Table::scan_files`], skipping the row groups whose footer statistics show that no row
    /// passes `prune` (the columns it reads must be among `columns`). A filter over the stream still
    /// decides the rows: pruning only skips what it would drop.
    fn scan_row_groups(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
        prune: Option<&Predicate>,
    ) -> Result<BatchStream> {
        Ok(Box::new(self.table_scan(files, columns, batch_rows, prune)?))
    }

    fn table_scan(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
        prune: Option<&Predicate>,
    ) -> Result<TableScan> {
        let table_schema = self.read_schema()?;
        let indices = match columns {
            None => (0..self.arrow_schema()?.fields().len()).collect::<Vec<_>>(),
            Some(names) => names
                .iter()
                .map(|n| {
                    table_schema
                        .index_of(n)
                        .map_err(|_| Error::NotFound(format!("column '{n}' is not in the table schema")))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let schema = Arc::new(table_schema.project(&indices)?);
        let lineage = schema.fields().iter().any(|f| lineage::is_lineage(f.name()));
        let indexed = self.scalar_indexes();
        let scalar = match prune {
            Some(filter) => filter
                .columns()
                .into_iter()
                .filter_map(|name| {
                    let field = table_schema.field_with_name(&name).ok()?;
                    let id = field_id(field).filter(|id| indexed.contains(id))?;
                    Some((name, id, field.data_type().clone()))
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(TableScan {
            storage: self.storage.clone(),
            schema,
            files: files.into(),
            current: None,
            batch_rows: batch_rows.max(1),
            selection: None,
            prune: prune.cloned(),
            scalar,
            lineage,
            reading: String::new(),
        })
    }

    /// How a scan of `files` filtered by `filter` would prune, level by level, without reading any
    /// data page: file bounds, row-group statistics, scalar indexes (their files are read) and deletes.
    pub fn explain(&self, files: Vec<DataFile>, filter: Option<&Predicate>) -> Result<ScanExplain> {
        Ok(self.explain_files(files, filter)?.0)
    }

    /// As [`Table::explain`], with the files that hold a row to read: those a scan has to open (a
    /// file whose every row the bounds, statistics, indexes or deletes rule out is left out).
    pub fn explain_files(
        &self,
        files: Vec<DataFile>,
        filter: Option<&Predicate>,
    ) -> Result<(ScanExplain, Vec<DataFile>)> {
        let asked = files.len();
        let kept = self.prune(files, filter)?;
        let mut total = ScanExplain { files_pruned: asked - kept.len(), ..Default::default() };
        // Files are planned in parallel, each by a scan of its own (a scan holds its open reader).
        let explained = kept
            .into_par_iter()
            .map(|file| Ok((self.table_scan(Vec::new(), None, 1, filter)?.plan(&file)?.1, file)))
            .collect::<Result<Vec<_>>>()?;
        let mut reading = Vec::new();
        for (explain, file) in explained {
            total.add(&explain);
            if explain.rows_read > 0 {
                reading.push(file);
            }
        }
        total.files = asked;
        Ok((total, reading))
    }

    /// The files of `files` that may hold a row `filter` passes, by their partition values and
    /// column statistics.
    pub fn prune(&self, files: Vec<DataFile>, filter: Option<&Predicate>) -> Result<Vec<DataFile>> {
        let Some(filter) = filter else { return Ok(files) };
        let schema = self.arrow_schema()?;
        let partitions = PartitionPruner::new(&self.metadata, &schema);
        let files = match partitions.is_empty() {
            true => files,
            false => files.into_iter().filter(|f| partitions.may_match(filter, f)).collect(),
        };
        Ok(prune_files(files, filter, schema.as_ref()))
    }

    /// `files` as scan splits: a file of more row groups than one and more than `split_rows` rows is
    /// cut into runs of whole row groups of about `split_rows` rows each (each split's `row_groups`
    /// and `record_count` are its own), the others stay whole. The splits of a file read its rows
    /// once between them, deletes and filters applied as for the whole file.
    pub fn split_files(&self, files: Vec<DataFile>, split_rows: u64) -> Result<Vec<DataFile>> {
        let mut splits = Vec::with_capacity(files.len());
        for file in files {
            if (file.record_count as u64) <= split_rows.max(1) || file.row_groups.is_some() {
                splits.push(file);
                continue;
            }
            let bytes = self.storage.map(self.storage.relative(&file.file_path)?, false)?;
            let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&bytes)
                .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
            let groups: Vec<u64> = metadata.row_groups().iter().map(|g| g.num_rows().max(0) as u64).collect();
            let (mut first, mut rows) = (0, 0u64);
            for (g, n) in groups.iter().enumerate() {
                rows += n;
                if rows >= split_rows || g + 1 == groups.len() {
                    splits.push(DataFile {
                        row_groups: Some([first, g + 1]),
                        record_count: rows as i64,
                        ..file.clone()
                    });
                    first = g + 1;
                    rows = 0;
                }
            }
        }
        Ok(splits)
    }

    /// The names of `columns` (every column when `None`) together with the extra columns a read
    /// needs, in table order: the read set and, within it, the positions of `columns`.
    fn read_set(&self, columns: Option<&[String]>, extra: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let schema = self.read_schema()?;
        let output: Vec<String> = match columns {
            Some(names) => names.to_vec(),
            None => self.arrow_schema()?.fields().iter().map(|f| f.name().clone()).collect(),
        };
        let mut read: Vec<String> = Vec::new();
        for field in schema.fields() {
            if output.contains(field.name()) || extra.contains(field.name()) {
                read.push(field.name().clone());
            }
        }
        for name in output.iter().chain(extra) {
            if !read.contains(name) {
                return Err(Error::NotFound(format!("column '{name}' is not in the table schema")));
            }
        }
        Ok((read, output))
    }

    /// Streams the rows of `files` that `filter` passes, with the columns named in `columns`.
    pub fn scan(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<Predicate>,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        let Some(filter) = filter else {
            return self.scan_files(files, columns, batch_rows);
        };
        let files = self.prune(files, Some(&filter))?;
        let extra: Vec<String> = filter.columns().into_iter().collect();
        let (read, output) = self.read_set(columns, &extra)?;
        let inner = self.scan_row_groups(files, Some(&read), batch_rows, Some(&filter))?;
        let positions =
            output.iter().map(|n| read.iter().position(|r| r == n).expect("read holds the output")).collect();
        filtered(inner, filter, positions)
    }

    /// Streams the rows of `files` that `filter` passes, with the columns named in `columns` and a
    /// last `_distance` column: each row's distance from `search.query` (`search.k` is not used).
    pub fn scan_with_distances(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<Predicate>,
        search: &VectorSearch,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        let query = search.prepare_any(self.arrow_schema()?.as_ref())?;
        let files = self.prune(files, filter.as_ref())?;
        let mut extra: Vec<String> = filter.as_ref().map(|f| f.columns().into_iter().collect()).unwrap_or_default();
        extra.push(search.column.clone());
        let (read, output) = self.read_set(columns, &extra)?;
        let positions: Vec<usize> =
            output.iter().map(|n| read.iter().position(|r| r == n).expect("read holds the output")).collect();
        let every: Vec<usize> = (0..read.len()).collect();
        let rows = match filter {
            Some(filter) => {
                filtered(self.scan_row_groups(files, Some(&read), batch_rows, Some(&filter))?, filter, every)?
            }
            None => self.scan_files(files, Some(&read), batch_rows)?,
        };
        with_distances(rows, query, &search.column, positions)
    }

    /// The `search.k` rows of `files` nearest the query among those `filter` passes, nearest first,
    /// with the columns named in `columns` and their `_distance`; over a float vector column, a
    /// binary column of bit-packed vectors by `hamming` or `jaccard`, or a sparse vector column. Files are searched in parallel and
    /// their partial answers merged; ties go to the earlier file and row.
    pub fn search(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<&Predicate>,
        search: &VectorSearch,
        batch_rows: usize,
    ) -> Result<RecordBatch> {
        let schema = self.arrow_schema()?;
        let query = search.prepare_any(&schema)?;
        let files = self.prune(files, filter)?;
        let mut extra: Vec<String> = filter.map(|f| f.columns().into_iter().collect()).unwrap_or_default();
        extra.push(search.column.clone());
        let (read, output) = self.read_set(columns, &extra)?;
        let read_schema =
            schema.project(&read.iter().map(|n| schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?)?;
        let output_schema = read_schema
            .project(&output.iter().map(|n| read_schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?)?;
        let out_schema = Hits::schema_for(&output_schema)?;
        let empty = || Hits::new(out_schema.clone(), search.wanted());
        let hits = files
            .into_par_iter()
            .enumerate()
            .map(|(i, file)| {
                // Ordinals: the file's position in the high bits, the row within it in the low 40.
                let first = (i as u64) << 40;
                match &query {
                    Prepared::Float(query) => {
                        if let Some(hits) =
                            self.search_sidecar(&file, &output, &out_schema, query, search, filter, first)?
                        {
                            return Ok(hits);
                        }
                        let stream = self.scan_files(vec![file], Some(&read), batch_rows)?;
                        search_batches(
                            stream.map(|b| b.map_err(Error::from)),
                            &read_schema,
                            &output,
                            query,
                            &search.column,
                            filter,
                            search.wanted(),
                            first,
                        )
                    }
                    // Bit-packed and sparse vectors have no sidecar or graph: their own column is compared.
                    Prepared::Bits(_) | Prepared::Sparse(_) => {
                        let stream = self.scan_files(vec![file], Some(&read), batch_rows)?;
                        search_row_batches(
                            stream.map(|b| b.map_err(Error::from)),
                            &read_schema,
                            &output,
                            &query,
                            &search.column,
                            filter,
                            search.wanted(),
                            first,
                        )
                    }
                }
            })
            .try_reduce(empty, |a, b| a.merge(b))?;
        hits.finish()
    }

    /// Searches one data file through the sidecar of its vector column: contiguous vectors, no
    /// Parquet decoding but of the filter's columns and the k rows found. None when the file has no
    /// usable sidecar (a file another writer made, or a damaged sidecar, which is reported), so that
    /// the caller searches the Parquet column instead; the answer is the same either way.
    #[allow(clippy::too_many_arguments)]
    fn search_sidecar(
        &self,
        file: &DataFile,
        output: &[String],
        out_schema: &SchemaRef,
        query: &FloatQuery,
        search: &VectorSearch,
        filter: Option<&Predicate>,
        first_ordinal: u64,
    ) -> Result<Option<Hits>> {
        let schema = self.arrow_schema()?;
        let Some(id) = schema.field_with_name(&search.column).ok().and_then(field_id) else {
            return Ok(None);
        };
        let path = sidecar_path(self.storage.relative(&file.file_path)?, id);
        let Some(region) = self.map_beside(&path, "vector sidecar", "searching the data file instead") else {
            return Ok(None);
        };
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let sidecar = match Sidecar::parse(&region, rows, query.dimension(), &self.storage.uri(&path)) {
            Ok(sidecar) => sidecar,
            Err(e) => {
                warn(&format!("{e}; searching the data file instead"));
                return Ok(None);
            }
        };
        // Rows of the file (deleted ones included, so that positions are the file's) the filter
        // passes, less the deleted ones.
        let passed = match filter {
            None if file.deletes.is_empty() => BooleanBuffer::new_set(rows),
            _ => {
                let mut live = self.positions_passing(file, filter)?;
                live -= deleted_positions(&self.storage, file)?;
                let mut bits = arrow::array::BooleanBufferBuilder::new(rows);
                bits.append_n(rows, false);
                for p in live.iter() {
                    bits.set_bit(p as usize, true);
                }
                bits.finish()
            }
        };
        let with_vector = &sidecar.validity & &passed;
        let mut hits = Hits::new(out_schema.clone(), search.wanted());
        let take = |positions: &UInt32Array| self.take_rows(file, output, positions);
        match self.search_graph(file, id, query, search, &sidecar, &with_vector)? {
            Some(found) => {
                let found = found.into_iter().map(|n| Neighbor { ordinal: n.ordinal + first_ordinal, ..n }).collect();
                hits.add_found(found, &with_vector, &passed, first_ordinal, take)?
            }
            None => {
                hits.search_block(query, sidecar.vectors(), &with_vector, &passed, first_ordinal, search.backend, take)?
            }
        }
        Ok(Some(hits))
    }

    /// Maps a file kept beside a data file (a sidecar, a graph), or None when it is missing or
    /// unreadable; the latter is reported as a warning saying what is done `instead`.
    fn map_beside(&self, path: &str, what: &str, instead: &str) -> Option<Bytes> {
        match self.storage.map(path, true) {
            Ok(region) => Some(region),
            Err(Error::NotFound(_)) => None,
            Err(e) => {
                warn(&format!("{what} {path} unreadable, {instead}: {e}"));
                None
            }
        }
    }

    /// Searches one file's HNSW graph among the rows of `candidates`, rows numbered within the
    /// file. None, for exact search instead, when the search asks for exact results, the column has
    /// no index (or one of another metric), the filter leaves few rows, or the file has no usable
    /// graph (a file written before the index, or a damaged graph, which is reported).
    fn search_graph(
        &self,
        file: &DataFile,
        id: i32,
        query: &FloatQuery,
        search: &VectorSearch,
        sidecar: &Sidecar,
        candidates: &BooleanBuffer,
    ) -> Result<Option<Vec<Neighbor>>> {
        let Some(ef) = search.index.ef(search.k) else {
            return Ok(None);
        };
        if self.vector_indexes().get(&id).is_none_or(|p| p.metric != query.metric()) {
            return Ok(None);
        }
        let selected = candidates.count_set_bits();
        if selected < EXACT_BELOW_EF_TIMES * ef || (selected as f64) < EXACT_BELOW_SHARE * sidecar.rows as f64 {
            return Ok(None);
        }
        let path = hnsw_path(self.storage.relative(&file.file_path)?, id);
        let Some(region) = self.map_beside(&path, "HNSW graph", "searching exactly instead") else {
            return Ok(None);
        };
        let found = HnswGraph::parse(&region, sidecar.rows, sidecar.dimension, &self.storage.uri(&path))
            .and_then(|graph| graph.search(query, sidecar.vectors(), search.k, ef, candidates));
        match found {
            Ok(found) => Ok(Some(found)),
            Err(e) => {
                warn(&format!("{e}; searching exactly instead"));
                Ok(None)
            }
        }
    }

    /// The `columns` of the rows at `positions` (in that order) of one data file, reading only the
    /// pages that hold them.
    fn take_rows(&self, file: &DataFile, columns: &[String], positions: &UInt32Array) -> Result<Vec<ArrayRef>> {
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        let mut sorted: Vec<u32> = positions.values().to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let ranges = sorted.iter().map(|&p| p as usize..p as usize + 1);
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let table_schema = self.read_schema()?;
        let (read, _) = self.read_set(Some(columns), &[])?;
        let indices = read.iter().map(|n| table_schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?;
        let mut scan = TableScan {
            storage: self.storage.clone(),
            schema: Arc::new(table_schema.project(&indices)?),
            lineage: read.iter().any(|n| lineage::is_lineage(n)),
            reading: String::new(),
            // Positions are the file's own: its deletes were left out when they were chosen.
            files: VecDeque::from([DataFile { deletes: Vec::new(), ..file.clone() }]),
            current: None,
            batch_rows: sorted.len().max(1),
            selection: Some(RowSelection::from_consecutive_ranges(ranges, rows)),
            prune: None,
            scalar: Vec::new(),
        };
        let schema = scan.schema.clone();
        let batches = scan.by_ref().collect::<std::result::Result<Vec<_>, _>>()?;
        let found = arrow::compute::concat_batches(&schema, &batches)?;
        if found.num_rows() != sorted.len() {
            return Err(Error::Corrupt(format!("data file {} is shorter than its manifest says", file.file_path)));
        }
        // Back from file order to the order asked for, and to the column order asked for.
        let order = UInt32Array::from_iter_values(
            positions.values().iter().map(|p| sorted.binary_search(p).expect("sorted holds every position") as u32),
        );
        let found = take_record_batch(&found, &order)?;
        columns.iter().map(|c| Ok(found.column(found.schema().index_of(c)?).clone())).collect()
    }
}

/// Sets (Some) or removes (None) table properties.
fn set_properties(metadata: &mut TableMetadata, changes: &[(String, Option<String>)]) {
    for (key, value) in changes {
        match value {
            Some(value) => metadata.properties.insert(key.clone(), value.clone()),
            None => metadata.properties.remove(key),
        };
    }
}

/// A short random wait after the `attempt`-th lost commit race (up to 2^attempt ms, at most 16),
/// so that writers racing in step fall out of step.
fn backoff(attempt: usize) {
    let cap = 1u64 << attempt.min(4);
    let jitter = uuid::Uuid::new_v4().as_u64_pair().0 % (cap * 1000);
    std::thread::sleep(std::time::Duration::from_micros(jitter));
}

/// The identity of a snapshot being committed: its id and sequence number.
struct Change {
    snapshot_id: i64,
    sequence_number: i64,
}

impl Change {
    fn new(metadata: &TableMetadata) -> Self {
        Self {
            snapshot_id: (uuid::Uuid::new_v4().as_u64_pair().0 >> 1) as i64,
            sequence_number: metadata.last_sequence_number + 1,
        }
    }

    /// Moves the change on top of `metadata`'s latest commit (a retry keeps the snapshot id).
    fn rebase(&mut self, metadata: &TableMetadata) {
        self.sequence_number = metadata.last_sequence_number + 1;
    }

    /// A manifest written for this change, as its list records it at the current sequence number
    /// (its added entries inherit that number).
    fn sequenced(&self, manifest: &ManifestFile) -> ManifestFile {
        ManifestFile {
            sequence_number: self.sequence_number,
            min_sequence_number: self.sequence_number,
            ..manifest.clone()
        }
    }

    /// A manifest entry of this snapshot's (its sequence numbers inherited from the manifest).
    fn entry(&self, status: i32, file: &DataFile) -> ManifestEntry {
        ManifestEntry {
            status,
            snapshot_id: Some(self.snapshot_id),
            sequence_number: None,
            file_sequence_number: None,
            // A file added here takes new row ids (from its manifest); one listed as deleted keeps its own.
            data_file: DataFile {
                deletes: Vec::new(),
                first_row_id: if status == STATUS_ADDED { None } else { file.first_row_id },
                sequence_number: None,
                ..file.clone()
            },
        }
    }
}

/// What a snapshot changes in the files of its parent: data files `removed` and `added`, delete
/// files `replaced` and `added_deletes`.
struct RowDelta<'a> {
    operation: &'a str,
    removed: &'a [DataFile],
    replaced: &'a [DataFile],
    added_deletes: &'a [DataFile],
    added: &'a [DataFile],
}

/// What [`Table::rewrite_data_files`] committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    pub snapshot_id: i64,
    /// Data files rewritten (they left the table with their delete files).
    pub rewritten: usize,
    /// Data files written in their place.
    pub written: usize,
}

/// At most `remaining` rows of a stream, the rest of a batch kept for the next chunk.
struct Chunk<'a> {
    source: &'a mut BatchStream,
    leftover: &'a mut Option<RecordBatch>,
    remaining: usize,
    schema: SchemaRef,
}

impl Iterator for Chunk<'_> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let batch = match self.leftover.take() {
            Some(batch) => batch,
            None => match self.source.next()? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e)),
            },
        };
        if batch.num_rows() > self.remaining {
            *self.leftover = Some(batch.slice(self.remaining, batch.num_rows() - self.remaining));
            let head = batch.slice(0, self.remaining);
            self.remaining = 0;
            return Some(Ok(head));
        }
        self.remaining -= batch.num_rows();
        Some(Ok(batch))
    }
}

impl RecordBatchReader for Chunk<'_> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The running totals a snapshot summary carries.
struct Totals {
    records: i64,
    data_files: i64,
    delete_files: i64,
    position_deletes: i64,
}

impl Totals {
    fn of(snapshot: Option<&Snapshot>) -> Self {
        let total = |key: &str| snapshot.and_then(|s| s.summary.get(key)).and_then(|v| v.parse().ok()).unwrap_or(0);
        Self {
            records: total("total-records"),
            data_files: total("total-data-files"),
            delete_files: total("total-delete-files"),
            position_deletes: total("total-position-deletes"),
        }
    }
}

/// The delete files that apply to `files`, each once (one may apply to several data files).
fn delete_files_of(files: &[DataFile]) -> Vec<DataFile> {
    unique_by_path(files.iter().flat_map(|f| f.deletes.iter().cloned()).collect())
}

/// `files` sorted by path, each path once.
fn unique_by_path(mut files: Vec<DataFile>) -> Vec<DataFile> {
    files.sort_by(|a, b| a.file_path.cmp(&b.file_path));
    files.dedup_by(|a, b| a.file_path == b.file_path);
    files
}

/// The rows of `file` its delete files delete.
fn deleted_positions(storage: &Storage, file: &DataFile) -> Result<RoaringTreemap> {
    let mut deleted = RoaringTreemap::new();
    for delete in &file.deletes {
        let bytes = storage.map(storage.relative(&delete.file_path)?, true)?;
        deleted |= match is_deletion_vector(delete) {
            true => super::deletes::read_deletion_vector(&bytes, delete, &delete.file_path)?,
            false => super::deletes::read(bytes, &file.file_path, &delete.file_path)?,
        };
    }
    Ok(deleted)
}

fn latest_version(storage: &Storage) -> Result<u64> {
    let hinted = match storage.get(VERSION_HINT) {
        Ok(bytes) => std::str::from_utf8(&bytes).ok().and_then(|s| s.trim().parse::<u64>().ok()),
        Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let mut version = match hinted {
        Some(v) => v,
        None => storage
            .list("metadata")?
            .iter()
            .filter_map(|p| metadata_version(p))
            .max()
            .ok_or_else(|| Error::NotFound(format!("no HyperStream or Iceberg table at {}", storage.location())))?,
    };
    while storage.exists(&metadata_file(version + 1))? {
        version += 1;
    }
    if !storage.exists(&metadata_file(version))? {
        return Err(Error::Corrupt(format!("{} names version {version}, which is missing", storage.uri(VERSION_HINT))));
    }
    Ok(version)
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
        DataType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            let (lo, hi) = (min(a)?, max(a)?);
            (!lo.is_nan() && !hi.is_nan()).then(|| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
        }
        DataType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            let (lo, hi) = (min(a)?, max(a)?);
            (!lo.is_nan() && !hi.is_nan()).then(|| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
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
fn less(data_type: &DataType, a: &[u8], b: &[u8]) -> bool {
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

/// Reads data files one after another, mapping each file's columns to the table schema by field id.
struct TableScan {
    storage: Storage,
    schema: SchemaRef,
    files: VecDeque<DataFile>,
    /// The file being read: its reader, where each output column is in its batches, and its first
    /// row id and data sequence number (row lineage).
    current: Option<(ParquetRecordBatchReader, Vec<Option<usize>>, (Option<i64>, Option<i64>))>,
    batch_rows: usize,
    /// Rows to read from the (single) file; all when None.
    selection: Option<RowSelection>,
    /// The filter whose row groups are worth reading (see [`row_groups_may_match`]); all when None.
    prune: Option<Predicate>,
    /// The filter's columns with a scalar index (name, field id, type): the rows their indexes rule
    /// out are not read.
    scalar: Vec<(String, i32, DataType)>,
    /// Whether row lineage columns are read: batches then carry each row's position in its file.
    lineage: bool,
    /// The path of the file being read, which its read errors name.
    reading: String,
}

/// The name of the virtual column of row positions a lineage read asks the Parquet reader for.
const ROW_POSITION: &str = "_pos";

/// The part of a whole-file row `selection` that falls in the row groups `kept`, as a selection
/// over just their rows (what a reader of those row groups alone takes).
fn within_row_groups(
    selection: &RowSelection,
    metadata: &parquet::file::metadata::ParquetMetaData,
    kept: &[usize],
) -> RowSelection {
    let mut selected = Vec::new();
    let mut at = 0usize;
    for selector in selection.iter() {
        if !selector.skip {
            selected.push(at..at + selector.row_count);
        }
        at += selector.row_count;
    }
    let mut starts = Vec::with_capacity(metadata.num_row_groups());
    let mut start = 0usize;
    for g in 0..metadata.num_row_groups() {
        starts.push(start);
        start += metadata.row_group(g).num_rows() as usize;
    }
    let mut ranges = Vec::new();
    let mut base = 0usize;
    for &g in kept {
        let (first, rows) = (starts[g], metadata.row_group(g).num_rows() as usize);
        for range in &selected {
            let (lo, hi) = (range.start.max(first), range.end.min(first + rows));
            if lo < hi {
                ranges.push(lo - first + base..hi - first + base);
            }
        }
        base += rows;
    }
    RowSelection::from_consecutive_ranges(ranges.into_iter(), base)
}

/// What a filtered scan reads and what each pruning level left out ([`Table::explain`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScanExplain {
    /// Data files asked for, and those left out by their manifest bounds.
    pub files: usize,
    pub files_pruned: usize,
    /// Row groups of the files read, and those left out by footer statistics, by bloom filters and by
    /// scalar indexes.
    pub row_groups: usize,
    pub row_groups_pruned_by_stats: usize,
    pub row_groups_pruned_by_bloom: usize,
    pub row_groups_pruned_by_index: usize,
    /// Rows of the files read; of those, deleted (delete files), ruled out by scalar indexes, and read.
    pub rows: u64,
    pub rows_deleted: u64,
    pub rows_pruned_by_index: u64,
    pub rows_read: u64,
    /// Pages of the read columns in the files read, and those holding a row that is read (a page
    /// holding none is skipped through the page index); a column chunk without a page index counts
    /// as one page.
    pub pages: u64,
    pub pages_read: u64,
    /// Bytes fetched from storage: the read pages' compressed bytes and the scalar index files used.
    pub bytes_read: u64,
}

impl ScanExplain {
    fn add(&mut self, other: &ScanExplain) {
        self.files += other.files;
        self.files_pruned += other.files_pruned;
        self.row_groups += other.row_groups;
        self.row_groups_pruned_by_stats += other.row_groups_pruned_by_stats;
        self.row_groups_pruned_by_bloom += other.row_groups_pruned_by_bloom;
        self.row_groups_pruned_by_index += other.row_groups_pruned_by_index;
        self.rows += other.rows;
        self.rows_deleted += other.rows_deleted;
        self.rows_pruned_by_index += other.rows_pruned_by_index;
        self.rows_read += other.rows_read;
        self.pages += other.pages;
        self.pages_read += other.pages_read;
        self.bytes_read += other.bytes_read;
    }
}

/// Of the pages of root columns `roots`, how many there are, how many hold a row that is read and
/// their compressed bytes: rows are read in the row groups `kept` (ascending) as `selection` says (a
/// selection over those groups' rows, one after another; None reads every row of them). Without a
/// page index a column chunk counts as one page.
fn pages_read(
    metadata: &parquet::file::metadata::ParquetMetaData,
    schema: &parquet::schema::types::SchemaDescriptor,
    roots: &[usize],
    kept: &[usize],
    selection: Option<&RowSelection>,
) -> (u64, u64, u64) {
    let mut selected: Vec<std::ops::Range<usize>> = Vec::new();
    if let Some(selection) = selection {
        let mut at = 0usize;
        for selector in selection.iter() {
            if !selector.skip {
                selected.push(at..at + selector.row_count);
            }
            at += selector.row_count;
        }
    }
    let reads = |lo: usize, hi: usize| {
        selection.is_none() || {
            let i = selected.partition_point(|r| r.end <= lo);
            i < selected.len() && selected[i].start < hi
        }
    };
    let leaves: Vec<usize> =
        (0..schema.num_columns()).filter(|&c| roots.contains(&schema.get_column_root_idx(c))).collect();
    let (mut pages, mut read, mut bytes) = (0u64, 0u64, 0u64);
    let mut base = 0usize;
    for g in 0..metadata.num_row_groups() {
        let group = metadata.row_group(g);
        let rows = group.num_rows().max(0) as usize;
        let is_kept = kept.binary_search(&g).is_ok();
        let reads = |lo: usize, hi: usize| is_kept && reads(lo, hi);
        for &c in &leaves {
            let locations = metadata.page_index().and_then(|p| p.page_locations(g, c));
            match locations {
                Some(locations) if !locations.is_empty() => {
                    for (i, page) in locations.iter().enumerate() {
                        let start = page.first_row_index as usize;
                        let end = locations.get(i + 1).map_or(rows, |next| next.first_row_index as usize);
                        pages += 1;
                        if reads(base + start, base + end) {
                            read += 1;
                            bytes += page.compressed_page_size.max(0) as u64;
                        }
                    }
                }
                _ => {
                    pages += 1;
                    if reads(base, base + rows) {
                        read += 1;
                        bytes += group.column(c).compressed_size().max(0) as u64;
                    }
                }
            }
        }
        if is_kept {
            base += rows;
        }
    }
    (pages, read, bytes)
}

/// The rows of `bitmap` as a selection over a file of `rows` rows.
fn bitmap_selection(bitmap: &roaring::RoaringBitmap, rows: usize) -> RowSelection {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for row in bitmap.iter().map(|r| r as usize).filter(|r| *r < rows) {
        match ranges.last_mut() {
            Some(last) if last.end == row => last.end += 1,
            _ => ranges.push(row..row + 1),
        }
    }
    RowSelection::from_consecutive_ranges(ranges.into_iter(), rows)
}

fn field_id(field: &arrow::datatypes::Field) -> Option<i32> {
    field.metadata().get(PARQUET_FIELD_ID).and_then(|v| v.parse().ok())
}

impl TableScan {
    /// What reading `file` takes: its reader builder with the row groups and rows to read chosen by
    /// every pruning level (footer statistics, scalar indexes, deletes), and the counts of each.
    fn plan(&self, file: &DataFile) -> Result<(ParquetRecordBatchReaderBuilder<Bytes>, ScanExplain)> {
        // Mapped, not read: only the pages of the projected columns and selected rows are touched.
        let bytes = self.storage.map(self.storage.relative(&file.file_path)?, false)?;
        // The page index lets a row selection skip whole pages instead of decoding and dropping them.
        let policy = if self.prune.is_some() { PageIndexPolicy::Optional } else { PageIndexPolicy::Skip };
        // The column index (each page's min and max) lets a filter skip the pages it rules out.
        let mut options = ArrowReaderOptions::new().with_offset_index_policy(policy).with_column_index_policy(policy);
        if self.lineage {
            let position = arrow::datatypes::Field::new(ROW_POSITION, DataType::Int64, false)
                .with_extension_type(parquet::arrow::RowNumber);
            options = options
                .with_virtual_columns(vec![Arc::new(position)])
                .map_err(|e| Error::Internal(format!("row positions: {e}")))?;
        }
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options)
            .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
        let total = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let groups = builder.metadata().num_row_groups();
        // A split of a big file reads its own row groups only.
        let split: Vec<usize> = match file.row_groups {
            Some([first, end]) => (first.min(groups)..end.min(groups)).collect(),
            None => (0..groups).collect(),
        };
        let split_rows = split.iter().map(|&g| builder.metadata().row_group(g).num_rows().max(0) as u64).sum();
        let mut explain = ScanExplain { files: 1, row_groups: split.len(), rows: split_rows, ..Default::default() };
        let mut selection = self.selection.clone();
        if !file.deletes.is_empty() {
            let deleted = deleted_positions(&self.storage, file)?;
            if !deleted.is_empty() {
                explain.rows_deleted = deleted.len() as u64;
                let kept = super::deletes::kept(&deleted, total);
                selection = Some(match selection {
                    Some(asked) => asked.intersection(&kept),
                    None => kept,
                });
            }
        }
        let mut kept: Vec<usize> = match &self.prune {
            Some(filter) => row_groups_may_match(filter, builder.metadata(), &self.schema)
                .into_iter()
                .filter(|g| split.contains(g))
                .collect(),
            None => split.clone(),
        };
        explain.row_groups_pruned_by_stats = split.len() - kept.len();
        if let Some(filter) = &self.prune {
            let before = kept.len();
            kept.retain(|&g| self.bloom_may_match(&builder, g, filter));
            explain.row_groups_pruned_by_bloom = before - kept.len();
            // Pages whose column index rules the filter out: their rows are not read, and a row
            // group left without a page is not opened.
            let mut ranges = Vec::new();
            let (mut start, mut narrowed) = (0usize, false);
            let mut emptied = Vec::new();
            for g in 0..groups {
                let rows = builder.metadata().row_group(g).num_rows().max(0) as usize;
                if kept.contains(&g) {
                    match crate::scan::pages_may_match(filter, builder.metadata(), g, &self.schema) {
                        Some(pages) => {
                            let left: usize = pages.iter().map(|r| r.len()).sum();
                            narrowed |= left < rows;
                            if left == 0 {
                                emptied.push(g);
                            }
                            ranges.extend(pages.into_iter().map(|r| r.start + start..r.end + start));
                        }
                        None => ranges.push(start..start + rows),
                    }
                }
                start += rows;
            }
            if narrowed {
                let pages = RowSelection::from_consecutive_ranges(ranges.into_iter(), total as usize);
                selection = Some(match selection {
                    Some(asked) => asked.intersection(&pages),
                    None => pages,
                });
                kept.retain(|g| !emptied.contains(g));
                explain.row_groups_pruned_by_stats += emptied.len();
            }
        }
        let (candidates, index_bytes) = self.index_candidates(file, total);
        if let Some(candidates) = candidates {
            explain.rows_pruned_by_index = total - candidates.len();
            selection = Some(match selection {
                Some(asked) => asked.intersection(&bitmap_selection(&candidates, total as usize)),
                None => bitmap_selection(&candidates, total as usize),
            });
            // Row groups holding no candidate are not opened at all.
            let mut start = 0u64;
            let mut holding = Vec::with_capacity(groups);
            for g in 0..groups {
                let rows = builder.metadata().row_group(g).num_rows().max(0) as u64;
                if rows > 0 && candidates.range_cardinality(start as u32..(start + rows) as u32) > 0 {
                    holding.push(g);
                }
                start += rows;
            }
            let before = kept.len();
            kept.retain(|g| holding.contains(g));
            explain.row_groups_pruned_by_index = before - kept.len();
        }
        let (builder, selection) = if kept.len() < groups {
            // The selection covers the kept groups' rows only, one after another.
            let selection = selection.map(|s| within_row_groups(&s, builder.metadata(), &kept));
            (builder.with_row_groups(kept.clone()), selection)
        } else {
            (builder, selection)
        };
        explain.rows_read = match &selection {
            Some(selection) => selection.row_count() as u64,
            None => kept.iter().map(|&g| builder.metadata().row_group(g).num_rows().max(0) as u64).sum(),
        };
        let (pages, pages_read, bytes) = pages_read(
            builder.metadata(),
            builder.parquet_schema(),
            &self.read_roots(builder.schema()),
            &kept,
            selection.as_ref(),
        );
        explain.pages = pages;
        explain.pages_read = pages_read;
        explain.bytes_read = bytes + index_bytes;
        let builder = match selection {
            Some(selection) => builder.with_row_selection(selection),
            None => builder,
        };
        Ok((builder, explain))
    }

    /// Whether row group `group` may hold a row `filter` passes by the Parquet bloom filters of its
    /// columns. A column without one, or whose filter cannot be read, rules nothing out.
    fn bloom_may_match(
        &self,
        builder: &ParquetRecordBatchReaderBuilder<Bytes>,
        group: usize,
        filter: &Predicate,
    ) -> bool {
        let parquet = builder.parquet_schema();
        let metadata = builder.metadata().row_group(group);
        // Each column's filter is read once, however many values (an IN list) probe it.
        let mut filters: HashMap<usize, Option<parquet::bloom_filter::Sbbf>> = HashMap::new();
        let mut probe = |column: &str, literal: &dyn Array| -> Option<bool> {
            let id = field_id(self.schema.field_with_name(column).ok()?)?;
            // The file's top-level leaf column of that field id.
            let leaf = (0..parquet.num_columns()).find(|&c| {
                let info = parquet.column(c).self_type().get_basic_info().clone();
                parquet.column(c).path().parts().len() == 1 && info.has_id() && info.id() == id
            })?;
            metadata.column(leaf).bloom_filter_offset()?;
            let bloom = filters
                .entry(leaf)
                .or_insert_with(|| builder.get_row_group_column_bloom_filter(group, leaf).ok().flatten())
                .as_ref()?;
            use arrow::array::AsArray;
            use arrow::datatypes::{Date32Type, Int16Type, Int32Type, Int8Type, TimestampMicrosecondType};
            Some(match literal.data_type() {
                DataType::Int8 => bloom.check(&(literal.as_primitive::<Int8Type>().value(0) as i32)),
                DataType::Int16 => bloom.check(&(literal.as_primitive::<Int16Type>().value(0) as i32)),
                DataType::Int32 => bloom.check(&literal.as_primitive::<Int32Type>().value(0)),
                DataType::Date32 => bloom.check(&literal.as_primitive::<Date32Type>().value(0)),
                DataType::Int64 => bloom.check(&literal.as_primitive::<Int64Type>().value(0)),
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, _) => {
                    bloom.check(&literal.as_primitive::<TimestampMicrosecondType>().value(0))
                }
                DataType::Utf8 => bloom.check(literal.as_string::<i32>().value(0).as_bytes()),
                DataType::Binary => bloom.check(literal.as_binary::<i32>().value(0)),
                _ => return None,
            })
        };
        crate::scan::bloom_may_match(filter, &self.schema, &mut probe)
    }

    /// Each scan column's root column in a file of `file_schema` (by field id; None where the file
    /// predates the column).
    fn roots(&self, file_schema: &ArrowSchema) -> Vec<Option<usize>> {
        self.schema
            .fields()
            .iter()
            .map(|f| field_id(f).and_then(|id| file_schema.fields().iter().position(|ff| field_id(ff) == Some(id))))
            .collect()
    }

    /// The file's root columns the scan reads, ascending.
    fn read_roots(&self, file_schema: &ArrowSchema) -> Vec<usize> {
        let mut wanted: Vec<usize> = self.roots(file_schema).into_iter().flatten().collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted
    }

    fn open(
        &self,
        file: &DataFile,
    ) -> Result<(ParquetRecordBatchReader, Vec<Option<usize>>, (Option<i64>, Option<i64>))> {
        let (builder, _) = self.plan(file)?;
        // Table columns by field id -> root column index in the file.
        let roots = self.roots(builder.schema());
        let wanted = self.read_roots(builder.schema());
        let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.clone());
        let reader = builder
            .with_projection(mask)
            .with_batch_size(self.batch_rows)
            .build()
            .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
        // Position of each table column within the projected batch.
        let positions = roots.iter().map(|r| r.map(|root| wanted.binary_search(&root).unwrap_or(0))).collect();
        Ok((reader, positions, (file.first_row_id, file.sequence_number)))
    }

    /// The rows of `file` (of `rows` rows) that may pass the scan's filter by the scalar indexes of
    /// its columns, or None where no index narrows it. A missing index (a file written before the
    /// index was declared) is skipped silently, a damaged one with a warning: either way the file is
    /// read without it, so the answer stays the same.
    fn index_candidates(&self, file: &DataFile, rows: u64) -> (Option<roaring::RoaringBitmap>, u64) {
        let Some(filter) = self.prune.as_ref() else {
            return (None, 0);
        };
        if self.scalar.is_empty() || rows > u32::MAX as u64 {
            return (None, 0);
        }
        let Ok(data_path) = self.storage.relative(&file.file_path) else {
            return (None, 0);
        };
        let mut loaded: HashMap<i32, Option<Arc<crate::index::ScalarIndex>>> = HashMap::new();
        let mut index_of = |column: &str| -> Option<Arc<crate::index::ScalarIndex>> {
            let (_, id, data_type) = self.scalar.iter().find(|(name, ..)| name == column)?;
            loaded
                .entry(*id)
                .or_insert_with(|| {
                    let path = crate::index::scalar_index_path(data_path, *id);
                    let parsed = match self.storage.map(&path, false) {
                        Ok(region) => {
                            crate::index::ScalarIndex::parse(region, rows, data_type, &self.storage.uri(&path))
                        }
                        Err(Error::NotFound(_)) => return None,
                        Err(e) => Err(e),
                    };
                    match parsed {
                        Ok(index) => Some(Arc::new(index)),
                        Err(e) => {
                            warn(&format!("{e}; reading {} without it", file.file_path));
                            None
                        }
                    }
                })
                .clone()
        };
        let candidates = match crate::index::candidate_rows(filter, true, rows as u32, &mut index_of) {
            Ok(candidates) => candidates,
            Err(e) => {
                warn(&format!("scalar index of {}: {e}; reading the file without it", file.file_path));
                None
            }
        };
        let bytes = loaded.values().flatten().map(|index| index.bytes_read()).sum();
        (candidates, bytes)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.current.is_none() {
                let Some(file) = self.files.pop_front() else {
                    return Ok(None);
                };
                self.current = Some(self.open(&file)?);
                self.reading = file.file_path;
            }
            let (reader, positions, (first_row_id, sequence_number)) = self.current.as_mut().expect("opened above");
            // A page that no longer decodes is the file's damage: named, whether the decoder returned
            // an error or panicked on it.
            let next =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next())).unwrap_or_else(|payload| {
                    let message = crate::error::panic_message(payload.as_ref());
                    Some(Err(ArrowError::ParquetError(format!("the decoder panicked: {message}"))))
                });
            match next {
                None => self.current = None,
                Some(batch) => {
                    let batch = batch.map_err(|e| Error::Corrupt(format!("data file {}: {e}", self.reading)))?;
                    let mut columns = Vec::with_capacity(self.schema.fields().len());
                    let row_positions = batch
                        .column_by_name(ROW_POSITION)
                        .and_then(|c| arrow::array::AsArray::as_primitive_opt::<Int64Type>(c));
                    for (field, position) in self.schema.fields().iter().zip(positions.iter()) {
                        if let Some(rows) = row_positions.filter(|_| lineage::is_lineage(field.name())) {
                            let stored = position.map(|p| batch.column(p));
                            columns.push(lineage::values(field.name(), stored, rows, *first_row_id, *sequence_number));
                            continue;
                        }
                        columns.push(match position {
                            Some(p) => {
                                let column = batch.column(*p);
                                if column.data_type() == field.data_type() {
                                    column.clone()
                                } else {
                                    cast(column, field.data_type())?
                                }
                            }
                            None => new_null_array(field.data_type(), batch.num_rows()),
                        });
                    }
                    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                    return Ok(Some(RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?));
                }
            }
        }
    }
}

impl Iterator for TableScan {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // What goes wrong with a file's batches is the file's (a damaged footer can declare columns
        // its pages do not hold): its errors name it.
        let next = self.next_batch().map_err(|e| if self.reading.is_empty() { e } else { e.within(&self.reading) });
        next.map_err(|e| ArrowError::ExternalError(Box::new(e))).transpose()
    }
}

impl RecordBatchReader for TableScan {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatchIterator, StringArray};
    use arrow::datatypes::Field;

    use super::*;

    fn schema() -> SchemaRef {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        Arc::new(ArrowSchema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("embedding", DataType::FixedSizeList(item, 3), false),
        ]))
    }

    fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
        let n = (ids.end - ids.start) as usize;
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let names: Vec<Option<String>> = ids.clone().map(|i| (i % 4 != 0).then(|| format!("n{i}"))).collect();
        let values: Vec<f32> = ids.clone().flat_map(|i| [i as f32, 0.5, -(i as f32)]).collect();
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(ids)),
                Arc::new(StringArray::from(names)),
                Arc::new(FixedSizeListArray::new(item, 3, Arc::new(Float32Array::from(values)), None)),
            ],
        )
        .inspect(|b| {
            assert_eq!(b.num_rows(), n);
        })
        .unwrap()
    }

    fn reader(batches: Vec<RecordBatch>) -> impl RecordBatchReader {
        RecordBatchIterator::new(batches.into_iter().map(Ok), schema())
    }

    fn ids(table: &Table, snapshot: Option<&Snapshot>) -> Vec<i64> {
        let files = table.data_files(snapshot).unwrap();
        let mut ids: Vec<i64> = table
            .scan_files(files, Some(&["id".to_owned()]), 1000)
            .unwrap()
            .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn create_append_scan_and_travel_in_time() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().join("t");
        let location = location.to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        assert!(table.data_files(table.metadata().current_snapshot()).unwrap().is_empty());
        let first = table.append(reader(vec![batch(0..100), batch(100..150)])).unwrap();
        let second = table.append(reader(vec![batch(150..160)])).unwrap();
        assert_eq!(table.version(), 3);

        let reopened = Table::load(location, &HashMap::new()).unwrap();
        assert_eq!(reopened.metadata().current_snapshot_id, Some(second));
        assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), (0..160).collect::<Vec<_>>());
        let earlier = reopened.snapshot(Some(first), None).unwrap();
        assert_eq!(ids(&reopened, earlier), (0..150).collect::<Vec<_>>());
        let at = reopened.metadata().snapshot(first).unwrap().timestamp_ms;
        assert_eq!(reopened.snapshot(None, Some(at)).unwrap().unwrap().snapshot_id, first);
        assert_eq!(reopened.metadata().current_snapshot().unwrap().summary["total-records"], "160");

        // Every column comes back as written, the vector as a fixed-size list.
        let files = reopened.data_files(reopened.snapshot(Some(first), None).unwrap()).unwrap();
        let all: Vec<RecordBatch> = reopened.scan_files(files, None, 64).unwrap().map(Result::unwrap).collect();
        let merged = arrow::compute::concat_batches(&all[0].schema(), &all).unwrap();
        assert_eq!(merged.num_rows(), 150);
        assert!(matches!(merged.schema().field(2).data_type(), DataType::FixedSizeList(_, 3)));
        let names = merged.column(1).as_string::<i32>();
        let row = merged.column(0).as_primitive::<Int64Type>().values().iter().position(|&v| v == 7).unwrap();
        assert_eq!(names.value(row), "n7");
        let vector = merged.column(2).as_fixed_size_list().value(row);
        assert_eq!(vector.as_primitive::<Float32Type>().values(), &[7.0, 0.5, -7.0]);
        assert_eq!(reopened.vectors(), HashMap::from([(3, 3)]));
    }

    #[test]
    fn files_carry_counts_and_bounds_for_pruning() {
        let dir = tempfile::tempdir().unwrap();
        let mut table =
            Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.append(reader(vec![batch(10..20), batch(5..8)])).unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.record_count, 13);
        assert_eq!(f.value_counts[&1], 13);
        assert_eq!(f.null_value_counts[&2], 2); // ids 12 and 16
        assert_eq!(f.lower_bounds[&1], 5i64.to_le_bytes());
        assert_eq!(f.upper_bounds[&1], 19i64.to_le_bytes());
        assert_eq!(f.lower_bounds[&2], b"n10");
    }

    #[test]
    fn bad_writes_are_refused_and_commit_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let unknown = Arc::new(ArrowSchema::new(vec![Field::new("colour", DataType::Utf8, true)]));
        let bad = RecordBatch::try_new(unknown.clone(), vec![Arc::new(StringArray::from(vec!["red"]))]).unwrap();
        let err = table.append(RecordBatchIterator::new(vec![Ok(bad)], unknown)).unwrap_err();
        assert!(err.to_string().contains("'colour'"), "{err}");
        let wrong = Arc::new(ArrowSchema::new(vec![Field::new("id", DataType::Utf8, false)]));
        let bad = RecordBatch::try_new(wrong.clone(), vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
        let err = table.append(RecordBatchIterator::new(vec![Ok(bad)], wrong)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("'id'"), "{err}");
        assert!(table.append(reader(vec![])).is_err());
        assert!(Table::create(location, &schema(), BTreeMap::new(), &HashMap::new())
            .unwrap_err()
            .to_string()
            .contains("already exists"));
        let reopened = Table::load(location, &HashMap::new()).unwrap();
        assert_eq!(reopened.version(), 1);
        assert!(reopened.metadata().snapshots.is_empty());
    }

    #[test]
    fn corrupt_metadata_and_paths_outside_the_root_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..5)])).unwrap();
        // A manifest list pointing outside the table root.
        let mut metadata = table.metadata().clone();
        metadata.snapshots[0].manifest_list = "/etc/passwd".to_owned();
        let outside = Table { metadata, ..table.clone() };
        let err = outside.data_files(outside.metadata().current_snapshot()).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)) && err.to_string().contains("/etc/passwd"), "{err}");
        // A corrupted metadata file.
        std::fs::write(dir.path().join("metadata/v2.metadata.json"), b"{ not json").unwrap();
        let err = Table::load(location, &HashMap::new()).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)) && err.to_string().contains("v2.metadata.json"), "{err}");
    }

    #[test]
    fn sparse_vector_columns_are_searched_as_their_dense_twins_say() {
        use crate::vector::{metric::reference_distance, Metric, VectorSearch};
        use arrow::array::{ListArray, StructArray};
        use arrow::datatypes::{Fields, Int32Type};
        let dir = tempfile::tempdir().unwrap();
        let fields = Fields::from(vec![
            Field::new("indices", DataType::List(Arc::new(Field::new("item", DataType::Int32, true))), true),
            Field::new("values", DataType::List(Arc::new(Field::new("item", DataType::Float32, true))), true),
        ]);
        let sparse_schema = Arc::new(ArrowSchema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("terms", DataType::Struct(fields.clone()), true),
        ]));
        let mut table =
            Table::create(dir.path().to_str().unwrap(), &sparse_schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let dim = 30;
        let mut rng = crate::rand::SplitMix64(21);
        let mut dense: Vec<Option<Vec<f32>>> = Vec::new();
        for _ in 0..2 {
            let rows: Vec<Option<Vec<f32>>> = (0..120)
                .map(|i| {
                    (i % 17 != 5).then(|| {
                        (0..dim)
                            .map(|_| {
                                if rng.next_u64().is_multiple_of(3) {
                                    (rng.next_u64() % 200) as f32 / 10.0 - 10.0
                                } else {
                                    0.0
                                }
                            })
                            .collect()
                    })
                })
                .collect();
            let first = dense.len() as i64;
            let indices = ListArray::from_iter_primitive::<Int32Type, _, _>(rows.iter().map(|r| {
                r.as_ref().map(|v| {
                    v.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, _)| Some(i as i32)).collect::<Vec<_>>()
                })
            }));
            let values =
                ListArray::from_iter_primitive::<Float32Type, _, _>(rows.iter().map(|r| {
                    r.as_ref().map(|v| v.iter().filter(|x| **x != 0.0).map(|x| Some(*x)).collect::<Vec<_>>())
                }));
            let nulls = arrow::buffer::NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
            let terms = StructArray::new(fields.clone(), vec![Arc::new(indices), Arc::new(values)], Some(nulls));
            let ids = Int64Array::from_iter_values(first..first + rows.len() as i64);
            let batch = RecordBatch::try_new(sparse_schema.clone(), vec![Arc::new(ids), Arc::new(terms)]).unwrap();
            table.append(RecordBatchIterator::new(vec![Ok(batch)], sparse_schema.clone())).unwrap();
            dense.extend(rows);
        }
        let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
        let query_dense: Vec<f32> = (0..dim).map(|i| if i % 4 == 1 { i as f32 / 7.0 } else { 0.0 }).collect();
        let pairs: Vec<f32> = query_dense
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0.0)
            .flat_map(|(i, v)| [i as f32, *v])
            .rev()
            .collect::<Vec<_>>();
        // Pairs in any order: reversed above (value, position), put back as (position, value).
        let pairs: Vec<f32> = pairs.chunks_exact(2).flat_map(|p| [p[1], p[0]]).collect();
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            let mut want: Vec<(f64, i64)> = dense
                .iter()
                .enumerate()
                .filter_map(|(id, v)| v.as_ref().map(|v| (reference_distance(metric, &query_dense, v), id as i64)))
                .collect();
            want.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            let found = table
                .search(
                    files(),
                    Some(&["id".to_owned()]),
                    None,
                    &VectorSearch::new("terms", pairs.clone(), metric, 10),
                    50,
                )
                .unwrap();
            let distances = found.column(1).as_primitive::<Float64Type>().values().to_vec();
            for (got, w) in distances.iter().zip(&want) {
                assert!((got - w.0).abs() <= 1e-4 * (1.0 + w.0.abs()), "{metric}: {distances:?} vs {want:?}");
            }
            assert_eq!(found.num_rows(), 10);
        }
        let err = table
            .search(files(), None, None, &VectorSearch::new("terms", vec![1.0], Metric::L2, 3), 50)
            .unwrap_err()
            .to_string();
        assert!(err.contains("searching 'terms': a sparse query is (position, value) pairs"), "{err}");
    }

    #[test]
    fn binary_columns_are_searched_by_hamming_and_jaccard_as_a_full_scan_sorted_says() {
        use crate::vector::{Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let bits_schema = Arc::new(ArrowSchema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("bits", DataType::Binary, true),
            Field::new("fixed", DataType::FixedSizeBinary(3), false),
        ]));
        let mut table =
            Table::create(dir.path().to_str().unwrap(), &bits_schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let mut rng = crate::rand::SplitMix64(9);
        let mut rows: Vec<(i64, Option<[u8; 3]>, [u8; 3])> = Vec::new();
        for file in 0..3i64 {
            let range = file * 70..(file + 1) * 70;
            let chunk: Vec<(i64, Option<[u8; 3]>, [u8; 3])> = range
                .map(|id| {
                    let mut b = [0u8; 3];
                    b.iter_mut().for_each(|v| *v = rng.next_u64() as u8);
                    (id, (id % 9 != 4).then_some(b), [b[2], b[1], id as u8])
                })
                .collect();
            let batch = RecordBatch::try_new(
                bits_schema.clone(),
                vec![
                    Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.0))),
                    Arc::new(arrow::array::BinaryArray::from_iter(chunk.iter().map(|r| r.1.map(|b| b.to_vec())))),
                    Arc::new(
                        arrow::array::FixedSizeBinaryArray::try_from_iter(chunk.iter().map(|r| r.2.to_vec())).unwrap(),
                    ),
                ],
            )
            .unwrap();
            table.append(RecordBatchIterator::new(vec![Ok(batch)], bits_schema.clone())).unwrap();
            rows.extend(chunk);
        }
        let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
        let query = [0x5au8, 0x0f, 0xc3];
        // The reference: bits counted one by one, in f64; the answer sorts by it, ties by id.
        let distance = |metric: Metric, value: &[u8]| -> f64 {
            let (mut differ, mut both, mut either) = (0u32, 0u32, 0u32);
            for (x, y) in query.iter().zip(value) {
                for bit in 0..8 {
                    let (a, b) = ((x >> bit) & 1, (y >> bit) & 1);
                    differ += (a != b) as u32;
                    both += (a & b) as u32;
                    either += (a | b) as u32;
                }
            }
            if metric == Metric::Hamming {
                differ as f64
            } else if either == 0 {
                0.0
            } else {
                1.0 - both as f64 / either as f64
            }
        };
        let filter = Predicate::from_json(r#"{"op":"ge","column":"id","value":20}"#).unwrap();
        let as_query: Vec<f32> = query.iter().map(|&b| b as f32).collect();
        for metric in [Metric::Hamming, Metric::Jaccard] {
            for column in ["bits", "fixed"] {
                let value = |r: &(i64, Option<[u8; 3]>, [u8; 3])| {
                    if column == "bits" {
                        r.1.map(|b| b.to_vec())
                    } else {
                        Some(r.2.to_vec())
                    }
                };
                let mut want: Vec<(f64, i64)> = rows
                    .iter()
                    .filter(|r| r.0 >= 20)
                    .filter_map(|r| value(r).map(|v| (distance(metric, &v), r.0)))
                    .collect();
                want.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                let search = VectorSearch::new(column, as_query.clone(), metric, 12);
                let found = table.search(files(), Some(&["id".to_owned()]), Some(&filter), &search, 32).unwrap();
                let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
                let distances = found.column(1).as_primitive::<Float64Type>().values().to_vec();
                // Ties (many, for Hamming) may fall to either row: the distances are the answer's,
                // and each row found has the distance it is listed with.
                assert_eq!(ids.len(), 12);
                for (row, (got, w)) in distances.iter().zip(&want).enumerate() {
                    assert!((got - w.0).abs() < 1e-6, "{metric} over {column}: {distances:?} vs {want:?}");
                    let listed = want.iter().find(|x| x.1 == ids[row]).expect("a passing row with a value");
                    assert!((got - listed.0).abs() < 1e-6, "{metric} over {column}: row {}", ids[row]);
                }
                // Every row's distance (null without a value) agrees with the search.
                let every: usize = table
                    .scan_with_distances(files(), Some(&["id".to_owned()]), Some(filter.clone()), &search, 32)
                    .unwrap()
                    .map(|b| b.unwrap().column(1).as_primitive::<Float64Type>().iter().flatten().count())
                    .sum();
                assert_eq!(every, want.len(), "{metric} over {column}");
            }
        }
        // Rows without a value come last, as for float vectors.
        let all = table
            .search(
                files(),
                Some(&["id".to_owned()]),
                None,
                &VectorSearch::new("bits", as_query.clone(), Metric::Hamming, 210),
                32,
            )
            .unwrap();
        assert_eq!(all.column(1).null_count(), rows.iter().filter(|r| r.1.is_none()).count());
        assert!(all.column(1).as_primitive::<Float64Type>().iter().skip_while(|d| d.is_some()).all(|d| d.is_none()));
        // Bad searches are named.
        let err = |column: &str, query: Vec<f32>, metric: Metric| {
            table.search(files(), None, None, &VectorSearch::new(column, query, metric, 3), 32).unwrap_err().to_string()
        };
        assert!(err("bits", as_query.clone(), Metric::L2)
            .contains("metric 'l2' compares float vectors, not bit-packed binary vectors"));
        assert!(err("id", as_query.clone(), Metric::Hamming)
            .contains("metric 'hamming' compares bit-packed binary columns, but 'id' is Int64"));
        assert!(err("bits", vec![1.0, 256.0, 0.0], Metric::Hamming).contains("binary query byte 256 is not in 0..=255"));
        assert!(err("fixed", vec![1.0, 2.0], Metric::Jaccard).contains("jaccard: bit vectors of 2 and 3 bytes"));
    }

    #[test]
    fn filtered_scan_and_search_across_files_equal_a_full_scan_sorted() {
        use crate::vector::{metric::reference_distance, Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let mut table =
            Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        for range in [0..40, 40..90, 90..100] {
            table.append(reader(vec![batch(range)])).unwrap();
        }
        let files = || table.data_files(table.metadata().current_snapshot()).unwrap();
        let filter = Predicate::from_json(
            r#"{"op":"and","args":[{"op":"not_null","column":"name"},{"op":"ge","column":"id","value":10}]}"#,
        )
        .unwrap();
        // The filtered scan keeps exactly the rows the filter passes, with only the asked-for column.
        let mut kept: Vec<i64> = table
            .scan(files(), Some(&["id".to_owned()]), Some(filter.clone()), 16)
            .unwrap()
            .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        kept.sort_unstable();
        let want: Vec<i64> = (10..100).filter(|i| i % 4 != 0).collect();
        assert_eq!(kept, want);
        // Search: the reference sorts every passing row by its float64 distance, ties by id.
        let query = vec![30.0, 0.5, -31.0];
        for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct, Metric::L1] {
            let search = VectorSearch::new("embedding", query.clone(), metric, 7);
            let found =
                table.search(files(), Some(&["id".to_owned(), "name".to_owned()]), Some(&filter), &search, 16).unwrap();
            assert_eq!(
                found.schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
                vec!["id", "name", "_distance"]
            );
            let mut reference: Vec<(f64, i64)> =
                want.iter().map(|&i| (reference_distance(metric, &query, &[i as f32, 0.5, -(i as f32)]), i)).collect();
            reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
            let distances = found.column(2).as_primitive::<Float64Type>().values().to_vec();
            for (row, (d, _)) in reference.iter().take(7).enumerate() {
                assert!(
                    (distances[row] - d).abs() < 1e-3 * (1.0 + d.abs()),
                    "{metric}: {distances:?} vs {reference:?}"
                );
            }
            if metric == Metric::L2 || metric == Metric::L1 {
                assert_eq!(ids, reference.iter().take(7).map(|r| r.1).collect::<Vec<_>>(), "{metric}");
            }
        }
        // Every passing row's distance, which a sort and limit over it would turn into the top-k.
        let search = VectorSearch::new("embedding", query.clone(), Metric::L2, 1);
        let mut every: Vec<(f64, i64)> = table
            .scan_with_distances(files(), Some(&["id".to_owned()]), Some(filter.clone()), &search, 16)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
                let d = b.column(1).as_primitive::<Float64Type>().values().to_vec();
                d.into_iter().zip(ids).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(every.len(), want.len());
        every.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let top = table
            .search(files(), Some(&["id".to_owned()]), Some(&filter), &VectorSearch { k: 5, ..search }, 16)
            .unwrap();
        assert_eq!(
            top.column(0).as_primitive::<Int64Type>().values().to_vec(),
            every.iter().take(5).map(|e| e.1).collect::<Vec<_>>()
        );
        let bad = VectorSearch::new("name", vec![1.0], Metric::L2, 3);
        assert!(table
            .search(files(), None, None, &bad, 16)
            .unwrap_err()
            .to_string()
            .contains("not a float vector column"));
        // An empty table searches to no rows.
        let empty =
            Table::create(dir.path().join("e").to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let search = VectorSearch::new("embedding", query, Metric::L2, 3);
        assert_eq!(empty.search(Vec::new(), None, None, &search, 16).unwrap().num_rows(), 0);
    }

    #[test]
    fn search_through_sidecars_equals_search_of_the_parquet_columns_and_damage_only_warns() {
        use crate::vector::{Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let mut table =
            Table::create(dir.path().to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        for range in [0..300, 300..700, 700..1000] {
            table.append(reader(vec![batch(range)])).unwrap();
        }
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let sidecars: Vec<std::path::PathBuf> =
            files.iter().map(|f| std::path::PathBuf::from(sidecar_path(&f.file_path, 3))).collect();
        assert!(sidecars.iter().all(|p| p.exists()), "every append writes a sidecar beside its data file");
        let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
        let columns = ["name".to_owned(), "id".to_owned()];
        let answers = |table: &Table| {
            [Metric::L2, Metric::Cosine, Metric::InnerProduct]
                .map(|metric| {
                    let search = VectorSearch::new("embedding", vec![400.0, 0.5, -380.0], metric, 9);
                    table.search(files.clone(), Some(&columns), Some(&filter), &search, 100).unwrap()
                })
                .to_vec()
        };
        let with_sidecars = answers(&table);
        assert_eq!(with_sidecars[0].num_rows(), 9);
        assert_eq!(
            with_sidecars[0].schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
            vec!["name", "id", "_distance"]
        );
        // One sidecar damaged, one gone: the same answers, from the Parquet columns.
        std::fs::write(&sidecars[0], b"HSVEC001 truncated").unwrap();
        std::fs::remove_file(&sidecars[1]).unwrap();
        assert_eq!(answers(&table), with_sidecars);
        // Aborting a written file removes its sidecar too.
        let file = table.write_data_files(reader(vec![batch(5000..5010)])).unwrap().remove(0);
        let sidecar = std::path::PathBuf::from(sidecar_path(&file.file_path, 3));
        assert!(sidecar.exists());
        table.delete_files(&[file]).unwrap();
        assert!(!sidecar.exists());
    }

    #[test]
    fn exact_searches_on_gpu_backends_answer_as_the_cpu_does() {
        use crate::vector::gpu::{assert_same_neighbors, test_device, Backend};
        use crate::vector::{FloatQuery, Metric, Neighbor, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        for range in [0..3000, 3000..5000] {
            table.append(reader(vec![batch(range)])).unwrap();
        }
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        // A quarter of the rows (every fourth id) have no name: the filter leaves them out.
        let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
        let query = vec![1234.3, 0.1, -1234.2];
        let search = |metric: Metric, backend: Backend, filter: Option<&Predicate>| {
            let search = VectorSearch { backend, ..VectorSearch::new("embedding", query.clone(), metric, 7) };
            table.search(files.clone(), Some(&["id".to_owned()]), filter, &search, 100)
        };
        let neighbors = |found: RecordBatch| -> Vec<Neighbor> {
            let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
            let distances = found.column(1).as_primitive::<arrow::datatypes::Float64Type>().values().to_vec();
            ids.into_iter().zip(distances).map(|(id, d)| Neighbor { ordinal: id as u64, distance: d as f32 }).collect()
        };
        let gpu = test_device();
        for metric in [Metric::L2, Metric::L1, Metric::InnerProduct] {
            for filter in [None, Some(&filter)] {
                let cpu = search(metric, Backend::Cpu, filter).unwrap();
                assert_eq!(
                    search(metric, Backend::Auto, filter).unwrap(),
                    cpu,
                    "a small search stays on the CPU under auto"
                );
                let Some(gpu) = gpu else { continue };
                let checked = FloatQuery::new(metric, query.clone(), 3).unwrap();
                let own = |id: u64| checked.distance(&[id as f32, 0.5, -(id as f32)]);
                let on = neighbors(search(metric, gpu, filter).unwrap());
                assert!(filter.is_none() || on.iter().all(|n| n.ordinal % 4 != 0), "{metric}: {on:?}");
                assert_same_neighbors(&on, &neighbors(cpu), own, &format!("{metric} {filter:?}"));
            }
        }
        if !cfg!(feature = "cuda") {
            let err = search(Metric::L2, Backend::Cuda, None).unwrap_err();
            assert!(err.to_string().contains("--features cuda"), "{err}");
        }
    }

    #[test]
    fn vector_indexes_build_without_rewriting_data_answer_searches_and_drop() {
        use crate::vector::{IndexUse, Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        for range in [0..1000, 1000..2000] {
            table.append(reader(vec![batch(range)])).unwrap();
        }
        let before = table.data_files(table.metadata().current_snapshot()).unwrap();
        let snapshot = table.metadata().current_snapshot().map(|s| s.snapshot_id);
        let params = HnswParams { metric: Metric::L2, m: 8, ef_construction: 50 };
        assert_eq!(table.create_vector_index("embedding", params).unwrap(), 2);
        assert_eq!(
            table.metadata().current_snapshot().map(|s| s.snapshot_id),
            snapshot,
            "declaring an index adds no snapshot"
        );
        let graph = |f: &DataFile| std::path::PathBuf::from(hnsw_path(&f.file_path, 3));
        assert!(before.iter().all(|f| graph(f).exists()));
        assert_eq!(
            (table.index_builds().totals().0, table.index_builds().totals().1),
            (2, 2000),
            "two files of 1000 vectors indexed"
        );
        table.append(reader(vec![batch(2000..3000)])).unwrap();
        let (files, vectors, nanos) = table.index_builds().totals();
        assert_eq!((files, vectors), (3, 3000), "and one more as written");
        assert!(nanos > 0);
        let mut table = Table::load(location, &HashMap::new()).unwrap();
        assert_eq!(table.index_builds().totals(), (0, 0, 0), "counts belong to a handle");
        assert_eq!(table.vector_indexes().get(&3), Some(&params));
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert_eq!(files.len(), 3);
        assert!(files.iter().all(|f| graph(f).exists()), "appends after the declaration are indexed as written");
        // The file of the second append (ids 1000..2000), which holds the nearest rows.
        let middle = files
            .iter()
            .find(|f| {
                let first =
                    table.scan_files(vec![(*f).clone()], Some(&["id".to_owned()]), 1).unwrap().next().unwrap().unwrap();
                first.column(0).as_primitive::<Int64Type>().value(0) == 1000
            })
            .unwrap()
            .clone();

        let filter = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
        let ids = |table: &Table, metric: Metric, index: IndexUse, filter: Option<&Predicate>| -> Vec<i64> {
            let search =
                VectorSearch { index, ..VectorSearch::new("embedding", vec![1500.0, 0.5, -1500.0], metric, 5) };
            let found = table.search(files.clone(), Some(&["id".to_owned()]), filter, &search, 100).unwrap();
            found.column(0).as_primitive::<Int64Type>().values().to_vec()
        };
        let exact = ids(&table, Metric::L2, IndexUse::Exact, None);
        assert_eq!(exact, vec![1500, 1499, 1501, 1498, 1502]);
        assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);
        assert_eq!(
            ids(&table, Metric::L2, IndexUse::Ef(5), Some(&filter)),
            ids(&table, Metric::L2, IndexUse::Exact, Some(&filter))
        );

        // The graph answers: one that holds only the even rows of the middle file finds only those.
        let sidecar = std::fs::read(sidecar_path(&middle.file_path, 3)).unwrap();
        let vectors = Sidecar::parse(&sidecar, 1000, 3, "s").unwrap();
        let even = BooleanBuffer::collect_bool(1000, |i| i % 2 == 0);
        let partial = HnswGraph::build(vectors.vectors(), 3, &even, params).unwrap();
        std::fs::write(graph(&middle), partial.to_bytes()).unwrap();
        assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), vec![1500, 1498, 1502, 1496, 1504]);
        // Another metric than the index's, or exact asked for: exact search.
        assert_eq!(ids(&table, Metric::L1, IndexUse::Ef(5), None), ids(&table, Metric::L1, IndexUse::Exact, None));
        // A damaged graph only warns: the exact answer.
        std::fs::write(graph(&middle), b"HSHNSW01 but not much more").unwrap();
        assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);

        assert_eq!(table.drop_vector_index("embedding").unwrap(), 3);
        assert!(files.iter().all(|f| !graph(f).exists()));
        assert!(table.vector_indexes().is_empty());
        assert_eq!(ids(&table, Metric::L2, IndexUse::Ef(5), None), exact);
        let err = |e: Error| e.to_string();
        assert!(err(table.drop_vector_index("embedding").unwrap_err()).contains("has no vector index"));
        assert!(err(table.create_vector_index("name", params).unwrap_err()).contains("not a float vector column"));
        assert!(
            err(table.create_vector_index("nope", params).unwrap_err()).contains("'nope' is not in the table schema")
        );
        assert!(err(table.create_vector_index("embedding", HnswParams { m: 0, ..params }).unwrap_err())
            .contains("m must be"));
        // The data files themselves never changed.
        let after = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert!(before
            .iter()
            .all(|b| after.iter().any(|a| a.file_path == b.file_path && a.file_size_in_bytes == b.file_size_in_bytes)));
    }

    use crate::rand::SplitMix64 as Rng;

    /// The table of the random pruning tests: a key `k` and nullable `b`, `s`, `x`.
    fn kbsx_schema() -> SchemaRef {
        Arc::new(ArrowSchema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("b", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
        ]))
    }

    fn kbsx_rows(
        k: Vec<i64>,
        b: Vec<Option<i32>>,
        s: Vec<Option<String>>,
        x: Vec<Option<f64>>,
    ) -> impl RecordBatchReader {
        use arrow::array::{Float64Array, Int32Array};
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(k)),
            Arc::new(Int32Array::from(b)),
            Arc::new(StringArray::from(s)),
            Arc::new(Float64Array::from(x)),
        ];
        RecordBatchIterator::new(vec![RecordBatch::try_new(kbsx_schema(), columns)], kbsx_schema())
    }

    fn random_predicate(rng: &mut Rng, depth: u32) -> Predicate {
        random_predicate_over(rng, depth, 1200)
    }

    /// A random predicate over columns k (values below `k_span`), b, s and x.
    fn random_predicate_over(rng: &mut Rng, depth: u32, k_span: u64) -> Predicate {
        let column = ["k", "b", "s", "x"][rng.below(4) as usize].to_owned();
        let value = |rng: &mut Rng, column: &str| -> serde_json::Value {
            match column {
                "k" => serde_json::json!(rng.below(k_span) as i64 - 100),
                "b" => {
                    if rng.below(10) == 0 {
                        serde_json::json!(rng.below(50) as f64 + 0.5)
                    } else {
                        serde_json::json!(rng.below(60) as i64)
                    }
                }
                "s" => serde_json::json!(format!("s{}", rng.below(40))),
                _ => serde_json::json!((rng.below(2000) as f64 - 1000.0) / 10.0),
            }
        };
        if depth > 0 && rng.below(3) == 0 {
            let args = (0..1 + rng.below(3)).map(|_| random_predicate_over(rng, depth - 1, k_span)).collect();
            return match rng.below(3) {
                0 => Predicate::And { args },
                1 => Predicate::Or { args },
                _ => Predicate::Not { arg: Box::new(random_predicate_over(rng, depth - 1, k_span)) },
            };
        }
        let v = value(rng, &column);
        match rng.below(11) {
            0 => Predicate::Eq { column, value: v },
            1 => Predicate::Ne { column, value: v },
            2 => Predicate::Lt { column, value: v },
            3 => Predicate::Le { column, value: v },
            4 => Predicate::Gt { column, value: v },
            5 => Predicate::Ge { column, value: v },
            6 => Predicate::In { values: (0..3).map(|_| value(rng, &column)).collect(), column },
            7 => Predicate::IsNull { column },
            8 => Predicate::NotNull { column },
            9 => Predicate::StartsWith { column: "s".into(), prefix: format!("s{}", rng.below(5)) },
            _ => Predicate::Eq { column, value: serde_json::Value::Null },
        }
    }

    #[test]
    fn pruned_scans_return_exactly_the_rows_of_a_full_scan_filtered_after() {
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let mut rng = Rng(7);
        // Ten files, each a band of k (so bounds prune), with nulls, all-null and constant columns in some.
        for f in 0..10i64 {
            let n = 50 + rng.below(50) as usize;
            let k: Vec<i64> = (0..n).map(|_| f * 100 + rng.below(100) as i64).collect();
            let b: Vec<Option<i32>> = (0..n)
                .map(|_| (f % 4 != 3 && rng.below(5) != 0).then(|| if f == 5 { 7 } else { rng.below(60) as i32 }))
                .collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", f * 3 + rng.below(10) as i64))).collect();
            let x: Vec<Option<f64>> =
                (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        }
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let keys = |stream: BatchStream| {
            let mut out: Vec<(i64, Option<i32>)> = stream
                .flat_map(|b| {
                    let b = b.unwrap();
                    let k = b.column(0).as_primitive::<Int64Type>().clone();
                    let bb = b.column(1).as_primitive::<Int32Type>().clone();
                    (0..b.num_rows())
                        .map(move |i| (k.value(i), bb.is_valid(i).then(|| bb.value(i))))
                        .collect::<Vec<_>>()
                })
                .collect();
            out.sort_unstable();
            out
        };
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let (mut pruned_total, mut kept_total) = (0, 0);
        for _ in 0..400 {
            let predicate = random_predicate(&mut rng, 2);
            // The slow twin: every row of every file, the filter applied after.
            let want = keys(Box::new(RecordBatchIterator::new(
                vec![Ok(predicate.filter(&everything).unwrap())],
                schema.clone(),
            )));
            let kept = table.prune(files.clone(), Some(&predicate)).unwrap();
            pruned_total += files.len() - kept.len();
            kept_total += kept.len();
            let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 64).unwrap());
            assert_eq!(got, want, "{}", predicate.to_json());
        }
        // Pruning did something, and not everything.
        assert!(pruned_total > 1000 && kept_total > 500, "pruned {pruned_total}, kept {kept_total}");
    }

    #[test]
    fn partitioned_sorted_tables_split_rows_by_partition_prune_by_it_and_stay_exact() {
        use super::super::partition::Transform;
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let schema = kbsx_schema();
        let properties = BTreeMap::from([
            (PARTITIONING.to_owned(), "bucket(k, 4), s, truncate(b, 10)".to_owned()),
            (SORTED_BY.to_owned(), "x DESC, k".to_owned()),
        ]);
        let mut table = Table::create(&location, &schema, properties, &HashMap::new()).unwrap();
        assert_eq!(table.partitioning().unwrap(), vec!["bucket(k, 4)", "s", "truncate(b, 10)"]);
        assert_eq!(table.sort_order().unwrap(), vec!["x DESC NULLS LAST", "k ASC NULLS FIRST"]);
        assert!(!table.metadata().properties.contains_key(PARTITIONING));
        let mut rng = Rng(11);
        for _ in 0..4 {
            let n = 300;
            let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
            let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(6)))).collect();
            let x: Vec<Option<f64>> =
                (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        }
        let check_files = |table: &Table| {
            let files = table.data_files(table.metadata().current_snapshot()).unwrap();
            for file in &files {
                assert!(file.file_path.contains("/data/k_bucket="), "{}", file.file_path);
                let rows = table
                    .scan_files(vec![DataFile { deletes: Vec::new(), ..file.clone() }], None, 100_000)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect::<Vec<_>>();
                let rows = arrow::compute::concat_batches(&schema, &rows).unwrap();
                for (field_id, column, transform) in [
                    (1000, 0, Transform::Bucket(4)),
                    (1001, 2, Transform::Identity),
                    (1002, 1, Transform::Truncate(10)),
                ] {
                    let values = transform.apply(rows.column(column)).unwrap();
                    for i in 0..rows.num_rows() {
                        assert_eq!(
                            super::super::partition::single_value(&values, i).as_ref(),
                            file.partition.get(&field_id),
                            "{}",
                            file.file_path
                        );
                    }
                }
                assert_eq!(file.sort_order_id, Some(1));
                let x = rows.column(3).as_primitive::<Float64Type>();
                let k = rows.column(0).as_primitive::<Int64Type>();
                for i in 1..rows.num_rows() {
                    let before =
                        (x.is_valid(i - 1).then(|| -x.value(i - 1)).map_or((1, 0.0), |v| (0, v)), k.value(i - 1));
                    let after = (x.is_valid(i).then(|| -x.value(i)).map_or((1, 0.0), |v| (0, v)), k.value(i));
                    assert!(before <= after, "rows out of order in {}", file.file_path);
                }
            }
            files
        };
        let files = check_files(&table);
        assert!(files.len() > 50, "{} files", files.len());
        let everything = |table: &Table, files: &[DataFile]| {
            Arc::new(
                arrow::compute::concat_batches(
                    &schema,
                    &table.scan_files(files.to_vec(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
                )
                .unwrap(),
            )
        };
        let keys = |batches: Vec<RecordBatch>| {
            let mut out: Vec<String> = batches
                .iter()
                .flat_map(|b| {
                    (0..b.num_rows()).map(move |i| {
                        format!(
                            "{:?}",
                            b.slice(i, 1)
                                .columns()
                                .iter()
                                .map(|c| arrow::util::display::array_value_to_string(c, 0).unwrap())
                                .collect::<Vec<_>>()
                        )
                    })
                })
                .collect();
            out.sort();
            out
        };
        let compare_all = |table: &Table, rng: &mut Rng| {
            let files = table.data_files(table.metadata().current_snapshot()).unwrap();
            let all = everything(table, &files);
            let mut pruned = 0;
            for _ in 0..150 {
                let predicate = random_predicate(rng, 2);
                let want = keys(vec![predicate.filter(&all).unwrap()]);
                let kept = table.prune(files.clone(), Some(&predicate)).unwrap();
                pruned += files.len() - kept.len();
                let got = keys(
                    table.scan(files.clone(), None, Some(predicate.clone()), 64).unwrap().map(Result::unwrap).collect(),
                );
                assert_eq!(got, want, "{}", predicate.to_json());
            }
            pruned
        };
        assert!(compare_all(&table, &mut rng) > 500);
        // Equality on a bucketed column keeps only the files of its bucket (bounds alone cannot).
        let pruner = PartitionPruner::new(table.metadata(), &table.arrow_schema().unwrap());
        let probe = Predicate::Eq { column: "k".into(), value: serde_json::json!(500) };
        let kept = files.iter().filter(|f| pruner.may_match(&probe, f)).count();
        assert!(kept * 3 < files.len() && kept > 0, "kept {kept} of {}", files.len());
        // Deletes carry their data file's partition; compaction keeps files within partitions.
        table.delete_where(Some(&Predicate::Lt { column: "k".into(), value: serde_json::json!(300) })).unwrap();
        let reloaded = Table::load(&location, &HashMap::new()).unwrap();
        let with_deletes = reloaded.data_files(reloaded.metadata().current_snapshot()).unwrap();
        for file in with_deletes.iter().flat_map(|f| f.deletes.iter().map(move |d| (f, d))) {
            assert_eq!((file.1.spec_id, &file.1.partition), (file.0.spec_id, &file.0.partition));
        }
        compare_all(&reloaded, &mut rng);
        let before = keys(table.scan(with_deletes.clone(), None, None, 1000).unwrap().map(Result::unwrap).collect());
        table.rewrite_data_files(10_000).unwrap().unwrap();
        let compacted = check_files(&table);
        assert_eq!(
            keys(table.scan(compacted.clone(), None, None, 1000).unwrap().map(Result::unwrap).collect()),
            before
        );
        compare_all(&table, &mut rng);
        // The manifest list summarizes each manifest's partition values.
        let manifests = table.manifests(table.metadata().current_snapshot().unwrap()).unwrap();
        let data = manifests.iter().find(|m| m.content == 0).unwrap();
        assert_eq!(data.partitions.as_ref().map(Vec::len), Some(3));
        let buckets = &data.partitions.as_ref().unwrap()[0];
        assert_eq!(
            (buckets.lower_bound.as_deref(), buckets.upper_bound.as_deref()),
            (Some(&0i32.to_le_bytes()[..]), Some(&3i32.to_le_bytes()[..]))
        );
        assert!(data.partitions.as_ref().unwrap()[1].contains_null);
        let err = table.drop_column("s").unwrap_err().to_string();
        assert!(err.contains("partitioned by"), "{err}");
        assert!(table.drop_column("x").unwrap_err().to_string().contains("sorted by"));
        for (bad, why) in [("bucket(nope, 4)", "does not have"), ("hour(k)", "does not apply")] {
            let props = BTreeMap::from([(PARTITIONING.to_owned(), bad.to_owned())]);
            let err =
                Table::create(&format!("{location}/bad"), &schema, props, &HashMap::new()).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!(!std::path::Path::new(&format!("{location}/bad")).join("metadata").exists());
    }

    #[test]
    fn aggregates_from_metadata_equal_the_aggregates_of_a_full_scan_or_are_refused() {
        use crate::scan::MetadataAggregate as A;
        use arrow::util::display::array_value_to_string;
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let asked = [
            A::CountStar,
            A::Count("b".into()),
            A::Min("k".into()),
            A::Max("k".into()),
            A::Min("b".into()),
            A::Max("b".into()),
            A::Min("s".into()),
            A::Max("s".into()),
            A::Count("s".into()),
            A::Count("x".into()),
        ];
        // The slow twin: the same aggregates over every row read.
        let scanned = |table: &Table| -> Vec<String> {
            let files = table.data_files(table.metadata().current_snapshot()).unwrap();
            let all = arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files, None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap();
            let text =
                |a: &dyn Array| if a.is_null(0) { "null".to_owned() } else { array_value_to_string(a, 0).unwrap() };
            let min_max = |i: usize| -> (String, String) {
                let sorted = arrow::compute::sort(
                    all.column(i),
                    Some(arrow::compute::SortOptions { descending: false, nulls_first: false }),
                )
                .unwrap();
                let valid = sorted.len() - sorted.null_count();
                if valid == 0 {
                    ("null".into(), "null".into())
                } else {
                    (text(&sorted.slice(0, 1)), text(&sorted.slice(valid - 1, 1)))
                }
            };
            let count = |i: usize| (all.num_rows() - all.column(i).null_count()).to_string();
            let ((k0, k1), (b0, b1), (s0, s1)) = (min_max(0), min_max(1), min_max(2));
            vec![all.num_rows().to_string(), count(1), k0, k1, b0, b1, s0, s1, count(2), count(3)]
        };
        let answered = |table: &Table, asked: &[A]| -> Option<Vec<String>> {
            let batch = table.aggregate_from_metadata(table.metadata().current_snapshot(), asked).unwrap()?;
            assert_eq!(batch.num_rows(), 1);
            Some(
                batch
                    .columns()
                    .iter()
                    .map(|c| if c.is_null(0) { "null".to_owned() } else { array_value_to_string(c, 0).unwrap() })
                    .collect(),
            )
        };
        let mut rng = Rng(41);
        for f in 0..12i64 {
            let n = 1 + rng.below(80) as usize;
            let k: Vec<i64> = (0..n).map(|_| rng.below(10_000) as i64 - 5_000).collect();
            let b: Vec<Option<i32>> =
                (0..n).map(|_| (f % 5 != 2 && rng.below(4) != 0).then(|| rng.below(1000) as i32 - 500)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(5) != 0).then(|| format!("s{}", rng.below(100_000)))).collect();
            let x: Vec<Option<f64>> = (0..n).map(|_| (rng.below(3) != 0).then(|| rng.below(100) as f64)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
            assert_eq!(answered(&table, &asked), Some(scanned(&table)), "after {} files", f + 1);
        }
        // Floats may hold NaN, which bounds leave out: refused, not guessed.
        assert_eq!(answered(&table, &[A::Max("x".into())]), None);
        // A long string gets no bounds: its column's MIN is refused; the others still answer.
        table.append(kbsx_rows(vec![1], vec![None], vec![Some("z".repeat(100))], vec![None])).unwrap();
        assert_eq!(answered(&table, &[A::Min("s".into())]), None);
        assert_eq!(answered(&table, &asked[..6]), Some(scanned(&table)[..6].to_vec()));
        // A deleted row may hold a bound: only COUNT(*) (exact through the delete files) answers.
        let count_before: u64 = scanned(&table)[0].parse().unwrap();
        table.delete_where(Some(&Predicate::from_json(r#"{"op":"lt","column":"k","value":0}"#).unwrap())).unwrap();
        assert_eq!(answered(&table, &asked[2..3]), None);
        let left: u64 = answered(&table, &[A::CountStar]).unwrap()[0].parse().unwrap();
        assert_eq!(left.to_string(), scanned(&table)[0]);
        assert!(left < count_before);
        let err =
            table.aggregate_from_metadata(table.metadata().current_snapshot(), &[A::Min("nope".into())]).unwrap_err();
        assert!(err.to_string().contains("'nope'"), "{err}");
    }

    #[test]
    fn pages_ruled_out_by_the_column_index_are_skipped_and_scans_stay_exact() {
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let mut rng = Rng(61);
        // One row group of many pages: k ascends (its pages prune), b is random (its pages do not),
        // s is null in whole stretches (null pages).
        let n = 60_000usize;
        let k: Vec<i64> = (0..n as i64).map(|i| i * 2).collect();
        let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
        let s: Vec<Option<String>> = (0..n).map(|i| (i / 10_000 % 2 == 0).then(|| format!("s{}", i / 1000))).collect();
        let x: Vec<Option<f64>> =
            (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
        table.append(kbsx_rows(k, b, s, x)).unwrap();
        table
            .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap()))
            .unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.clone(), None, 8192).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let keys = |batches: Vec<RecordBatch>| {
            let mut out: Vec<i64> =
                batches.iter().flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec()).collect();
            out.sort_unstable();
            out
        };
        for _ in 0..150 {
            let predicate = random_predicate_over(&mut rng, 2, 2 * n as u64);
            let want = keys(vec![predicate.filter(&everything).unwrap()]);
            let got = keys(
                table.scan(files.clone(), None, Some(predicate.clone()), 4096).unwrap().map(Result::unwrap).collect(),
            );
            assert_eq!(got, want, "{}", predicate.to_json());
        }
        // A narrow range on the ascending key reads one page of each column, not the whole group.
        let range = Predicate::from_json(
            r#"{"op":"and","args":[{"op":"ge","column":"k","value":50000},{"op":"lt","column":"k","value":50200}]}"#,
        )
        .unwrap();
        let explained = table.explain(files.clone(), Some(&range)).unwrap();
        assert_eq!(explained.row_groups, 1);
        assert!(explained.rows_read <= 8192 && explained.pages_read * 4 < explained.pages, "{explained:?}");
        let nulls = Predicate::from_json(r#"{"op":"eq","column":"s","value":"s15"}"#).unwrap();
        let explained = table.explain(files.clone(), Some(&nulls)).unwrap();
        assert!(explained.rows_read <= 2 * 8192, "{explained:?}");
        assert_eq!(
            table.scan(files.clone(), None, Some(nulls), 4096).unwrap().map(|b| b.unwrap().num_rows()).sum::<usize>(),
            keys(vec![Predicate::from_json(r#"{"op":"eq","column":"s","value":"s15"}"#)
                .unwrap()
                .filter(&everything)
                .unwrap()])
            .len()
        );
    }

    #[test]
    fn column_statistics_estimate_distinct_values_and_count_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema, BTreeMap::new(), &HashMap::new()).unwrap();
        let mut rng = Rng(71);
        for _ in 0..6 {
            let n = 3_000 + rng.below(3_000) as usize;
            let k: Vec<i64> = (0..n).map(|_| rng.below(20_000) as i64).collect();
            let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(4_000)))).collect();
            let x: Vec<Option<f64>> = (0..n).map(|_| None).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        }
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let all = arrow::compute::concat_batches(
            &schema,
            &table.scan_files(files.clone(), None, 8192).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
        )
        .unwrap();
        // The slow twin: exact distinct and null counts of every row.
        let exact = |i: usize| -> (u64, u64) {
            let column = all.column(i);
            let distinct: std::collections::HashSet<String> = (0..column.len())
                .filter(|&r| column.is_valid(r))
                .map(|r| arrow::util::display::array_value_to_string(column, r).unwrap())
                .collect();
            (distinct.len() as u64, column.null_count() as u64)
        };
        let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
        for (i, (name, ndv, nulls)) in stats.iter().enumerate() {
            let (distinct, null_count) = exact(i);
            assert_eq!(*nulls, Some(null_count), "{name}");
            let ndv = ndv.unwrap() as f64;
            assert!((ndv - distinct as f64).abs() <= (distinct as f64 * 0.05).max(1.0), "{name}: {ndv} for {distinct}");
        }
        // A column added later has no sketch in the older files: no estimate rather than a wrong one.
        table.add_column(&Field::new("y", DataType::Int64, true)).unwrap();
        let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
        assert_eq!(stats[4], ("y".to_owned(), None, None));
        // A damaged sketch file only loses the estimates.
        let path = crate::index::ndv::ndv_path(&files[0].file_path.replace("file://", ""));
        std::fs::write(&path, b"HSNDV001 damaged").unwrap();
        let stats = table.column_statistics(table.metadata().current_snapshot()).unwrap();
        assert_eq!((stats[0].1, stats[0].2), (None, Some(exact(0).1)));
    }

    #[test]
    fn bloom_filters_skip_row_groups_without_the_value_and_scans_stay_exact() {
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let mut properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "32".to_owned())]);
        for column in ["k", "b", "s", "x"] {
            properties.insert(format!("{BLOOM_ENABLED_PREFIX}{column}"), "true".to_owned());
        }
        properties.insert(format!("{BLOOM_FPP_PREFIX}s"), "0.001".to_owned());
        let mut table =
            Table::create(dir.path().join("t").to_str().unwrap(), &schema, properties, &HashMap::new()).unwrap();
        let mut rng = Rng(53);
        // Unsorted keys: every row group's bounds span them all, so only the bloom filters prune.
        for _ in 0..5 {
            let n = 200 + rng.below(200) as usize;
            let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
            let b: Vec<Option<i32>> = (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
            let x: Vec<Option<f64>> =
                (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        }
        table
            .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap()))
            .unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let keys = |batches: Vec<RecordBatch>| {
            let mut out: Vec<(i64, Option<String>)> = batches
                .iter()
                .flat_map(|b| {
                    let (k, s) =
                        (b.column(0).as_primitive::<Int64Type>().clone(), b.column(2).as_string::<i32>().clone());
                    (0..b.num_rows()).map(move |i| (k.value(i), s.is_valid(i).then(|| s.value(i).to_owned())))
                })
                .collect();
            out.sort_unstable();
            out
        };
        let mut bloom_pruned = 0;
        for _ in 0..300 {
            let predicate = random_predicate(&mut rng, 2);
            let want = keys(vec![predicate.filter(&everything).unwrap()]);
            let got = keys(
                table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap().map(Result::unwrap).collect(),
            );
            assert_eq!(got, want, "{}", predicate.to_json());
            bloom_pruned += table.explain(files.clone(), Some(&predicate)).unwrap().row_groups_pruned_by_bloom;
        }
        assert!(bloom_pruned > 100, "bloom filters pruned {bloom_pruned} row groups");
        // A point lookup on the unsorted key opens only the row groups whose filter may hold it.
        let k = everything.column(0).as_primitive::<Int64Type>().value(17);
        let lookup = Predicate::from_json(&format!(r#"{{"op":"eq","column":"k","value":{k}}}"#)).unwrap();
        let explained = table.explain(files.clone(), Some(&lookup)).unwrap();
        assert_eq!(explained.row_groups_pruned_by_stats, 0, "{explained:?}");
        assert!(explained.row_groups_pruned_by_bloom * 4 > explained.row_groups * 3, "{explained:?}");
        // A probability outside (0, 1) is refused when the table is created.
        let bad = BTreeMap::from([(format!("{BLOOM_FPP_PREFIX}k"), "1.5".to_owned())]);
        let err = Table::create(dir.path().join("u").to_str().unwrap(), &schema, bad, &HashMap::new()).unwrap_err();
        assert!(err.to_string().contains("write.parquet.bloom-filter-fpp.column.k"), "{err}");
    }

    #[test]
    fn scalar_indexes_are_declared_at_creation_by_column_name() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        let props = |v: &str| BTreeMap::from([(INDEX_COLUMNS.to_owned(), v.to_owned())]);
        let mut table = Table::create(&at("a"), &kbsx_schema(), props(" s, k "), &HashMap::new()).unwrap();
        assert_eq!(table.scalar_index_columns().unwrap(), ["k", "s"]);
        assert!(!table.metadata().properties.contains_key(INDEX_COLUMNS), "stored by field id, not by name");
        // Appended files are indexed as they are written; renamed, a column keeps its index.
        table
            .append(kbsx_rows(vec![1, 2], vec![None, Some(1)], vec![Some("a".into()), None], vec![None, None]))
            .unwrap();
        let file = &table.data_files(table.metadata().current_snapshot()).unwrap()[0];
        assert!(
            std::path::Path::new(&crate::index::scalar_index_path(&file.file_path.replace("file://", ""), 3)).exists()
        );
        table.rename_column("s", "label").unwrap();
        assert_eq!(table.scalar_index_columns().unwrap(), ["k", "label"]);
        let found = table
            .scan(
                vec![file.clone()],
                Some(&["k".to_owned()]),
                Some(Predicate::from_json(r#"{"op":"eq","column":"label","value":"a"}"#).unwrap()),
                10,
            )
            .unwrap();
        assert_eq!(found.map(|b| b.unwrap().num_rows()).sum::<usize>(), 1);
        table.drop_column("label").unwrap();
        assert_eq!(table.scalar_index_columns().unwrap(), ["k"]);
        let err = Table::create(&at("b"), &kbsx_schema(), props("k,nope"), &HashMap::new()).unwrap_err();
        assert!(err.to_string().contains("'nope' is not in the table schema"), "{err}");
        let err = Table::create(&at("c"), &schema(), props("embedding"), &HashMap::new()).unwrap_err();
        assert!(err.to_string().contains("cannot have a scalar index"), "{err}");
    }

    #[test]
    fn index_pruned_scans_return_exactly_the_rows_of_a_full_scan_filtered_after() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let schema = kbsx_schema();
        let properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "16".to_owned())]);
        let mut table = Table::create(&location, &schema, properties, &HashMap::new()).unwrap();
        let mut rng = Rng(29);
        // Unsorted keys (every file spans them all, so bounds prune nothing), few and many distinct
        // values, nulls; files before the indexes are declared (built then) and after (built on write).
        let append = |table: &mut Table, rng: &mut Rng, f: i64| {
            let n = 100 + rng.below(200) as usize;
            let k: Vec<i64> = (0..n).map(|_| rng.below(1200) as i64 - 100).collect();
            let b: Vec<Option<i32>> =
                (0..n).map(|_| (f % 4 != 3 && rng.below(5) != 0).then(|| rng.below(60) as i32)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
            let x: Vec<Option<f64>> =
                (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        };
        for f in 0..3 {
            append(&mut table, &mut rng, f);
        }
        for column in ["k", "b", "s", "x"] {
            assert_eq!(table.create_scalar_index(column).unwrap(), 3);
        }
        for f in 3..8 {
            append(&mut table, &mut rng, f);
        }
        // Deleted rows stay out of every path.
        table
            .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,4,5]}"#).unwrap()))
            .unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let index_files = |files: &[DataFile]| -> Vec<std::path::PathBuf> {
            files
                .iter()
                .flat_map(|f| {
                    [1, 2, 3, 4].map(|id| {
                        std::path::PathBuf::from(crate::index::scalar_index_path(
                            &f.file_path.replace("file://", ""),
                            id,
                        ))
                    })
                })
                .collect()
        };
        assert!(index_files(&files).iter().all(|p| p.exists()), "every file has its indexes");
        let keys = |stream: BatchStream| {
            let mut out: Vec<(i64, Option<i32>)> = stream
                .flat_map(|b| {
                    let b = b.unwrap();
                    let k = b.column(0).as_primitive::<Int64Type>().clone();
                    let bb = b.column(1).as_primitive::<Int32Type>().clone();
                    (0..b.num_rows())
                        .map(move |i| (k.value(i), bb.is_valid(i).then(|| bb.value(i))))
                        .collect::<Vec<_>>()
                })
                .collect();
            out.sort_unstable();
            out
        };
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let check = |table: &Table, rng: &mut Rng, rounds: usize| {
            for _ in 0..rounds {
                let predicate = random_predicate(rng, 2);
                let want = keys(Box::new(RecordBatchIterator::new(
                    vec![Ok(predicate.filter(&everything).unwrap())],
                    schema.clone(),
                )));
                let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
                assert_eq!(got, want, "{}", predicate.to_json());
            }
        };
        check(&table, &mut rng, 400);
        // A point lookup on the unsorted key: only the rows holding the key are read.
        let lookup = Predicate::from_json(r#"{"op":"eq","column":"k","value":500}"#).unwrap();
        let explained = table.explain(files.clone(), Some(&lookup)).unwrap();
        assert_eq!(explained.files_pruned, 0, "bounds cannot prune an unsorted key");
        assert!(explained.rows_read <= 10 && explained.rows_pruned_by_index > 1000, "{explained:?}");
        assert!(explained.row_groups_pruned_by_index > explained.row_groups / 2, "{explained:?}");
        assert!(
            explained.pages_read > 0 && explained.pages_read * 4 < explained.pages && explained.bytes_read > 0,
            "{explained:?}"
        );
        let everything_read = table.explain(files.clone(), None).unwrap();
        assert_eq!(
            (everything_read.pages_read, everything_read.rows_read + everything_read.rows_deleted),
            (everything_read.pages, everything_read.rows)
        );

        // Damaged and missing index files change nothing but the work done.
        let paths = index_files(&files);
        std::fs::write(&paths[0], b"HSSIDX01 and then garbage").unwrap();
        let mut flipped = std::fs::read(&paths[5]).unwrap();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x40;
        std::fs::write(&paths[5], flipped).unwrap();
        std::fs::remove_file(&paths[9]).unwrap();
        check(&table, &mut rng, 150);
        // Dropping an index removes its files; scans stay exact.
        assert_eq!(table.drop_scalar_index("s").unwrap(), files.len());
        assert!(paths.iter().filter(|p| p.to_string_lossy().ends_with(".3.sidx")).all(|p| !p.exists()));
        check(&table, &mut rng, 50);

        // Schema evolution: a column added later (the older files read it as null, and have no index
        // for it) is indexed for the files written after; renamed, a column keeps its index.
        table.add_column(&Field::new("y", DataType::Int64, true)).unwrap();
        assert_eq!(table.create_scalar_index("y").unwrap(), files.len());
        let evolved = table.arrow_schema().unwrap();
        for _ in 0..3 {
            let n = 100 + rng.below(200) as usize;
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from((0..n).map(|_| rng.below(1200) as i64 - 100).collect::<Vec<_>>())),
                Arc::new(arrow::array::Int32Array::from(
                    (0..n).map(|_| (rng.below(5) != 0).then(|| rng.below(60) as i32)).collect::<Vec<_>>(),
                )),
                Arc::new(StringArray::from(
                    (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect::<Vec<_>>(),
                )),
                Arc::new(arrow::array::Float64Array::from(
                    (0..n).map(|_| (rng.below(7) != 0).then(|| rng.below(2000) as f64 / 10.0)).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    (0..n).map(|_| (rng.below(4) != 0).then(|| rng.below(50) as i64)).collect::<Vec<_>>(),
                )),
            ];
            let plain = Arc::new(ArrowSchema::new(
                evolved
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone().with_metadata(HashMap::<String, String>::new()))
                    .collect::<Vec<_>>(),
            ));
            table.append(RecordBatchIterator::new(vec![RecordBatch::try_new(plain.clone(), columns)], plain)).unwrap();
        }
        table.rename_column("y", "why").unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let evolved = table.arrow_schema().unwrap();
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &evolved,
                &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let mut narrowed = 0;
        for _ in 0..200 {
            let w = "why".to_owned();
            let v = |rng: &mut Rng| serde_json::json!(rng.below(55) as i64);
            let leaf = match rng.below(6) {
                0 => Predicate::Eq { column: w, value: v(&mut rng) },
                1 => Predicate::Lt { column: w, value: v(&mut rng) },
                2 => Predicate::Ge { column: w, value: v(&mut rng) },
                3 => Predicate::In { column: w, values: vec![v(&mut rng), v(&mut rng)] },
                4 => Predicate::IsNull { column: w },
                _ => Predicate::NotNull { column: w },
            };
            let predicate = match rng.below(3) {
                0 => leaf,
                1 => Predicate::And { args: vec![leaf, random_predicate(&mut rng, 1)] },
                _ => Predicate::Or { args: vec![leaf, random_predicate(&mut rng, 1)] },
            };
            let want = keys(Box::new(RecordBatchIterator::new(
                vec![Ok(predicate.filter(&everything).unwrap())],
                evolved.clone(),
            )));
            let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
            assert_eq!(got, want, "{}", predicate.to_json());
            narrowed += table.explain(files.clone(), Some(&predicate)).unwrap().rows_pruned_by_index;
        }
        assert!(narrowed > 0, "the index of the added column narrowed no scan");
        assert_eq!(table.scalar_index_columns().unwrap(), ["k", "b", "x", "why"]);
        let err = |e: Error| e.to_string();
        assert!(err(table.drop_scalar_index("s").unwrap_err()).contains("has no scalar index"));
        assert!(err(table.create_scalar_index("nope").unwrap_err()).contains("'nope' is not in the table schema"));
    }

    #[test]
    fn deletes_leave_exactly_the_rows_a_full_scan_keeps_for_scans_searches_and_time_travel() {
        use crate::vector::{metric::reference_distance, Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        for range in [0..300, 300..700, 700..1000] {
            table.append(reader(vec![batch(range)])).unwrap();
        }
        let files = |t: &Table| t.data_files(t.metadata().current_snapshot()).unwrap();
        // The slow twin: the ids left, each delete's filter applied to the rows of a model batch.
        let mut model: Vec<i64> = (0..1000).collect();
        let mut history = vec![(table.metadata().current_snapshot_id.unwrap(), model.clone())];
        let mut rng = Rng(11);
        let query = vec![500.0f32, 0.5, -480.0];
        let deletes = [
            r#"{"op":"and","args":[{"op":"ge","column":"id","value":100},{"op":"lt","column":"id","value":140}]}"#
                .to_owned(),
            r#"{"op":"is_null","column":"name"}"#.to_owned(),
            r#"{"op":"lt","column":"id","value":300}"#.to_owned(), // the rest of the first file: it leaves the table
            r#"{"op":"eq","column":"id","value":5000}"#.to_owned(), // no row: no snapshot
        ]
        .into_iter()
        .map(|j| Predicate::from_json(&j).unwrap())
        .chain((0..6).map(|_| {
            let lo = rng.below(1000) as i64;
            let mut values: Vec<serde_json::Value> =
                (0..20).map(|_| serde_json::json!(rng.below(1000) as i64)).collect();
            values.push(serde_json::json!(lo));
            Predicate::Or {
                args: vec![
                    Predicate::In { column: "id".into(), values },
                    Predicate::And {
                        args: vec![
                            Predicate::Ge { column: "id".into(), value: serde_json::json!(lo) },
                            Predicate::Lt { column: "id".into(), value: serde_json::json!(lo + 15) },
                        ],
                    },
                    Predicate::StartsWith { column: "name".into(), prefix: format!("n{}", 1 + rng.below(9)) },
                ],
            }
        }));
        for (step, filter) in deletes.enumerate() {
            let before = model.clone();
            let all = batch(0..1000);
            let passed = filter.evaluate(&all).unwrap();
            model.retain(|&id| !(passed.is_valid(id as usize) && passed.value(id as usize)));
            let (snapshot, deleted) = table.delete_where(Some(&filter)).unwrap();
            assert_eq!(deleted as usize, before.len() - model.len(), "step {step}: {}", filter.to_json());
            assert_eq!(snapshot.is_some(), deleted > 0, "a delete of no row commits nothing");
            if let Some(id) = snapshot {
                assert_eq!(table.metadata().snapshot(id).unwrap().summary["operation"], "delete");
                history.push((id, model.clone()));
            }
            // A full scan, a filtered scan and a search all leave the deleted rows out.
            let reopened = Table::load(&location, &HashMap::new()).unwrap();
            assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model, "step {step}");
            let odd = Predicate::from_json(r#"{"op":"not_null","column":"name"}"#).unwrap();
            let mut kept: Vec<i64> = reopened
                .scan(files(&reopened), Some(&["id".to_owned()]), Some(odd.clone()), 50)
                .unwrap()
                .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
                .collect();
            kept.sort_unstable();
            assert_eq!(kept, model.iter().copied().filter(|i| i % 4 != 0).collect::<Vec<_>>(), "step {step}");
            for filter in [None, Some(&odd)] {
                let search = VectorSearch::new("embedding", query.clone(), Metric::L2, 25);
                let found = reopened.search(files(&reopened), Some(&["id".to_owned()]), filter, &search, 64).unwrap();
                let mut reference: Vec<(f64, i64)> = model
                    .iter()
                    .filter(|&&i| filter.is_none() || i % 4 != 0)
                    .map(|&i| (reference_distance(Metric::L2, &query, &[i as f32, 0.5, -(i as f32)]), i))
                    .collect();
                reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                let got = found.column(0).as_primitive::<Int64Type>().values().to_vec();
                assert_eq!(
                    got,
                    reference.iter().take(25).map(|r| r.1).collect::<Vec<_>>(),
                    "step {step}, filter {filter:?}"
                );
            }
        }
        // The first file left the table whole; no data file holds more than one delete file.
        let live = files(&table);
        assert_eq!(table.live_rows(&live).unwrap(), model.len() as u64, "a count from metadata equals the rows read");
        assert_eq!(live.len(), 2);
        assert!(live.iter().all(|f| f.deletes.len() == 1));
        // Time travel sees every earlier snapshot's rows.
        for (id, rows) in &history {
            assert_eq!(&ids(&table, table.metadata().snapshot(*id).ok()), rows);
        }
        // Appends keep the deletes; an overwrite drops them with the rows; nothing is left orphaned.
        table.append(reader(vec![batch(2000..2010)])).unwrap();
        model.extend(2000..2010);
        assert_eq!(ids(&table, table.metadata().current_snapshot()), model);
        let summary = &table.metadata().current_snapshot().unwrap().summary;
        assert_eq!(summary["total-delete-files"], "2");
        assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty());
        table.commit_overwrite(vec![]).unwrap();
        assert!(ids(&table, table.metadata().current_snapshot()).is_empty());
        assert_eq!(table.metadata().current_snapshot().unwrap().summary["total-delete-files"], "0");
        // Deleting every row of a table removes its files without writing a delete file.
        table.append(reader(vec![batch(0..10)])).unwrap();
        assert_eq!(table.delete_where(None).unwrap().1, 10);
        assert!(files(&table).is_empty());
        // A filter on a column the table lacks is refused before anything is written.
        let unknown = Predicate::from_json(r#"{"op":"eq","column":"nope","value":1}"#).unwrap();
        assert!(matches!(table.delete_where(Some(&unknown)), Err(Error::NotFound(m)) if m.contains("nope")));
    }

    #[test]
    fn schema_evolution_adds_drops_and_renames_columns_without_rewriting_data() {
        use arrow::array::Float64Array;
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let before = table.append(reader(vec![batch(0..10)])).unwrap();
        let files_before: Vec<String> = table.storage.list("data").unwrap();
        // Added: rows written before read it as null; new rows carry it.
        table.add_column(&Field::new("score", DataType::Float64, true)).unwrap();
        let scored = table.arrow_schema().unwrap();
        let with_score = |ids: std::ops::Range<i64>| {
            let old = batch(ids.clone());
            let mut columns = old.columns().to_vec();
            columns.push(Arc::new(Float64Array::from_iter_values(ids.map(|i| i as f64 * 1.5))));
            let mut fields: Vec<Field> = old.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
            fields.push(Field::new("score", DataType::Float64, true));
            let schema = Arc::new(ArrowSchema::new(fields));
            RecordBatchIterator::new(vec![RecordBatch::try_new(schema.clone(), columns)], schema)
        };
        table.append(with_score(10..20)).unwrap();
        let read = |t: &Table, column: &str, filter: Option<&str>| -> Vec<(i64, Option<f64>)> {
            let files = t.data_files(t.metadata().current_snapshot()).unwrap();
            let filter = filter.map(|f| Predicate::from_json(f).unwrap());
            let mut out: Vec<(i64, Option<f64>)> = t
                .scan(files, Some(&["id".to_owned(), column.to_owned()]), filter, 7)
                .unwrap()
                .flat_map(|b| {
                    let b = b.unwrap();
                    let ids = b.column(0).as_primitive::<Int64Type>().clone();
                    let x = b.column(1).as_primitive::<Float64Type>().clone();
                    (0..b.num_rows())
                        .map(move |i| (ids.value(i), x.is_valid(i).then(|| x.value(i))))
                        .collect::<Vec<_>>()
                })
                .collect();
            out.sort_by_key(|r| r.0);
            out
        };
        let want: Vec<(i64, Option<f64>)> = (0..20).map(|i| (i, (i >= 10).then_some(i as f64 * 1.5))).collect();
        assert_eq!(read(&table, "score", None), want);
        assert_eq!(read(&table, "score", Some(r#"{"op":"is_null","column":"score"}"#)), want[..10].to_vec());
        assert_eq!(read(&table, "score", Some(r#"{"op":"ge","column":"score","value":27}"#)), want[18..].to_vec());
        // Renamed: every file answers for it by field id, filters and pruning included.
        table.rename_column("score", "points").unwrap();
        assert_eq!(read(&table, "points", Some(r#"{"op":"not_null","column":"points"}"#)), want[10..].to_vec());
        assert!(matches!(table.scan(vec![], Some(&["score".to_owned()]), None, 7), Err(Error::NotFound(_))));
        // Dropped, then added again under the same name: a new column, null for every row so far.
        table.drop_column("points").unwrap();
        assert_eq!(table.arrow_schema().unwrap().fields().len(), 3);
        table.add_column(&Field::new("points", DataType::Float64, true)).unwrap();
        assert!(read(&table, "points", None).iter().all(|(_, p)| p.is_none()));
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        let ids: Vec<i32> = reopened.metadata().current_schema().unwrap().fields.iter().map(|f| f.id).collect();
        assert_eq!(ids.last(), Some(&(scored.fields().len() as i32 + 2)), "a fresh id past every earlier one");
        assert_eq!(reopened.metadata().schemas.len(), 5);
        // A vector column added later: its dimension is recorded, and old rows have no vector.
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        table.add_column(&Field::new("v2", DataType::FixedSizeList(item, 2), true)).unwrap();
        assert_eq!(table.vector_column("v2").unwrap().1, 2);
        // Nothing was rewritten, and the first snapshot still reads.
        assert!(files_before.iter().all(|f| table.storage.exists(f).unwrap()));
        assert_eq!(ids_of(&table, Some(before)), (0..10).collect::<Vec<_>>());
        // Refused, by name, with nothing committed.
        let version = table.version();
        assert!(
            matches!(table.add_column(&Field::new("req", DataType::Int64, false)), Err(Error::InvalidArgument(m)) if m.contains("nullable"))
        );
        assert!(
            matches!(table.add_column(&Field::new("id", DataType::Int64, true)), Err(Error::InvalidArgument(m)) if m.contains("already"))
        );
        assert!(matches!(table.drop_column("nope"), Err(Error::NotFound(m)) if m.contains("nope")));
        assert!(matches!(table.rename_column("id", "name"), Err(Error::InvalidArgument(m)) if m.contains("exists")));
        assert_eq!(table.version(), version);
    }

    #[test]
    fn time_travel_reads_a_snapshot_under_the_schema_it_was_written_with_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let first = table.append(reader(vec![batch(0..10)])).unwrap();
        let first_ms = table.metadata().snapshot(first).unwrap().timestamp_ms;
        // Since then: "name" renamed, "embedding" dropped, "score" added; more rows.
        table.rename_column("name", "label").unwrap();
        table.drop_column("embedding").unwrap();
        table.add_column(&Field::new("score", DataType::Float64, true)).unwrap();
        let now = table.arrow_schema().unwrap();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(10..15)),
            Arc::new(StringArray::from_iter_values((10..15).map(|i| format!("l{i}")))),
            Arc::new(arrow::array::Float64Array::from_iter_values((10..15).map(|i| i as f64))),
        ];
        table.append(RecordBatchIterator::new(vec![RecordBatch::try_new(now.clone(), columns)], now.clone())).unwrap();
        let names = |t: &Table| -> Vec<String> {
            t.arrow_schema().unwrap().fields().iter().map(|f| f.name().clone()).collect()
        };
        assert_eq!(names(&table), ["id", "label", "score"]);

        for pinned in [
            Table::load_at(&location, &HashMap::new(), Some(first), None).unwrap(),
            Table::load_at(&location, &HashMap::new(), None, Some(first_ms)).unwrap(),
        ] {
            // The first snapshot's rows under its own columns: the old name, the dropped vector.
            assert_eq!(names(&pinned), ["id", "name", "embedding"]);
            assert_eq!(pinned.metadata().current_snapshot_id, Some(first));
            let files = pinned.data_files(pinned.metadata().current_snapshot()).unwrap();
            let filter = Predicate::from_json(r#"{"op":"eq","column":"name","value":"n5"}"#).unwrap();
            let rows: Vec<RecordBatch> =
                pinned.scan(files.clone(), None, Some(filter), 4).unwrap().map(|b| b.unwrap()).collect();
            let rows = arrow::compute::concat_batches(&rows[0].schema(), &rows).unwrap();
            let values = |b: &RecordBatch| b.columns().iter().map(|c| format!("{c:?}")).collect::<Vec<_>>();
            assert_eq!(values(&rows), values(&batch(5..6)), "every column of the old row, the dropped vector included");
            assert_eq!(pinned.live_rows(&files).unwrap(), 10);
            // Nothing is written through it, and nothing was.
            let version = table.version();
            let refused =
                |r: Result<()>| assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("time travel")));
            let mut pinned = pinned;
            refused(pinned.append(reader(vec![batch(20..21)])).map(drop));
            refused(pinned.delete_where(None).map(drop));
            refused(pinned.add_column(&Field::new("x", DataType::Int64, true)));
            refused(pinned.rollback_to(first));
            assert_eq!(Table::load(&location, &HashMap::new()).unwrap().version(), version);
        }
        // The current version is untouched by it; a snapshot that does not exist is named.
        assert_eq!(names(&Table::load_at(&location, &HashMap::new(), None, None).unwrap()), ["id", "label", "score"]);
        assert!(
            matches!(Table::load_at(&location, &HashMap::new(), Some(42), None), Err(Error::NotFound(m)) if m.contains("42"))
        );
        assert!(matches!(
            Table::load_at(&location, &HashMap::new(), None, Some(first_ms - 1)),
            Err(Error::NotFound(_))
        ));
    }

    /// (id, _row_id, _last_updated_sequence_number) of every live row, by id.
    fn lineage_of(table: &Table, filter: Option<&str>) -> Vec<(i64, i64, i64)> {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let columns = ["id", lineage::ROW_ID, lineage::LAST_UPDATED_SEQUENCE_NUMBER].map(str::to_owned);
        let filter = filter.map(|f| Predicate::from_json(f).unwrap());
        let mut rows: Vec<(i64, i64, i64)> = table
            .scan(files, Some(&columns), filter, 7)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let c = |i: usize| b.column(i).as_primitive::<Int64Type>().clone();
                let (id, row, seq) = (c(0), c(1), c(2));
                assert_eq!(row.null_count() + seq.null_count(), 0);
                (0..b.num_rows()).map(move |i| (id.value(i), row.value(i), seq.value(i))).collect::<Vec<_>>()
            })
            .collect();
        rows.sort();
        rows
    }

    #[test]
    fn format_version_3_keeps_row_lineage_through_deletes_and_compaction_and_deletes_with_deletion_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let properties = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
        let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
        assert_eq!((table.metadata().format_version, table.metadata().next_row_id), (3, Some(0)));
        assert!(!table.metadata().properties.contains_key(FORMAT_VERSION));
        table.append(reader(vec![batch(0..10)])).unwrap();
        table.append(reader(vec![batch(10..25)])).unwrap();
        let second = table.metadata().current_snapshot().unwrap().clone();
        assert_eq!((second.first_row_id, second.added_rows), (Some(10), Some(15)));
        assert_eq!(table.metadata().next_row_id, Some(25));
        // Ids from each file's first row id and position; sequence numbers from the snapshot that wrote it.
        let want: Vec<(i64, i64, i64)> = (0..25).map(|i| (i, i, if i < 10 { 1 } else { 2 })).collect();
        assert_eq!(lineage_of(&table, None), want);
        // The same rows when a filter (on a column or on the id itself) leaves some out.
        assert_eq!(lineage_of(&table, Some(r#"{"op":"ge","column":"id","value":20}"#)), want[20..].to_vec());
        assert_eq!(lineage_of(&table, Some(r#"{"op":"eq","column":"_row_id","value":12}"#)), want[12..13].to_vec());
        // The table's own columns do not include them; a version 2 table has none.
        assert_eq!(table.arrow_schema().unwrap().fields().len(), 3);
        assert_eq!(ids_of(&table, Some(second.snapshot_id)), (0..25).collect::<Vec<_>>());

        // Deletes are deletion vectors; the rows left keep their ids.
        let (_, deleted) = table
            .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"id","values":[3,4,17]}"#).unwrap()))
            .unwrap();
        assert_eq!(deleted, 3);
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let vectors: Vec<&DataFile> = files.iter().flat_map(|f| &f.deletes).collect();
        assert_eq!(vectors.len(), 2);
        assert!(vectors
            .iter()
            .all(|d| is_deletion_vector(d) && d.file_path.ends_with(".puffin") && d.referenced_data_file.is_some()));
        let left: Vec<(i64, i64, i64)> = want.iter().copied().filter(|r| ![3, 4, 17].contains(&r.0)).collect();
        assert_eq!(lineage_of(&table, None), left);
        assert_eq!(table.live_rows(&files).unwrap(), 22);
        // Deleting again from the same file folds the earlier vector into the new one.
        table.delete_where(Some(&Predicate::from_json(r#"{"op":"eq","column":"id","value":5}"#).unwrap())).unwrap();
        let left: Vec<(i64, i64, i64)> = left.into_iter().filter(|r| r.0 != 5).collect();
        assert_eq!(lineage_of(&table, None), left);

        // Compaction moves rows into new files, which store their ids and sequence numbers.
        let rewrite = table.rewrite_data_files(1000).unwrap().expect("files with deletes are rewritten");
        assert_eq!(rewrite.written, 1);
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert!(files.iter().all(|f| f.deletes.is_empty()));
        assert_eq!(lineage_of(&table, None), left, "ids survive compaction");
        // New rows after it take ids past every id given so far.
        let next = table.metadata().next_row_id.unwrap();
        table.append(reader(vec![batch(100..102)])).unwrap();
        let seq = table.metadata().current_snapshot().unwrap().sequence_number;
        let appended = lineage_of(&table, Some(r#"{"op":"ge","column":"id","value":100}"#));
        assert_eq!(appended, vec![(100, next, seq), (101, next + 1, seq)]);
        assert!(next >= 25);

        // Reopened, the same; a version 2 table refuses the names.
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(lineage_of(&reopened, Some(r#"{"op":"lt","column":"id","value":100}"#)), left);
        let v2 = Table::create(dir.path().join("v2").to_str().unwrap(), &schema(), BTreeMap::new(), &HashMap::new())
            .unwrap();
        assert!(matches!(v2.scan(vec![], Some(&[lineage::ROW_ID.to_owned()]), None, 7), Err(Error::NotFound(_))));
        // Its names are the lineage columns': no column takes them.
        let reserved = |r: Result<()>| {
            assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("reserved for row lineage")))
        };
        reserved(table.add_column(&Field::new("_row_id", DataType::Int64, true)));
        reserved(table.rename_column("name", "_last_updated_sequence_number"));
        let named = ArrowSchema::new(vec![Field::new("_row_id", DataType::Int64, true)]);
        reserved(table.replace(&named, BTreeMap::new()).map(drop));
        let v3 = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
        reserved(Table::create(dir.path().join("r").to_str().unwrap(), &named, v3, &HashMap::new()).map(drop));
        assert!(
            Table::create(dir.path().join("r2").to_str().unwrap(), &named, BTreeMap::new(), &HashMap::new()).is_ok(),
            "a version 2 table may"
        );
        let bad = BTreeMap::from([(FORMAT_VERSION.to_owned(), "4".to_owned())]);
        let err =
            Table::create(dir.path().join("v4").to_str().unwrap(), &schema(), bad, &HashMap::new()).err().unwrap();
        assert!(matches!(err, Error::InvalidArgument(m) if m.contains("format-version must be 2 or 3")));
    }

    #[test]
    fn icebergs_compression_properties_choose_the_codec_of_the_files_written_after() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().join("t").to_str().unwrap().to_owned();
        let codec_of = |table: &Table, file: &DataFile| {
            let bytes = table.storage.get(table.storage.relative(&file.file_path).unwrap()).unwrap();
            SerializedFileReader::new(bytes).unwrap().metadata().row_group(0).column(0).compression()
        };
        let properties = BTreeMap::from([(COMPRESSION_CODEC.to_owned(), "Snappy".to_owned())]);
        let mut table = Table::create(&location, &schema(), properties, &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..10)])).unwrap();
        table
            .set_write_properties(&[
                (COMPRESSION_CODEC.to_owned(), Some("gzip".to_owned())),
                (COMPRESSION_LEVEL.to_owned(), Some("9".to_owned())),
            ])
            .unwrap();
        table.append(reader(vec![batch(10..20)])).unwrap();
        table
            .set_write_properties(&[(COMPRESSION_CODEC.to_owned(), None), (COMPRESSION_LEVEL.to_owned(), None)])
            .unwrap();
        table.append(reader(vec![batch(20..30)])).unwrap();
        let mut files = table.data_files(table.metadata().current_snapshot()).unwrap();
        files.sort_by_key(|f| f.lower_bounds[&1].clone());
        // (A file records its codec, not the level it was written at.)
        let codecs: Vec<String> =
            files.iter().map(|f| format!("{:?}", codec_of(&table, f)).split('(').next().unwrap().to_owned()).collect();
        assert_eq!(codecs, ["SNAPPY", "GZIP", "ZSTD"]);
        assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..30).collect::<Vec<_>>());
        // Refused by name, changing nothing.
        for (key, value, says) in [
            (COMPRESSION_CODEC, "brotli9", "zstd, snappy, gzip or uncompressed"),
            (COMPRESSION_LEVEL, "high", "an integer"),
            (COMPRESSION_LEVEL, "99", "compression-level"),
        ] {
            let err = table.set_write_properties(&[(key.to_owned(), Some(value.to_owned()))]).unwrap_err();
            assert!(matches!(&err, Error::InvalidArgument(m) if m.contains(says)), "{err}");
            let err = Table::create(
                dir.path().join("u").to_str().unwrap(),
                &schema(),
                BTreeMap::from([(key.to_owned(), value.to_owned())]),
                &HashMap::new(),
            )
            .err()
            .unwrap();
            assert!(matches!(&err, Error::InvalidArgument(m) if m.contains(says)), "{err}");
        }
        assert!(!table.metadata().properties.contains_key(COMPRESSION_CODEC));
    }

    #[test]
    fn replace_redefines_the_table_in_one_snapshot_and_keeps_its_history() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let before = table.append(reader(vec![batch(0..10)])).unwrap();
        let version = table.version();
        // New columns (one keeps an old name, with another type), partitioned and sorted.
        let replacement = ArrowSchema::new(vec![
            Field::new("name", DataType::Int32, true),
            Field::new("day", DataType::Date32, true),
            Field::new("id", DataType::Int64, false),
        ]);
        let properties = BTreeMap::from([
            (PARTITIONING.to_owned(), "day(day)".to_owned()),
            (SORTED_BY.to_owned(), "id DESC".to_owned()),
            (INDEX_COLUMNS.to_owned(), "id".to_owned()),
        ]);
        let replaced = table.replace(&replacement, properties).unwrap();
        assert_eq!(table.version(), version + 1, "one commit");
        let metadata = table.metadata();
        assert_eq!(metadata.current_snapshot_id, Some(replaced));
        assert_eq!(metadata.current_snapshot().unwrap().operation(), "overwrite");
        let names: Vec<String> = table.arrow_schema().unwrap().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["name", "day", "id"]);
        let ids: Vec<i32> = metadata.current_schema().unwrap().fields.iter().map(|f| f.id).collect();
        assert!(ids.iter().all(|id| *id > 3), "fresh ids past the old ones: {ids:?}");
        assert_eq!(table.partitioning().unwrap(), ["day(day)"]);
        assert_eq!(table.sort_order().unwrap(), ["id DESC NULLS LAST"]);
        assert!(table.data_files(metadata.current_snapshot()).unwrap().is_empty(), "no rows");
        // The new definition takes rows; the old snapshot still reads under its own schema.
        let rows = RecordBatch::try_new(
            Arc::new(replacement.clone()),
            vec![
                Arc::new(arrow::array::Int32Array::from(vec![Some(7), None])),
                Arc::new(arrow::array::Date32Array::from(vec![Some(19000), Some(19001)])),
                Arc::new(Int64Array::from(vec![1, 2])),
            ],
        )
        .unwrap();
        table.append(RecordBatchIterator::new(vec![Ok(rows)], Arc::new(replacement.clone()))).unwrap();
        assert_eq!(table.data_files(table.metadata().current_snapshot()).unwrap().len(), 2, "a file per day");
        let old = Table::load_at(&location, &HashMap::new(), Some(before), None).unwrap();
        assert_eq!(old.arrow_schema().unwrap().field(1).data_type(), &DataType::Utf8);
        assert_eq!(ids_of(&old, Some(before)), (0..10).collect::<Vec<_>>());
        // A bad definition is refused by name, committing nothing.
        let version = table.version();
        let bad = BTreeMap::from([(PARTITIONING.to_owned(), "bucket(nope, 4)".to_owned())]);
        assert!(table.replace(&replacement, bad).unwrap_err().to_string().contains("nope"));
        let v3 = BTreeMap::from([(FORMAT_VERSION.to_owned(), "3".to_owned())]);
        assert!(
            matches!(table.replace(&replacement, v3), Err(Error::InvalidArgument(m)) if m.contains("format version"))
        );
        assert_eq!(Table::load(&location, &HashMap::new()).unwrap().version(), version);
    }

    #[test]
    fn split_files_cut_big_files_into_row_group_runs_that_read_each_row_once() {
        let dir = tempfile::tempdir().unwrap();
        let properties = BTreeMap::from([
            (ROW_GROUP_ROWS.to_owned(), "100".to_owned()),
            (FORMAT_VERSION.to_owned(), "3".to_owned()),
        ]);
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema(), properties, &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..1000)])).unwrap();
        table.append(reader(vec![batch(1000..1050)])).unwrap();
        table
            .delete_where(Some(
                &Predicate::from_json(r#"{"op":"in","column":"id","values":[5,250,251,999,1001]}"#).unwrap(),
            ))
            .unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let splits = table.split_files(files.clone(), 250).unwrap();
        let ranges: Vec<_> = splits.iter().map(|s| (s.row_groups, s.record_count)).collect();
        assert_eq!(ranges.len(), 5, "{ranges:?}");
        assert!(
            ranges.contains(&(Some([0, 3]), 300))
                && ranges.contains(&(Some([9, 10]), 100))
                && ranges.contains(&(None, 50)),
            "{ranges:?}"
        );
        assert_eq!(splits.iter().map(|s| s.record_count).sum::<i64>(), 1050);
        // Each split read alone (as an engine task does), with or without a filter, lineage columns
        // too: together exactly the rows of the whole files.
        let columns = ["id".to_owned(), lineage::ROW_ID.to_owned()];
        let read = |files: Vec<DataFile>, filter: Option<&str>| -> Vec<(i64, i64)> {
            let mut rows: Vec<(i64, i64)> = files
                .into_iter()
                .flat_map(|f| {
                    let filter = filter.map(|f| Predicate::from_json(f).unwrap());
                    table
                        .scan(vec![f], Some(&columns), filter, 64)
                        .unwrap()
                        .flat_map(|b| {
                            let b = b.unwrap();
                            let (ids, row_ids) = (
                                b.column(0).as_primitive::<Int64Type>().clone(),
                                b.column(1).as_primitive::<Int64Type>().clone(),
                            );
                            (0..b.num_rows()).map(move |i| (ids.value(i), row_ids.value(i))).collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            rows.sort();
            rows
        };
        for filter in
            [None, Some(r#"{"op":"ge","column":"id","value":240}"#), Some(r#"{"op":"lt","column":"id","value":120}"#)]
        {
            let whole = read(files.clone(), filter);
            assert_eq!(read(splits.clone(), filter), whole, "{filter:?}");
            assert!(!whole.is_empty());
        }
        assert_eq!(read(splits.clone(), None).len(), 1045);
        // The plan of one split counts its own row groups only.
        let explained = table.explain(vec![splits[1].clone()], None).unwrap();
        assert_eq!((explained.row_groups, explained.rows), (3, 300));
    }

    fn ids_of(table: &Table, snapshot: Option<i64>) -> Vec<i64> {
        ids(table, table.metadata().snapshot(snapshot.unwrap()).ok())
    }

    #[test]
    fn compaction_rewrites_small_and_deleted_from_files_and_every_read_answers_as_before() {
        use crate::vector::{metric::reference_distance, Metric, VectorSearch};
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.create_vector_index("embedding", HnswParams { metric: Metric::L2, m: 8, ef_construction: 40 }).unwrap();
        for start in (0..250).step_by(50) {
            table.append(reader(vec![batch(start..start + 50)])).unwrap();
        }
        table.delete_where(Some(&Predicate::from_json(r#"{"op":"or","args":[{"op":"lt","column":"id","value":20},{"op":"in","column":"id","values":[60,61,130]}]}"#).unwrap())).unwrap();
        let model: Vec<i64> = (20..250).filter(|i| ![60, 61, 130].contains(i)).collect();
        let before = table.metadata().current_snapshot_id;
        let search = |t: &Table| {
            let files = t.data_files(t.metadata().current_snapshot()).unwrap();
            let query = VectorSearch::new("embedding", vec![100.3, 0.5, -90.0], Metric::L2, 12);
            let found = t.search(files, Some(&["id".to_owned()]), None, &query, 64).unwrap();
            found.column(0).as_primitive::<Int64Type>().values().to_vec()
        };
        let mut reference: Vec<(f64, i64)> = model
            .iter()
            .map(|&i| (reference_distance(Metric::L2, &[100.3, 0.5, -90.0], &[i as f32, 0.5, -(i as f32)]), i))
            .collect();
        reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let exact: Vec<i64> = reference.iter().take(12).map(|r| r.1).collect();
        assert_eq!(search(&table), exact);

        // Files of 60 rows at most: the five files (three with deletes) become four.
        let rewrite = table.rewrite_data_files(60).unwrap().unwrap();
        assert_eq!((rewrite.rewritten, rewrite.written), (5, 4));
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert_eq!(files.iter().map(|f| f.record_count).collect::<Vec<_>>(), vec![60, 60, 60, 47]);
        assert!(files.iter().all(|f| f.deletes.is_empty()));
        let summary = &table.metadata().current_snapshot().unwrap().summary;
        assert_eq!(
            (summary["operation"].as_str(), summary["total-delete-files"].as_str(), summary["total-records"].as_str()),
            ("replace", "0", "227")
        );
        assert_eq!(ids(&table, table.metadata().current_snapshot()), model);
        assert_eq!(search(&table), exact, "the new files carry sidecars and graphs");
        assert!(files
            .iter()
            .all(|f| table.storage.exists(&hnsw_path(table.storage.relative(&f.file_path).unwrap(), 3)).unwrap()));
        assert_eq!(
            ids(&table, table.metadata().snapshot(before.unwrap()).ok()),
            model,
            "time travel reads the old files"
        );
        // Nothing is small or deleted from any more; an orphan sweep finds nothing.
        assert_eq!(table.rewrite_data_files(60).unwrap(), None);
        assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty());
        // Into one file; a reopened table reads the same.
        assert_eq!(table.rewrite_data_files(1000).unwrap().map(|r| (r.rewritten, r.written)), Some((4, 1)));
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), model);
        assert!(matches!(table.rewrite_data_files(0), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn rollback_makes_an_ancestor_current_and_keeps_the_later_snapshots_for_time_travel() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let first = table.append(reader(vec![batch(0..10)])).unwrap();
        let second = table.append(reader(vec![batch(10..20)])).unwrap();
        let third = table.append(reader(vec![batch(20..30)])).unwrap();
        table.rollback_to(first).unwrap();
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), (0..10).collect::<Vec<_>>());
        assert_eq!(ids(&reopened, reopened.metadata().snapshot(third).ok()), (0..30).collect::<Vec<_>>());
        // The next commit builds on the snapshot rolled back to.
        let fourth = table.append(reader(vec![batch(100..105)])).unwrap();
        assert_eq!(table.metadata().snapshot(fourth).unwrap().parent_snapshot_id, Some(first));
        assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..10).chain(100..105).collect::<Vec<_>>());
        // Only ancestors: the abandoned line, and unknown snapshots, are refused by name.
        assert!(matches!(table.rollback_to(second), Err(Error::InvalidArgument(m)) if m.contains("ancestor")));
        assert!(matches!(table.rollback_to(42), Err(Error::NotFound(m)) if m.contains("42")));
        let now = now_ms();
        assert_eq!(table.snapshot(None, Some(now)).unwrap().map(|s| s.snapshot_id), Some(fourth));
    }

    #[test]
    fn row_groups_pruned_by_footer_statistics_leave_exactly_the_rows_of_a_full_scan_with_deletes_too() {
        let dir = tempfile::tempdir().unwrap();
        let schema = kbsx_schema();
        let properties = BTreeMap::from([(ROW_GROUP_ROWS.to_owned(), "16".to_owned())]);
        let mut table = Table::create(dir.path().to_str().unwrap(), &schema, properties, &HashMap::new()).unwrap();
        let mut rng = Rng(23);
        // Four files of sorted k (so their row groups hold disjoint bands of it), nulls in every other column.
        for f in 0..4i64 {
            let n = 100 + rng.below(60) as usize;
            let mut k: Vec<i64> = (0..n).map(|_| f * 250 + rng.below(300) as i64).collect();
            k.sort_unstable();
            let b: Vec<Option<i32>> =
                (0..n).map(|i| (rng.below(5) != 0).then(|| (i / 16) as i32 * 10 + rng.below(10) as i32)).collect();
            let s: Vec<Option<String>> =
                (0..n).map(|_| (rng.below(6) != 0).then(|| format!("s{}", rng.below(40)))).collect();
            let x: Vec<Option<f64>> =
                (0..n).map(|_| (rng.below(7) != 0).then(|| (rng.below(2000) as f64 - 1000.0) / 10.0)).collect();
            table.append(kbsx_rows(k, b, s, x)).unwrap();
        }
        table
            .delete_where(Some(&Predicate::from_json(r#"{"op":"in","column":"b","values":[3,14,25,36,47]}"#).unwrap()))
            .unwrap();
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        assert!(files.iter().any(|f| !f.deletes.is_empty()));
        let keys = |stream: BatchStream| {
            let mut out: Vec<(i64, Option<i32>, Option<String>)> = stream
                .flat_map(|b| {
                    let b = b.unwrap();
                    let k = b.column(0).as_primitive::<Int64Type>().clone();
                    let bb = b.column(1).as_primitive::<Int32Type>().clone();
                    let ss = b.column(2).as_string::<i32>().clone();
                    (0..b.num_rows())
                        .map(move |i| {
                            (
                                k.value(i),
                                bb.is_valid(i).then(|| bb.value(i)),
                                ss.is_valid(i).then(|| ss.value(i).to_owned()),
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            out.sort_unstable();
            out
        };
        // The slow twin: every live row, the filter applied after.
        let everything = Arc::new(
            arrow::compute::concat_batches(
                &schema,
                &table.scan_files(files.clone(), None, 1000).unwrap().map(Result::unwrap).collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        let footers: Vec<Arc<parquet::file::metadata::ParquetMetaData>> = files
            .iter()
            .map(|f| {
                let bytes = table.storage.get(table.storage.relative(&f.file_path).unwrap()).unwrap();
                ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap().metadata().clone()
            })
            .collect();
        assert!(footers.iter().all(|m| m.num_row_groups() >= 6), "row groups of 16 rows");
        let table_schema = table.arrow_schema().unwrap(); // with the field ids the footers carry
        let (mut pruned, mut kept) = (0, 0);
        for _ in 0..400 {
            let predicate = random_predicate_over(&mut rng, 2, 1000);
            let want = keys(Box::new(RecordBatchIterator::new(
                vec![Ok(predicate.filter(&everything).unwrap())],
                schema.clone(),
            )));
            let got = keys(table.scan(files.clone(), None, Some(predicate.clone()), 7).unwrap());
            assert_eq!(got, want, "{}", predicate.to_json());
            for footer in &footers {
                let groups = row_groups_may_match(&predicate, footer, &table_schema);
                kept += groups.len();
                pruned += footer.num_row_groups() - groups.len();
            }
        }
        assert!(pruned > 2000 && kept > 1000, "row groups pruned {pruned}, kept {kept}");
    }

    #[test]
    fn concurrent_writers_lose_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let location = location.clone();
                std::thread::spawn(move || {
                    let mut table = Table::load(&location, &HashMap::new()).unwrap();
                    for i in 0..50 {
                        let start = (w * 1000 + i * 10) as i64;
                        table.append(reader(vec![batch(start..start + 10)])).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let table = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(table.version(), 101);
        assert_eq!(ids(&table, table.metadata().current_snapshot()).len(), 1000);
        assert_eq!(table.metadata().snapshots.len(), 100);
    }

    #[test]
    fn overwrite_replaces_every_row_and_keeps_the_old_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let first = table.append(reader(vec![batch(0..10)])).unwrap();
        table.append(reader(vec![batch(10..20)])).unwrap();
        let file = table.write_data_files(reader(vec![batch(100..105)])).unwrap().remove(0);
        let replaced = table.commit_overwrite(vec![file]).unwrap();
        assert_eq!(ids(&table, table.metadata().current_snapshot()), (100..105).collect::<Vec<_>>());
        assert_eq!(ids(&table, table.metadata().snapshot(first).ok()), (0..10).collect::<Vec<_>>());
        let summary = &table.metadata().snapshot(replaced).unwrap().summary;
        assert_eq!(
            (summary["operation"].as_str(), summary["total-records"].as_str(), summary["deleted-data-files"].as_str()),
            ("overwrite", "5", "2")
        );
        // An overwrite with no files empties the table (TRUNCATE); appends go on from there.
        table.commit_overwrite(vec![]).unwrap();
        assert!(ids(&table, table.metadata().current_snapshot()).is_empty());
        table.append(reader(vec![batch(7..9)])).unwrap();
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(ids(&reopened, reopened.metadata().current_snapshot()), vec![7, 8]);
        assert_eq!(ids(&reopened, reopened.metadata().snapshot(replaced).ok()), (100..105).collect::<Vec<_>>());
    }

    #[test]
    fn expired_snapshots_take_only_their_own_files_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        let first = table.append(reader(vec![batch(0..10)])).unwrap();
        table.commit_overwrite(table.write_data_files(reader(vec![batch(10..20)])).unwrap()).unwrap();
        let third = table.append(reader(vec![batch(20..30)])).unwrap();
        let data = |t: &Table| t.storage.list("data").unwrap().into_iter().filter(|p| p.ends_with(".parquet")).count();
        assert_eq!(data(&table), 3);
        // Nothing is old enough: the snapshots stay.
        assert!(table.expire_snapshots(0, 1).unwrap().is_empty());
        let expired = table.expire_snapshots(i64::MAX, 2).unwrap();
        assert_eq!(expired, vec![first]);
        // The first append's file was only in the expired snapshot; the others are still live.
        assert_eq!(data(&table), 2);
        assert_eq!(ids(&table, table.metadata().current_snapshot()), (10..30).collect::<Vec<_>>());
        assert!(table.metadata().snapshot(first).is_err(), "time travel to an expired snapshot fails");
        let reopened = Table::load(&location, &HashMap::new()).unwrap();
        assert_eq!(reopened.metadata().snapshots.len(), 2);
        assert_eq!(reopened.metadata().current_snapshot_id, Some(third));
        assert!(table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty(), "expiry left no orphans");
    }

    #[test]
    fn orphan_removal_spares_referenced_and_recent_files() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        let mut table = Table::create(&location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..10)])).unwrap();
        table.append(reader(vec![batch(10..20)])).unwrap();
        // A write that never committed: its data file and the files beside it are orphans.
        let pending = table.write_data_files(reader(vec![batch(20..30)])).unwrap().remove(0);
        let listed = |t: &Table| {
            let mut all = t.storage.list("").unwrap();
            all.sort();
            all
        };
        let before = listed(&table);
        // Files younger than the cutoff stay: a writer may still be about to commit them.
        assert!(table.remove_orphan_files_unchecked(now_ms() - 3_600_000).unwrap().is_empty());
        let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        let stem = table.storage.relative(&pending.file_path).unwrap().strip_suffix(".parquet").unwrap().to_owned();
        // The data file, its vector sidecar and its distinct-value sketches.
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert!(removed.iter().all(|p| p.starts_with(&stem)), "{removed:?}");
        assert_eq!(listed(&table).len(), before.len() - 3);
        assert_eq!(ids(&table, table.metadata().current_snapshot()), (0..20).collect::<Vec<_>>());
        // Time travel still has every file it needs.
        let first = table.metadata().snapshots[0].snapshot_id;
        assert_eq!(ids(&table, table.metadata().snapshot(first).ok()).len(), 10);
    }

    #[test]
    fn negative_snapshot_ids_and_times_before_1970_are_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..5)])).unwrap();
        for (snapshot, as_of) in
            [(Some(-1), None), (Some(-5), None), (Some(i64::MIN), None), (None, Some(-1)), (None, Some(-86_400_000))]
        {
            let err = Table::load_at(location, &HashMap::new(), snapshot, as_of).unwrap_err();
            assert!(matches!(err, Error::NotFound(_)), "{snapshot:?} {as_of:?}: {err}");
        }
    }

    #[test]
    fn orphan_removal_refuses_young_cutoffs_and_spares_newer_versions_and_uncommitted_files() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap();
        let mut table = Table::create(location, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
        table.append(reader(vec![batch(0..5)])).unwrap();
        for cutoff in [now_ms(), now_ms() + 3_600_000, i64::MAX, now_ms() - 3_600_000] {
            let err = table.remove_orphan_files(cutoff).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument(_)) && err.to_string().contains("older than 24 hours"),
                "{err}"
            );
        }
        assert!(table.remove_orphan_files(now_ms() - crate::limits::MIN_ORPHAN_AGE_MS).unwrap().is_empty());
        // A metadata version past the one read (another writer's, arriving meanwhile) is never an orphan.
        table.append(reader(vec![batch(5..9)])).unwrap();
        std::fs::write(dir.path().join("metadata/v99.metadata.json"), b"{}").unwrap();
        let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        assert!(removed.is_empty(), "{removed:?}");
        assert!(dir.path().join("metadata/v99.metadata.json").exists());
        std::fs::remove_file(dir.path().join("metadata/v99.metadata.json")).unwrap();
        let rows = |t: &Table| ids(t, t.metadata().current_snapshot()).len();
        assert_eq!(rows(&Table::load(location, &HashMap::new()).unwrap()), 9);
        // A staged file a killed writer left goes with the orphans.
        std::fs::write(dir.path().join("data/leftover.parquet#4242"), b"half a file").unwrap();
        let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        assert_eq!(removed, vec!["data/leftover.parquet#4242"]);
        // A file removed before its commit is not committed.
        let written = table.write_data_files(reader(vec![batch(9..12)])).unwrap();
        table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        let err = table.commit_append(written).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)) && err.to_string().contains("removed as an orphan"), "{err}");
        assert_eq!(rows(&Table::load(location, &HashMap::new()).unwrap()), 9);
    }
}
