//! JNI entry points: translate the arguments, call the library, translate back. No logic lives here.
//!
//! Every entry point runs inside `EnvUnowned::with_env`, which catches panics; `ThrowJava` turns
//! errors and panics into the exception classes of `io.hyperstream.jni`. Arrow data crosses through
//! the C Data Interface: Java allocates the `ArrowArrayStream` / `ArrowSchema` struct and passes its
//! address; Rust moves its stream or schema into it (export) or takes it over (import).

mod array;
mod handle;
mod throw;

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use arrow::datatypes::Schema as ArrowSchema;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use jni::objects::{JClass, JFloatArray, JIntArray, JLongArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong, JNI_ERR, JNI_VERSION_1_8};
use jni::vm::JavaVM;
use jni::{Env, EnvUnowned};

use crate::error::ErrorKind;
use crate::scan::{summarize, BatchStream, Predicate, RepeatedBatches};
use crate::table::iceberg::{Table, TableWriter};
use crate::table::manifest::DataFile;
use crate::table::SampleTable;
use crate::vector::gpu::Backend;
use crate::vector::hnsw::HnswParams;
use crate::vector::{IndexUse, Metric, VectorSearch};
use crate::{Error, VERSION};
use throw::{JniError, ThrowJava};

type JniResult<T> = Result<T, JniError>;

/// Runs one entry point's body with the caller's `Env`, mapping errors and panics to exceptions.
fn entry<'local, T: Default>(env: &mut EnvUnowned<'local>, body: impl FnOnce(&mut Env<'local>) -> JniResult<T>) -> T {
    env.with_env(body).resolve::<ThrowJava>()
}

#[unsafe(no_mangle)]
pub extern "system" fn JNI_OnLoad(vm: *mut jni::sys::JavaVM, _reserved: *mut c_void) -> jint {
    install_panic_hook();
    let resolved = std::panic::catch_unwind(|| {
        // SAFETY: the JVM passes a valid JavaVM pointer to JNI_OnLoad.
        let vm = unsafe { JavaVM::from_raw(vm) };
        vm.attach_current_thread(throw::resolve_classes)
    });
    match resolved {
        Ok(Ok(())) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}

/// Panics reach Java as exceptions with their message; stderr gets one line per panic with its
/// location instead of the default report (a backtrace when RUST_BACKTRACE is set).
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("hyperstream: native panic at {location} (raised as io.hyperstream.jni.InternalException)");
    }));
}

fn non_null(address: jlong, what: &str) -> JniResult<jlong> {
    if address == 0 {
        return Err(Error::invalid(format!("{what} address is null")).into());
    }
    Ok(address)
}

/// Moves `stream` into the caller's `ArrowArrayStream` struct at `address`.
fn export_stream(stream: BatchStream, address: jlong) -> JniResult<()> {
    let address = non_null(address, "ArrowArrayStream")?;
    let ffi = FFI_ArrowArrayStream::new(Box::new(crate::scan::ForeignStream::new(stream)));
    // SAFETY: Java allocated an ArrowArrayStream struct at `address` (ArrowArrayStream.allocateNew),
    // which holds no stream yet; writing without dropping the old contents is what it expects.
    unsafe { std::ptr::write_unaligned(address as *mut FFI_ArrowArrayStream, ffi) };
    Ok(())
}

/// Writes `schema` into the caller's `ArrowSchema` struct at `address`.
fn export_schema(schema: &ArrowSchema, address: jlong) -> JniResult<()> {
    let address = non_null(address, "ArrowSchema")?;
    let ffi = FFI_ArrowSchema::try_from(schema)?;
    // SAFETY: Java allocated an empty ArrowSchema struct at `address` (ArrowSchema.allocateNew).
    unsafe { std::ptr::write_unaligned(address as *mut FFI_ArrowSchema, ffi) };
    Ok(())
}

/// Takes over the stream Java exported into the `ArrowArrayStream` struct at `address`.
fn import_stream(address: jlong) -> JniResult<RecordBatchStreamReader> {
    let address = non_null(address, "ArrowArrayStream")?;
    // SAFETY: Java exported a stream into the struct at `address` (Data.exportArrayStream); from_raw
    // moves it out and marks the struct released.
    Ok(unsafe { RecordBatchStreamReader::from_raw(address as *mut FFI_ArrowArrayStream) }?)
}

fn int_array(env: &Env, array: &JIntArray) -> JniResult<Option<Vec<jint>>> {
    if array.is_null() {
        return Ok(None);
    }
    let mut values = vec![0; array.len(env)?];
    array.get_region(env, 0, &mut values)?;
    Ok(Some(values))
}

/// Column indices from a Java `int[]`; null means every column.
fn projection_arg(env: &Env, array: &JIntArray) -> JniResult<Option<Vec<usize>>> {
    let Some(columns) = int_array(env, array)? else {
        return Ok(None);
    };
    let columns = columns
        .into_iter()
        .map(|c| usize::try_from(c).map_err(|_| Error::invalid(format!("column index {c} is negative"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(columns))
}

fn long_array<'local>(env: &mut Env<'local>, values: &[jlong]) -> JniResult<JLongArray<'local>> {
    let array = JLongArray::new(env, values.len())?;
    array.set_region(env, 0, values)?;
    Ok(array)
}

fn string(env: &Env, s: &JString) -> JniResult<String> {
    if s.is_null() {
        return Err(Error::invalid("string argument is null").into());
    }
    Ok(s.try_to_string(env)?)
}

// ---- io.hyperstream.jni.NativeHandle -----------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeHandle_releaseNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    // SAFETY: NativeHandle calls this once per handle, after every call on it has returned.
    entry(&mut env, |_| {
        let _: () = unsafe { handle::release(handle) };
        Ok(())
    })
}

// ---- io.hyperstream.jni.NativeLibrary ----------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_nativeVersion<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    entry(&mut env, |env| Ok(JString::new(env, VERSION)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_liveHandles<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    entry(&mut env, |_| Ok(handle::live()))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_allocatedBytes<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    entry(&mut env, |_| Ok(crate::runtime::allocated_bytes().map_or(-1, |b| b as jlong)))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_gpuBackendsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let report = crate::vector::gpu::probe().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        Ok(JString::new(env, report)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_raiseError<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    kind: JString<'l>,
    message: JString<'l>,
) {
    entry(&mut env, |env| {
        let kind = string(env, &kind)?;
        let message = string(env, &message)?;
        let kind = ErrorKind::from_name(&kind).ok_or_else(|| Error::invalid(format!("unknown error kind {kind:?}")))?;
        Err(kind.error(message).into())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_armStreamPanicNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    after_batches: jint,
) {
    entry(&mut env, |_| {
        crate::scan::arm_stream_panic(i64::from(after_batches));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_raisePanic<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    message: JString<'l>,
) {
    entry(&mut env, |env| {
        let message = string(env, &message)?;
        panic!("{message}");
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_summarizeStream<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    stream_address: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let reader = import_stream(stream_address)?;
        let s = summarize(reader)?;
        long_array(
            env,
            &[
                s.rows as jlong,
                s.batches as jlong,
                s.nulls as jlong,
                s.int_sum,
                s.float_sum.to_bits() as jlong,
                s.utf8_bytes as jlong,
            ],
        )
    })
}

// ---- io.hyperstream.jni.CatalogRoot ------------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_CatalogRoot_checkNameNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    kind: JString<'l>,
    name: JString<'l>,
) {
    entry(&mut env, |env| {
        let kind = string(env, &kind)?;
        Ok(crate::storage::names::check_name(&kind, &string(env, &name)?)?)
    })
}

// ---- io.hyperstream.jni.Limits -----------------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_batchRowsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: JString<'l>,
    rows: jlong,
) -> jint {
    entry(&mut env, |env| Ok(crate::limits::batch_rows(&string(env, &what)?, rows)? as jint))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_topKNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: JString<'l>,
    k: jlong,
) -> jint {
    entry(&mut env, |env| Ok(crate::limits::top_k(&string(env, &what)?, k)? as jint))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_efSearchNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: JString<'l>,
    ef: jlong,
) -> jlong {
    entry(&mut env, |env| Ok(crate::limits::ef_search(&string(env, &what)?, ef)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_maxTopKNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    entry(&mut env, |_| Ok(crate::limits::MAX_K as jlong))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_dimensionNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: JString<'l>,
    dimension: jlong,
) -> jint {
    entry(&mut env, |env| Ok(crate::limits::dimension(&string(env, &what)?, dimension)? as jint))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Limits_rowRangesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    rows: jlong,
    split_rows: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let rows = u64::try_from(rows).map_err(|_| Error::invalid(format!("rows must be >= 0, got {rows}")))?;
        let split_rows = u64::try_from(split_rows)
            .map_err(|_| Error::invalid(format!("rows per split must be positive, got {split_rows}")))?;
        splits_array(env, &crate::scan::plan_row_splits(rows, split_rows)?)
    })
}

// ---- io.hyperstream.jni.SampleTable ------------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_SampleTable_openNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    rows: jlong,
    dimension: jint,
    seed: jlong,
) -> jlong {
    entry(&mut env, |_| Ok(handle::into_handle(SampleTable::new(rows, dimension, seed)?)))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_SampleTable_exportSchema<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
) {
    entry(&mut env, |_| {
        // SAFETY: NativeHandle passes only open handles.
        let table = unsafe { handle::get::<SampleTable>(handle) }?;
        export_schema(&table.schema(), schema_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_SampleTable_planSplits<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    target_rows: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        // SAFETY: NativeHandle passes only open handles.
        let table = unsafe { handle::get::<SampleTable>(handle) }?;
        splits_array(env, &table.plan_splits(target_rows)?)
    })
}

/// Row splits as Java's flat `long[]` of start, end pairs.
fn splits_array<'local>(env: &mut Env<'local>, splits: &[crate::scan::RowSplit]) -> JniResult<JLongArray<'local>> {
    let flat: Vec<jlong> = splits.iter().flat_map(|s| [s.start as jlong, s.end as jlong]).collect();
    long_array(env, &flat)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_SampleTable_scanNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    start: jlong,
    end: jlong,
    batch_rows: jint,
    projection: JIntArray<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        // SAFETY: NativeHandle passes only open handles.
        let table = unsafe { handle::get::<SampleTable>(handle) }?;
        let projection = projection_arg(env, &projection)?;
        let reader = table.scan(start..end, batch_rows, projection)?;
        export_stream(Box::new(reader), stream_address)
    })
}

// ---- io.hyperstream.jni.BatchReplay -----------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_BatchReplay_openNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    table: jlong,
    batch_rows: jint,
    pool_batches: jint,
    projection: JIntArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        // SAFETY: NativeHandle passes only open handles.
        let table = unsafe { handle::get::<SampleTable>(table) }?;
        let projection = projection_arg(env, &projection)?;
        let rows = i64::from(batch_rows.max(0)) * i64::from(pool_batches.max(0));
        let pool = table.scan(0..rows, batch_rows, projection)?.collect::<Result<Vec<_>, _>>()?;
        Ok(handle::into_handle(RepeatedBatches::new(pool)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_BatchReplay_streamNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    total_rows: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        // SAFETY: NativeHandle passes only open handles.
        let replay: Arc<RepeatedBatches> = unsafe { handle::get(handle) }?;
        let rows = rows_arg(total_rows)?;
        export_stream(Box::new(replay.reader(rows)), stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_BatchReplay_copyNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    total_rows: jlong,
) -> jlong {
    entry(&mut env, |_| {
        // SAFETY: NativeHandle passes only open handles.
        let replay: Arc<RepeatedBatches> = unsafe { handle::get(handle) }?;
        let rows = rows_arg(total_rows)?;
        Ok(replay.copy_into(rows, &mut Vec::new()) as jlong)
    })
}

/// Java's -1 for "none" as an `Option`.
fn non_negative(value: jlong) -> Option<i64> {
    (value >= 0).then_some(value)
}

fn rows_arg(rows: jlong) -> JniResult<u64> {
    u64::try_from(rows).map_err(|_| Error::invalid(format!("row count must be >= 0, got {rows}")).into())
}

// ---- io.hyperstream.jni.NativeTable -----------------------------------------------------------

/// A table handle: appends move it to new versions, so calls take the lock.
type TableCell = Mutex<Table>;

fn table_of(handle: jlong) -> JniResult<Arc<TableCell>> {
    // SAFETY: NativeHandle passes only open handles.
    Ok(unsafe { handle::get::<TableCell>(handle) }?)
}

fn lock<T>(cell: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while a table's lock was held leaves it at a committed version: reuse it. A writer
    // that panicked part way through a batch refuses everything but abort itself.
    cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn strings(env: &mut Env, array: &JObjectArray) -> JniResult<Option<Vec<String>>> {
    if array.is_null() {
        return Ok(None);
    }
    let len = array.len(env)?;
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        let element = array.get_element(env, i)?;
        let element = JString::cast_local(env, element)?;
        out.push(string(env, &element)?);
    }
    Ok(Some(out))
}

/// `key, value, key, value, ...` from Java as a map.
fn pairs(env: &mut Env, array: &JObjectArray) -> JniResult<Vec<(String, String)>> {
    let flat = strings(env, array)?.unwrap_or_default();
    if flat.len() % 2 != 0 {
        return Err(Error::invalid("properties must come as key/value pairs").into());
    }
    Ok(flat.chunks(2).map(|kv| (kv[0].clone(), kv[1].clone())).collect())
}

/// The schema Java exported (`Data.exportSchema`) into the struct at `address`.
fn import_schema(address: jlong) -> JniResult<ArrowSchema> {
    let address = non_null(address, "ArrowSchema")?;
    // SAFETY: Java exported a schema into the struct at `address`; from_raw takes it over and
    // releases it when dropped.
    let ffi = unsafe { FFI_ArrowSchema::from_raw(address as *mut FFI_ArrowSchema) };
    Ok(ArrowSchema::try_from(&ffi)?)
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
        let schema = lock(&cell).arrow_schema()?;
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

/// `[snapshot id, parent id or -1, timestamp ms, sequence number]` per snapshot, oldest first.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_snapshotsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let flat: Vec<jlong> = lock(&cell)
            .metadata()
            .snapshots
            .iter()
            .flat_map(|s| [s.snapshot_id, s.parent_snapshot_id.unwrap_or(-1), s.timestamp_ms, s.sequence_number])
            .collect();
        long_array(env, &flat)
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
    snapshot_id: jlong,
    as_of_ms: jlong,
    columns: JObjectArray<'l>,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let columns = strings(env, &columns)?;
        let table = lock(&cell);
        let snapshot = table.snapshot(non_negative(snapshot_id), non_negative(as_of_ms))?;
        let files = table.data_files(snapshot)?;
        let stream = table.scan_files(files, columns.as_deref(), batch_rows_arg(batch_rows)?)?;
        export_stream(stream, stream_address)
    })
}

fn data_files_arg(env: &mut Env, array: &JObjectArray) -> JniResult<Vec<DataFile>> {
    strings(env, array)?
        .unwrap_or_default()
        .iter()
        .map(|json| {
            serde_json::from_str(json).map_err(|e| Error::invalid(format!("not a data file description: {e}")).into())
        })
        .collect()
}

fn data_files_out<'l>(env: &mut Env<'l>, files: &[DataFile]) -> JniResult<JObjectArray<'l, JString<'l>>> {
    let json = files
        .iter()
        .map(|file| serde_json::to_string(file).map_err(|e| Error::Internal(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    string_array(env, &json)
}

/// A Java `String[]` of `values`.
fn string_array<'l>(env: &mut Env<'l>, values: &[String]) -> JniResult<JObjectArray<'l, JString<'l>>> {
    let array = JObjectArray::<JString>::new(env, values.len(), JString::null())?;
    for (i, value) in values.iter().enumerate() {
        let value = JString::new(env, value)?;
        array.set_element(env, i, &value)?;
    }
    Ok(array)
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
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let writer = lock(&cell).writer()?;
        Ok(handle::into_handle(Mutex::new(writer)))
    })
}

type WriterCell = Mutex<TableWriter>;

fn writer_of(handle: jlong) -> JniResult<Arc<WriterCell>> {
    // SAFETY: NativeHandle passes only open handles.
    Ok(unsafe { handle::get::<WriterCell>(handle) }?)
}

/// Takes over the batch Java exported (`Data.exportVectorSchemaRoot`) into the `ArrowArray` and
/// `ArrowSchema` structs at the two addresses.
fn import_batch(array_address: jlong, schema_address: jlong) -> JniResult<arrow::array::RecordBatch> {
    let array_address = non_null(array_address, "ArrowArray")?;
    let schema_address = non_null(schema_address, "ArrowSchema")?;
    // SAFETY: Java exported a struct array and its schema into the structs at these addresses;
    // from_raw moves each out and marks the struct released.
    let (array, schema) = unsafe {
        (
            arrow::ffi::FFI_ArrowArray::from_raw(address_of(array_address)),
            FFI_ArrowSchema::from_raw(address_of(schema_address)),
        )
    };
    // SAFETY: the array was exported with this schema.
    let data = unsafe { arrow::ffi::from_ffi(array, &schema) }?;
    Ok(arrow::array::RecordBatch::from(arrow::array::StructArray::from(data)))
}

fn address_of<T>(address: jlong) -> *mut T {
    address as *mut T
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_TableWriter_writeNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    array_address: jlong,
    schema_address: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = writer_of(handle)?;
        let batch = import_batch(array_address, schema_address)?;
        let mut writer = lock(&cell);
        writer.write(&batch)?;
        Ok(writer.buffered_bytes() as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_TableWriter_finishNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = writer_of(handle)?;
        let files = lock(&cell).finish()?;
        data_files_out(env, &files)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_TableWriter_abortNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, |_| {
        let cell = writer_of(handle)?;
        let aborted = lock(&cell).abort();
        Ok(aborted?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_setWriteMemoryLimitNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    bytes: jlong,
) {
    entry(&mut env, |_| Ok(crate::memory::WRITE_BUDGET.set_limit(bytes)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeLibrary_writeMemoryHeldNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    entry(&mut env, |_| Ok(crate::memory::WRITE_BUDGET.held() as jlong))
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

/// Deletes the rows `filter` passes (null: every row); returns `[snapshot id or -1, rows deleted]`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_deleteWhereNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    filter: JString<'l>,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let filter = filter_arg(env, &filter)?;
        let (snapshot, rows) = lock(&cell).delete_where(filter.as_ref())?;
        long_array(env, &[snapshot.unwrap_or(-1), rows as jlong])
    })
}

/// Compacts the table's small files and files with deleted rows into files of up to
/// `target_rows` rows; returns `[snapshot id or -1, files rewritten, files written]`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_rewriteDataFilesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    target_rows: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let target = usize::try_from(target_rows)
            .map_err(|_| Error::invalid(format!("target rows per file must be positive, got {target_rows}")))?;
        let done = lock(&cell).rewrite_data_files(target)?;
        let out = done.map_or([-1, 0, 0], |r| [r.snapshot_id, r.rewritten as jlong, r.written as jlong]);
        long_array(env, &out)
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

/// Adds the one field of the exported schema at `schema_address` as a new column.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_addColumnNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    schema_address: jlong,
) {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let schema = import_schema(schema_address)?;
        let [field] = schema.fields().iter().collect::<Vec<_>>()[..] else {
            return Err(Error::invalid(format!("a new column is one field, got {}", schema.fields().len())).into());
        };
        lock(&cell).add_column(field)?;
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

/// The table's partitioning (`which` 0) or sort order (1), a field each, as the create-time
/// properties take them.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_layoutNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    which: jint,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let table = lock(&cell);
        let fields = if which == 0 { table.partitioning()? } else { table.sort_order()? };
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

/// How a scan of `files` filtered by `filter` (JSON, or null) prunes: the counts of `ScanExplain`
/// in declaration order (a long[]) and the files that hold a row to read (a String[]).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_explainNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    files: JObjectArray<'l>,
    filter: JString<'l>,
) -> JObjectArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let filter = filter_arg(env, &filter)?;
        let table = lock(&cell).clone();
        let (e, reading) = table.explain_files(files, filter.as_ref())?;
        let counts = [
            e.files as u64,
            e.files_pruned as u64,
            e.row_groups as u64,
            e.row_groups_pruned_by_stats as u64,
            e.row_groups_pruned_by_bloom as u64,
            e.row_groups_pruned_by_index as u64,
            e.rows,
            e.rows_deleted,
            e.rows_pruned_by_index,
            e.rows_read,
            e.pages,
            e.pages_read,
            e.bytes_read,
        ];
        let counts = long_array(env, &counts.map(|c| c as jlong))?;
        let files = data_files_out(env, &reading)?;
        let out = JObjectArray::<JObject>::new(env, 2, JObject::null())?;
        out.set_element(env, 0, &counts)?;
        out.set_element(env, 1, &files)?;
        Ok(out)
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

/// Expires snapshots older than `older_than_ms` but the last `retain_last`; returns their ids.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_expireSnapshotsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    older_than_ms: jlong,
    retain_last: jint,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        if retain_last < 1 {
            return Err(Error::invalid(format!("retain_last must be at least 1, got {retain_last}")).into());
        }
        let expired = lock(&cell).expire_snapshots(older_than_ms, retain_last as usize)?;
        long_array(env, &expired)
    })
}

/// The HNSW graphs built through this handle so far: `[data files, vectors, nanoseconds]`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_indexBuildsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let (files, vectors, nanos) = lock(&cell).index_builds().totals();
        long_array(env, &[files, vectors, nanos].map(|n| i64::try_from(n).unwrap_or(i64::MAX)))
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
    snapshot_id: jlong,
    as_of_ms: jlong,
    filter: JString<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let filter = filter_arg(env, &filter)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(non_negative(snapshot_id), non_negative(as_of_ms))?;
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
    snapshot_id: jlong,
    as_of_ms: jlong,
) -> jlong {
    entry(&mut env, |_| {
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(non_negative(snapshot_id), non_negative(as_of_ms))?;
        Ok(table.live_rows(&table.data_files(snapshot)?)? as jlong)
    })
}

/// Sets `keys[i]` to `values[i]` (null: removes it) for Iceberg's Parquet write properties, as one commit.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_setWritePropertiesNative<'l>(
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
        lock(&cell).set_write_properties(&changes)?;
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
    snapshot_id: jlong,
    as_of_ms: jlong,
) -> JObjectArray<'l> {
    entry(&mut env, |env| {
        let cell = table_of(handle)?;
        let table = lock(&cell).clone();
        let snapshot = table.snapshot(non_negative(snapshot_id), non_negative(as_of_ms))?;
        let stats = table.column_statistics(snapshot)?;
        let known = |v: Option<u64>| v.map_or(-1, |v| v as jlong);
        let names = string_array(env, &stats.iter().map(|(n, _, _)| n.clone()).collect::<Vec<_>>())?;
        let distinct = long_array(env, &stats.iter().map(|(_, d, _)| known(*d)).collect::<Vec<_>>())?;
        let nulls = long_array(env, &stats.iter().map(|(_, _, n)| known(*n)).collect::<Vec<_>>())?;
        let out = JObjectArray::<JObject>::new(env, 3, JObject::null())?;
        out.set_element(env, 0, &names)?;
        out.set_element(env, 1, &distinct)?;
        out.set_element(env, 2, &nulls)?;
        Ok(out)
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
    snapshot_id: jlong,
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
        let snapshot = table.snapshot(non_negative(snapshot_id), non_negative(as_of_ms))?;
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
fn filter_arg(env: &Env, json: &JString) -> JniResult<Option<Predicate>> {
    if json.is_null() {
        return Ok(None);
    }
    Ok(Some(Predicate::from_json(&string(env, json)?)?))
}

fn batch_rows_arg(batch_rows: jint) -> JniResult<usize> {
    Ok(crate::limits::batch_rows("batch rows", i64::from(batch_rows))?)
}

/// Reads data files: every row `filter` passes with `columns` (null: all); with a vector column and
/// query also each row's `_distance` (k = -1) or only the k nearest rows, nearest first (k > 0),
/// through the column's vector index where it has one as `ef_search` says (0: default, -1: exact), an exact
/// search of a file's contiguous vectors on `backend` (null: auto), rows without a vector before the
/// nearest when `nulls_first`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_NativeTable_readFilesNative<'l>(
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
        let cell = table_of(handle)?;
        let files = data_files_arg(env, &files)?;
        let columns = strings(env, &columns)?;
        let filter = filter_arg(env, &filter)?;
        let rows = batch_rows_arg(batch_rows)?;
        let table = lock(&cell).clone();
        if vector_column.is_null() {
            return export_stream(table.scan(files, columns.as_deref(), filter, rows)?, stream_address);
        }
        if query.is_null() {
            return Err(Error::invalid("query vector is null").into());
        }
        let mut vector = vec![0f32; query.len(env)?];
        query.get_region(env, 0, &mut vector)?;
        let mut search =
            VectorSearch::new(string(env, &vector_column)?, vector, Metric::parse(&string(env, &metric)?)?, 0);
        search.index = IndexUse::from_code(ef_search)?;
        if !backend.is_null() {
            search.backend = Backend::parse(&string(env, &backend)?)?;
        }
        search.nulls_first = nulls_first;
        if k == -1 {
            let stream = table.scan_with_distances(files, columns.as_deref(), filter, &search, rows)?;
            return export_stream(stream, stream_address);
        }
        search.k = crate::limits::top_k("k", k)?;
        let found = table.search(files, columns.as_deref(), filter.as_ref(), &search, rows)?;
        let schema = found.schema();
        let batches: Vec<_> = (0..found.num_rows())
            .step_by(rows)
            .map(|start| Ok(found.slice(start, rows.min(found.num_rows() - start))))
            .collect();
        export_stream(Box::new(arrow::record_batch::RecordBatchIterator::new(batches, schema)), stream_address)
    })
}
