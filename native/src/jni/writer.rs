//! `io.hyperstream.jni.TableWriter`: one engine task's bounded writer.

use std::sync::{Arc, Mutex};

use arrow::ffi::FFI_ArrowSchema;
use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::jlong;
use jni::EnvUnowned;

use crate::table::iceberg::TableWriter;

use super::table::data_files_out;
use super::*;

pub(super) type WriterCell = Mutex<TableWriter>;

pub(super) fn writer_of(handle: jlong) -> JniResult<Arc<WriterCell>> {
    // SAFETY: NativeHandle passes only open handles.
    Ok(unsafe { handle::get::<WriterCell>(handle) }?)
}

/// Takes over the batch Java exported (`Data.exportVectorSchemaRoot`) into the `ArrowArray` and
/// `ArrowSchema` structs at the two addresses.
pub(super) fn import_batch(array_address: jlong, schema_address: jlong) -> JniResult<arrow::array::RecordBatch> {
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

pub(super) fn address_of<T>(address: jlong) -> *mut T {
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
