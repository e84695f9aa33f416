//! `io.hyperstream.jni.CatalogRoot`: the rule for names that become paths.

use jni::objects::{JClass, JString};
use jni::EnvUnowned;

use super::*;

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
