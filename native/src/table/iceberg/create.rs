//! Creating and replacing a table: what CREATE TABLE and CREATE OR REPLACE TABLE declare.

use super::*;

/// Refuses a column named as a row lineage column in a format version 3 table, where reads give
/// those names to the lineage columns.
pub(super) fn check_lineage_names(schema: &Schema, format_version: u8) -> Result<()> {
    match schema.fields.iter().find(|f| format_version >= 3 && lineage::is_lineage(&f.name)) {
        Some(f) => Err(Error::invalid(format!(
            "column name '{}' is reserved for row lineage in a format version 3 table",
            f.name
        ))),
        None => Ok(()),
    }
}

/// A table definition as CREATE TABLE declares it: the Iceberg schema (field ids from
/// `first_id + 1`), the properties to keep (vector dimensions and scalar indexes by field id, write
/// properties), the partition spec and sort order, and the format version asked for.
pub(super) struct Definition {
    pub(super) schema: Schema,
    pub(super) properties: BTreeMap<String, String>,
    pub(super) spec: Option<PartitionSpec>,
    pub(super) order: Option<Vec<SortField>>,
    pub(super) format_version: Option<u8>,
}

impl Definition {
    fn of(schema: &ArrowSchema, mut properties: BTreeMap<String, String>, first_id: i32) -> Result<Definition> {
        if let Some(v) = properties.get(ROW_GROUP_ROWS) {
            if v.parse::<usize>().ok().filter(|&n| n > 0).is_none() {
                return Err(Error::invalid(format!(
                    "table property {ROW_GROUP_ROWS} must be a positive number of rows, got '{v}'"
                )));
            }
        }
        for (key, value) in &properties {
            check_property(key, value)?;
        }
        let (iceberg, vectors) = Schema::from_arrow(schema)?;
        let iceberg = iceberg.shifted(first_id);
        for (id, dim) in vectors {
            properties.insert(vector_property(id + first_id), dim.to_string());
        }
        let with_ids = iceberg.to_arrow(&vectors_of(&properties))?;
        if let Some(names) = properties.remove(INDEX_COLUMNS) {
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let field = with_ids.field_with_name(name).map_err(|_| {
                    Error::NotFound(format!("{INDEX_COLUMNS}: column '{name}' is not in the table schema"))
                })?;
                if !crate::index::indexable(field.data_type()) {
                    return Err(Error::invalid(format!(
                        "{INDEX_COLUMNS}: column '{name}' of type {} cannot have a scalar index",
                        field.data_type()
                    )));
                }
                let id = field_id(field).ok_or_else(|| Error::Internal(format!("column '{name}' has no field id")))?;
                properties.insert(scalar_index_property(id), "inverted".to_owned());
            }
        }
        let spec = properties.remove(PARTITIONING).map(|text| parse_partitioning(&text, &with_ids)).transpose()?;
        let order = properties.remove(SORTED_BY).map(|text| parse_sort_order(&text, &with_ids)).transpose()?;
        let format_version = match properties.remove(FORMAT_VERSION).as_deref().map(str::trim) {
            None => None,
            Some("2") => Some(2),
            Some("3") => Some(3),
            Some(other) => {
                return Err(Error::invalid(format!("table property {FORMAT_VERSION} must be 2 or 3, got '{other}'")))
            }
        };
        check_lineage_names(&iceberg, format_version.unwrap_or(2))?;
        Ok(Definition { schema: iceberg, properties, spec, order, format_version })
    }
}

impl Table {
    /// Creates an empty table at `location` with the columns of `schema`; fails if a table is there.
    /// With a REST catalog in `options` ([`crate::table::rest`]), the table is created in the
    /// catalog under the name they give, at the location the catalog chooses (or `location`, when
    /// not empty).
    pub fn create(
        location: &str,
        schema: &ArrowSchema,
        properties: BTreeMap<String, String>,
        options: &HashMap<String, String>,
    ) -> Result<Self> {
        let definition = Definition::of(schema, properties, 0)?;
        let (storage, operations): (Storage, Arc<dyn TableOperations>) = match RestTable::of(options)? {
            Some(table) => {
                let asked = Some(location.trim()).filter(|l| !l.is_empty());
                let (location, config) = table.new_table_location(&definition.schema.to_json(), asked)?;
                (Storage::open(&location, &storage_options(&config, options))?, Arc::new(table))
            }
            None => (Storage::open(location, options)?, Arc::new(FileSystemOperations)),
        };
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut metadata =
            TableMetadata::new_table(storage.location(), &uuid, definition.schema, definition.properties, now_ms())?;
        if let Some(spec) = definition.spec.filter(|s| !s.fields.is_empty()) {
            metadata.last_partition_id =
                spec.fields.iter().map(|f| f.field_id).max().unwrap_or(metadata.last_partition_id);
            metadata.partition_specs = vec![spec];
        }
        if let Some(fields) = definition.order.filter(|o| !o.is_empty()) {
            metadata.sort_orders.push(SortOrder { order_id: 1, fields, other: Default::default() });
            metadata.default_sort_order_id = 1;
        }
        if definition.format_version == Some(3) {
            metadata.format_version = 3;
            metadata.next_row_id = Some(0);
        }
        let Some((version, metadata)) = operations.commit(&storage, None, &metadata)? else {
            return Err(Error::invalid(format!("a table already exists at {}", storage.location())));
        };
        Ok(Self::at(storage, version, metadata, operations))
    }

    /// Replaces the table's definition and rows in one snapshot (CREATE OR REPLACE TABLE): the
    /// columns of `schema` (with fresh field ids), the partitioning, sort order, indexes and write
    /// properties `properties` declare (as [`Table::create`] takes them, merged over the table's
    /// properties), and no rows. The snapshots before it stay for time travel, each read under its
    /// own schema. Returns the new snapshot's id.
    pub fn replace(&mut self, schema: &ArrowSchema, properties: BTreeMap<String, String>) -> Result<i64> {
        self.writable()?;
        Definition::of(schema, properties.clone(), 0)?; // refused before anything is written
        self.commit_snapshot_with(Operation::Overwrite, Vec::new(), Some(&replacement(schema, &properties)))
    }

    /// Stages a replacement (CREATE OR REPLACE TABLE ... AS SELECT, as Spark's staging catalogs
    /// do it): nothing of the table changes, and a staging table under its `staging/` folder
    /// (opened with the table's own storage options, [`Table::storage_options`]; a catalog's table
    /// too, whose staging table no catalog knows) gets the definition the replacement will have, field ids
    /// and partition spec included, so that data files written into it belong to the replaced
    /// table as they are. [`Table::commit_replace`] then commits the definition and those files
    /// as one snapshot; until then every reader sees the table as it was. Returns the staging
    /// table's location.
    pub fn stage_replace(&self, schema: &ArrowSchema, properties: BTreeMap<String, String>) -> Result<String> {
        self.writable()?;
        Definition::of(schema, properties.clone(), 0)?;
        let mut staged = self.metadata.clone();
        replacement(schema, &properties)(&mut staged)?;
        let storage =
            Storage::open(&format!("{}/staging/{}", self.location(), uuid::Uuid::new_v4()), self.storage.options())?;
        staged.location = storage.location().to_owned();
        staged.table_uuid = uuid::Uuid::new_v4().to_string();
        staged.current_snapshot_id = None;
        staged.snapshots.clear();
        staged.refs.clear();
        staged.snapshot_log.clear();
        staged.metadata_log.clear();
        staged.statistics.clear();
        staged.partition_statistics.clear();
        if FileSystemOperations.commit(&storage, None, &staged)?.is_none() {
            return Err(Error::Internal(format!("staging table {} already exists", storage.location())));
        }
        Ok(storage.location().to_owned())
    }

    /// Commits a replacement [`Table::stage_replace`] staged at `staging` (the same `schema` and
    /// `properties`): the new definition and the data files `files` written into the staging table,
    /// as one snapshot; the staging table's metadata goes. Fails with [`Error::CommitConflict`],
    /// committing nothing, when the table's schema or partitioning changed since the stage, so that
    /// the files would not fit the definition the commit makes.
    pub fn commit_replace(
        &mut self,
        staging: &str,
        schema: &ArrowSchema,
        properties: BTreeMap<String, String>,
        files: Vec<DataFile>,
    ) -> Result<i64> {
        self.writable()?;
        self.check_inside(&files)?;
        let staged = self.staging_table(staging)?;
        let staged_schema = staged.metadata.current_schema()?.fields.clone();
        let staged_spec =
            staged.metadata.partition_specs.iter().find(|s| s.spec_id == staged.metadata.default_spec_id).cloned();
        let location = self.location().to_owned();
        let redefine = |next: &mut TableMetadata| -> Result<()> {
            replacement(schema, &properties)(next)?;
            let spec = next.partition_specs.iter().find(|s| s.spec_id == next.default_spec_id).cloned();
            if next.current_schema()?.fields != staged_schema || spec != staged_spec {
                return Err(Error::CommitConflict(format!(
                    "{location} changed its schema or partitioning since the replacement was staged; nothing was committed"
                )));
            }
            Ok(())
        };
        self.refresh()?;
        let committed = self.commit_snapshot_with(Operation::Overwrite, files, Some(&redefine))?;
        // Its data files are the table's now: only the staging table's own metadata goes.
        for path in staged.storage.list("metadata")? {
            staged.storage.delete(&path)?;
        }
        Ok(committed)
    }

    /// Abandons a replacement staged at `staging`: the staging table goes with every file written
    /// into it (none of them is the table's); the table is as it was.
    pub fn abort_replace(&self, staging: &str) -> Result<()> {
        self.writable()?;
        self.staging_table(staging)?.storage.delete_table_files()
    }

    /// The staging table at `staging`, which must lie in this table's `staging/` folder.
    fn staging_table(&self, staging: &str) -> Result<Table> {
        let inside = self.storage.relative(staging).ok().and_then(|r| r.strip_prefix("staging/"));
        if !inside.is_some_and(|name| !name.is_empty() && !name.contains('/')) {
            return Err(Error::invalid(format!("{staging} is not a staging table of {}", self.location())));
        }
        Table::load_from(Storage::open(staging, self.storage.options())?, Arc::new(FileSystemOperations))
    }
}

/// What CREATE OR REPLACE makes of a table's metadata: the columns of `schema` with fresh field ids,
/// the partitioning, sort order, indexes and write properties `properties` declare.
fn replacement<'a>(
    schema: &'a ArrowSchema,
    properties: &'a BTreeMap<String, String>,
) -> impl Fn(&mut TableMetadata) -> Result<()> + 'a {
    move |next: &mut TableMetadata| -> Result<()> {
        let definition = Definition::of(schema, properties.clone(), next.last_column_id)?;
        if definition.format_version.is_some_and(|v| v != next.format_version) {
            return Err(Error::invalid(format!(
                "a replacement keeps the table's format version {}",
                next.format_version
            )));
        }
        check_lineage_names(&definition.schema, next.format_version)?;
        let schema_id = next.schemas.iter().map(|s| s.schema_id).max().unwrap_or(0) + 1;
        next.last_column_id = next.last_column_id.max(definition.schema.highest_field_id());
        next.current_schema_id = schema_id;
        next.schemas.push(Schema { schema_id, ..definition.schema });
        next.properties.extend(definition.properties);
        // A new spec (its fields numbered past every partition field so far), unless an
        // unpartitioned one is wanted and there is one.
        let mut fields = definition.spec.map(|s| s.fields).unwrap_or_default();
        match next.partition_specs.iter().find(|s| fields.is_empty() && s.fields.is_empty()) {
            Some(unpartitioned) => next.default_spec_id = unpartitioned.spec_id,
            None => {
                for field in &mut fields {
                    next.last_partition_id += 1;
                    field.field_id = next.last_partition_id;
                }
                let spec_id = next.partition_specs.iter().map(|s| s.spec_id).max().unwrap_or(0) + 1;
                next.partition_specs.push(PartitionSpec { spec_id, fields, other: Default::default() });
                next.default_spec_id = spec_id;
            }
        }
        next.default_sort_order_id = match definition.order.filter(|o| !o.is_empty()) {
            None => 0,
            Some(fields) => {
                let order_id = next.sort_orders.iter().map(|o| o.order_id).max().unwrap_or(0) + 1;
                next.sort_orders.push(SortOrder { order_id, fields, other: Default::default() });
                order_id
            }
        };
        Ok(())
    }
}
