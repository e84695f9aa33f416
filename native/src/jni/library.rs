//! `io.hyperstream.jni.NativeLibrary` and `NativeHandle`: the library's version, handles, memory, GPU backends and the test hooks for errors and panics.

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;

use crate::error::ErrorKind;
use crate::scan::summarize;
use crate::{Error, VERSION};

use super::*;

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
