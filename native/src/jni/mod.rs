//! JNI entry points: translate the arguments, call the library, translate back. No logic lives here.
//!
//! Every entry point runs inside `EnvUnowned::with_env`, which catches panics; `ThrowJava` turns
//! errors and panics into the exception classes of `io.hyperstream.jni`. Arrow data crosses through
//! the C Data Interface: Java allocates the `ArrowArrayStream` / `ArrowSchema` struct and passes its
//! address; Rust moves its stream or schema into it (export) or takes it over (import).

mod array;
mod catalog_root;
mod data_files;
mod handle;
mod library;
mod limits;
mod metrics;
mod records;
mod replay;
mod rest_catalog;
mod sample;
mod table;
mod throw;
mod writer;

use std::ffi::c_void;
use std::sync::Mutex;

use arrow::datatypes::Schema as ArrowSchema;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use jni::objects::{JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jint, jlong, JNI_ERR, JNI_VERSION_1_8};
use jni::vm::JavaVM;
use jni::{Env, EnvUnowned};

use crate::scan::BatchStream;
use crate::Error;
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
    export_foreign(crate::scan::ForeignStream::new(stream), address)
}

/// Moves `stream` into the caller's `ArrowArrayStream` struct at `address`.
fn export_foreign(stream: crate::scan::ForeignStream, address: jlong) -> JniResult<()> {
    let address = non_null(address, "ArrowArrayStream")?;
    let ffi = FFI_ArrowArrayStream::new(Box::new(stream));
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

/// Java's -1 for "none" as an `Option`.
fn rows_arg(rows: jlong) -> JniResult<u64> {
    u64::try_from(rows).map_err(|_| Error::invalid(format!("row count must be >= 0, got {rows}")).into())
}

// ---- io.hyperstream.jni.NativeTable -----------------------------------------------------------

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

/// A Java `String[]` of `values`.
/// A map as Java's `NativeTable.unflatten` reads it: key, value, key, value, ...
fn pairs_array<'l>(
    env: &mut Env<'l>,
    pairs: impl IntoIterator<Item = (String, String)>,
) -> JniResult<JObjectArray<'l, JString<'l>>> {
    string_array(env, &pairs.into_iter().flat_map(|(k, v)| [k, v]).collect::<Vec<_>>())
}

fn string_array<'l>(env: &mut Env<'l>, values: &[String]) -> JniResult<JObjectArray<'l, JString<'l>>> {
    let array = JObjectArray::<JString>::new(env, values.len(), JString::null())?;
    for (i, value) in values.iter().enumerate() {
        let value = JString::new(env, value)?;
        array.set_element(env, i, &value)?;
    }
    Ok(array)
}
