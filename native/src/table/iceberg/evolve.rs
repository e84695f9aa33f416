//! Schema and property evolution: columns added, dropped and renamed; write properties set.

use super::*;

impl Table {
    /// Sets (Some) or removes (None) table properties as one commit (ALTER TABLE SET / UNSET
    /// TBLPROPERTIES): any key a user may give ([`check_property`]: Iceberg's write properties, such
    /// as bloom filter columns, the Parquet codec or the target file size, apply to the files written
    /// after; other keys are kept as given). The format version, reserved keys and the keys that
    /// change through their own calls (indexes, partitioning, vector columns) are refused by name.
    pub fn set_properties(&mut self, changes: &[(String, Option<String>)]) -> Result<()> {
        self.writable()?;
        for (key, value) in changes {
            if key == FORMAT_VERSION || (key.starts_with("hyperstream.") && key != ROW_GROUP_ROWS) {
                return Err(Error::invalid(format!(
                    "table property '{key}' cannot be set or unset here: it changes through its own statement"
                )));
            }
            match value {
                Some(value) => check_property(key, value)?,
                None if RESERVED_PROPERTIES.contains(&key.as_str()) => check_property(key, "")?,
                None => {}
            }
        }
        self.commit_properties(changes)
    }

    pub(super) fn commit_properties(&mut self, changes: &[(String, Option<String>)]) -> Result<()> {
        self.commit_metadata(|next| {
            set_properties(next, changes);
            Ok(())
        })
    }

    /// Commits `schema` as the current schema (a new schema id), with table property `changes`.
    pub(super) fn commit_schema(
        &mut self,
        evolve: impl Fn(&Schema, i32, &TableMetadata) -> Result<(Schema, i32, Vec<(String, Option<String>)>)>,
    ) -> Result<()> {
        self.commit_metadata(|next| {
            let schema_id = next.schemas.iter().map(|s| s.schema_id).max().unwrap_or(0) + 1;
            let (schema, last_column_id, changes) = evolve(next.current_schema()?, schema_id, next)?;
            check_lineage_names(&schema, next.format_version)?;
            set_properties(next, &changes);
            next.last_column_id = next.last_column_id.max(last_column_id);
            next.current_schema_id = schema.schema_id;
            next.schemas.push(schema);
            Ok(())
        })
    }

    /// Schema evolution: adds `field` as the last column. It must be nullable: the rows written
    /// before read it as null (no data file is rewritten). A `fixed_size_list<float>` field is a
    /// vector column.
    pub fn add_column(&mut self, field: &arrow::datatypes::Field) -> Result<()> {
        self.add_column_with_default(field, None)
    }

    /// As [`Table::add_column`], with a default (format version 3, the spec's JSON single-value
    /// form): the rows written before read it (`initial-default`), and so do rows written later
    /// without the column (`write-default`). A column with a default may be required.
    pub fn add_column_with_default(
        &mut self,
        field: &arrow::datatypes::Field,
        default: Option<&serde_json::Value>,
    ) -> Result<()> {
        if default.is_some() && self.metadata.format_version < 3 {
            return Err(Error::invalid(format!(
                "new column '{}' cannot have a default: column defaults need format version 3",
                field.name()
            )));
        }
        if let Some(value) = default {
            crate::spec::schema::default_column(field.name(), value, field.data_type(), 1)
                .map_err(|e| Error::invalid(e.to_string()))?;
        }
        if !field.is_nullable() && default.is_none() {
            return Err(Error::invalid(format!(
                "new column '{}' must be nullable or have a default: the rows already written have no value for it",
                field.name()
            )));
        }
        self.commit_schema(|current, schema_id, metadata| {
            let id = metadata.last_column_id + 1;
            let (mut schema, last) = current.with_column(schema_id, field, id)?;
            if let Some(added) = schema.fields.iter_mut().find(|f| f.id == id) {
                added.initial_default = default.cloned();
                added.write_default = default.cloned();
            }
            let mut changes = Vec::new();
            if let DataType::FixedSizeList(item, dimension) = field.data_type() {
                if item.data_type() == &DataType::Float32 {
                    changes.push((vector_property(id), Some(dimension.to_string())));
                }
            }
            Ok((schema, last, changes))
        })
    }

    /// Schema evolution: drops a column (its data stays in the files written so far, unread; its
    /// vector index goes with it). The last column, and a row identifier, cannot be dropped.
    pub fn drop_column(&mut self, name: &str) -> Result<()> {
        self.commit_schema(|current, schema_id, metadata| {
            let field = current.field(name)?;
            if current.fields.len() == 1 {
                return Err(Error::invalid(format!("cannot drop '{name}': it is the table's only column")));
            }
            if current.identifier_field_ids.contains(&field.id) {
                return Err(Error::invalid(format!("cannot drop '{name}': it identifies rows")));
            }
            if metadata.partition_specs.iter().flat_map(|s| &s.fields).any(|f| f.source_id == field.id) {
                return Err(Error::invalid(format!("cannot drop '{name}': the table is partitioned by it")));
            }
            if metadata
                .sort_orders
                .iter()
                .filter(|o| o.order_id == metadata.default_sort_order_id)
                .flat_map(|o| &o.fields)
                .any(|f| f.source_id == field.id)
            {
                return Err(Error::invalid(format!("cannot drop '{name}': the table is sorted by it")));
            }
            let fields = current.fields.iter().filter(|f| f.name != name).cloned().collect();
            let schema = Schema { schema_id, fields, identifier_field_ids: current.identifier_field_ids.clone() };
            // A vector column's dimension stays declared (field ids are never reused): time travel
            // to a snapshot from before the drop reads the column as the vector it was.
            Ok((
                schema,
                metadata.last_column_id,
                vec![(index_property(field.id), None), (scalar_index_property(field.id), None)],
            ))
        })
    }

    /// Schema evolution: renames a column (by field id, so every data file keeps answering for it).
    pub fn rename_column(&mut self, name: &str, new_name: &str) -> Result<()> {
        if new_name.is_empty() {
            return Err(Error::invalid("a column name cannot be empty"));
        }
        self.commit_schema(|current, schema_id, metadata| {
            current.field(name)?;
            if current.fields.iter().any(|f| f.name == new_name) {
                return Err(Error::invalid(format!("cannot rename '{name}' to '{new_name}': that column exists")));
            }
            let fields = current
                .fields
                .iter()
                .map(|f| {
                    if f.name == name {
                        crate::spec::schema::NestedField { name: new_name.to_owned(), ..f.clone() }
                    } else {
                        f.clone()
                    }
                })
                .collect();
            Ok((
                Schema { schema_id, fields, identifier_field_ids: current.identifier_field_ids.clone() },
                metadata.last_column_id,
                Vec::new(),
            ))
        })
    }
}
