//! `io.hyperstream.jni.Limits`: the checked sizes (batch rows, k, ef, dimensions, row ranges).

use jni::objects::{JClass, JString};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;

use crate::Error;

use super::records::export_splits;
use super::*;

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
    stream_address: jlong,
) {
    entry(&mut env, |_| {
        let rows = u64::try_from(rows).map_err(|_| Error::invalid(format!("rows must be >= 0, got {rows}")))?;
        let split_rows = u64::try_from(split_rows)
            .map_err(|_| Error::invalid(format!("rows per split must be positive, got {split_rows}")))?;
        export_splits(&crate::scan::plan_row_splits(rows, split_rows)?, stream_address)
    })
}

// ---- io.hyperstream.jni.SampleTable ------------------------------------------------------------
