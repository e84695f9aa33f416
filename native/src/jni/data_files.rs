//! `io.hyperstream.jni.DataFiles`: the fields of a data file description, read by the library
//! that wrote it.

use jni::objects::{JClass, JString};
use jni::sys::jlong;
use jni::EnvUnowned;

use crate::spec::manifest::DataFile;
use crate::Error;

use super::*;

fn description(env: &mut jni::Env, json: &JString) -> JniResult<DataFile> {
    let text = string(env, json)?;
    serde_json::from_str(&text).map_err(|e| Error::invalid(format!("not a data file description ({e}): {text}")).into())
}

/// The rows the data file holds, deleted ones included.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_DataFiles_recordCountNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    json: JString<'l>,
) -> jlong {
    entry(&mut env, |env| Ok(description(env, &json)?.record_count))
}

/// The data file's size in bytes.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_DataFiles_sizeInBytesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    json: JString<'l>,
) -> jlong {
    entry(&mut env, |env| Ok(description(env, &json)?.file_size_in_bytes))
}

/// The rows the file surely still holds: all of them, or none known when delete files apply to it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_DataFiles_undeletedRowsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    json: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let file = description(env, &json)?;
        Ok(if file.deletes.is_empty() { file.record_count } else { 0 })
    })
}
