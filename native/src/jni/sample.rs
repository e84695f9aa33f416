//! `io.hyperstream.jni.SampleTable`: the generated sample table.

use jni::objects::{JClass, JIntArray};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;

use crate::table::SampleTable;

use super::records::export_splits;
use super::*;

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
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        // SAFETY: NativeHandle passes only open handles.
        let table = unsafe { handle::get::<SampleTable>(handle) }?;
        export_splits(&table.plan_splits(target_rows)?, stream_address)
    })
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
