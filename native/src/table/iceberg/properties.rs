//! Table properties: the names HyperStream and Iceberg keep settings under, and how they read.

use super::*;

/// Table property: the most rows a Parquet row group of a new data file holds (the unit that footer
/// statistics prune), and its default.
pub const ROW_GROUP_ROWS: &str = "hyperstream.write.row-group-rows";
pub(super) const DEFAULT_ROW_GROUP_ROWS: usize = 1024 * 1024;
/// Iceberg's table properties for Parquet bloom filters, per column by name:
/// `write.parquet.bloom-filter-enabled.column.<name>` = `true` writes one per row group of new data
/// files, at the false positive probability `write.parquet.bloom-filter-fpp.column.<name>` (default
/// 0.01, Iceberg's). Equality and IN filters skip the row groups whose bloom filter rules them out.
pub const BLOOM_ENABLED_PREFIX: &str = "write.parquet.bloom-filter-enabled.column.";
pub const BLOOM_FPP_PREFIX: &str = "write.parquet.bloom-filter-fpp.column.";
pub(super) const DEFAULT_BLOOM_FPP: f64 = 0.01;

/// Iceberg's table properties of the data files' Parquet codec (zstd, as Iceberg's default) and its
/// level (zstd 1 to 22, 1 by default; gzip 0 to 9, 6 by default).
pub const COMPRESSION_CODEC: &str = "write.parquet.compression-codec";
pub const COMPRESSION_LEVEL: &str = "write.parquet.compression-level";

/// The Parquet compression table `properties` ask for.
pub(super) fn compression(properties: &BTreeMap<String, String>) -> Result<Compression> {
    let level = match properties.get(COMPRESSION_LEVEL) {
        None => None,
        Some(v) => Some(v.trim().parse::<i32>().map_err(|_| {
            Error::invalid(format!("table property {COMPRESSION_LEVEL} must be an integer, got '{v}'"))
        })?),
    };
    let bad_level =
        |e: parquet::errors::ParquetError| Error::invalid(format!("table property {COMPRESSION_LEVEL}: {e}"));
    let codec = properties.get(COMPRESSION_CODEC).map_or("zstd", |v| v.trim());
    Ok(match codec.to_ascii_lowercase().as_str() {
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(level.unwrap_or(1)).map_err(bad_level)?),
        "snappy" => Compression::SNAPPY,
        "gzip" => Compression::GZIP(GzipLevel::try_new(level.unwrap_or(6).max(0) as u32).map_err(bad_level)?),
        "uncompressed" => Compression::UNCOMPRESSED,
        _ => {
            return Err(Error::invalid(format!(
                "table property {COMPRESSION_CODEC} must be zstd, snappy, gzip or uncompressed, got '{codec}'"
            )))
        }
    })
}

/// Whether `key` is one of Iceberg's write properties this table takes (`write.parquet.*`,
/// [`TARGET_FILE_SIZE`]): what engines pass through from a CREATE and an ALTER.
pub fn is_write_property(key: &str) -> bool {
    key.starts_with("write.parquet.") || key == TARGET_FILE_SIZE
}

/// Refuses a bloom filter probability outside (0, 1), and a codec or level that does not exist.
pub(super) fn check_write_property(key: &str, value: &str) -> Result<()> {
    if key.starts_with(BLOOM_FPP_PREFIX) && value.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 1.0).is_none()
    {
        return Err(Error::invalid(format!(
            "table property {key} must be a probability between 0 and 1, got '{value}'"
        )));
    }
    if key == COMPRESSION_CODEC || key == COMPRESSION_LEVEL {
        compression(&BTreeMap::from([(key.to_owned(), value.to_owned())]))?;
    }
    if key == TARGET_FILE_SIZE {
        write::target_file_size(&BTreeMap::from([(key.to_owned(), value.to_owned())]))?;
    }
    Ok(())
}
/// Rows per Parquet data page at most.
pub(super) const DATA_PAGE_ROWS: usize = 8 * 1024;

/// Table property that records a vector column's dimension, by field id.
pub fn vector_property(field_id: i32) -> String {
    format!("hyperstream.vector.{field_id}.dimension")
}

/// The vector columns (field id → dimension) that table `properties` declare.
pub(super) fn vectors_of(properties: &BTreeMap<String, String>) -> HashMap<i32, i32> {
    properties
        .iter()
        .filter_map(|(k, v)| {
            let id = k.strip_prefix("hyperstream.vector.")?.strip_suffix(".dimension")?.parse().ok()?;
            Some((id, v.parse().ok()?))
        })
        .collect()
}

/// Table property that declares a vector column's index, by field id (the JSON of [`HnswParams`]).
pub fn index_property(field_id: i32) -> String {
    format!("hyperstream.vector.{field_id}.index")
}

/// The table property, given at creation, that names the columns to give a scalar index
/// (comma-separated); it is stored as one [`scalar_index_property`] per column.
pub const INDEX_COLUMNS: &str = "hyperstream.index.columns";

/// Properties given at creation (never stored as such): the table's partitioning, as in
/// `category, bucket(id, 16), day(ts)` (identity, bucket, truncate, year, month, day, hour), and its
/// sort order, as in `id, ts DESC NULLS LAST`; they become the Iceberg partition spec and sort order.
pub const PARTITIONING: &str = "hyperstream.partitioning";
pub const SORTED_BY: &str = "hyperstream.sorted-by";

/// Iceberg's creation property for the table's format version: 2 (the default) or 3, which adds
/// row lineage (every row keeps an id, `_row_id`, across compaction) and writes deletes as deletion
/// vectors.
pub const FORMAT_VERSION: &str = "format-version";

/// The table property that declares a scalar index on field `field_id` (its value: `inverted`).
pub fn scalar_index_property(field_id: i32) -> String {
    format!("hyperstream.scalar.{field_id}.index")
}

/// Iceberg's reserved table properties: they describe the metadata itself and are never stored.
pub const RESERVED_PROPERTIES: [&str; 8] = [
    "uuid",
    "snapshot-count",
    "current-snapshot-id",
    "current-snapshot-summary",
    "current-snapshot-timestamp-ms",
    "current-schema",
    "default-partition-spec",
    "default-sort-order",
];

/// Whether `key` is one of HyperStream's own table properties: those a user gives ([`ROW_GROUP_ROWS`],
/// [`INDEX_COLUMNS`], [`PARTITIONING`], [`SORTED_BY`]) and those the library keeps per field id.
fn is_own_property(key: &str) -> bool {
    if [ROW_GROUP_ROWS, INDEX_COLUMNS, PARTITIONING, SORTED_BY].contains(&key) {
        return true;
    }
    let per_field = |prefix: &str, suffixes: &[&str]| {
        key.strip_prefix(prefix)
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(id, suffix)| id.parse::<i32>().is_ok() && suffixes.contains(&suffix))
    };
    per_field("hyperstream.vector.", &["dimension", "index"]) || per_field("hyperstream.scalar.", &["index"])
}

/// Checks a table property a user gives: any key is kept (as Iceberg keeps them), but a reserved one
/// and a `hyperstream.*` key this library does not know are refused by name, and Iceberg's write
/// properties must hold values that work.
pub(super) fn check_property(key: &str, value: &str) -> Result<()> {
    if RESERVED_PROPERTIES.contains(&key) {
        return Err(Error::invalid(format!(
            "table property '{key}' is reserved: Iceberg derives it from the table's metadata"
        )));
    }
    if key.starts_with("hyperstream.") && !is_own_property(key) {
        return Err(Error::invalid(format!(
            "unknown table property '{key}': HyperStream's own are {ROW_GROUP_ROWS}, {INDEX_COLUMNS}, {PARTITIONING} and \
             {SORTED_BY}"
        )));
    }
    check_write_property(key, value)
}

pub(super) fn set_properties(metadata: &mut TableMetadata, changes: &[(String, Option<String>)]) {
    for (key, value) in changes {
        match value {
            Some(value) => metadata.properties.insert(key.clone(), value.clone()),
            None => metadata.properties.remove(key),
        };
    }
}
