//! Writing rows as data files through a bounded buffer.
//!
//! A [`TableWriter`] takes an engine task's batches one at a time. In an unpartitioned, unsorted
//! table it encodes each batch into the data file being built at once; otherwise it keeps the rows
//! (copied, so the engine's buffers go back to it) until they are split by partition and sorted.
//! Either way what it holds is bounded: when it reaches the table's target file size
//! ([`TARGET_FILE_SIZE`]), or when the process's writers together hold more than the write budget
//! ([`crate::memory::WRITE_BUDGET`]), it becomes data files with their sidecars and indexes, and the
//! writer starts again empty. Nothing is committed here: the caller commits the files
//! ([`Table::commit_append`]) or the writer removes them ([`TableWriter::abort`]).

use std::collections::{BTreeMap, HashMap};

use arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatchReader;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{
    bounds, compression, field_id, less, progress, Table, DATA_PAGE_ROWS, DEFAULT_ROW_GROUP_ROWS, ROW_GROUP_ROWS,
};
use crate::index::ScalarIndexBuilder;
use crate::memory::{copied_batch, WriteBudget, WriteReservation, WRITE_BUDGET};
use crate::spec::manifest::DataFile;
use crate::spec::partition::Layout;
use crate::spec::schema::PARQUET_FIELD_ID;
use crate::vector::hnsw::hnsw_path;
use crate::vector::sidecar::{sidecar_path, SidecarBuilder};
use crate::{Error, Result};

/// Iceberg's table property of the size a data file is rolled at (bytes): here what the writer
/// buffers for it (the encoded file so far, the row group being encoded, the vector sidecars and
/// index values), and its default, 128 MiB (Iceberg's is 512 MiB; a writer here holds the file in
/// memory until it is put, so a smaller default keeps a task's memory modest).
pub const TARGET_FILE_SIZE: &str = "write.target-file-size-bytes";
pub const DEFAULT_TARGET_FILE_SIZE: usize = 128 << 20;

/// The smallest target file size a table may set: 1 MiB.
const MIN_TARGET_FILE_SIZE: usize = 1 << 20;

/// The target file size table `properties` set.
pub(super) fn target_file_size(properties: &BTreeMap<String, String>) -> Result<usize> {
    match properties.get(TARGET_FILE_SIZE) {
        None => Ok(DEFAULT_TARGET_FILE_SIZE),
        Some(v) => v.trim().parse::<usize>().ok().filter(|&n| n >= MIN_TARGET_FILE_SIZE).ok_or_else(|| {
            Error::invalid(format!(
                "table property {TARGET_FILE_SIZE} must be at least {MIN_TARGET_FILE_SIZE} bytes, got '{v}'"
            ))
        }),
    }
}

impl Table {
    /// Appends every batch of `reader` as new data files and commits a snapshot; returns its id.
    /// Batches must have the table's columns (by name, in any order, castable types); nothing is
    /// committed when one does not.
    pub fn append(&mut self, reader: impl RecordBatchReader) -> Result<i64> {
        let files = self.write_data_files(reader)?;
        self.commit_append(files)
    }

    /// Writes the rows of `reader` as data files without committing them (an engine task's part of
    /// a distributed write) through a [`TableWriter`]: files of about the target size, in a
    /// partitioned table each of one partition, each sorted by the table's sort order when it has
    /// one. [`Table::commit_append`] commits such files, [`Table::delete_files`] removes them when
    /// the write is aborted. A stream without rows is an invalid argument.
    pub fn write_data_files(&self, reader: impl RecordBatchReader) -> Result<Vec<DataFile>> {
        self.write_rows(reader, self.arrow_schema()?)
    }

    /// A writer of the table's columns, for batches handed over one at a time.
    pub fn writer(&self) -> Result<TableWriter> {
        TableWriter::new(self, self.arrow_schema()?)
    }

    /// As [`Table::writer`], whose batches may also carry a row's lineage (format version 3):
    /// the `_row_id` of an updated row, which it keeps; where `_row_id` is null (a new row) or
    /// `_last_updated_sequence_number` is (always, for a change), the row inherits the file's.
    pub fn lineage_writer(&self) -> Result<TableWriter> {
        TableWriter::new(self, self.stored_schema()?)
    }

    /// As [`Table::write_data_files`], of the columns of `schema`: the table's, or in compaction of
    /// a format version 3 table also the row lineage columns, so that moved rows keep their ids.
    pub(super) fn write_rows(&self, reader: impl RecordBatchReader, schema: SchemaRef) -> Result<Vec<DataFile>> {
        let mut writer = TableWriter::new(self, schema)?;
        let written = reader.into_iter().try_for_each(|batch| writer.write(&batch?)).and_then(|()| writer.finish());
        match written {
            Ok(files) if files.is_empty() => Err(Error::invalid("nothing to append: the stream holds no rows")),
            Ok(files) => Ok(files),
            Err(e) => {
                let _ = writer.abort();
                Err(e)
            }
        }
    }

    /// Puts one built data file (with its sidecars, graphs and indexes) under `data/<directory>`.
    fn put_data_file(
        &self,
        built: BuiltFile,
        layout: &Layout,
        partition: BTreeMap<i32, Vec<u8>>,
        directory: &str,
    ) -> Result<DataFile> {
        let BuiltFile { bytes, stats, sidecars, scalar_indexes } = built;
        let data_path = match directory {
            "" => format!("data/{}.parquet", uuid::Uuid::new_v4()),
            dir => format!("data/{dir}/{}.parquet", uuid::Uuid::new_v4()),
        };
        let size = bytes.len() as i64;
        let indexes = self.vector_indexes();
        for sidecar in sidecars {
            let (id, dimension) = (sidecar.field_id, sidecar.dimension());
            let vectors = sidecar.finish();
            if let Some(params) = indexes.get(&id) {
                let started = std::time::Instant::now();
                let graph = self.graph_of(&vectors, stats.rows as usize, dimension, *params, &data_path)?;
                self.storage.put(&hnsw_path(&data_path, id), graph)?;
                progress(&format!(
                    "HNSW index on {}, field {id}: new file {data_path} ({} rows) built in {:.2} s",
                    self.location(),
                    stats.rows,
                    started.elapsed().as_secs_f64()
                ));
            }
            self.storage.put(&sidecar_path(&data_path, id), vectors)?;
        }
        for (id, index) in scalar_indexes {
            self.storage.put(&crate::index::scalar_index_path(&data_path, id), Bytes::from(index.finish()?))?;
        }
        self.storage
            .put(&crate::index::ndv::ndv_path(&data_path), Bytes::from(crate::index::ndv::to_bytes(&stats.sketches)))?;
        self.storage.put(&data_path, bytes)?;
        Ok(DataFile {
            content: 0,
            file_path: self.storage.uri(&data_path),
            file_format: "PARQUET".to_owned(),
            record_count: stats.rows as i64,
            file_size_in_bytes: size,
            column_sizes: BTreeMap::new(),
            value_counts: stats.value_counts,
            null_value_counts: stats.null_counts,
            nan_value_counts: stats.nan_counts,
            lower_bounds: stats.lower,
            upper_bounds: stats.upper,
            deletes: Vec::new(),
            spec_id: layout.spec_id(),
            partition,
            sort_order_id: layout.sort_order_id(),
            ..DataFile::default()
        })
    }
}

/// An engine task's writer: batches in, data files out, with a bounded buffer between (see the
/// module's description).
pub struct TableWriter {
    table: Table,
    schema: SchemaRef,
    layout: Layout,
    settings: FileSettings,
    target: usize,
    /// The data file being built (unpartitioned, unsorted tables).
    open: Option<FileWriter>,
    /// Rows waiting to be split by partition and sorted (other tables), and their size.
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    /// Every file written so far, whether by a roll or by [`TableWriter::finish`].
    written: Vec<DataFile>,
    reservation: WriteReservation,
    /// The most this writer has held at once (bytes).
    peak: usize,
    /// Whether a write or roll failed part way (the file being built may hold part of a batch):
    /// then only [`TableWriter::abort`] is left.
    failed: bool,
    /// The `write-default` of each column that has one, by name: what a row given without the
    /// column holds in it.
    write_defaults: HashMap<String, serde_json::Value>,
}

impl TableWriter {
    fn new(table: &Table, schema: SchemaRef) -> Result<TableWriter> {
        Self::within(table, schema, &WRITE_BUDGET)
    }

    /// A writer whose buffer counts against `budget`.
    fn within(table: &Table, schema: SchemaRef, budget: &'static WriteBudget) -> Result<TableWriter> {
        table.writable()?;
        let layout = Layout::of(&table.metadata, &schema)?;
        let settings = FileSettings::of(table, &schema)?;
        let target = target_file_size(&table.metadata.properties)?;
        Ok(TableWriter {
            table: table.clone(),
            schema,
            layout,
            settings,
            target,
            open: None,
            pending: Vec::new(),
            pending_bytes: 0,
            written: Vec::new(),
            reservation: budget.reserve(),
            peak: 0,
            failed: false,
            write_defaults: table
                .metadata
                .current_schema()?
                .fields
                .iter()
                .filter_map(|f| Some((f.name.clone(), f.write_default.clone()?)))
                .collect(),
        })
    }

    /// Takes the rows of `batch` (the table's columns by name, in any order, castable types); it may
    /// write files. The writer keeps nothing of `batch`'s buffers.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.usable()?;
        self.failed = true; // until the batch is whole in the writer
        self.take(batch)?;
        self.failed = false;
        Ok(())
    }

    fn usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::invalid(
                "an earlier write of this table writer failed part way; it can only be aborted",
            ));
        }
        Ok(())
    }

    fn take(&mut self, batch: &RecordBatch) -> Result<()> {
        // Checked even without rows: a stream of the wrong columns is refused by name.
        let batch = conform(batch, &self.schema, &self.write_defaults)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.layout.is_plain() {
            let file = match &mut self.open {
                Some(file) => file,
                None => self.open.insert(FileWriter::new(&self.schema, &self.settings)?),
            };
            file.write(&batch)?;
        } else {
            let batch = copied_batch(&batch)?;
            self.pending_bytes += batch.get_array_memory_size();
            self.pending.push(batch);
        }
        let held = self.buffered_bytes();
        self.peak = self.peak.max(held);
        let over_budget = self.reservation.hold(held);
        if held >= self.target || over_budget {
            self.roll()?;
        }
        Ok(())
    }

    /// What the writer holds now (bytes): the file being built, or the rows waiting.
    pub fn buffered_bytes(&self) -> usize {
        self.open.as_ref().map_or(0, FileWriter::memory) + self.pending_bytes
    }

    /// The most the writer has held at once (bytes).
    pub fn peak_bytes(&self) -> usize {
        self.peak
    }

    /// Turns what the writer holds into data files.
    fn roll(&mut self) -> Result<()> {
        if let Some(file) = self.open.take() {
            let file = self.table.put_data_file(file.finish()?, &self.layout, BTreeMap::new(), "")?;
            self.written.push(file);
        }
        if !self.pending.is_empty() {
            let rows = arrow::compute::concat_batches(&self.schema, &self.pending)?;
            self.pending.clear();
            self.pending_bytes = 0;
            for part in self.layout.split(&rows)? {
                let mut file = FileWriter::new(&self.schema, &self.settings)?;
                file.write(&part.rows)?;
                let file = self.table.put_data_file(file.finish()?, &self.layout, part.partition, &part.directory)?;
                self.written.push(file);
            }
        }
        self.reservation.hold(0);
        Ok(())
    }

    /// Writes what the writer still holds; returns every file it wrote (none without rows).
    pub fn finish(&mut self) -> Result<Vec<DataFile>> {
        self.usable()?;
        self.failed = true;
        self.roll()?;
        self.failed = false;
        Ok(self.written.clone())
    }

    /// Drops what the writer holds and deletes every file it wrote (an aborted task's).
    pub fn abort(&mut self) -> Result<()> {
        self.failed = true;
        self.open = None;
        self.pending.clear();
        self.pending_bytes = 0;
        self.reservation.hold(0);
        let written = std::mem::take(&mut self.written);
        self.table.delete_files(&written)
    }
}

/// What every data file of one writer is written with.
#[derive(Debug)]
struct FileSettings {
    row_group_rows: usize,
    compression: Compression,
    /// The field ids of the columns with scalar indexes.
    scalar: Vec<i32>,
    /// The columns with bloom filters, and their false positive probability.
    blooms: Vec<(String, f64)>,
}

impl FileSettings {
    fn of(table: &Table, schema: &SchemaRef) -> Result<FileSettings> {
        let row_group_rows = match table.metadata.properties.get(ROW_GROUP_ROWS) {
            None => DEFAULT_ROW_GROUP_ROWS,
            Some(v) => v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                Error::invalid(format!("table property {ROW_GROUP_ROWS} must be a positive number of rows, got '{v}'"))
            })?,
        };
        Ok(FileSettings {
            row_group_rows,
            compression: compression(&table.metadata.properties)?,
            scalar: table.scalar_indexes(),
            blooms: table.bloom_columns(schema)?,
        })
    }
}

/// One data file being built: the Parquet file (in memory until it is put), its statistics, a
/// sidecar of each vector column and the scalar index of each indexed column.
struct FileWriter {
    schema: SchemaRef,
    writer: ArrowWriter<Vec<u8>>,
    stats: WriteStats,
    /// The columns sketched for distinct counts, by position (their sketches are in `stats`).
    sketched: Vec<usize>,
    sidecars: Vec<(usize, SidecarBuilder)>,
    indexes: Vec<(usize, i32, ScalarIndexBuilder)>,
}

impl std::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter").field("rows", &self.stats.rows).field("memory", &self.memory()).finish()
    }
}

/// A data file built and not yet put.
struct BuiltFile {
    bytes: Bytes,
    stats: WriteStats,
    sidecars: Vec<SidecarBuilder>,
    scalar_indexes: Vec<(i32, ScalarIndexBuilder)>,
}

struct WriteStats {
    rows: u64,
    value_counts: BTreeMap<i32, i64>,
    null_counts: BTreeMap<i32, i64>,
    /// NaN values of each float column, which its bounds leave out.
    nan_counts: BTreeMap<i32, i64>,
    lower: BTreeMap<i32, Vec<u8>>,
    upper: BTreeMap<i32, Vec<u8>>,
    /// A distinct-value sketch of each flat column, by field id.
    sketches: Vec<(i32, crate::index::ndv::Sketch)>,
}

impl FileWriter {
    /// A file of the columns of `schema`; scalar indexes of the columns of `settings.scalar` (field
    /// ids; those no longer in the schema are skipped).
    fn new(schema: &SchemaRef, settings: &FileSettings) -> Result<FileWriter> {
        let mut props = WriterProperties::builder()
            .set_compression(settings.compression)
            .set_max_row_group_row_count(Some(settings.row_group_rows.max(1)))
            // Pages of at most this many rows (their locations go to the page index): what a row
            // selection skips page by page, so a lookup reads a few small pages of each column.
            .set_data_page_row_count_limit(DATA_PAGE_ROWS);
        for (column, fpp) in &settings.blooms {
            // Sized for a row group's rows, then folded down to the distinct values it holds.
            let path = parquet::schema::types::ColumnPath::from(column.as_str());
            props = props.set_column_bloom_filter_enabled(path.clone(), true).set_column_bloom_filter_fpp(path, *fpp);
        }
        let writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props.build()))
            .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
        let mut stats = WriteStats {
            rows: 0,
            value_counts: BTreeMap::new(),
            null_counts: BTreeMap::new(),
            nan_counts: BTreeMap::new(),
            lower: BTreeMap::new(),
            upper: BTreeMap::new(),
            sketches: Vec::new(),
        };
        let mut sketched = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            if let Some(id) = field_id(field).filter(|_| crate::index::ndv::sketched(field.data_type())) {
                sketched.push(i);
                stats.sketches.push((id, Default::default()));
            }
        }
        let sidecars = schema
            .fields()
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match (f.data_type(), field_id(f)) {
                (DataType::FixedSizeList(item, n), Some(id)) if item.data_type() == &DataType::Float32 => {
                    Some((i, SidecarBuilder::new(id, *n as usize)))
                }
                _ => None,
            })
            .collect();
        let mut indexes = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            if let Some(id) = field_id(field).filter(|id| settings.scalar.contains(id)) {
                indexes.push((i, id, ScalarIndexBuilder::new(field)?));
            }
        }
        Ok(FileWriter { schema: schema.clone(), writer, stats, sketched, sidecars, indexes })
    }

    /// Adds the rows of `batch` (of the file's schema).
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let stats = &mut self.stats;
        for (i, sidecar) in self.sidecars.iter_mut() {
            sidecar.append(batch.column(*i).as_ref())?;
        }
        for (i, _, index) in self.indexes.iter_mut() {
            index.append(batch.column(*i).as_ref())?;
        }
        for (&i, (_, sketch)) in self.sketched.iter().zip(stats.sketches.iter_mut()) {
            sketch.add(batch.column(i).as_ref());
        }
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            let Some(id) = field.metadata().get(PARQUET_FIELD_ID).and_then(|v| v.parse::<i32>().ok()) else {
                continue;
            };
            *stats.value_counts.entry(id).or_default() += column.len() as i64;
            *stats.null_counts.entry(id).or_default() += column.null_count() as i64;
            if let Some(nans) = crate::spec::bounds::nan_count(column) {
                *stats.nan_counts.entry(id).or_default() += nans;
            }
            if let Some((lo, hi)) = bounds(column) {
                let merge_lo = stats.lower.get(&id).is_none_or(|cur| less(column.data_type(), &lo, cur));
                if merge_lo {
                    stats.lower.insert(id, lo);
                }
                let merge_hi = stats.upper.get(&id).is_none_or(|cur| less(column.data_type(), cur, &hi));
                if merge_hi {
                    stats.upper.insert(id, hi);
                }
            }
        }
        stats.rows += batch.num_rows() as u64;
        self.writer.write(batch).map_err(|e| Error::Internal(format!("parquet write: {e}")))
    }

    /// What the file holds in memory (bytes): the Parquet bytes written, the row group being
    /// encoded, the sidecars' vectors and the indexed columns' values.
    fn memory(&self) -> usize {
        self.writer.inner().len()
            + self.writer.memory_size()
            + self.sidecars.iter().map(|(_, s)| s.memory()).sum::<usize>()
            + self.indexes.iter().map(|(_, _, i)| i.memory()).sum::<usize>()
    }

    fn finish(self) -> Result<BuiltFile> {
        let bytes = self.writer.into_inner().map_err(|e| Error::Internal(format!("parquet close: {e}")))?;
        Ok(BuiltFile {
            bytes: Bytes::from(bytes),
            stats: self.stats,
            sidecars: self.sidecars.into_iter().map(|(_, s)| s).collect(),
            scalar_indexes: self.indexes.into_iter().map(|(_, id, index)| (id, index)).collect(),
        })
    }
}

/// Casts `batch` to `schema` (columns by name); a column it lacks takes its write default, else
/// nulls; fails naming the first column that does not fit.
fn conform(
    batch: &RecordBatch,
    schema: &SchemaRef,
    defaults: &HashMap<String, serde_json::Value>,
) -> Result<RecordBatch> {
    for field in batch.schema().fields() {
        if schema.index_of(field.name()).is_err() {
            return Err(Error::invalid(format!("column '{}' is not in the table schema", field.name())));
        }
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let column = match batch.schema().index_of(field.name()) {
            Ok(i) => batch.column(i).clone(),
            Err(_) if defaults.contains_key(field.name()) => crate::spec::schema::default_column(
                field.name(),
                &defaults[field.name()],
                field.data_type(),
                batch.num_rows(),
            )?,
            Err(_) if field.is_nullable() => new_null_array(field.data_type(), batch.num_rows()),
            Err(_) => return Err(Error::invalid(format!("required column '{}' is missing", field.name()))),
        };
        let column = if column.data_type() == field.data_type() {
            column
        } else {
            cast(&column, field.data_type()).map_err(|e| {
                Error::invalid(format!(
                    "column '{}' has type {}, which does not fit the table's {}: {e}",
                    field.name(),
                    column.data_type(),
                    field.data_type()
                ))
            })?
        };
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(Error::invalid(format!("required column '{}' holds nulls", field.name())));
        }
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(schema.clone(), columns, &options)?)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow::array::{Array, AsArray, FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Float32Type, Int64Type, Schema};

    use super::*;
    use crate::rand::SplitMix64;
    use crate::table::iceberg::{PARTITIONING, SORTED_BY};

    const DIMENSION: i32 = 64;

    fn schema() -> SchemaRef {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("tag", DataType::Utf8, true),
            Field::new("v", DataType::FixedSizeList(item, DIMENSION), true),
        ]))
    }

    /// Rows `ids` in a random order with random vectors (seeded by the first id).
    fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
        let mut rng = SplitMix64(ids.start as u64);
        let mut ids: Vec<i64> = ids.collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let tags: Vec<Option<String>> = ids.iter().map(|i| (i % 5 != 0).then(|| format!("t{}", i % 7))).collect();
        let values: Vec<f32> =
            ids.iter().flat_map(|&i| (0..DIMENSION).map(move |d| (i * 31 + d as i64) as f32 / 97.0)).collect();
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(tags)),
                Arc::new(FixedSizeListArray::new(item, DIMENSION, Arc::new(Float32Array::from(values)), None)),
            ],
        )
        .unwrap()
    }

    /// Every row of the table's current snapshot as (id, tag, vector), by id.
    fn rows(table: &Table) -> Vec<(i64, Option<String>, Vec<f32>)> {
        let files = table.data_files(table.metadata().current_snapshot()).unwrap();
        let mut out = Vec::new();
        for b in table.scan_files(files, None, 4096).unwrap() {
            let b = b.unwrap();
            let (ids, tags, vs) = (
                b.column(0).as_primitive::<Int64Type>(),
                b.column(1).as_string::<i32>(),
                b.column(2).as_fixed_size_list(),
            );
            for r in 0..b.num_rows() {
                let v = vs.value(r);
                out.push((
                    ids.value(r),
                    tags.is_valid(r).then(|| tags.value(r).to_owned()),
                    v.as_primitive::<Float32Type>().values().to_vec(),
                ));
            }
        }
        out.sort_by_key(|r| r.0);
        out
    }

    fn table(dir: &std::path::Path, name: &str, properties: &[(&str, &str)]) -> Table {
        let properties = properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Table::create(dir.join(name).to_str().unwrap(), &schema(), properties, &HashMap::new()).unwrap()
    }

    const BATCHES: i64 = 24;
    const BATCH_ROWS: i64 = 1000;

    /// Writes the test's batches through one writer; returns its files and the most it held.
    fn write_all(table: &Table, budget: &'static WriteBudget) -> (Vec<DataFile>, usize) {
        let mut writer = TableWriter::within(table, table.arrow_schema().unwrap(), budget).unwrap();
        for b in 0..BATCHES {
            writer.write(&batch(b * BATCH_ROWS..(b + 1) * BATCH_ROWS)).unwrap();
            assert!(writer.buffered_bytes() < 1 << 20, "what reaches the target is rolled");
        }
        let files = writer.finish().unwrap();
        (files, writer.peak_bytes())
    }

    #[test]
    fn a_writer_rolls_files_at_the_target_size_and_the_table_reads_as_one_file_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let budget: &'static WriteBudget = Box::leak(Box::new(WriteBudget::new(1 << 30)));
        let mut whole = table(dir.path(), "whole", &[]);
        let mut rolled = table(dir.path(), "rolled", &[(TARGET_FILE_SIZE, "1048576")]);
        let batch_bytes = batch(0..BATCH_ROWS).get_array_memory_size();

        let (files, _) = {
            let mut writer = TableWriter::within(&whole, whole.arrow_schema().unwrap(), budget).unwrap();
            for b in 0..BATCHES {
                writer.write(&batch(b * BATCH_ROWS..(b + 1) * BATCH_ROWS)).unwrap();
            }
            (writer.finish().unwrap(), ())
        };
        assert_eq!(files.len(), 1, "under the default target one file");
        whole.commit_append(files).unwrap();

        let (files, peak) = write_all(&rolled, budget);
        assert!(files.len() >= 4, "{} files", files.len());
        // A batch adds its vectors twice (sidecar, encoded column) and its other columns once.
        assert!(peak < (1 << 20) + 3 * batch_bytes, "held at most the target and a batch: {peak}");
        assert!(files.iter().all(|f| f.record_count > 0));
        assert_eq!(files.iter().map(|f| f.record_count).sum::<i64>(), BATCHES * BATCH_ROWS);
        rolled.commit_append(files).unwrap();
        assert_eq!(budget.held(), 0, "a finished writer holds nothing");

        let expected = rows(&whole);
        assert_eq!(expected.len() as i64, BATCHES * BATCH_ROWS);
        assert_eq!(rows(&rolled), expected);
        // Searches find the same neighbours in one file or many.
        let query: Vec<f32> = (0..DIMENSION).map(|d| d as f32 / 3.0).collect();
        let search = |t: &Table| {
            let search = crate::vector::VectorSearch::new("v", query.clone(), crate::vector::Metric::L2, 10);
            let files = t.data_files(t.metadata().current_snapshot()).unwrap();
            let top = t.search(files, Some(&["id".to_owned()]), None, &search, 1024).unwrap();
            top.column(0).as_primitive::<Int64Type>().values().to_vec()
        };
        assert_eq!(search(&rolled), search(&whole));
    }

    #[test]
    fn partitioned_sorted_writers_roll_too_each_file_one_partition_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let budget: &'static WriteBudget = Box::leak(Box::new(WriteBudget::new(1 << 30)));
        let mut t = table(
            dir.path(),
            "t",
            &[(TARGET_FILE_SIZE, "1048576"), (PARTITIONING, "bucket(id, 2)"), (SORTED_BY, "id")],
        );
        let (files, peak) = write_all(&t, budget);
        assert!(peak < (1 << 20) + 3 * batch(0..BATCH_ROWS).get_array_memory_size(), "{peak}");
        assert!(files.len() >= 8, "several rolls of two partitions: {} files", files.len());
        let mut partitions = std::collections::HashSet::new();
        for file in &files {
            partitions.insert(file.partition.clone());
            let only = t.scan_files(vec![file.clone()], Some(&["id".to_owned()]), 1 << 20).unwrap();
            let ids: Vec<i64> =
                only.flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec()).collect();
            assert!(ids.windows(2).all(|w| w[0] <= w[1]), "each file sorted by id");
        }
        assert_eq!(partitions.len(), 2);
        t.commit_append(files).unwrap();
        let ids: Vec<i64> = rows(&t).into_iter().map(|r| r.0).collect();
        assert_eq!(ids, (0..BATCHES * BATCH_ROWS).collect::<Vec<_>>());
    }

    #[test]
    fn writers_past_the_process_budget_roll_early_and_aborted_writers_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let budget: &'static WriteBudget = Box::leak(Box::new(WriteBudget::new(crate::memory::MIN_WRITE_MEMORY)));
        let t = table(dir.path(), "t", &[]);
        // Two writers under a 16 MiB budget with a 128 MiB target: each rolls when both together
        // pass the budget.
        let mut a = TableWriter::within(&t, t.arrow_schema().unwrap(), budget).unwrap();
        let mut b = TableWriter::within(&t, t.arrow_schema().unwrap(), budget).unwrap();
        for i in 0..BATCHES * 4 {
            let w = if i % 2 == 0 { &mut a } else { &mut b };
            w.write(&batch(i * BATCH_ROWS..(i + 1) * BATCH_ROWS)).unwrap();
            assert!(
                budget.held() <= crate::memory::MIN_WRITE_MEMORY + 3 * batch(0..BATCH_ROWS).get_array_memory_size()
            );
        }
        let (fa, fb) = (a.finish().unwrap(), b.finish().unwrap());
        assert!(fa.len() + fb.len() > 2, "the budget rolled files early: {} + {}", fa.len(), fb.len());
        let data = |d: &std::path::Path| walk(&d.join("t/data"));
        assert!(!data(dir.path()).is_empty());
        a.abort().unwrap();
        b.abort().unwrap();
        assert!(data(dir.path()).is_empty(), "aborted writers delete every file they rolled: {:?}", data(dir.path()));
        assert_eq!(budget.held(), 0);
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
