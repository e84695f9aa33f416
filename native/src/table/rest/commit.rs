//! Commits through a REST catalog: the change from one metadata version to the next as the
//! requirements the catalog checks against its current version (the table is the one read, the
//! branch still at the snapshot read, ...) and the updates it applies (`add-snapshot`,
//! `set-snapshot-ref`, `add-schema`, `set-properties`, ...). A requirement that fails (409) is a lost
//! race: the commit loop reloads the table and rebuilds its change on the winner's version.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};

use super::{LoadedTable, RestCatalog, RestSettings, TableIdent};
use crate::spec::metadata::TableMetadata;
use crate::storage::Storage;
use crate::table::iceberg::{TableOperations, Version};
use crate::{Error, Result};

/// A table in a REST catalog: where its commits go.
#[derive(Debug, Clone)]
pub struct RestTable {
    catalog: Arc<RestCatalog>,
    ident: TableIdent,
}

impl RestTable {
    /// The table `options` name in their REST catalog, or `None` when they name no catalog.
    pub fn of(options: &HashMap<String, String>) -> Result<Option<Self>> {
        let Some(settings) = RestSettings::from_options(options)? else {
            return Ok(None);
        };
        let ident = TableIdent::from_options(options)?;
        Ok(Some(Self { catalog: RestCatalog::connect(&settings)?, ident }))
    }

    pub fn load_table(&self) -> Result<LoadedTable> {
        self.catalog.load_table(&self.ident)
    }

    /// The location and storage settings the catalog gives a new table of this name.
    pub fn new_table_location(
        &self,
        schema: &Value,
        location: Option<&str>,
    ) -> Result<(String, BTreeMap<String, String>)> {
        self.catalog.new_table_location(&self.ident, schema, location)
    }

    /// The version a loaded table is at: its place in the metadata log, and its metadata file.
    pub fn version(loaded: &LoadedTable) -> Version {
        Version { number: loaded.metadata.metadata_log.len() as u64 + 1, location: loaded.metadata_location.clone() }
    }

    /// After a commit failed without an answer that says what happened: what the table the catalog
    /// has now says of the change. A change that adds snapshots landed when the table holds them
    /// all, and did not when it holds none. A change to metadata alone (a rollback, an expiry, new
    /// properties or schema) is judged by what it changes: the current snapshot, each ref, the
    /// snapshots it removes, the properties, the current schema, spec and sort order. It landed when
    /// the table shows all of that as the change left it, and did not when the table shows all of it
    /// as it was before; anything else (another writer's commit in between) leaves it unknown.
    fn landed(&self, base: Option<&TableMetadata>, next: &TableMetadata) -> Result<Landed> {
        let now = match self.load_table() {
            Ok(now) => now,
            Err(Error::NotFound(_)) if base.is_none() => return Ok(Landed::No),
            Err(e) => return Err(e),
        };
        if now.metadata.table_uuid != next.table_uuid {
            return Ok(Landed::No);
        }
        let had: BTreeSet<i64> = base.map(|b| b.snapshots.iter().map(|s| s.snapshot_id).collect()).unwrap_or_default();
        let added: Vec<i64> = next.snapshots.iter().map(|s| s.snapshot_id).filter(|id| !had.contains(id)).collect();
        let holds = |id: &i64| now.metadata.snapshots.iter().any(|s| s.snapshot_id == *id);
        if !added.is_empty() {
            return Ok(match (added.iter().all(holds), added.iter().any(holds)) {
                (true, _) => Landed::Yes(Box::new(now)),
                (false, false) => Landed::No,
                (false, true) => Landed::Unknown,
            });
        }
        let Some(base) = base else {
            return Ok(Landed::Yes(Box::new(now)));
        };
        let removed: Vec<i64> =
            had.iter().copied().filter(|id| !next.snapshots.iter().any(|s| s.snapshot_id == *id)).collect();
        fn shows(m: &TableMetadata) -> impl PartialEq + '_ {
            let refs: BTreeMap<&String, i64> = m.refs.iter().map(|(name, r)| (name, r.snapshot_id)).collect();
            (
                m.current_snapshot_id,
                refs,
                &m.properties,
                m.current_schema_id,
                m.default_spec_id,
                m.default_sort_order_id,
            )
        }
        let (changed, unchanged) = {
            let is = shows(&now.metadata);
            (is == shows(next) && !removed.iter().any(holds), is == shows(base) && removed.iter().all(holds))
        };
        Ok(match (changed, unchanged) {
            (true, _) => Landed::Yes(Box::new(now)),
            (false, true) => Landed::No,
            (false, false) => Landed::Unknown,
        })
    }
}

/// What a reload says of a commit whose answer was lost ([`RestTable::landed`]).
enum Landed {
    Yes(Box<LoadedTable>),
    No,
    Unknown,
}

impl TableOperations for RestTable {
    fn tasks_open_metadata_file(&self) -> bool {
        true
    }

    fn load(&self, _storage: &Storage) -> Result<(Version, TableMetadata)> {
        let loaded = self.load_table()?;
        Ok((Self::version(&loaded), loaded.metadata))
    }

    fn commit(
        &self,
        _storage: &Storage,
        base: Option<(&Version, &TableMetadata)>,
        next: &TableMetadata,
    ) -> Result<Option<(Version, TableMetadata)>> {
        let base = base.map(|(_, metadata)| metadata);
        let (requirements, updates) = changes(base, next)?;
        let body = json!({"identifier": self.ident.to_json(), "requirements": requirements, "updates": updates});
        let what = format!("committing to table {}", self.ident);
        let catalog = &self.catalog;
        let answer = match catalog.send(Method::POST, catalog.table_url(&self.ident), Some(&body), &what) {
            Ok(answer) => answer,
            // The request may have reached the catalog: the table it has now decides.
            Err(sent) => return self.unknown(base, next, &sent.to_string()),
        };
        match answer.status {
            s if s.is_success() => {
                let loaded = catalog.loaded(answer.body, &what)?;
                Ok(Some((Self::version(&loaded), loaded.metadata)))
            }
            StatusCode::CONFLICT => Ok(None),
            StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => {
                let failure = format!("HTTP {}: {}", answer.status.as_u16(), answer.message());
                self.unknown(base, next, &failure)
            }
            _ => Err(catalog.expect_ok(answer, &what).err().expect("a failed status is an error")),
        }
    }
}

impl RestTable {
    /// The outcome of a commit whose answer was a failure that does not say whether it took
    /// effect: the table is reloaded and checked; when it cannot be, the state is unknown.
    fn unknown(
        &self,
        base: Option<&TableMetadata>,
        next: &TableMetadata,
        failure: &str,
    ) -> Result<Option<(Version, TableMetadata)>> {
        let unknown = |why: String| {
            Err(Error::CommitStateUnknown(format!(
                "committing to table {} in {} failed ({failure}) and {why}: reload the table to see whether the \
                 commit took effect, and keep the files it names",
                self.ident,
                self.catalog.what()
            )))
        };
        match self.landed(base, next) {
            Ok(Landed::Yes(now)) => Ok(Some((Self::version(&now), now.metadata))),
            Ok(Landed::No) => Err(Error::Io {
                path: self.catalog.what(),
                source: std::io::Error::other(format!(
                    "committing to table {} failed ({failure}); the table, reloaded, does not hold the change: nothing \
                     was committed",
                    self.ident
                )),
            }),
            Ok(Landed::Unknown) => {
                unknown("the table, reloaded, was changed by another writer too, so it does not tell".to_owned())
            }
            Err(e) => unknown(format!("reloading it failed ({e})")),
        }
    }
}

/// The requirements and updates that make `next` of `base` (of nothing, for a new table), as the
/// REST protocol's commit request takes them.
pub(super) fn changes(base: Option<&TableMetadata>, next: &TableMetadata) -> Result<(Vec<Value>, Vec<Value>)> {
    let to_value = |m: &TableMetadata| serde_json::to_value(m).map_err(|e| Error::Internal(e.to_string()));
    let empty =
        json!({"schemas": [], "partition-specs": [], "sort-orders": [], "snapshots": [], "refs": {}, "properties": {}});
    let old = base.map(to_value).transpose()?.unwrap_or(empty);
    let new = to_value(next)?;
    let mut requirements = Vec::new();
    let mut updates = Vec::new();
    match base {
        None => {
            requirements.push(json!({"type": "assert-create"}));
            updates.push(json!({"action": "assign-uuid", "uuid": next.table_uuid}));
            updates.push(json!({"action": "upgrade-format-version", "format-version": next.format_version}));
        }
        Some(base) => {
            requirements.push(json!({"type": "assert-table-uuid", "uuid": base.table_uuid}));
            if next.format_version > base.format_version {
                updates.push(json!({"action": "upgrade-format-version", "format-version": next.format_version}));
            }
        }
    }
    // Schemas, partition specs and sort orders: each new one added, the current one set (`-1`: the
    // one added last, as the catalog may number an added one its own way).
    let families = [
        ("schemas", "schema-id", "current-schema-id", "add-schema", "schema", "set-current-schema", "schema-id"),
        ("partition-specs", "spec-id", "default-spec-id", "add-spec", "spec", "set-default-spec", "spec-id"),
        (
            "sort-orders",
            "order-id",
            "default-sort-order-id",
            "add-sort-order",
            "sort-order",
            "set-default-sort-order",
            "sort-order-id",
        ),
    ];
    for (list, id, current, add, field, set, set_field) in families {
        let had = ids(&old, list, id);
        let mut last_added = None;
        for item in items(&new, list) {
            let item_id = item.get(id).and_then(Value::as_i64).unwrap_or_default();
            if !had.contains(&item_id) {
                let mut update = json!({"action": add, field: item});
                if add == "add-schema" {
                    update["last-column-id"] = json!(next.last_column_id);
                }
                updates.push(update);
                last_added = Some(item_id);
            }
        }
        let (was, is) = (old.get(current), new.get(current));
        if base.is_none() || was != is {
            let is_id = is.and_then(Value::as_i64).unwrap_or_default();
            let target = if last_added == Some(is_id) { -1 } else { is_id };
            updates.push(json!({"action": set, set_field: target}));
        }
        if let (Some(_), true) = (base, last_added.is_some() || was != is) {
            requirements.push(json!({"type": format!("assert-{current}"), current: was}));
        }
    }
    if base.is_some() && next.last_column_id != base.map_or(0, |b| b.last_column_id) {
        requirements.push(
            json!({"type": "assert-last-assigned-field-id", "last-assigned-field-id": old.get("last-column-id")}),
        );
    }
    if base.is_none() || old.get("location") != new.get("location") {
        updates.push(json!({"action": "set-location", "location": next.location}));
    }
    // Snapshots: new ones added, expired ones removed.
    let had = ids(&old, "snapshots", "snapshot-id");
    let has = ids(&new, "snapshots", "snapshot-id");
    for snapshot in items(&new, "snapshots") {
        if !had.contains(&snapshot.get("snapshot-id").and_then(Value::as_i64).unwrap_or_default()) {
            updates.push(json!({"action": "add-snapshot", "snapshot": snapshot}));
        }
    }
    let removed: Vec<i64> = had.difference(&has).copied().collect();
    if !removed.is_empty() {
        updates.push(json!({"action": "remove-snapshots", "snapshot-ids": removed}));
    }
    // Branches and tags: each one moved is required to be where it was read (main always is).
    let (old_refs, new_refs) = (object(&old, "refs"), object(&new, "refs"));
    let mut checked = BTreeSet::new();
    for (name, reference) in &new_refs {
        if old_refs.get(name) != Some(reference) {
            let mut update = json!({"action": "set-snapshot-ref", "ref-name": name});
            for (k, v) in reference.as_object().into_iter().flatten() {
                update[k] = v.clone();
            }
            updates.push(update);
            checked.insert(name.clone());
        }
    }
    for name in old_refs.keys().filter(|n| !new_refs.contains_key(*n)) {
        updates.push(json!({"action": "remove-snapshot-ref", "ref-name": name}));
        checked.insert(name.clone());
    }
    if base.is_some() {
        checked.insert("main".to_owned());
        for name in checked {
            let at = old_refs.get(&name).and_then(|r| r.get("snapshot-id")).cloned().unwrap_or(Value::Null);
            requirements.push(json!({"type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": at}));
        }
    }
    // Properties.
    let (old_props, new_props) = (object(&old, "properties"), object(&new, "properties"));
    let set: Map<String, Value> =
        new_props.iter().filter(|(k, v)| old_props.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
    let removals: Vec<&String> = old_props.keys().filter(|k| !new_props.contains_key(*k)).collect();
    if !set.is_empty() {
        updates.push(json!({"action": "set-properties", "updates": set}));
    }
    if !removals.is_empty() {
        updates.push(json!({"action": "remove-properties", "removals": removals}));
    }
    Ok((requirements, updates))
}

fn items<'a>(metadata: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    metadata.get(list).and_then(Value::as_array).into_iter().flatten()
}

fn ids(metadata: &Value, list: &str, id: &str) -> BTreeSet<i64> {
    items(metadata, list).filter_map(|item| item.get(id).and_then(Value::as_i64)).collect()
}

fn object(metadata: &Value, field: &str) -> Map<String, Value> {
    metadata.get(field).and_then(Value::as_object).cloned().unwrap_or_default()
}
