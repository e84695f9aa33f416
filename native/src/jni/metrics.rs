//! `io.hyperstream.jni.Metrics`: distance metric names as the library reads them.

use jni::objects::{JClass, JString};
use jni::EnvUnowned;

use crate::vector::Metric;

use super::*;

/// The native metric `name` stands for (its own name or an alias), by its canonical name.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_Metrics_ofNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let metric = Metric::parse(&string(env, &name)?)?;
        Ok(JString::new(env, metric.name())?)
    })
}
