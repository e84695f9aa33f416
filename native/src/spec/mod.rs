//! The Iceberg table format and nothing else: schemas, table metadata, manifests and manifest
//! lists, partition transforms, bounds, delete files and row lineage. Everything else stands on it:
//! `scan` and `index` read its types, `table` writes and commits them; it imports none of them.

pub mod bounds;
pub mod deletes;
pub mod lineage;
pub mod manifest;
pub mod metadata;
pub mod partition;
pub mod schema;
