//! Entry points of `io.hyperstream.jni.ArrayStore`: rows cross as Arrow streams (see
//! `array::batches`), lazy views as direct byte buffers over the mapping.

use std::sync::Arc;

use arrow::record_batch::RecordBatchReader;
use jni::objects::{JByteBuffer, JClass, JFloatArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned};

use super::{entry, export_stream, handle, import_stream, long_array, string, string_array, JniResult};
use crate::array::batches::{rows_from_batches, to_batch};
use crate::array::store::check_fits;
use crate::array::{ArrayBatch, ArrayChanges, ArrayData, ArrayStore, DType, LazyArray, StoreOptions};
use crate::vector::gpu::Backend;
use crate::vector::Metric;
use crate::Error;

fn store_of(handle: jlong) -> JniResult<Arc<ArrayStore>> {
    // SAFETY: ArrayStore.java passes only handles it got from openNative and has not released.
    Ok(unsafe { handle::get::<ArrayStore>(handle) }?)
}

fn longs(env: &Env, array: &JLongArray) -> JniResult<Vec<u64>> {
    if array.is_null() {
        return Err(Error::invalid("row indices are null").into());
    }
    let mut values = vec![0i64; array.len(env)?];
    array.get_region(env, 0, &mut values)?;
    values
        .into_iter()
        .map(|v| u64::try_from(v).map_err(|_| Error::invalid(format!("row index {v} is negative")).into()))
        .collect()
}

/// The info of an array as Java reads it: `[dtype, rows, dims...]` with the dtype's position in
/// `DType::ALL` first.
fn info_out<'l>(env: &mut Env<'l>, info: &crate::array::ArrayInfo) -> JniResult<JLongArray<'l>> {
    let code = DType::ALL.iter().position(|d| *d == info.dtype).expect("every dtype is listed") as i64;
    let mut out = vec![code];
    out.extend(info.shape.iter().map(|&d| d as i64));
    long_array(env, &out)
}

fn export_rows(data: ArrayData, indices: impl IntoIterator<Item = u64>, address: jlong) -> JniResult<()> {
    let batch = to_batch(&data.info, indices, data.bytes)?;
    let schema = batch.schema();
    export_stream(Box::new(arrow::record_batch::RecordBatchIterator::new(vec![Ok(batch)], schema)), address)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_openNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    root: JString<'l>,
    durable: jboolean,
    read_only: jboolean,
) -> jlong {
    entry(&mut env, |env| {
        let root = string(env, &root)?;
        let store = ArrayStore::open(root, StoreOptions { durable, read_only })?;
        Ok(handle::into_handle(store))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_namesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let names = store_of(handle)?.names()?;
        string_array(env, &names)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_infoNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let info = store_of(handle)?.info(&string(env, &name)?)?;
        info_out(env, &info)
    })
}

/// What a save, an append or a replace does with the rows that arrived.
const SAVE: jint = 0;
const APPEND: jint = 1;
const REPLACE: jint = 2;

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_writeNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mode: jint,
    indices: JLongArray<'l>,
    stream_address: jlong,
) -> jlong {
    entry(&mut env, |env| {
        let name = string(env, &name)?;
        write_rows(store_of(handle)?.as_ref(), env, &name, mode, &indices, stream_address)
    })
}

/// A save, an append or a replace of the rows of the Arrow stream at `address`.
fn write_rows(
    target: &dyn ArrayChanges,
    env: &mut Env,
    name: &str,
    mode: jint,
    indices: &JLongArray,
    address: jlong,
) -> JniResult<jlong> {
    let (dtype, row_shape, bytes) = rows_of_stream(address)?;
    match mode {
        SAVE => Ok(target.save(name, dtype, &row_shape, &bytes)? as jlong),
        APPEND => {
            check_fits(&target.info(name)?, dtype, &row_shape)?;
            Ok(target.append(name, &bytes)? as jlong)
        }
        REPLACE => {
            check_fits(&target.info(name)?, dtype, &row_shape)?;
            target.replace(name, &longs(env, indices)?, &bytes)?;
            Ok(0)
        }
        other => Err(Error::Internal(format!("unknown write mode {other}")).into()),
    }
}

/// Drops array `name`, or (with `indices`) rows of it; returns the rows left.
fn drop_rows_or_array(target: &dyn ArrayChanges, env: &mut Env, name: &str, indices: &JLongArray) -> JniResult<jlong> {
    if indices.is_null() {
        target.drop_array(name)?;
        return Ok(0);
    }
    Ok(target.drop_rows(name, &longs(env, indices)?)? as jlong)
}

/// The rows of the Arrow stream at `address`: its dtype, row shape and bytes.
fn rows_of_stream(address: jlong) -> JniResult<crate::array::batches::Rows> {
    let reader = import_stream(address)?;
    let schema = reader.schema();
    if let Some(rows) = rows_from_batches(reader)? {
        return Ok(rows);
    }
    // No batch: the schema alone says what the rows would be.
    let field = schema.field(schema.index_of("value").unwrap_or(0)).clone();
    let empty = arrow::array::new_empty_array(field.data_type());
    let batch = arrow::array::RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(vec![field])), vec![empty])?;
    Ok(rows_from_batches(std::iter::once(Ok(batch)))?.expect("one batch"))
}

/// Rows `start..end` of an array in batches, in the engines' types when `engine`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_scanNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    start: jlong,
    end: jlong,
    batch_rows: jint,
    engine: jboolean,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let (start, end) = match (u64::try_from(start), u64::try_from(end)) {
            (Ok(s), Ok(e)) => (s, e),
            _ => return Err(Error::invalid(format!("rows {start}..{end} are out of range")).into()),
        };
        let stream = store.stream_rows(&string(env, &name)?, start, end, positive_batch(batch_rows)?, engine)?;
        export_stream(stream, stream_address)
    })
}

fn positive_batch(batch_rows: jint) -> JniResult<usize> {
    Ok(crate::limits::batch_rows("batch rows", i64::from(batch_rows))?)
}

/// Moves staged parts (arrays of the store at `staging`) into an array as one change.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_commitNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    staging: JString<'l>,
    parts: JObjectArray<'l, JString<'l>>,
    overwrite: jboolean,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let (name, staging) = (string(env, &name)?, string(env, &staging)?);
        let mut names = Vec::new();
        for i in 0..parts.len(env)? {
            let part = parts.get_element(env, i)?;
            names.push(string(env, &part)?);
        }
        let staged = ArrayStore::open(staging, StoreOptions { read_only: true, ..Default::default() })?;
        let info = store.commit_parts(&name, &staged, &names, overwrite)?;
        info_out(env, &info)
    })
}

fn batch_of(handle: jlong) -> JniResult<Arc<ArrayBatch>> {
    // SAFETY: ArrayStore.Batch passes only handles it got from batchNative and has not released.
    Ok(unsafe { handle::get::<ArrayBatch>(handle) }?)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_batchNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    entry(&mut env, |_| Ok(handle::into_handle(store_of(handle)?.batch())))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024Batch_writeNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mode: jint,
    indices: JLongArray<'l>,
    stream_address: jlong,
) -> jlong {
    entry(&mut env, |env| {
        let name = string(env, &name)?;
        write_rows(batch_of(handle)?.as_ref(), env, &name, mode, &indices, stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024Batch_loadNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let data = batch_of(handle)?.load(&string(env, &name)?)?;
        let rows = data.info.rows();
        export_rows(data, 0..rows, stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024Batch_infoNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let info = batch_of(handle)?.info(&string(env, &name)?)?;
        info_out(env, &info)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024Batch_dropNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    indices: JLongArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let name = string(env, &name)?;
        drop_rows_or_array(batch_of(handle)?.as_ref(), env, &name, &indices)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024Batch_flushNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, |_| Ok(batch_of(handle)?.flush()?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_readNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    indices: JLongArray<'l>,
    start: jlong,
    end: jlong,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let name = string(env, &name)?;
        if !indices.is_null() {
            let indices = longs(env, &indices)?;
            return export_rows(store.get_rows(&name, &indices)?, indices.iter().copied(), stream_address);
        }
        if start < 0 {
            let data = store.load(&name)?;
            let rows = data.info.rows();
            return export_rows(data, 0..rows, stream_address);
        }
        let end = u64::try_from(end).map_err(|_| Error::invalid(format!("slice end {end} is negative")))?;
        export_rows(store.slice(&name, start as u64, end)?, start as u64..end, stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_streamNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    batch_rows: jint,
    stream_address: jlong,
) {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let stream = store.stream(&string(env, &name)?, positive_batch(batch_rows)?)?;
        export_stream(stream, stream_address)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_dropNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    indices: JLongArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let name = string(env, &name)?;
        drop_rows_or_array(store_of(handle)?.as_ref(), env, &name, &indices)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_npyNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    path: JString<'l>,
    export: jboolean,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let (name, path) = (string(env, &name)?, string(env, &path)?);
        let info =
            if export { store.export_npy(&name, path.as_ref())? } else { store.import_npy(&name, path.as_ref())? };
        info_out(env, &info)
    })
}

/// The backend that ran (0 cpu, 1 cuda, 2 wgpu), then the distances and rows of each query's
/// neighbours: `[count, row, distance bits, row, ...]` per query. `backend` null is auto.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_topKNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    metric: JString<'l>,
    queries: JObjectArray<'l, JFloatArray<'l>>,
    k: jint,
    backend: JString<'l>,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let store = store_of(handle)?;
        let (name, metric) = (string(env, &name)?, Metric::parse(&string(env, &metric)?)?);
        let k = crate::limits::top_k("k", k as i64)?;
        if queries.is_null() {
            return Err(Error::invalid("query vectors are null").into());
        }
        let mut vectors = Vec::new();
        for i in 0..queries.len(env)? {
            let q = queries.get_element(env, i)?;
            if q.is_null() {
                return Err(Error::invalid(format!("query vector {i} is null")).into());
            }
            let mut v = vec![0f32; q.len(env)?];
            q.get_region(env, 0, &mut v)?;
            vectors.push(v);
        }
        let backend = if backend.is_null() { Backend::Auto } else { Backend::parse(&string(env, &backend)?)? };
        let found = store.top_k_on(&name, metric, &vectors, k, backend)?;
        let ran = ["cpu", "cuda", "wgpu"].iter().position(|b| *b == found.backend).unwrap_or(0);
        let mut out = vec![ran as i64];
        for hits in found.neighbors {
            out.push(hits.len() as i64);
            for n in hits {
                out.push(n.ordinal as i64);
                out.push(n.distance.to_bits() as i64);
            }
        }
        long_array(env, &out)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_lazyNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let view = store_of(handle)?.lazy(&string(env, &name)?)?;
        Ok(handle::into_handle(view))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024LazyView_infoNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        // SAFETY: LazyView passes only its own open handle.
        let view = unsafe { handle::get::<LazyArray>(handle) }?;
        info_out(env, &view.info)
    })
}

/// A direct buffer over rows `first..first + rows` of a view; `keeper` gets a handle of its own on
/// the mapping, which Java releases when the buffer is collected, so the buffer never outlives it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_ArrayStore_00024LazyView_bufferNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    first: jlong,
    rows: jlong,
    keeper: JLongArray<'l>,
) -> JByteBuffer<'l> {
    entry(&mut env, |env| {
        // SAFETY: LazyView passes only its own open handle.
        let view = unsafe { handle::get::<LazyArray>(handle) }?;
        let total = view.info.rows();
        let (first, rows) = (u64::try_from(first).ok(), u64::try_from(rows).ok());
        let (first, rows) = match (first, rows) {
            (Some(f), Some(r)) if r > 0 && f.checked_add(r).is_some_and(|e| e <= total) => (f, r),
            _ => {
                return Err(Error::invalid(format!(
                    "rows {first:?} + {rows:?} are out of range for a view of {total} rows"
                ))
                .into())
            }
        };
        let width = view.info.row_bytes();
        let len = rows as usize * width;
        if len > i32::MAX as usize {
            return Err(Error::invalid(format!("{len} bytes do not fit one ByteBuffer: ask for fewer rows")).into());
        }
        let bytes = view.bytes();
        let ptr = bytes[first as usize * width..].as_ptr();
        let keep = handle::into_handle(LazyArray::clone(&view));
        keeper.set_region(env, 0, &[keep])?;
        // SAFETY: the mapping behind `ptr..ptr + len` stays alive while handle `keep` does, and Java
        // releases `keep` only once the buffer is unreachable. Java makes the buffer read-only.
        let buffer = unsafe { env.new_direct_byte_buffer(ptr as *mut u8, len) };
        match buffer {
            Ok(b) => Ok(b),
            Err(e) => {
                // SAFETY: `keep` was never handed to Java.
                unsafe { handle::release(keep) };
                Err(e.into())
            }
        }
    })
}
