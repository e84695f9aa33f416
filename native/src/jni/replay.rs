//! `io.hyperstream.jni.BatchReplay`: batches handed in once and streamed out again (the bridge benchmark).

use std::sync::Arc;

use jni::objects::{JClass, JIntArray};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;

use crate::scan::RepeatedBatches;
use crate::table::SampleTable;

use super::*;

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
