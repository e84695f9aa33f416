//! Iceberg position delete files: Parquet files of `(file_path, pos)` rows, each naming one deleted
//! row of a data file. HyperStream writes one per data file it deletes from (holding every deleted
//! position of that file, so a data file has at most one of ours); it reads any position delete
//! file, other writers' too.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int64Type, Schema as ArrowSchema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use roaring::RoaringTreemap;

use super::manifest::DataFile;
use super::schema::PARQUET_FIELD_ID;
use crate::{Error, Result};

/// Iceberg's reserved field ids of a position delete file's columns.
pub const DELETE_FILE_PATH_ID: i32 = 2147483546;
pub const DELETE_POS_ID: i32 = 2147483545;

/// `content` of a manifest's position delete file and of an equality delete file.
pub const CONTENT_POSITION_DELETES: i32 = 1;
pub const CONTENT_EQUALITY_DELETES: i32 = 2;

fn schema() -> SchemaRef {
    let field = |name: &str, data_type: DataType, id: i32| {
        Field::new(name, data_type, false).with_metadata([(PARQUET_FIELD_ID.to_owned(), id.to_string())])
    };
    Arc::new(ArrowSchema::new(vec![
        field("file_path", DataType::Utf8, DELETE_FILE_PATH_ID),
        field("pos", DataType::Int64, DELETE_POS_ID),
    ]))
}

/// A position delete file (Parquet bytes) deleting `positions` of the data file at `data_file`,
/// and its manifest description apart from its path and size: the bounds of `file_path` are both
/// `data_file`, which tells Iceberg readers (and ours) the one data file it applies to.
pub fn write(data_file: &str, positions: &RoaringTreemap) -> Result<(Bytes, DataFile)> {
    let rows = positions.len() as usize;
    let paths = StringArray::from_iter_values(std::iter::repeat_n(data_file, rows));
    let pos = Int64Array::from_iter_values(positions.iter().map(|p| p as i64));
    let batch = RecordBatch::try_new(schema(), vec![Arc::new(paths), Arc::new(pos)])?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| Error::Internal(e.to_string()))?))
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), schema(), Some(props))
        .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
    writer.write(&batch).map_err(|e| Error::Internal(format!("parquet write: {e}")))?;
    let bytes = writer.into_inner().map_err(|e| Error::Internal(format!("parquet close: {e}")))?;
    let (first, last) = (positions.min().unwrap_or(0) as i64, positions.max().unwrap_or(0) as i64);
    let description = DataFile {
        content: CONTENT_POSITION_DELETES,
        file_format: "PARQUET".to_owned(),
        record_count: rows as i64,
        file_size_in_bytes: bytes.len() as i64,
        value_counts: BTreeMap::from([(DELETE_FILE_PATH_ID, rows as i64), (DELETE_POS_ID, rows as i64)]),
        null_value_counts: BTreeMap::from([(DELETE_FILE_PATH_ID, 0), (DELETE_POS_ID, 0)]),
        lower_bounds: BTreeMap::from([
            (DELETE_FILE_PATH_ID, data_file.as_bytes().to_vec()),
            (DELETE_POS_ID, first.to_le_bytes().to_vec()),
        ]),
        upper_bounds: BTreeMap::from([
            (DELETE_FILE_PATH_ID, data_file.as_bytes().to_vec()),
            (DELETE_POS_ID, last.to_le_bytes().to_vec()),
        ]),
        ..DataFile::default()
    };
    Ok((Bytes::from(bytes), description))
}

/// The one data file a position delete file applies to, when its `file_path` bounds say so (None:
/// it may hold rows of any data file).
pub fn target(delete: &DataFile) -> Option<&[u8]> {
    let lower = delete.lower_bounds.get(&DELETE_FILE_PATH_ID)?;
    (delete.upper_bounds.get(&DELETE_FILE_PATH_ID) == Some(lower)).then_some(lower.as_slice())
}

/// The positions a position delete file's `bytes` delete from the data file at `data_file`;
/// `name` names the delete file in errors.
pub fn read(bytes: Bytes, data_file: &str, name: &str) -> Result<RoaringTreemap> {
    let corrupt = |e: &dyn std::fmt::Display| Error::Corrupt(format!("position delete file {name}: {e}"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| corrupt(&e))?;
    let by_id = |id: i32| {
        builder.schema().fields().iter().position(|f| f.metadata().get(PARQUET_FIELD_ID).is_some_and(|v| *v == id.to_string()))
    };
    let (Some(path_column), Some(pos_column)) = (by_id(DELETE_FILE_PATH_ID), by_id(DELETE_POS_ID)) else {
        return Err(corrupt(&"it has no file_path and pos columns (field ids 2147483546, 2147483545)"));
    };
    let reader = builder.build().map_err(|e| corrupt(&e))?;
    let mut positions = RoaringTreemap::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        let paths = arrow::compute::cast(batch.column(path_column), &DataType::Utf8)?;
        let paths = paths.as_string::<i32>();
        let pos = batch.column(pos_column).as_primitive_opt::<Int64Type>().ok_or_else(|| corrupt(&"pos is not a long column"))?;
        for i in 0..batch.num_rows() {
            if paths.is_valid(i) && pos.is_valid(i) && paths.value(i) == data_file {
                let p = u64::try_from(pos.value(i)).map_err(|_| corrupt(&format!("negative position {}", pos.value(i))))?;
                positions.insert(p);
            }
        }
    }
    Ok(positions)
}

/// The rows of a data file of `rows` rows that `deleted` leaves, as a Parquet row selection.
pub fn kept(deleted: &RoaringTreemap, rows: u64) -> RowSelection {
    let mut ranges = Vec::new();
    let mut start = 0u64;
    for p in deleted.iter().take_while(|&p| p < rows) {
        if p > start {
            ranges.push(start as usize..p as usize);
        }
        start = p + 1;
    }
    if start < rows {
        ranges.push(start as usize..rows as usize);
    }
    RowSelection::from_consecutive_ranges(ranges.into_iter(), rows as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_deletes_round_trip_and_name_their_data_file() {
        let positions: RoaringTreemap = [0u64, 5, 6, 99].into_iter().collect();
        let (bytes, description) = write("file:///t/data/a.parquet", &positions).unwrap();
        assert_eq!(description.record_count, 4);
        assert_eq!(target(&description), Some("file:///t/data/a.parquet".as_bytes()));
        assert_eq!(read(bytes.clone(), "file:///t/data/a.parquet", "d").unwrap(), positions);
        assert!(read(bytes, "file:///t/data/b.parquet", "d").unwrap().is_empty());
        assert!(matches!(read(Bytes::from_static(b"nope"), "x", "d"), Err(Error::Corrupt(m)) if m.contains("position delete file d")));
    }

    #[test]
    fn kept_selection_skips_exactly_the_deleted_rows() {
        for deleted in [vec![], vec![0u64], vec![9], vec![0, 1, 2, 9], vec![3, 4, 7], (0..10).collect()] {
            let set: RoaringTreemap = deleted.iter().copied().collect();
            let selection = kept(&set, 10);
            let selected: Vec<usize> = selection
                .iter()
                .scan(0usize, |at, s| {
                    let range = *at..*at + s.row_count;
                    *at += s.row_count;
                    Some((range, s.skip))
                })
                .filter(|(_, skip)| !skip)
                .flat_map(|(r, _)| r)
                .collect();
            let expected: Vec<usize> = (0..10).filter(|p| !set.contains(*p as u64)).collect();
            assert_eq!(selected, expected, "deleted {deleted:?}");
        }
    }
}
