//! The scalar index of one column of one data file: the column's distinct values in order, the rows
//! holding each value (its posting list) and the null rows.
//!
//! Postings are kept as roaring bitmaps, one per value, where values are few (booleans, categories),
//! and as one row permutation sorted by value with an offset per value where they are many (keys),
//! which costs four bytes a row instead of a bitmap header per value. Either way a lookup touches only
//! the postings of the values it selects.
//!
//! Which values a predicate selects is decided by evaluating that predicate, with the same exact code
//! as a scan's filter, over the distinct values as a one-column batch: every operator and type the
//! filter knows is served with the filter's own semantics, and no second comparison code can disagree
//! with it.
//!
//! File layout (`<data file stem>.<field id>.sidx`), little-endian:
//! `HSSIDX01`, rows u64, encoding u8 (0 bitmaps, 1 permutation), values (an Arrow IPC stream of one
//! column, sorted and distinct) as u64 length + bytes, nulls (roaring) as u64 length + bytes, postings
//! as u64 length + bytes, then a CRC-32 of everything before it.

use std::io::Cursor;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::row::{OwnedRow, RowConverter, SortField};
use roaring::RoaringBitmap;

use crate::scan::Predicate;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"HSSIDX01";
/// At most this many distinct values get one bitmap each; more take the permutation encoding.
const BITMAP_VALUES: usize = 1024;

/// Where the scalar index of field `field_id` of the data file at `data_path` lives.
pub fn scalar_index_path(data_path: &str, field_id: i32) -> String {
    let stem = data_path.strip_suffix(".parquet").unwrap_or(data_path);
    format!("{stem}.{field_id}.sidx")
}

/// Whether the index can be built over a column of this type (flat values the row format orders).
pub fn indexable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::Date32
            | DataType::Timestamp(..)
            | DataType::Decimal128(..)
    )
}

/// Builds the index of one column from its values, batch after batch.
pub struct ScalarIndexBuilder {
    field: Field,
    converter: RowConverter,
    values: std::collections::BTreeMap<OwnedRow, Vec<u32>>,
    nulls: RoaringBitmap,
    rows: u64,
}

impl ScalarIndexBuilder {
    /// A builder for column `field` (its name and type; the values' batch uses them).
    pub fn new(field: &Field) -> Result<Self> {
        if !indexable(field.data_type()) {
            return Err(Error::invalid(format!("column '{}' of type {} cannot have a scalar index", field.name(), field.data_type())));
        }
        let converter = RowConverter::new(vec![SortField::new(field.data_type().clone())])?;
        let field = Field::new(field.name(), field.data_type().clone(), true);
        Ok(ScalarIndexBuilder { field, converter, values: Default::default(), nulls: RoaringBitmap::new(), rows: 0 })
    }

    /// Adds the next rows of the column.
    pub fn append(&mut self, column: &dyn Array) -> Result<()> {
        let first = u32::try_from(self.rows).ok().filter(|f| (*f as u64) + column.len() as u64 <= u32::MAX as u64);
        let Some(first) = first else {
            return Err(Error::invalid("a scalar index covers at most 4,294,967,295 rows of one data file"));
        };
        let column = arrow::array::make_array(column.to_data());
        let rows = self.converter.convert_columns(&[column.clone()])?;
        for i in 0..column.len() {
            let row = first + i as u32;
            if column.is_null(i) {
                self.nulls.insert(row);
            } else {
                self.values.entry(rows.row(i).owned()).or_default().push(row);
            }
        }
        self.rows += column.len() as u64;
        Ok(())
    }

    /// The index file's bytes.
    pub fn finish(self) -> Result<Vec<u8>> {
        let ScalarIndexBuilder { field, converter, values, nulls, rows } = self;
        let distinct = converter.convert_rows(values.keys().map(|k| k.row()))?.remove(0);
        let schema = Arc::new(Schema::new(vec![field]));
        let batch = RecordBatch::try_new(schema.clone(), vec![distinct])?;
        let mut ipc = Vec::new();
        {
            let mut writer = StreamWriter::try_new(&mut ipc, &schema)?;
            writer.write(&batch)?;
            writer.finish()?;
        }
        let mut postings = Vec::new();
        let encoding: u8 = if values.len() <= BITMAP_VALUES { 0 } else { 1 };
        if encoding == 0 {
            // Offsets (u64, one per value and one more) then the bitmaps.
            let mut blobs = Vec::new();
            let mut offsets = vec![0u64];
            for rows in values.values() {
                let bitmap = RoaringBitmap::from_sorted_iter(rows.iter().copied()).expect("rows ascend");
                bitmap.serialize_into(&mut blobs).expect("writing to a Vec cannot fail");
                offsets.push(blobs.len() as u64);
            }
            for o in &offsets {
                postings.extend_from_slice(&o.to_le_bytes());
            }
            postings.extend_from_slice(&blobs);
        } else {
            // Offsets (u32, one per value and one more) into the rows sorted by value.
            let mut offsets = Vec::with_capacity(values.len() + 1);
            let mut permutation = Vec::new();
            offsets.push(0u32);
            for rows in values.values() {
                permutation.extend_from_slice(rows);
                offsets.push(permutation.len() as u32);
            }
            for o in &offsets {
                postings.extend_from_slice(&o.to_le_bytes());
            }
            for r in &permutation {
                postings.extend_from_slice(&r.to_le_bytes());
            }
        }
        let mut out = Vec::with_capacity(64 + ipc.len() + postings.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&rows.to_le_bytes());
        out.push(encoding);
        out.extend_from_slice(&(ipc.len() as u64).to_le_bytes());
        out.extend_from_slice(&ipc);
        let mut null_bytes = Vec::new();
        nulls.serialize_into(&mut null_bytes).expect("writing to a Vec cannot fail");
        out.extend_from_slice(&(null_bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&null_bytes);
        out.extend_from_slice(&(postings.len() as u64).to_le_bytes());
        out.extend_from_slice(&postings);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }
}

/// A parsed index over the bytes of its file (mapped, not copied: postings are read when used).
pub struct ScalarIndex {
    rows: u32,
    values: ArrayRef,
    nulls: RoaringBitmap,
    encoding: Encoding,
    bytes: Bytes,
    /// Where the posting offsets and the postings lie in `bytes`.
    offsets: Range<usize>,
    data: Range<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// One roaring bitmap per value; u64 offsets.
    Bitmaps,
    /// Row numbers sorted by value; u32 offsets.
    Permutation,
}

fn corrupt(name: &str, what: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("scalar index {name}: {what}"))
}

fn u32_at(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

impl ScalarIndex {
    /// Parses and checks an index file of a data file of `rows` rows over a column of `data_type`.
    /// Anything that does not hold together (checksum, sizes, row numbers, type) is `Corrupt`.
    pub fn parse(bytes: Bytes, rows: u64, data_type: &DataType, name: &str) -> Result<ScalarIndex> {
        if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(corrupt(name, "not a scalar index file"));
        }
        let body_len = bytes.len() - 4;
        if crc32fast::hash(&bytes[..body_len]) != u32::from_le_bytes(bytes[body_len..].try_into().expect("4 bytes")) {
            return Err(corrupt(name, "checksum mismatch"));
        }
        let mut at = MAGIC.len();
        let mut take = |n: usize| -> Result<Range<usize>> {
            let end = at.checked_add(n).filter(|e| *e <= body_len).ok_or_else(|| corrupt(name, "truncated"))?;
            let range = at..end;
            at = end;
            Ok(range)
        };
        let stored_rows = u64::from_le_bytes(bytes[take(8)?].try_into().expect("8 bytes"));
        if stored_rows != rows || rows > u32::MAX as u64 {
            return Err(corrupt(name, format!("indexes {stored_rows} rows but the data file has {rows}")));
        }
        let encoding = match bytes[take(1)?][0] {
            0 => Encoding::Bitmaps,
            1 => Encoding::Permutation,
            other => return Err(corrupt(name, format!("unknown posting encoding {other}"))),
        };
        let mut section = || -> Result<Range<usize>> {
            let len = u64::from_le_bytes(bytes[take(8)?].try_into().expect("8 bytes"));
            take(usize::try_from(len).map_err(|_| corrupt(name, "bad length"))?)
        };
        let (ipc, null_bytes, postings) = (section()?, section()?, section()?);
        let mut reader = StreamReader::try_new(Cursor::new(&bytes[ipc]), None).map_err(|e| corrupt(name, e))?;
        let batch = reader.next().ok_or_else(|| corrupt(name, "no values"))?.map_err(|e| corrupt(name, e))?;
        let values = batch.column(0).clone();
        if values.data_type() != data_type {
            return Err(corrupt(name, format!("holds {} values but the column is {data_type}", values.data_type())));
        }
        let nulls = RoaringBitmap::deserialize_from(&bytes[null_bytes]).map_err(|e| corrupt(name, e))?;
        let distinct = values.len();
        let width = if encoding == Encoding::Bitmaps { 8 } else { 4 };
        let offsets_len = (distinct + 1).checked_mul(width).filter(|l| *l <= postings.len()).ok_or_else(|| corrupt(name, "truncated postings"))?;
        let offsets = postings.start..postings.start + offsets_len;
        let data = offsets.end..postings.end;
        let index = ScalarIndex { rows: rows as u32, values, nulls, encoding, bytes, offsets, data };
        let expected_end = if encoding == Encoding::Bitmaps { index.data.len() as u64 } else { index.data.len() as u64 / 4 };
        if index.offset(distinct) != expected_end || (0..distinct).any(|i| index.offset(i) > index.offset(i + 1)) {
            return Err(corrupt(name, "posting offsets disagree with their data"));
        }
        // Every row is null or holds exactly one value.
        let posted = match encoding {
            Encoding::Bitmaps => (0..distinct).map(|i| index.posting(i).map(|b| b.len())).sum::<Result<u64>>()?,
            Encoding::Permutation => expected_end,
        };
        if posted + index.nulls.len() != rows || index.nulls.max().is_some_and(|m| m >= index.rows) {
            return Err(corrupt(name, format!("postings cover {} rows, not {rows}", posted + index.nulls.len())));
        }
        Ok(index)
    }

    fn offset(&self, value: usize) -> u64 {
        let offsets = &self.bytes[self.offsets.clone()];
        match self.encoding {
            Encoding::Bitmaps => u64_at(offsets, value),
            Encoding::Permutation => u32_at(offsets, value) as u64,
        }
    }

    /// The distinct values, ascending.
    pub fn values(&self) -> &ArrayRef {
        &self.values
    }

    fn posting(&self, value: usize) -> Result<RoaringBitmap> {
        let bad = |e: &dyn std::fmt::Display| Error::Corrupt(format!("scalar index posting {value}: {e}"));
        let (lo, hi) = (self.offset(value) as usize, self.offset(value + 1) as usize);
        let data = &self.bytes[self.data.clone()];
        let bitmap = match self.encoding {
            Encoding::Bitmaps => RoaringBitmap::deserialize_from(&data[lo..hi]).map_err(|e| bad(&e))?,
            Encoding::Permutation => {
                let mut rows: Vec<u32> = (lo..hi).map(|i| u32_at(data, i)).collect();
                rows.sort_unstable();
                RoaringBitmap::from_sorted_iter(rows).map_err(|e| bad(&e))?
            }
        };
        if bitmap.max().is_some_and(|m| m >= self.rows) {
            return Err(bad(&"row number past the file's end"));
        }
        Ok(bitmap)
    }

    /// The size of a value's posting: its rows (permutation) or bytes (bitmaps, which grow with
    /// their rows), enough to tell which side of a predicate is cheaper to gather.
    fn posting_len(&self, value: usize) -> u64 {
        self.offset(value + 1) - self.offset(value)
    }

    fn union_of(&self, values: &[usize]) -> Result<RoaringBitmap> {
        let mut out = RoaringBitmap::new();
        for &v in values {
            out |= self.posting(v)?;
        }
        Ok(out)
    }

    fn all_rows(&self) -> RoaringBitmap {
        let mut all = RoaringBitmap::new();
        all.insert_range(0..self.rows);
        all
    }

    /// The rows where the single-column predicate `leaf` (over this index's column) is true, when
    /// `want` is true, or false, when `want` is false; exactly, with SQL's rules for nulls.
    pub fn rows_where(&self, leaf: &Predicate, want: bool) -> Result<RoaringBitmap> {
        match leaf {
            Predicate::IsNull { .. } | Predicate::NotNull { .. } => {
                let null_is_wanted = matches!(leaf, Predicate::IsNull { .. }) == want;
                return Ok(if null_is_wanted { self.nulls.clone() } else { self.all_rows() - &self.nulls });
            }
            _ => {}
        }
        let schema = Arc::new(Schema::new(vec![Field::new(leaf_column(leaf), self.values.data_type().clone(), true)]));
        let batch = RecordBatch::try_new(schema, vec![self.values.clone()])?;
        let verdicts: BooleanArray = leaf.evaluate(&batch)?;
        let (mut wanted, mut other, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
        let (mut wanted_rows, mut other_rows) = (0u64, 0u64);
        for i in 0..verdicts.len() {
            if verdicts.is_null(i) {
                unknown.push(i);
            } else if verdicts.value(i) == want {
                wanted.push(i);
                wanted_rows += self.posting_len(i);
            } else {
                other.push(i);
                other_rows += self.posting_len(i);
            }
        }
        if wanted_rows <= other_rows {
            return self.union_of(&wanted);
        }
        // Most values are wanted: the rows of the others are fewer to gather.
        let mut rows = self.all_rows() - &self.nulls;
        rows -= self.union_of(&other)?;
        rows -= self.union_of(&unknown)?;
        Ok(rows)
    }
}

fn leaf_column(leaf: &Predicate) -> &str {
    match leaf {
        Predicate::Eq { column, .. }
        | Predicate::Ne { column, .. }
        | Predicate::Lt { column, .. }
        | Predicate::Le { column, .. }
        | Predicate::Gt { column, .. }
        | Predicate::Ge { column, .. }
        | Predicate::In { column, .. }
        | Predicate::IsNull { column }
        | Predicate::NotNull { column }
        | Predicate::StartsWith { column, .. } => column,
        Predicate::True | Predicate::False | Predicate::And { .. } | Predicate::Or { .. } | Predicate::Not { .. } => "",
    }
}

/// The column a leaf predicate reads, or None for `true`, `false` and the connectives.
pub fn leaf_column_of(predicate: &Predicate) -> Option<&str> {
    Some(leaf_column(predicate)).filter(|c| !c.is_empty())
}

/// A superset of the rows where `predicate` is true (`want`) or false (`!want`), from the indexes that
/// `index_of` gives for a column (None where a column has none): None means "any row". Exact where
/// every leaf it meets is indexed.
pub fn candidate_rows(
    predicate: &Predicate,
    want: bool,
    rows: u32,
    index_of: &mut dyn FnMut(&str) -> Option<Arc<ScalarIndex>>,
) -> Result<Option<RoaringBitmap>> {
    let all = || {
        let mut b = RoaringBitmap::new();
        b.insert_range(0..rows);
        b
    };
    Ok(match (predicate, want) {
        (Predicate::True, true) | (Predicate::False, false) => None,
        (Predicate::True, false) | (Predicate::False, true) => Some(RoaringBitmap::new()),
        (Predicate::Not { arg }, _) => candidate_rows(arg, !want, rows, index_of)?,
        // Every argument true / any argument false: the intersection of what is known.
        (Predicate::And { args }, true) | (Predicate::Or { args }, false) => {
            let mut out: Option<RoaringBitmap> = None;
            for arg in args {
                if let Some(rows) = candidate_rows(arg, want, rows, index_of)? {
                    out = Some(match out {
                        Some(acc) => acc & rows,
                        None => rows,
                    });
                }
            }
            out
        }
        // Any argument true / every argument false: the union, unknown if any part is.
        (Predicate::Or { args }, true) | (Predicate::And { args }, false) => {
            let mut out = RoaringBitmap::new();
            for arg in args {
                match candidate_rows(arg, want, rows, index_of)? {
                    Some(rows) => out |= rows,
                    None => return Ok(None),
                }
            }
            Some(out)
        }
        (leaf, _) => {
            let column = leaf_column(leaf);
            match index_of(column) {
                Some(index) => Some(index.rows_where(leaf, want)?),
                None => None,
            }
            .map(|b| b & all())
        }
    })
}
