//! `io.hyperstream.jni.RestCatalog`: namespaces and tables of an Iceberg REST catalog. Each call
//! takes the catalog's `catalog.*` options as key/value pairs and a namespace as its levels.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::jboolean;
use jni::{Env, EnvUnowned};

use crate::table::rest::{RestCatalog, RestSettings, TableIdent};
use crate::Error;

use super::*;

/// The catalog the options name (connected once per process and settings).
fn catalog(env: &mut Env, settings: &JObjectArray) -> JniResult<Arc<RestCatalog>> {
    let options: HashMap<String, String> = pairs(env, settings)?.into_iter().collect();
    let settings = RestSettings::from_options(&options)?
        .ok_or_else(|| Error::invalid("these catalog settings name no REST catalog (catalog.type=rest)"))?;
    Ok(RestCatalog::connect(&settings)?)
}

/// Runs `call` on the catalog the options name and the namespace of `levels`.
fn in_namespace<T>(
    env: &mut Env,
    settings: &JObjectArray,
    levels: &JObjectArray,
    call: impl FnOnce(&RestCatalog, &[String]) -> crate::Result<T>,
) -> JniResult<T> {
    let namespace = namespace(env, levels)?;
    let catalog = catalog(env, settings)?;
    Ok(call(&catalog, &namespace)?)
}

fn namespace(env: &mut Env, levels: &JObjectArray) -> JniResult<Vec<String>> {
    let levels = strings(env, levels)?.unwrap_or_default();
    if levels.is_empty() {
        return Err(Error::invalid("a namespace needs at least one level").into());
    }
    Ok(levels)
}

fn ident(env: &mut Env, levels: &JObjectArray, name: &JString) -> JniResult<TableIdent> {
    Ok(TableIdent { namespace: namespace(env, levels)?, name: string(env, name)? })
}

/// The namespaces under `parent` (top level when empty), each as its levels joined by `\u{1f}`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_namespacesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    parent: JObjectArray<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let parent = strings(env, &parent)?.unwrap_or_default();
        let names: Vec<String> =
            catalog(env, &settings)?.namespaces(&parent)?.iter().map(|n| n.join("\u{1f}")).collect();
        string_array(env, &names)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_namespaceExistsNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
) -> jboolean {
    entry(&mut env, |env| in_namespace(env, &settings, &levels, RestCatalog::namespace_exists))
}

/// The namespace's properties as key/value pairs.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_namespacePropertiesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let properties = in_namespace(env, &settings, &levels, RestCatalog::namespace_properties)?;
        pairs_array(env, properties)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_createNamespaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
    properties: JObjectArray<'l>,
) -> jboolean {
    entry(&mut env, |env| {
        let properties: BTreeMap<String, String> = pairs(env, &properties)?.into_iter().collect();
        in_namespace(env, &settings, &levels, |catalog, namespace| catalog.create_namespace(namespace, &properties))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_dropNamespaceNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
) -> jboolean {
    entry(&mut env, |env| in_namespace(env, &settings, &levels, RestCatalog::drop_namespace))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_tablesNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| {
        let names = in_namespace(env, &settings, &levels, RestCatalog::tables)?;
        string_array(env, &names)
    })
}

/// The table's location, or null when the catalog has no such table.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_tableLocationNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
    name: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let table = ident(env, &levels, &name)?;
        match catalog(env, &settings)?.load_table(&table) {
            Ok(loaded) => Ok(JString::new(env, &loaded.metadata.location)?),
            Err(Error::NotFound(_)) => Ok(JString::null()),
            Err(e) => Err(e.into()),
        }
    })
}

/// Drops the table from the catalog; with `purge`, its files go too (those the catalog purges, then
/// whatever else lies under its location: index sidecars). False when there is no such table.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_dropTableNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
    name: JString<'l>,
    purge: jboolean,
) -> jboolean {
    entry(&mut env, |env| {
        let catalog = catalog(env, &settings)?;
        let table = ident(env, &levels, &name)?;
        // The server drops it (and purges, when asked, what it owns); the files this library deletes
        // on a purge are only those the table's own metadata reaches (`NativeTable.purgeFiles`).
        Ok(catalog.drop_table(&table, purge)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_renameTableNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    from_levels: JObjectArray<'l>,
    from_name: JString<'l>,
    to_levels: JObjectArray<'l>,
    to_name: JString<'l>,
) {
    entry(&mut env, |env| {
        let from = ident(env, &from_levels, &from_name)?;
        let to = ident(env, &to_levels, &to_name)?;
        Ok(catalog(env, &settings)?.rename_table(&from, &to)?)
    })
}

/// Registers the table whose current metadata file is `metadata_location` under the name given;
/// returns its location.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_hyperstream_jni_RestCatalog_registerTableNative<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    settings: JObjectArray<'l>,
    levels: JObjectArray<'l>,
    name: JString<'l>,
    metadata_location: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let table = ident(env, &levels, &name)?;
        let metadata_location = string(env, &metadata_location)?;
        let loaded = catalog(env, &settings)?.register_table(&table, &metadata_location)?;
        Ok(JString::new(env, &loaded.metadata.location)?)
    })
}
