//! `io.hyperstream.jni.NativeTable`: a stored table's DDL, commits, scans, searches and maintenance.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use jni::objects::{JClass, JFloatArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned};

use crate::scan::Predicate;
use crate::spec::manifest::DataFile;
use crate::table::iceberg::Table;
use crate::vector::gpu::Backend;
use crate::vector::hnsw::HnswParams;
use crate::vector::{IndexUse, Metric, VectorSearch};
use crate::Error;

use super::records::{
    export_records, export_result, ColumnStatisticsRow, DeleteRow, IndexBuildsRow, RewriteRow, SnapshotRow,
};
use super::*;

/// A table handle: appends move it to new versions, so calls take the lock.
pub(super) type TableCell = Mutex<Table>;

pub(super) fn table_of(handle: jlong) -> JniResult<Arc<TableCell>> {
    // SAFETY: NativeHandle passes only open handles.
    Ok(unsafe { handle::get::<TableCell>(handle) }?)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_createNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    schema_address: jlong,
    properties: JObjectArray<'l>,
    options: JObjectArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let location = string(env, &location)?;
        let schema = import_schema(schema_address)?;
        let properties: BTreeMap<String, String> = pairs(env, &properties)?.into_iter().collect();
        let options: HashMap<String, String> = pairs(env, &options)?.into_iter().collect();
        let table = Table::create(&location, &schema, properties, &options)?;
        Ok(handle::into_handle(Mutex::new(table)))
    })
}

/// CREATE OR REPLACE TABLE: the table redefined with the columns of the exported schema and the
/// creation properties given, without rows, in one snapshot; returns it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_replaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
    properties: JObjectArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let schema = import_schema(schema_address)?;
        let properties: BTreeMap<String, String> = pairs(env, &properties)?.into_iter().collect();
        let cell = table_of(handle)?;
        let snapshot = lock(&cell).replace(&schema, properties)?;
        Ok(snapshot)
    })
}

/// Deletes the files the table's metadata reaches (a purge); returns how many.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_purgeFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        Ok(table.purge_files()? as jlong)
    })
}

/// Stages a replacement of the table; returns the staging table's location.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_stageReplaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
    properties: JObjectArray<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let schema = import_schema(schema_address)?;
        let properties: BTreeMap<String, String> = pairs(env, &properties)?.into_iter().collect();
        let cell = table_of(handle)?;
        let staging = lock(&cell).stage_replace(&schema, properties)?;
        Ok(JString::new(env, staging)?)
    })
}

/// Commits a staged replacement with the data files written into its staging table; returns the snapshot.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_commitReplaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    staging: JString<'l>,
    schema_address: jlong,
    properties: JObjectArray<'l>,
    files: JObjectArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let staging = string(env, &staging)?;
        let schema = import_schema(schema_address)?;
        let properties: BTreeMap<String, String> = pairs(env, &properties)?.into_iter().collect();
        let files = data_files_arg(env, &files)?;
        let cell = table_of(handle)?;
        let snapshot = lock(&cell).commit_replace(&staging, &schema, properties, files)?;
        Ok(snapshot)
    })
}

/// Abandons a staged replacement: its staging table goes with every file written into it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_abortReplaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    staging: JString<'l>,
) {
    entry(&mut env, |env| {
        let staging = string(env, &staging)?;
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        Ok(table.abort_replace(&staging)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_loadNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    options: JObjectArray<'l>,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
) -> jlong {
    entry(&mut env, |env| {
        let location = string(env, &location)?;
        let options: HashMap<String, String> = pairs(env, &options)?.into_iter().collect();
        let table = Table::load_at(&location, &options, at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        Ok(handle::into_handle(Mutex::new(table)))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_exportSchema<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let schema = lock(&cell).described_schema()?;
        export_schema(&schema, schema_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_appendNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    stream_address: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let reader = import_stream(stream_address)?;
        let snapshot = lock(&cell).append(reader)?;
        Ok(snapshot)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_refreshNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let mut table = lock(&cell);
        table.refresh()?;
        Ok(table.version() as jlong)
    })
}

/// The table's snapshots, oldest first, as [`SnapshotRow`]s.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_snapshotsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let rows: Vec<SnapshotRow> = lock(&cell)
            .metadata()
            .snapshots
            .iter()
            .map(|s| SnapshotRow {
                snapshot_id: s.snapshot_id,
                parent_id: s.parent_snapshot_id.unwrap_or(-1),
                timestamp_millis: s.timestamp_ms,
                sequence_number: s.sequence_number,
            })
            .collect();
        export_records(&rows, stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_currentSnapshotNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let current = lock(&cell).metadata().current_snapshot_id.unwrap_or(-1);
        Ok(current)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_scanNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
    columns: JObjectArray<'l>,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let columns = strings(env, &columns)?;
        let table = lock(&cell);
        let snapshot = table.snapshot(at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        let files = table.data_files(snapshot)?;
        let stream = table.scan_files(files, columns.as_deref(), batch_rows_arg(batch_rows)?)?;
        export_stream(stream, stream_address)
    })
}

pub(super) fn data_files_arg(env: &mut Env, array: &JObjectArray) -> JniResult<Vec<DataFile>> {
    strings(env, array)?
        .unwrap_or_default()
        .iter()
        .map(|json| {
            serde_json::from_str(json).map_err(|e| Error::invalid(format!("not a data file description: {e}")).into())
        })
        .collect()
}

pub(super) fn data_files_out<'l>(env: &mut Env<'l>, files: &[DataFile]) -> JniResult<JObjectArray<'l, JString<'l>>> {
    let json = files
        .iter()
        .map(|file| serde_json::to_string(file).map_err(|e| Error::Internal(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    string_array(env, &json)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_writeDataFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    stream_address: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let reader = import_stream(stream_address)?;
        let table = lock(&cell).clone();
        let files = table.write_data_files(reader)?;
        data_files_out(env, &files)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_isWritePropertyNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    key: JString<'l>,
) -> jboolean {
    entry(&mut env, |env| Ok(crate::table::iceberg::is_write_property(&string(env, &key)?)))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_openWriterNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    lineage: jboolean,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let table = lock(&cell);
        let writer = if lineage { table.lineage_writer()? } else { table.writer()? };
        Ok(handle::into_handle(Mutex::new(writer)))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_commitAppendNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    overwrite: jboolean,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let mut table = lock(&cell);
        Ok(if overwrite { table.commit_overwrite(files)? } else { table.commit_append(files)? })
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_deleteFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let table = lock(&cell).clone();
        Ok(table.delete_files(&files)?)
    })
}

/// Deletes the rows `filter` passes (null: every row); what it committed as a [`DeleteRow`].
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_deleteWhereNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    filter: JString<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let filter = filter_arg(env, &filter)?;
        let (snapshot, rows) = lock(&cell).delete_where(filter.as_ref())?;
        let row =
            DeleteRow { snapshot_id: snapshot.unwrap_or(-1), deleted_rows: i64::try_from(rows).unwrap_or(i64::MAX) };
        export_records(&[row], stream_address)
    })
}

/// Compacts the table's small files and files with deleted rows into files of up to
/// `target_rows` rows; what it committed as a [`RewriteRow`].
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_rewriteDataFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    target_rows: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let target = usize::try_from(target_rows)
            .map_err(|_| Error::invalid(format!("target rows per file must be positive, got {target_rows}")))?;
        let done = lock(&cell).rewrite_data_files(target)?;
        let row = done.map_or(RewriteRow { snapshot_id: -1, ..Default::default() }, |r| RewriteRow {
            snapshot_id: r.snapshot_id,
            files_rewritten: r.rewritten as i64,
            files_written: r.written as i64,
        });
        export_records(&[row], stream_address)
    })
}

/// Makes an ancestor snapshot current again.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_rollbackToNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    snapshot_id: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        lock(&cell).rollback_to(snapshot_id)?;
        Ok(())
    })
}

/// Adds the one field of the exported schema at `schema_address` as a new column, with the default
/// `default` (the spec's JSON single value; null: none) when given.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_addColumnNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
    default: JString<'l>,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let schema = import_schema(schema_address)?;
        let [field] = schema.fields().iter().collect::<Vec<_>>()[..] else {
            return Err(Error::invalid(format!("a new column is one field, got {}", schema.fields().len())).into());
        };
        let default = match default.is_null() {
            true => None,
            false => {
                let text = string(env, &default)?;
                let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    Error::invalid(format!("the default {text} of column '{}' is not JSON: {e}", field.name()))
                })?;
                Some(value)
            }
        };
        lock(&cell).add_column_with_default(field, default.as_ref())?;
        Ok(())
    })
}

/// Renames a column, or drops it when `new_name` is null.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_renameColumnNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
    new_name: JString<'l>,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let column = string(env, &column)?;
        let mut table = lock(&cell);
        if new_name.is_null() {
            return Ok(table.drop_column(&column)?);
        }
        let new_name = string(env, &new_name)?;
        Ok(table.rename_column(&column, &new_name)?)
    })
}

/// Declares an HNSW index on a vector column (`definition`: its JSON, see [`HnswParams`]) and
/// builds it for every live data file; returns how many files were indexed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_createVectorIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
    definition: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let params = HnswParams::from_json(&string(env, &definition)?)?;
        let column = string(env, &column)?;
        let indexed = lock(&cell).create_vector_index(&column, params)?;
        Ok(indexed as jlong)
    })
}

/// A vector index definition checked and written out in full (every default filled in).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_normalizeVectorIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    definition: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let params = HnswParams::from_json(&string(env, &definition)?)?;
        Ok(JString::new(env, params.to_json())?)
    })
}

/// Drops a column's vector index; returns how many files' graphs were removed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_dropVectorIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let column = string(env, &column)?;
        let dropped = lock(&cell).drop_vector_index(&column)?;
        Ok(dropped as jlong)
    })
}

/// Declares a scalar index on a column and builds it for the live files; returns how many.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_createScalarIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let column = string(env, &column)?;
        let indexed = lock(&cell).create_scalar_index(&column)?;
        Ok(indexed as jlong)
    })
}

/// Drops a column's scalar index; returns how many files' indexes were removed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_dropScalarIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let column = string(env, &column)?;
        let dropped = lock(&cell).drop_scalar_index(&column)?;
        Ok(dropped as jlong)
    })
}

/// The names of the columns with a scalar index, in table order.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_scalarIndexesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let names = lock(&cell).scalar_index_columns()?;
        string_array(env, &names)
    })
}

/// The table's partitioning, a field each, as the create-time property takes it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_partitioningNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let fields = lock(&*table_of(handle)?).partitioning()?;
        string_array(env, &fields)
    })
}

/// The table's sort order, a field each, as the create-time property takes it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_sortOrderNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let fields = lock(&*table_of(handle)?).sort_order()?;
        string_array(env, &fields)
    })
}

/// The table's Iceberg format version (2, or 3 with row lineage).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_formatVersionNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jint {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let version = lock(&cell).metadata().format_version;
        Ok(jint::from(version))
    })
}

/// `files` as scan splits: big files cut into runs of whole row groups of about `split_rows` rows.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_splitFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    split_rows: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let table = lock(&cell).clone();
        let splits = table.split_files(files, u64::try_from(split_rows).unwrap_or(1))?;
        data_files_out(env, &splits)
    })
}

/// How a scan of `files` filtered by `filter` (JSON, or null) prunes, as one Arrow row: a column
/// per count of [`ScanExplain`](crate::table::iceberg::ScanExplain), named as its field, and
/// `reading`, the descriptions of the files that hold a row to read. Java binds it to
/// `NativeTable.ExplainedFiles` by name.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_explainNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    filter: JString<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let filter = filter_arg(env, &filter)?;
        let table = lock(&cell).clone();
        let (explain, reading) = table.explain_files(files, filter.as_ref())?;
        export_result(explain.to_batch(&reading)?, stream_address)
    })
}

/// `explainNative` for a vector search (column, query, metric, k and ef as `searchNative` takes
/// them): the counts of [`Table::explain_search`](crate::table::iceberg::Table::explain_search),
/// with no file descriptions.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_explainSearchNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    filter: JString<'l>,
    vector_column: JString<'l>,
    query: JFloatArray<'l>,
    metric: JString<'l>,
    k: jlong,
    ef_search: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let filter = filter_arg(env, &filter)?;
        let search = tuned_search(env, &vector_column, &query, &metric, k, ef_search, &JString::null(), false)?;
        let table = lock(&cell).clone();
        let explain = table.explain_search(files, filter.as_ref(), &search)?;
        export_result(explain.to_batch(&[])?, stream_address)
    })
}

/// Removes the table's orphan files older than `older_than_ms`; returns their paths.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_removeOrphanFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    older_than_ms: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let removed = lock(&cell).remove_orphan_files(older_than_ms)?;
        string_array(env, &removed)
    })
}

/// Expires snapshots (`older_than_ms` and `retain_last` each given when its flag is set, else the
/// table's retention properties); returns their ids.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_expireSnapshotsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    has_older_than: jboolean,
    older_than_ms: jlong,
    has_retain_last: jboolean,
    retain_last: jint,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let retain_last = match has_retain_last {
            true if retain_last < 1 => {
                return Err(Error::invalid(format!("retain_last must be at least 1, got {retain_last}")).into())
            }
            true => Some(retain_last as usize),
            false => None,
        };
        let expired = lock(&cell).expire_snapshots(has_older_than.then_some(older_than_ms), retain_last)?;
        long_array(env, &expired)
    })
}

/// The HNSW graphs built through this handle so far, as an [`IndexBuildsRow`].
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_indexBuildsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let (files, vectors, nanos) = lock(&cell).index_builds().totals();
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        export_records(
            &[IndexBuildsRow { files: count(files), vectors: count(vectors), nanos: count(nanos) }],
            stream_address,
        )
    })
}

/// The definition (JSON) of a column's vector index, or null when it has none.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_vectorIndexNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    column: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let column = string(env, &column)?;
        let table = lock(&cell).clone();
        let (id, _) = table.vector_column(&column)?;
        Ok(match table.vector_indexes().get(&id) {
            Some(params) => JString::new(env, params.to_json())?,
            None => JString::null(),
        })
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_dataFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
    filter: JString<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let filter = filter_arg(env, &filter)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        let files = table.prune(table.data_files(snapshot)?, filter.as_ref())?;
        data_files_out(env, &files)
    })
}

/// The exact number of rows of a snapshot, from its manifests and delete files alone.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_rowCountNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        Ok(table.live_rows(&table.data_files(snapshot)?)? as jlong)
    })
}

/// The table's properties, as key, value, key, value, ...
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_propertiesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let properties = lock(&cell).metadata().properties.clone();
        pairs_array(env, properties)
    })
}

/// The table's task options ([`crate::table::iceberg::Table::task_options`]) or, when `for_tasks` is
/// false, its storage options ([`crate::table::iceberg::Table::storage_options`]), flattened key,
/// value, key, value, ...
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_optionsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    for_tasks: jboolean,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let options = match for_tasks {
            true => lock(&cell).task_options(),
            false => lock(&cell).storage_options(),
        };
        pairs_array(env, options)
    })
}

/// Sets `keys[i]` to `values[i]` (null: removes it) as table properties, as one commit.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_setPropertiesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    keys: JObjectArray<'l>,
    values: JObjectArray<'l>,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let keys = strings(env, &keys)?.unwrap_or_default();
        let len = values.len(env)?;
        if len != keys.len() {
            return Err(Error::invalid(format!("{} property keys but {len} values", keys.len())).into());
        }
        let mut changes = Vec::with_capacity(len);
        for (i, key) in keys.into_iter().enumerate() {
            let value = values.get_element(env, i)?;
            let value = if value.is_null() {
                None
            } else {
                let value = JString::cast_local(env, value)?;
                Some(string(env, &value)?)
            };
            changes.push((key, value));
        }
        lock(&cell).set_properties(&changes)?;
        Ok(())
    })
}

/// Each column's statistics over a snapshot: {String[] columns, long[] distinct values, long[] nulls},
/// -1 where unknown (see `Table::column_statistics`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_columnStatisticsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        let known = |v: Option<u64>| v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX));
        let rows: Vec<ColumnStatisticsRow> = table
            .column_statistics(snapshot)?
            .into_iter()
            .map(|(column, distinct, nulls)| ColumnStatisticsRow {
                column,
                distinct_values: known(distinct),
                nulls: known(nulls),
            })
            .collect();
        export_records(&rows, stream_address)
    })
}

/// Aggregates over a snapshot from its manifests alone: `kinds[i]` (count_star, count, min, max) of
/// `columns[i]` (empty for count_star). Exports a stream of one one-row batch when the metadata
/// answers them all exactly, of none otherwise (the caller then aggregates the rows).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_aggregateNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    at_snapshot: jboolean,
    snapshot_id: jlong,
    as_of: jboolean,
    as_of_ms: jlong,
    kinds: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let kinds = strings(env, &kinds)?.unwrap_or_default();
        let columns = strings(env, &columns)?.unwrap_or_default();
        if kinds.len() != columns.len() {
            return Err(Error::invalid(format!("{} aggregates but {} columns", kinds.len(), columns.len())).into());
        }
        let aggregates = kinds
            .iter()
            .zip(&columns)
            .map(|(kind, column)| {
                crate::scan::MetadataAggregate::parse(kind, Some(column.as_str()).filter(|c| !c.is_empty()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(at_snapshot.then_some(snapshot_id), as_of.then_some(as_of_ms))?;
        let answer = table.aggregate_from_metadata(snapshot, &aggregates)?;
        let schema = answer
            .as_ref()
            .map(|b| b.schema())
            .unwrap_or_else(|| std::sync::Arc::new(arrow::datatypes::Schema::empty()));
        let batches: Vec<_> = answer.into_iter().map(Ok).collect();
        export_stream(Box::new(arrow::record_batch::RecordBatchIterator::new(batches, schema)), stream_address)
    })
}

/// Scans `files` natively (every row `filter` passes, with `columns`; null: all), decoding every
/// batch without handing it over; returns the rows. The library's own scan speed, without a consumer.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_scanRowCountNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    filter: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let columns = strings(env, &columns)?;
        let filter = filter_arg(env, &filter)?;
        let table = lock(&cell).clone();
        let mut rows = 0usize;
        for batch in table.scan(files, columns.as_deref(), filter, 64 * 1024)? {
            rows += batch?.num_rows();
        }
        Ok(rows as jlong)
    })
}

/// A filter in the predicate model's JSON form; null means none.
pub(super) fn filter_arg(env: &Env, json: &JString) -> JniResult<Option<Predicate>> {
    if json.is_null() {
        return Ok(None);
    }
    Ok(Some(Predicate::from_json(&string(env, json)?)?))
}

pub(super) fn batch_rows_arg(batch_rows: jint) -> JniResult<usize> {
    Ok(crate::limits::batch_rows("batch rows", i64::from(batch_rows))?)
}

/// Streams the rows of data files that `filter` (JSON, or null) passes, with `columns` (null: all).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_scanFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    filter: JString<'l>,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let read = ReadArgs::of(env, handle, &files, &columns, &filter, batch_rows)?;
        export_stream(read.table.scan(read.files, read.columns.as_deref(), read.filter, read.rows)?, stream_address)
    })
}

/// As `scanFilesNative`, with each row's `_distance` from `query` in `vector_column` by `metric`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_distancesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    filter: JString<'l>,
    vector_column: JString<'l>,
    query: JFloatArray<'l>,
    metric: JString<'l>,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let read = ReadArgs::of(env, handle, &files, &columns, &filter, batch_rows)?;
        let search = search_arg(env, &vector_column, &query, &metric)?;
        let stream =
            read.table.scan_with_distances(read.files, read.columns.as_deref(), read.filter, &search, read.rows)?;
        export_stream(stream, stream_address)
    })
}

/// The `k` rows of data files nearest `query` in `vector_column` by `metric` among those `filter`
/// passes, nearest first, with `columns` (null: all) and `_distance`: through the column's vector
/// index where a file has one as `ef_search` says (its code: 0 default, -1 exact), an exact search
/// of a file's contiguous vectors on `backend` (null: auto), rows without a vector before the
/// nearest when `nulls_first`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_searchNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    filter: JString<'l>,
    vector_column: JString<'l>,
    query: JFloatArray<'l>,
    metric: JString<'l>,
    k: jlong,
    ef_search: jlong,
    backend: JString<'l>,
    nulls_first: jboolean,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let read = ReadArgs::of(env, handle, &files, &columns, &filter, batch_rows)?;
        let search = tuned_search(env, &vector_column, &query, &metric, k, ef_search, &backend, nulls_first)?;
        let rows = read.rows;
        let found = read.table.search(read.files, read.columns.as_deref(), read.filter.as_ref(), &search, rows)?;
        export_in_batches(found, rows, stream_address)
    })
}

/// `searchManyNative`: the k nearest rows for each of `query_count` queries laid back to back in
/// `queries` (one batched search, see `Table::search_many`), as an Arrow stream whose first column,
/// `_query`, is the position of the query a row answers.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_searchManyNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    columns: JObjectArray<'l>,
    filter: JString<'l>,
    vector_column: JString<'l>,
    queries: JFloatArray<'l>,
    query_count: jint,
    metric: JString<'l>,
    k: jlong,
    ef_search: jlong,
    backend: JString<'l>,
    nulls_first: jboolean,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let read = ReadArgs::of(env, handle, &files, &columns, &filter, batch_rows)?;
        let mut search = tuned_search(env, &vector_column, &queries, &metric, k, ef_search, &backend, nulls_first)?;
        let count = crate::limits::query_count("a batched search", query_count.into())?;
        if search.query.is_empty() || !search.query.len().is_multiple_of(count) {
            return Err(Error::invalid(format!(
                "{} query values are not {count} vectors of one dimension",
                search.query.len()
            ))
            .into());
        }
        let dimension = search.query.len() / count;
        let each: Vec<Vec<f32>> = search.query.chunks_exact(dimension).map(<[f32]>::to_vec).collect();
        search.query.clear();
        let rows = read.rows;
        let found =
            read.table.search_many(read.files, read.columns.as_deref(), read.filter.as_ref(), &search, &each, rows)?;
        export_in_batches(found, rows, stream_address)
    })
}

/// Exports `found` as a stream of batches of at most `rows` rows.
fn export_in_batches(found: arrow::array::RecordBatch, rows: usize, stream_address: jlong) -> JniResult<()> {
    let schema = found.schema();
    let batches: Vec<_> = (0..found.num_rows())
        .step_by(rows)
        .map(|start| Ok(found.slice(start, rows.min(found.num_rows() - start))))
        .collect();
    export_stream(Box::new(arrow::record_batch::RecordBatchIterator::new(batches, schema)), stream_address)
}

/// What every read of data files takes: the table (a copy of the handle's, so the read runs
/// without its lock), the files, the columns (None: all), the filter and the rows per batch.
struct ReadArgs {
    table: Table,
    files: Vec<DataFile>,
    columns: Option<Vec<String>>,
    filter: Option<Predicate>,
    rows: usize,
}

impl ReadArgs {
    fn of(
        env: &mut Env,
        handle: jlong,
        files: &JObjectArray,
        columns: &JObjectArray,
        filter: &JString,
        batch_rows: jint,
    ) -> JniResult<ReadArgs> {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, files)?;
        let columns = strings(env, columns)?;
        let filter = filter_arg(env, filter)?;
        let rows = batch_rows_arg(batch_rows)?;
        let table = lock(&cell).clone();
        Ok(ReadArgs { table, files, columns, filter, rows })
    }
}

/// A vector search's column, query and metric (k and the rest at their defaults).
/// A search of `k` rows as the engines tune it: the index use's code (`ef_search`), the backend
/// (null: auto), where rows without a vector go.
#[allow(clippy::too_many_arguments)]
fn tuned_search(
    env: &mut Env,
    column: &JString,
    query: &JFloatArray,
    metric: &JString,
    k: jlong,
    ef_search: jlong,
    backend: &JString,
    nulls_first: jboolean,
) -> JniResult<VectorSearch> {
    let mut search = search_arg(env, column, query, metric)?;
    search.k = crate::limits::top_k("k", k)?;
    search.index = IndexUse::from_code(ef_search)?;
    if !backend.is_null() {
        search.backend = Backend::parse(&string(env, backend)?)?;
    }
    search.nulls_first = nulls_first;
    Ok(search)
}

fn search_arg(env: &mut Env, column: &JString, query: &JFloatArray, metric: &JString) -> JniResult<VectorSearch> {
    if column.is_null() || query.is_null() {
        return Err(Error::invalid("a vector search needs a vector column and a query vector").into());
    }
    let mut vector = vec![0f32; query.len(env)?];
    query.get_region(env, 0, &mut vector)?;
    Ok(VectorSearch::new(string(env, column)?, vector, Metric::parse(&string(env, metric)?)?, 0))
}

/// The text fragment a writer task of a row-level change reports the rows it deletes of one data
/// file in (see [`crate::table::iceberg::row_deletes_fragment`]).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_rowDeletesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    file: JString<'l>,
    positions: JLongArray<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let file = string(env, &file)?;
        if positions.is_null() {
            return Err(Error::invalid("row positions are null").into());
        }
        let mut values = vec![0; positions.len(env)?];
        positions.get_region(env, 0, &mut values)?;
        let fragment = crate::table::iceberg::row_deletes_fragment(&file, &values)?;
        Ok(JString::new(env, fragment)?)
    })
}

/// Commits a row-level change (`operation`: delete, update or merge) whose scan read snapshot
/// `read` (-1: the table had none) with the native filter `filter` (null: none): the rows its
/// delete fragments name are deleted and the data files `added` join, in one snapshot, checked
/// against the commits since by the table's isolation level; its id, -1 when nothing changed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_commitRowChangesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    read: jlong,
    operation: JString<'l>,
    filter: JString<'l>,
    deletes: JObjectArray<'l>,
    added: JObjectArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let operation = crate::table::iceberg::RowOperation::of(&string(env, &operation)?)?;
        let filter = filter_arg(env, &filter)?;
        let deletes = crate::table::iceberg::row_deletes(&strings(env, &deletes)?.unwrap_or_default())?;
        let added = data_files_arg(env, &added)?;
        let read = crate::table::iceberg::ChangeRead {
            snapshot: (read >= 0).then_some(read),
            operation,
            filter: filter.as_ref(),
        };
        let mut table = lock(&cell);
        Ok(table.commit_row_changes(&read, deletes, added)?.unwrap_or(-1))
    })
}

/// Metadata table `name` of the table's current snapshot (see
/// [`crate::table::iceberg::METADATA_TABLES`]), as a stream of one batch.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_metadataTableNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let name = string(env, &name)?;
        let table = lock(&cell).clone();
        let batch = table.metadata_table(&name)?;
        let schema = batch.schema();
        export_stream(Box::new(arrow::record_batch::RecordBatchIterator::new([Ok(batch)], schema)), stream_address)
    })
}

/// The columns of metadata table `name`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_metadataTableSchemaNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    schema_address: jlong,
) {
    entry(&mut env, |env| {
        let name = string(env, &name)?;
        let schema = crate::table::iceberg::metadata_table_schema(&name)?;
        export_schema(&schema, schema_address)
    })
}
