//! A HyperStream table: a genuine Iceberg table (Parquet data files with field ids, Avro
//! manifests, `metadata/vN.metadata.json`, `metadata/version-hint.text`) under one location, with
//! index sidecars beside its data files.
//!
//! This file holds the handle and its reads of metadata; each concern has a file of its own
//! (creation, the commit path, writes, deletes, evolution, indexes, maintenance, statistics, scan
//! planning, the per-file reader, search), each adding its methods to [`Table`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::cast;
use arrow::compute::take_record_batch;
use arrow::datatypes::{DataType, Int64Type, Schema as ArrowSchema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::metadata::PageIndexPolicy;

use crate::runtime::{progress, warn};
use crate::scan::{filtered, prune_files, row_groups_may_match, BatchStream, PartitionPruner, Predicate};
use crate::spec::deletes::{is_deletion_vector, target, CONTENT_EQUALITY_DELETES, CONTENT_POSITION_DELETES};
use crate::spec::lineage;
use crate::spec::manifest::{
    read_manifest, read_manifest_list, write_manifest, write_manifest_list, DataFile, FieldSummary, ManifestEntry,
    ManifestFile, STATUS_ADDED, STATUS_DELETED, STATUS_EXISTING,
};
use crate::spec::metadata::{
    MetadataLogEntry, Operation, PartitionSpec, Snapshot, SortField, SortOrder, TableMetadata,
};
use crate::spec::partition::{
    describe_partition_field, describe_sort_field, parse_partitioning, parse_sort_order, partition_types, resolve,
};
use crate::spec::schema::{Schema, PARQUET_FIELD_ID};
use crate::storage::Storage;
use crate::table::rest::{storage_options, RestTable};
use crate::vector::hnsw::{hnsw_path, HnswGraph, HnswParams};
use crate::vector::search::{search_batches, search_row_batches, with_distances, Hits, Prepared, VectorSearch};
use crate::vector::sidecar::{sidecar_path, Sidecar, SidecarBuilder};
use crate::vector::{FloatQuery, Neighbor};
use crate::{Error, Result};
use rayon::prelude::*;
use roaring::RoaringTreemap;

mod commit;
mod create;
mod delete;
mod evolve;
mod indexes;
mod maintenance;
mod metadata_tables;
mod operations;
mod plan;
mod properties;
mod reader;
mod search;
mod stats;
#[cfg(test)]
mod tests;
mod write;

use crate::spec::bounds::{bounds, less};
use commit::*;
use create::*;
pub use delete::{row_deletes, row_deletes_fragment, ChangeRead, Isolation, RowOperation};
pub use indexes::*;
pub use maintenance::*;
pub use metadata_tables::{metadata_table_schema, METADATA_TABLES};
pub use operations::*;
pub use plan::*;
pub use properties::*;
use reader::*;
pub use write::{TableWriter, DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE};

/// Field metadata of [`Table::described_schema`]: a column's `initial-default` (the value of rows
/// written before it existed) and `write-default` (of rows written without it), as JSON.
pub const INITIAL_DEFAULT: &str = "iceberg.initial-default";
pub const WRITE_DEFAULT: &str = "iceberg.write-default";

/// An open table at one metadata version.
#[derive(Debug, Clone)]
pub struct Table {
    storage: Storage,
    metadata: TableMetadata,
    version: Version,
    /// The snapshot a time-travel handle was opened at ([`Table::load_at`]): reads see it as
    /// current, with its schema; nothing is written through such a handle.
    pinned: Option<i64>,
    /// HNSW graphs this handle (and its clones) built: what engines report as index build progress.
    index_builds: Arc<IndexBuilds>,
    /// Where its commits land.
    operations: Arc<dyn TableOperations>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The delete files that apply to `files`, each entry once (one may apply to several data files).
pub(super) fn delete_files_of(files: &[DataFile]) -> Vec<DataFile> {
    let mut deletes: Vec<DataFile> = files.iter().flat_map(|f| f.deletes.iter().cloned()).collect();
    deletes.sort_by(|a, b| delete_key(a).cmp(&delete_key(b)));
    deletes.dedup_by(|a, b| delete_key(a) == delete_key(b));
    deletes
}

/// What tells one delete entry from another: several entries can share a file (the deletion
/// vectors of one Puffin file, each at its own offset), so the path alone does not.
pub(super) fn delete_key(delete: &DataFile) -> (&str, Option<i64>, Option<&str>) {
    (&delete.file_path, delete.content_offset, delete.referenced_data_file.as_deref())
}

/// Whether delete entry `delete` serves data file `file` alone (a deletion vector, or a position
/// delete file naming only it); one that does not may hold rows of other data files too, and stays
/// while any of them is live.
pub(super) fn serves_only(delete: &DataFile, file: &DataFile) -> bool {
    target(delete) == Some(file.file_path.as_bytes())
}

/// The metadata column of the path of the data file a row is in (Iceberg's `_file`).
pub const FILE_PATH: &str = "_file";
/// The metadata column of a row's position in its data file (Iceberg's `_pos`): with `_file`,
/// what a row-level change names the rows it deletes by.
pub const ROW_POSITION: &str = "_pos";

/// `_file` and `_pos`, as a read names them (with Iceberg's reserved field ids).
pub(super) fn row_place_fields() -> [arrow::datatypes::Field; 2] {
    let field = |name: &str, data_type: DataType, id: i32| {
        arrow::datatypes::Field::new(name, data_type, false)
            .with_metadata(HashMap::from([(PARQUET_FIELD_ID.to_owned(), id.to_string())]))
    };
    [field(FILE_PATH, DataType::Utf8, 2147483646), field(ROW_POSITION, DataType::Int64, 2147483645)]
}

/// Whether `name` is a column of where a row is (`_file`, `_pos`) rather than of what it holds.
pub fn is_row_place(name: &str) -> bool {
    name == FILE_PATH || name == ROW_POSITION
}

/// The rows of `file` its delete files delete.
pub(super) fn deleted_positions(storage: &Storage, file: &DataFile) -> Result<RoaringTreemap> {
    positions_deleted_by(storage, file, file.deletes.iter())
}

/// The rows of `file` that the delete entries `deletes` delete.
pub(super) fn positions_deleted_by<'a>(
    storage: &Storage,
    file: &DataFile,
    deletes: impl Iterator<Item = &'a DataFile>,
) -> Result<RoaringTreemap> {
    let mut deleted = RoaringTreemap::new();
    for delete in deletes {
        let bytes = storage.map(storage.relative(&delete.file_path)?, true)?;
        deleted |= match (delete.content, is_deletion_vector(delete)) {
            (CONTENT_EQUALITY_DELETES, _) => {
                let data = storage.map(storage.relative(&file.file_path)?, false)?;
                let ids = delete.equality_ids.as_deref().unwrap_or_default();
                crate::spec::deletes::equality_deleted(data, bytes, ids, &delete.file_path)
                    .map_err(|e| e.within(&file.file_path))?
            }
            (_, true) => crate::spec::deletes::read_deletion_vector(&bytes, delete, &delete.file_path)?,
            (_, false) => crate::spec::deletes::read(bytes, &file.file_path, &delete.file_path)?,
        };
    }
    Ok(deleted)
}

impl Table {
    /// Opens the latest version of the table at `location`.
    /// With a REST catalog in `options` ([`crate::table::rest`]), the table is the one the catalog
    /// names there, at the location the catalog keeps for it.
    pub fn load(location: &str, options: &HashMap<String, String>) -> Result<Self> {
        if let Some(file) = options.get(crate::table::rest::METADATA_LOCATION) {
            let storage_options = storage_options(&BTreeMap::new(), options); // the catalog's options left out
            let operations = Arc::new(MetadataFileOperations::open(file, &storage_options)?);
            let (version, metadata) = operations.read()?;
            let storage = Storage::open(&metadata.location, &storage_options)?;
            return Ok(Self::at(storage, version, metadata, operations));
        }
        if let Some(table) = RestTable::of(options)? {
            let loaded = table.load_table()?;
            let storage = Storage::open(&loaded.metadata.location, &storage_options(&loaded.config, options))?;
            let version = RestTable::version(&loaded);
            let operations: Arc<dyn TableOperations> = Arc::new(table);
            return Ok(Self::at(storage, version, loaded.metadata, operations));
        }
        Self::load_from(Storage::open(location, options)?, Arc::new(FileSystemOperations))
    }

    /// What the tasks of a distributed query (Spark executors, Trino workers) open this table with.
    /// A catalog's table: this version's metadata file and the storage options it was opened with
    /// (those the catalog vended for the table among them), never the catalog's URI or credential,
    /// so a task neither calls the catalog nor holds its secret. A table of the file-system layout:
    /// its storage options.
    pub fn task_options(&self) -> HashMap<String, String> {
        let mut options = self.storage_options();
        if self.operations.tasks_open_metadata_file() {
            options.insert(crate::table::rest::METADATA_LOCATION.to_owned(), self.version.location.clone());
        }
        options
    }

    /// The options its storage was opened with: a catalog's table, those the catalog vended for it
    /// (never the catalog's URI or credential); a table of the file-system layout, all it was given.
    pub fn storage_options(&self) -> HashMap<String, String> {
        self.storage.options().clone()
    }

    fn at(storage: Storage, version: Version, metadata: TableMetadata, operations: Arc<dyn TableOperations>) -> Self {
        Self { storage, metadata, version, pinned: None, index_builds: Arc::default(), operations }
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

    pub(super) fn load_from(storage: Storage, operations: Arc<dyn TableOperations>) -> Result<Self> {
        let (version, metadata) = operations.load(&storage)?;
        Ok(Self::at(storage, version, metadata, operations))
    }

    /// Refuses a write through a handle opened at an earlier snapshot.
    pub(super) fn writable(&self) -> Result<()> {
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
            *self = Self::load_from(self.storage.clone(), self.operations.clone())?;
            self.index_builds = builds;
        }
        Ok(())
    }

    pub fn metadata(&self) -> &TableMetadata {
        &self.metadata
    }

    pub fn version(&self) -> u64 {
        self.version.number
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
    pub(super) fn bloom_columns(&self, schema: &ArrowSchema) -> Result<Vec<(String, f64)>> {
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

    /// The files kept beside data file `path`: sidecars and graphs of vector columns, scalar indexes,
    /// distinct-value sketches.
    pub(super) fn files_beside(&self, path: &str) -> Vec<String> {
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

    /// The current schema as Arrow (field ids in `PARQUET:field_id`, vectors as fixed-size lists).
    pub fn arrow_schema(&self) -> Result<SchemaRef> {
        Ok(Arc::new(self.metadata.current_schema()?.to_arrow(&self.vectors())?))
    }

    /// [`Table::arrow_schema`] with each column's defaults in its field metadata, under
    /// [`INITIAL_DEFAULT`] and [`WRITE_DEFAULT`] (the spec's JSON single values): the schema the
    /// engines are shown, which they take a column's default from.
    pub fn described_schema(&self) -> Result<SchemaRef> {
        let schema = self.metadata.current_schema()?;
        let arrow = self.arrow_schema()?;
        let fields: Vec<arrow::datatypes::FieldRef> = arrow
            .fields()
            .iter()
            .map(|field| {
                let Some(column) = schema.fields.iter().find(|f| &f.name == field.name()) else {
                    return field.clone();
                };
                let mut metadata = field.metadata().clone();
                for (key, value) in [(INITIAL_DEFAULT, &column.initial_default), (WRITE_DEFAULT, &column.write_default)]
                {
                    if let Some(value) = value {
                        metadata.insert(key.to_owned(), value.to_string());
                    }
                }
                Arc::new(field.as_ref().clone().with_metadata(metadata))
            })
            .collect();
        Ok(Arc::new(ArrowSchema::new_with_metadata(fields, arrow.metadata().clone())))
    }

    /// The `initial-default` of each column that has one, by name: the value of rows written before
    /// the column existed (format version 3).
    pub(super) fn initial_defaults(&self) -> Result<HashMap<String, serde_json::Value>> {
        let schema = self.metadata.current_schema()?;
        Ok(schema.fields.iter().filter_map(|f| Some((f.name.clone(), f.initial_default.clone()?))).collect())
    }

    /// The columns a read can name: the table's, in a format version 3 table the row lineage
    /// columns `_row_id` and `_last_updated_sequence_number` after them, and then the metadata
    /// columns of each row's place, `_file` and `_pos` (all read only when named).
    pub fn read_schema(&self) -> Result<SchemaRef> {
        let table = self.stored_schema()?;
        let mut fields: Vec<arrow::datatypes::Field> = table.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(row_place_fields());
        Ok(Arc::new(ArrowSchema::new_with_metadata(fields, table.metadata().clone())))
    }

    /// What a data file stores of a row and what moves with it when compaction rewrites it: the
    /// table's columns and, in a format version 3 table, its lineage.
    pub(super) fn stored_schema(&self) -> Result<SchemaRef> {
        let table = self.arrow_schema()?;
        if self.metadata.format_version < 3 {
            return Ok(table);
        }
        let mut fields: Vec<arrow::datatypes::Field> = table.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(lineage::fields());
        Ok(Arc::new(ArrowSchema::new_with_metadata(fields, table.metadata().clone())))
    }

    /// The manifests of a snapshot.
    pub(super) fn manifests(&self, snapshot: &Snapshot) -> Result<Vec<ManifestFile>> {
        let list = &snapshot.manifest_list;
        // A list that is not there (or not inside the table) is the metadata version's fault.
        let version = &self.version.location;
        let bytes =
            self.storage.relative(list).and_then(|path| self.storage.get(path)).map_err(|e| e.within(version))?;
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
    pub(super) fn entries_of(&self, manifest: &ManifestFile) -> Result<Vec<ManifestEntry>> {
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
        let mut equality = Vec::new();
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
                    CONTENT_EQUALITY_DELETES if file.file_format.eq_ignore_ascii_case("parquet") => equality.push(file),
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
        if !equality.is_empty() {
            // An equality delete applies to the data written before it (a data sequence number below
            // its own) in its partition, or everywhere when its spec is unpartitioned.
            let unpartitioned = |spec_id: i32| {
                self.metadata.partition_specs.iter().find(|s| s.spec_id == spec_id).is_none_or(|s| s.fields.is_empty())
            };
            for file in &mut files {
                let applying = equality.iter().filter(|d| {
                    let scoped =
                        unpartitioned(d.spec_id) || (d.spec_id == file.spec_id && d.partition == file.partition);
                    let before = match (file.sequence_number, d.sequence_number) {
                        (Some(data), Some(delete)) => data < delete,
                        _ => true,
                    };
                    scoped && before
                });
                file.deletes.extend(applying.cloned());
            }
        }
        if !deletes.is_empty() {
            // As the spec scopes them: a delete that names its data file applies to that file, any
            // other position delete file to the data files of its partition; either only to data
            // written before it (a data sequence number not above its own).
            let (targeted, scoped): (Vec<DataFile>, Vec<DataFile>) =
                deletes.into_iter().partition(|d| target(d).is_some());
            let mut by_target: HashMap<Vec<u8>, Vec<DataFile>> = HashMap::new();
            for delete in targeted {
                by_target.entry(target(&delete).expect("partitioned on it").to_vec()).or_default().push(delete);
            }
            let mut by_partition: HashMap<(i32, &BTreeMap<i32, Vec<u8>>), Vec<&DataFile>> = HashMap::new();
            for delete in &scoped {
                by_partition.entry((delete.spec_id, &delete.partition)).or_default().push(delete);
            }
            let written_before =
                |data: &DataFile, delete: &DataFile| match (data.sequence_number, delete.sequence_number) {
                    (Some(data), Some(delete)) => data <= delete,
                    _ => true,
                };
            for file in &mut files {
                let mut applying = by_target.get(file.file_path.as_bytes()).cloned().unwrap_or_default();
                applying.extend(
                    by_partition.get(&(file.spec_id, &file.partition)).into_iter().flatten().map(|d| (*d).clone()),
                );
                applying.retain(|d| written_before(file, d));
                file.deletes.extend(applying);
            }
        }
        Ok(files)
    }
}
