//! Iceberg position deletes: in format version 2, Parquet files of `(file_path, pos)` rows, each
//! naming one deleted row of a data file; in version 3, deletion vectors: a Puffin file's
//! `deletion-vector-v1` blob, the deleted positions of one data file as a 64-bit roaring bitmap.
//! HyperStream writes one per data file it deletes from (holding every deleted position of that
//! file, so a data file has at most one of ours); it reads either kind, other writers' too.

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
    write_positions(&[(data_file, positions)])
}

/// A position delete file deleting rows of several data files (`(data file, positions)`, as
/// Iceberg's writers make with `write.delete.granularity=partition`): rows sorted by file path,
/// then position, as the spec requires. Its `file_path` bounds span the paths, so it names one
/// data file only when given one.
pub fn write_positions(files: &[(&str, &RoaringTreemap)]) -> Result<(Bytes, DataFile)> {
    let mut files = files.to_vec();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let rows: usize = files.iter().map(|(_, p)| p.len() as usize).sum();
    let paths =
        StringArray::from_iter_values(files.iter().flat_map(|(f, p)| std::iter::repeat_n(*f, p.len() as usize)));
    let pos = Int64Array::from_iter_values(files.iter().flat_map(|(_, p)| p.iter().map(|p| p as i64)));
    let batch = RecordBatch::try_new(schema(), vec![Arc::new(paths), Arc::new(pos)])?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| Error::Internal(e.to_string()))?))
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), schema(), Some(props))
        .map_err(|e| Error::Internal(format!("parquet writer: {e}")))?;
    writer.write(&batch).map_err(|e| Error::Internal(format!("parquet write: {e}")))?;
    let bytes = writer.into_inner().map_err(|e| Error::Internal(format!("parquet close: {e}")))?;
    let all = || files.iter().flat_map(|(_, p)| p.iter());
    let (first, last) = (all().min().unwrap_or(0) as i64, all().max().unwrap_or(0) as i64);
    let (lowest, highest) = (files.first().map_or("", |f| f.0), files.last().map_or("", |f| f.0));
    let description = DataFile {
        content: CONTENT_POSITION_DELETES,
        file_format: "PARQUET".to_owned(),
        record_count: rows as i64,
        file_size_in_bytes: bytes.len() as i64,
        value_counts: BTreeMap::from([(DELETE_FILE_PATH_ID, rows as i64), (DELETE_POS_ID, rows as i64)]),
        null_value_counts: BTreeMap::from([(DELETE_FILE_PATH_ID, 0), (DELETE_POS_ID, 0)]),
        lower_bounds: BTreeMap::from([
            (DELETE_FILE_PATH_ID, lowest.as_bytes().to_vec()),
            (DELETE_POS_ID, first.to_le_bytes().to_vec()),
        ]),
        upper_bounds: BTreeMap::from([
            (DELETE_FILE_PATH_ID, highest.as_bytes().to_vec()),
            (DELETE_POS_ID, last.to_le_bytes().to_vec()),
        ]),
        ..DataFile::default()
    };
    Ok((Bytes::from(bytes), description))
}

/// The one data file a position delete file applies to, when it names it or its `file_path` bounds
/// say so (None: it may hold rows of any data file).
pub fn target(delete: &DataFile) -> Option<&[u8]> {
    if let Some(path) = &delete.referenced_data_file {
        return Some(path.as_bytes());
    }
    let lower = delete.lower_bounds.get(&DELETE_FILE_PATH_ID)?;
    (delete.upper_bounds.get(&DELETE_FILE_PATH_ID) == Some(lower)).then_some(lower.as_slice())
}

/// The positions a position delete file's `bytes` delete from the data file at `data_file`;
/// `name` names the delete file in errors.
pub fn read(bytes: Bytes, data_file: &str, name: &str) -> Result<RoaringTreemap> {
    let corrupt = |e: &dyn std::fmt::Display| Error::Corrupt(format!("position delete file {name}: {e}"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| corrupt(&e))?;
    let by_id = |id: i32| {
        builder
            .schema()
            .fields()
            .iter()
            .position(|f| f.metadata().get(PARQUET_FIELD_ID).is_some_and(|v| *v == id.to_string()))
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
        let pos = batch
            .column(pos_column)
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| corrupt(&"pos is not a long column"))?;
        for i in 0..batch.num_rows() {
            if paths.is_valid(i) && pos.is_valid(i) && paths.value(i) == data_file {
                let p =
                    u64::try_from(pos.value(i)).map_err(|_| corrupt(&format!("negative position {}", pos.value(i))))?;
                positions.insert(p);
            }
        }
    }
    Ok(positions)
}

/// The positions of the rows of a data file (its Parquet bytes, `data`) that an equality delete file
/// (its Parquet bytes, `deletes`, keyed by the columns of field ids `ids`) deletes: those whose values
/// in those columns equal one of its rows (null equal to null, as Iceberg matches them). A key column
/// the data file lacks (added after it was written) holds nulls there. `name` names the delete file
/// in errors.
pub fn equality_deleted(data: Bytes, deletes: Bytes, ids: &[i32], name: &str) -> Result<RoaringTreemap> {
    use arrow::row::{RowConverter, SortField};
    let corrupt = |e: &dyn std::fmt::Display| Error::Corrupt(format!("equality delete file {name}: {e}"));
    if ids.is_empty() {
        return Err(corrupt(&"it names no equality field ids"));
    }
    let keys = columns_by_id(deletes, ids, None).map_err(|e| corrupt(&e))?;
    let types: Vec<DataType> = keys.iter().map(|c| c.data_type().clone()).collect();
    let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
    let deleted_rows = converter.convert_columns(&keys)?;
    let deleted: std::collections::HashSet<Vec<u8>> = deleted_rows.iter().map(|r| r.as_ref().to_vec()).collect();
    let values = columns_by_id(data, ids, Some(&types))?;
    let rows = converter.convert_columns(&values)?;
    Ok(rows.iter().enumerate().filter(|(_, row)| deleted.contains(row.as_ref())).map(|(i, _)| i as u64).collect())
}

/// The top-level columns of field ids `ids` of a Parquet file, each whole, in the order of `ids`;
/// cast to `types` when given, a column the file lacks then being all null (it must hold them all
/// otherwise).
fn columns_by_id(bytes: Bytes, ids: &[i32], types: Option<&[DataType]>) -> Result<Vec<arrow::array::ArrayRef>> {
    let parquet = |e: parquet::errors::ParquetError| Error::Corrupt(e.to_string());
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(parquet)?;
    let fields = builder.schema().fields().clone();
    let position =
        |id: i32| fields.iter().position(|f| f.metadata().get(PARQUET_FIELD_ID).is_some_and(|v| *v == id.to_string()));
    let wanted: Vec<usize> = ids.iter().filter_map(|id| position(*id)).collect();
    let rows = builder.metadata().file_metadata().num_rows() as usize;
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), wanted.iter().copied());
    let batches =
        builder.with_projection(mask).build().map_err(parquet)?.collect::<std::result::Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let column = match position(*id) {
            Some(at) => {
                let name = fields[at].name();
                let parts: Vec<&dyn Array> =
                    batches.iter().filter_map(|b| b.column_by_name(name).map(|c| c.as_ref())).collect();
                if parts.is_empty() {
                    arrow::array::new_empty_array(fields[at].data_type())
                } else {
                    arrow::compute::concat(&parts)?
                }
            }
            None => match types {
                Some(types) => arrow::array::new_null_array(&types[i], rows),
                None => return Err(Error::Corrupt(format!("it has no column of field id {id}"))),
            },
        };
        out.push(match types {
            Some(types) if column.data_type() != &types[i] => arrow::compute::cast(&column, &types[i])?,
            _ => column,
        });
    }
    Ok(out)
}

/// A Puffin file's magic, a deletion vector blob's, and the blob type Iceberg gives it.
const PUFFIN_MAGIC: &[u8; 4] = b"PFA1";
const DV_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
const DV_BLOB: &str = "deletion-vector-v1";
/// Iceberg's reserved field id of a row's position (`_pos`), which a deletion vector is over.
const ROW_POSITION_ID: i32 = 2147483645;

/// Whether a delete file is a deletion vector (a Puffin blob) rather than a position delete file.
pub fn is_deletion_vector(delete: &DataFile) -> bool {
    delete.file_format.eq_ignore_ascii_case("puffin")
}

/// A deletion vector deleting `positions` of the data file at `data_file`: a Puffin file of one
/// `deletion-vector-v1` blob (big-endian length, magic, the portable 64-bit roaring bitmap,
/// big-endian CRC-32 of magic and bitmap), and its manifest description apart from its path.
pub fn write_deletion_vector(data_file: &str, positions: &RoaringTreemap) -> Result<(Bytes, DataFile)> {
    let (bytes, mut descriptions) = write_deletion_vectors(&[(data_file, positions)])?;
    Ok((bytes, descriptions.remove(0)))
}

/// One Puffin file holding a deletion vector for each of several data files (`(data file,
/// positions)`, as Iceberg's writers make when a change deletes from several files), and the
/// manifest description of each vector apart from the file's path: one delete entry per blob,
/// all of the same file, told apart by their offsets.
pub fn write_deletion_vectors(files: &[(&str, &RoaringTreemap)]) -> Result<(Bytes, Vec<DataFile>)> {
    let mut file = PUFFIN_MAGIC.to_vec();
    let mut blobs = Vec::new();
    let mut descriptions = Vec::new();
    for (data_file, positions) in files {
        let mut vector = DV_MAGIC.to_vec();
        positions.serialize_into(&mut vector).map_err(|e| Error::Internal(format!("deletion vector: {e}")))?;
        let length = u32::try_from(vector.len())
            .map_err(|_| Error::invalid(format!("the deletion vector of {data_file} is too large")))?;
        let offset = file.len();
        file.extend_from_slice(&length.to_be_bytes());
        file.extend_from_slice(&vector);
        file.extend_from_slice(&crc32fast::hash(&vector).to_be_bytes());
        let size = file.len() - offset;
        blobs.push(serde_json::json!({
            "type": DV_BLOB,
            "fields": [ROW_POSITION_ID],
            "snapshot-id": -1,
            "sequence-number": -1,
            "offset": offset,
            "length": size,
            "properties": {"referenced-data-file": data_file, "cardinality": positions.len().to_string()},
        }));
        descriptions.push(DataFile {
            content: CONTENT_POSITION_DELETES,
            file_format: "PUFFIN".to_owned(),
            record_count: positions.len() as i64,
            referenced_data_file: Some((*data_file).to_owned()),
            content_offset: Some(offset as i64),
            content_size_in_bytes: Some(size as i64),
            ..DataFile::default()
        });
    }
    let footer = serde_json::json!({"blobs": blobs, "properties": {"created-by": "HyperStream"}}).to_string();
    file.extend_from_slice(PUFFIN_MAGIC);
    file.extend_from_slice(footer.as_bytes());
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(&[0; 4]); // flags: the footer is not compressed
    file.extend_from_slice(PUFFIN_MAGIC);
    for description in &mut descriptions {
        description.file_size_in_bytes = file.len() as i64;
    }
    Ok((Bytes::from(file), descriptions))
}

/// The positions a deletion vector deletes, from the bytes of the Puffin file that holds it
/// (`delete` gives where its blob lies); `name` names the delete file in errors.
pub fn read_deletion_vector(file: &Bytes, delete: &DataFile, name: &str) -> Result<RoaringTreemap> {
    let corrupt = |e: &dyn std::fmt::Display| Error::Corrupt(format!("deletion vector in {name}: {e}"));
    let (Some(offset), Some(size)) = (delete.content_offset, delete.content_size_in_bytes) else {
        return Err(corrupt(&"its manifest entry has no content_offset and content_size_in_bytes"));
    };
    let range =
        usize::try_from(offset).ok().zip(usize::try_from(size).ok()).and_then(|(o, s)| Some(o..o.checked_add(s)?));
    let blob = match range.filter(|r| r.end <= file.len() && r.len() >= 12) {
        Some(range) => file.slice(range),
        None => {
            return Err(corrupt(&format!(
                "the blob at {offset} ({size} bytes) does not lie in the file of {} bytes",
                file.len()
            )))
        }
    };
    let length = u32::from_be_bytes(blob[..4].try_into().expect("four bytes")) as usize;
    if length != blob.len() - 8 {
        return Err(corrupt(&format!("its length says {length} bytes, the blob holds {}", blob.len() - 8)));
    }
    let vector = &blob[4..4 + length];
    if vector[..4] != DV_MAGIC {
        return Err(corrupt(&"it does not start with the deletion vector magic"));
    }
    let checksum = u32::from_be_bytes(blob[4 + length..].try_into().expect("four bytes"));
    if crc32fast::hash(vector) != checksum {
        return Err(corrupt(&"its checksum does not match"));
    }
    RoaringTreemap::deserialize_from(&vector[4..]).map_err(|e| corrupt(&e))
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
        assert!(
            matches!(read(Bytes::from_static(b"nope"), "x", "d"), Err(Error::Corrupt(m)) if m.contains("position delete file d"))
        );
    }

    #[test]
    fn deletion_vectors_round_trip_and_refuse_damage() {
        let positions: RoaringTreemap = [0u64, 5, 6, 99, 1 << 33].into_iter().collect();
        let (bytes, description) = write_deletion_vector("s3://b/t/data/a.parquet", &positions).unwrap();
        assert!(is_deletion_vector(&description));
        assert_eq!(description.record_count, 5);
        assert_eq!(target(&description), Some("s3://b/t/data/a.parquet".as_bytes()));
        assert_eq!(&bytes[..4], b"PFA1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PFA1");
        assert_eq!(read_deletion_vector(&bytes, &description, "d").unwrap(), positions);
        // The blob as the spec lays it out: big-endian length of magic and bitmap, then the magic.
        let blob = &bytes[4..4 + description.content_size_in_bytes.unwrap() as usize];
        assert_eq!(u32::from_be_bytes(blob[..4].try_into().unwrap()) as usize, blob.len() - 8);
        assert_eq!(blob[4..8], DV_MAGIC);
        let mut damaged = bytes.to_vec();
        damaged[20] ^= 0xff;
        let err = read_deletion_vector(&Bytes::from(damaged), &description, "d").unwrap_err();
        assert!(matches!(err, Error::Corrupt(m) if m.contains("deletion vector in d")));
        let outside = DataFile { content_offset: Some(bytes.len() as i64), ..description };
        assert!(
            matches!(read_deletion_vector(&bytes, &outside, "d"), Err(Error::Corrupt(m)) if m.contains("does not lie"))
        );
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
