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
//! Values are cut into blocks of up to 1,024 (in value order), each with its own bounds, checksum,
//! values, offsets and postings, so that a lookup reads and checks only the blocks whose bounds admit
//! the predicate: a point lookup in a file of a million keys touches one block, not the whole index.
//!
//! File layout (`<data file stem>.<field id>.sidx`), little-endian: `HSSIDX02`, rows u64, encoding u8
//! (0 bitmaps, 1 permutation), nulls (roaring) as u64 length + bytes, block count u32, then per block
//! its value count u32, lower and upper bound (Iceberg single-value bytes, each u32 length + bytes;
//! length 0: none) and its byte range (u64 start, u64 length), and a CRC-32 of all that; then the
//! blocks: values (an Arrow IPC stream of one column) as u64 length + bytes, offsets (u64 for bitmaps,
//! u32 for the permutation, one per value and one more), postings, and a CRC-32 of the block.

use std::io::Cursor;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::row::{RowConverter, SortField};
use bytes::Bytes;
use roaring::RoaringBitmap;

use std::cmp::Ordering;

use crate::scan::prune::literal_key;
use crate::scan::Predicate;
use crate::spec::bounds::{bound, order, Key};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"HSSIDX02";
/// Distinct values per block.
const BLOCK_VALUES: usize = 1024;
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
    chunks: Vec<ArrayRef>,
    rows: u64,
}

impl ScalarIndexBuilder {
    /// A builder for column `field` (its name and type; the values' batch uses them).
    pub fn new(field: &Field) -> Result<Self> {
        if !indexable(field.data_type()) {
            return Err(Error::invalid(format!(
                "column '{}' of type {} cannot have a scalar index",
                field.name(),
                field.data_type()
            )));
        }
        let converter = RowConverter::new(vec![SortField::new(field.data_type().clone())])?;
        let field = Field::new(field.name(), field.data_type().clone(), true);
        Ok(ScalarIndexBuilder { field, converter, chunks: Vec::new(), rows: 0 })
    }

    /// Adds the next rows of the column.
    pub fn append(&mut self, column: &dyn Array) -> Result<()> {
        if self.rows + column.len() as u64 > u32::MAX as u64 {
            return Err(Error::invalid("a scalar index covers at most 4,294,967,295 rows of one data file"));
        }
        // A copy: the builder outlives the batch, whose buffers go back to the engine.
        self.chunks.push(crate::memory::copied(column)?);
        self.rows += column.len() as u64;
        Ok(())
    }

    /// What the builder holds (bytes).
    pub fn memory(&self) -> usize {
        self.chunks.iter().map(|c| c.get_array_memory_size()).sum()
    }

    /// The column's non-null rows grouped by value: the rows in value order (ascending within a
    /// value), where each value's run starts, and the null rows. Values sort and compare as the row
    /// format orders them (floats by total order, so -0.0 and 0.0, or two NaNs, stay apart as the
    /// filter kernels keep them).
    fn group(&self) -> Result<(ArrayRef, Vec<u32>, Vec<usize>, RoaringBitmap)> {
        let chunks: Vec<&dyn Array> = self.chunks.iter().map(|c| c.as_ref()).collect();
        let column = match chunks.len() {
            0 => arrow::array::new_empty_array(self.field.data_type()),
            1 => self.chunks[0].clone(),
            _ => arrow::compute::concat(&chunks)?,
        };
        let mut nulls = RoaringBitmap::new();
        if let Some(mask) = column.logical_nulls() {
            nulls.extend(mask.iter().enumerate().filter(|(_, valid)| !valid).map(|(i, _)| i as u32));
        }
        // The typed sort orders as the row format does (floats by total order); nulls go last.
        let options = arrow::compute::SortOptions { descending: false, nulls_first: false };
        let sorted = arrow::compute::sort_to_indices(&column, Some(options), None)?;
        let mut order: Vec<u32> = sorted.values()[..column.len() - nulls.len() as usize].to_vec();
        let rows = self.converter.convert_columns(std::slice::from_ref(&column))?;
        let mut starts = Vec::new();
        for i in 0..order.len() {
            if i == 0 || rows.row(order[i - 1] as usize) != rows.row(order[i] as usize) {
                starts.push(i);
            }
        }
        // Each value's rows ascending (the sort need not keep them in order).
        for (v, &start) in starts.iter().enumerate() {
            let end = starts.get(v + 1).copied().unwrap_or(order.len());
            order[start..end].sort_unstable();
        }
        Ok((column, order, starts, nulls))
    }

    /// The index file's bytes.
    pub fn finish(self) -> Result<Vec<u8>> {
        let (column, order, starts, nulls) = self.group()?;
        let ScalarIndexBuilder { field, rows, .. } = self;
        let schema = Arc::new(Schema::new(vec![field]));
        let encoding: u8 = if starts.len() <= BITMAP_VALUES { 0 } else { 1 };
        // Each value's rows: its run of `order`.
        let run = |v: usize| &order[starts[v]..starts.get(v + 1).copied().unwrap_or(order.len())];
        let firsts = arrow::array::UInt32Array::from(starts.iter().map(|&s| order[s]).collect::<Vec<u32>>());
        let mut header = Vec::new();
        let mut body = Vec::new();
        let blocks: Vec<Range<usize>> =
            (0..starts.len()).step_by(BLOCK_VALUES).map(|b| b..(b + BLOCK_VALUES).min(starts.len())).collect();
        header.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
        for block in blocks {
            let distinct = arrow::compute::take(&column, &firsts.slice(block.start, block.len()), None)?;
            let (lo, hi) = crate::spec::bounds::bounds(&distinct).unwrap_or_default();
            let batch = RecordBatch::try_new(schema.clone(), vec![distinct])?;
            let start = body.len();
            let mut ipc = Vec::new();
            {
                let mut writer = StreamWriter::try_new(&mut ipc, &schema)?;
                writer.write(&batch)?;
                writer.finish()?;
            }
            body.extend_from_slice(&(ipc.len() as u64).to_le_bytes());
            body.extend_from_slice(&ipc);
            if encoding == 0 {
                let mut blobs = Vec::new();
                let mut offsets = vec![0u64];
                for v in block.clone() {
                    let bitmap = RoaringBitmap::from_sorted_iter(run(v).iter().copied()).expect("rows ascend");
                    bitmap.serialize_into(&mut blobs).expect("writing to a Vec cannot fail");
                    offsets.push(blobs.len() as u64);
                }
                offsets.iter().for_each(|o| body.extend_from_slice(&o.to_le_bytes()));
                body.extend_from_slice(&blobs);
            } else {
                let mut offsets = vec![0u32];
                let mut permutation = Vec::new();
                for v in block.clone() {
                    permutation.extend_from_slice(run(v));
                    offsets.push(permutation.len() as u32);
                }
                offsets.iter().for_each(|o| body.extend_from_slice(&o.to_le_bytes()));
                permutation.iter().for_each(|r| body.extend_from_slice(&r.to_le_bytes()));
            }
            let crc = crc32fast::hash(&body[start..]);
            body.extend_from_slice(&crc.to_le_bytes());
            header.extend_from_slice(&(block.len() as u32).to_le_bytes());
            for bound in [&lo, &hi] {
                header.extend_from_slice(&(bound.len() as u32).to_le_bytes());
                header.extend_from_slice(bound);
            }
            header.extend_from_slice(&(start as u64).to_le_bytes());
            header.extend_from_slice(&((body.len() - start) as u64).to_le_bytes());
        }
        let mut out = Vec::with_capacity(64 + header.len() + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&rows.to_le_bytes());
        out.push(encoding);
        let mut null_bytes = Vec::new();
        nulls.serialize_into(&mut null_bytes).expect("writing to a Vec cannot fail");
        out.extend_from_slice(&(null_bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&null_bytes);
        out.extend_from_slice(&header);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        // Where the blocks start: just after this field.
        let body_start = out.len() as u64 + 8;
        out.extend_from_slice(&body_start.to_le_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }
}

/// A parsed index over the bytes of its file (mapped, not copied): the header is checked when it is
/// parsed, each block when a lookup first reads it.
pub struct ScalarIndex {
    rows: u32,
    data_type: DataType,
    nulls: RoaringBitmap,
    encoding: Encoding,
    bytes: Bytes,
    blocks: Vec<BlockInfo>,
    name: String,
    /// Bytes of the file read so far: the header, and each block as it is read.
    touched: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for ScalarIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScalarIndex")
            .field("name", &self.name)
            .field("rows", &self.rows)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// One roaring bitmap per value; u64 offsets.
    Bitmaps,
    /// Row numbers sorted by value; u32 offsets.
    Permutation,
}

struct BlockInfo {
    values: usize,
    lower: Vec<u8>,
    upper: Vec<u8>,
    /// The bounds decoded for comparison (None where empty or of a type keys do not order).
    keys: Option<(Key, Key)>,
    range: Range<usize>,
}

/// One block, checked and decoded.
struct Block {
    values: ArrayRef,
    offsets: Range<usize>,
    data: Range<usize>,
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

/// Reads little-endian fields off the front of a byte range, naming the file when it runs out.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    end: usize,
    name: &'a str,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<Range<usize>> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.end).ok_or_else(|| corrupt(self.name, "truncated"))?;
        let range = self.at..end;
        self.at = end;
        Ok(range)
    }

    fn u32(&mut self) -> Result<u32> {
        let r = self.take(4)?;
        Ok(u32::from_le_bytes(self.bytes[r].try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64> {
        let r = self.take(8)?;
        Ok(u64::from_le_bytes(self.bytes[r].try_into().expect("8 bytes")))
    }

    fn len(&self, n: u64) -> Result<usize> {
        usize::try_from(n).map_err(|_| corrupt(self.name, "bad length"))
    }
}

impl ScalarIndex {
    /// Parses and checks the header of an index file of a data file of `rows` rows over a column of
    /// `data_type`. Anything that does not hold together (checksum, sizes, rows) is `Corrupt`.
    pub fn parse(bytes: Bytes, rows: u64, data_type: &DataType, name: &str) -> Result<ScalarIndex> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(corrupt(name, "not a scalar index file"));
        }
        let mut r = Reader { bytes: &bytes, at: MAGIC.len(), end: bytes.len(), name };
        let stored_rows = r.u64()?;
        if stored_rows != rows || rows > u32::MAX as u64 {
            return Err(corrupt(name, format!("indexes {stored_rows} rows but the data file has {rows}")));
        }
        let encoding = match bytes[r.take(1)?][0] {
            0 => Encoding::Bitmaps,
            1 => Encoding::Permutation,
            other => return Err(corrupt(name, format!("unknown posting encoding {other}"))),
        };
        let null_len = r.u64()?;
        let null_len = r.len(null_len)?;
        let null_bytes = r.take(null_len)?;
        let count = r.u32()? as usize;
        let mut blocks = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let values = r.u32()? as usize;
            let lower_len = r.u32()? as usize;
            let lower = bytes[r.take(lower_len)?].to_vec();
            let upper_len = r.u32()? as usize;
            let upper = bytes[r.take(upper_len)?].to_vec();
            let (start, len) = (r.u64()?, r.u64()?);
            let (start, len) = (r.len(start)?, r.len(len)?);
            let keys = bound(data_type, &lower).zip(bound(data_type, &upper));
            blocks.push(BlockInfo { values, lower, upper, keys, range: start..start + len });
        }
        let header_end = r.at;
        let crc = r.u32()?;
        if crc32fast::hash(&bytes[..header_end]) != crc {
            return Err(corrupt(name, "header checksum mismatch"));
        }
        let body = r.u64()?;
        let body = r.len(body)?;
        if body != r.at {
            return Err(corrupt(name, "misplaced blocks"));
        }
        let nulls = RoaringBitmap::deserialize_from(&bytes[null_bytes]).map_err(|e| corrupt(name, e))?;
        if nulls.max().is_some_and(|m| m as u64 >= rows) {
            return Err(corrupt(name, "a null row past the file's end"));
        }
        for block in &mut blocks {
            block.range = block.range.start.checked_add(body).ok_or_else(|| corrupt(name, "bad block range"))?
                ..block.range.end.checked_add(body).ok_or_else(|| corrupt(name, "bad block range"))?;
            if block.range.end > bytes.len() || block.range.len() < 12 {
                return Err(corrupt(name, "a block lies past the file's end"));
            }
        }
        let touched = std::sync::atomic::AtomicU64::new(body as u64);
        Ok(ScalarIndex {
            rows: rows as u32,
            data_type: data_type.clone(),
            nulls,
            encoding,
            bytes,
            blocks,
            name: name.to_owned(),
            touched,
        })
    }

    /// Checks and decodes block `b`.
    fn block(&self, b: usize) -> Result<Block> {
        let info = &self.blocks[b];
        let name = &self.name;
        self.touched.fetch_add(info.range.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let (start, end) = (info.range.start, info.range.end - 4);
        let crc = u32::from_le_bytes(self.bytes[end..end + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&self.bytes[start..end]) != crc {
            return Err(corrupt(name, format!("block {b} checksum mismatch")));
        }
        let mut r = Reader { bytes: &self.bytes, at: start, end, name };
        let ipc_len = r.u64()?;
        let ipc_len = r.len(ipc_len)?;
        let ipc = r.take(ipc_len)?;
        let mut reader = StreamReader::try_new(Cursor::new(&self.bytes[ipc]), None).map_err(|e| corrupt(name, e))?;
        let batch =
            reader.next().ok_or_else(|| corrupt(name, "a block without values"))?.map_err(|e| corrupt(name, e))?;
        let values = batch.column(0).clone();
        if values.data_type() != &self.data_type {
            return Err(corrupt(
                name,
                format!("holds {} values but the column is {}", values.data_type(), self.data_type),
            ));
        }
        if values.len() != info.values {
            return Err(corrupt(
                name,
                format!("block {b} holds {} values, its header says {}", values.len(), info.values),
            ));
        }
        let width = if self.encoding == Encoding::Bitmaps { 8 } else { 4 };
        let offsets = r.take((values.len() + 1) * width)?;
        let data = r.at..end;
        let block = Block { values, offsets, data };
        let expected_end =
            if self.encoding == Encoding::Bitmaps { block.data.len() as u64 } else { block.data.len() as u64 / 4 };
        if self.offset(&block, block.values.len()) != expected_end
            || (0..block.values.len()).any(|i| self.offset(&block, i) > self.offset(&block, i + 1))
        {
            return Err(corrupt(name, format!("block {b}: posting offsets disagree with their data")));
        }
        Ok(block)
    }

    /// Bytes of the file read so far (the header and the blocks lookups needed).
    pub fn bytes_read(&self) -> u64 {
        self.touched.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn offset(&self, block: &Block, value: usize) -> u64 {
        let offsets = &self.bytes[block.offsets.clone()];
        match self.encoding {
            Encoding::Bitmaps => u64_at(offsets, value),
            Encoding::Permutation => u32_at(offsets, value) as u64,
        }
    }

    fn posting(&self, block: &Block, value: usize) -> Result<RoaringBitmap> {
        let bad = |e: &dyn std::fmt::Display| corrupt(&self.name, format!("posting {value}: {e}"));
        let (lo, hi) = (self.offset(block, value) as usize, self.offset(block, value + 1) as usize);
        let data = &self.bytes[block.data.clone()];
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

    fn all_rows(&self) -> RoaringBitmap {
        let mut all = RoaringBitmap::new();
        all.insert_range(0..self.rows);
        all
    }

    /// Which blocks' values may hold one that `leaf` holds true for, by the blocks' bounds. `=`,
    /// `IN` and the ordering comparisons on a non-float column compare decoded keys (the literal
    /// converted once, a lookup's cost stays small over thousands of blocks); other predicates are
    /// judged block by block as a file's bounds are.
    fn blocks_may_match(&self, leaf: &Predicate, column: &str) -> Vec<bool> {
        use std::cmp::Ordering::{Greater, Less};
        let floats = matches!(self.data_type, DataType::Float16 | DataType::Float32 | DataType::Float64);
        let key = |value: &serde_json::Value| literal_key(&self.data_type, column, value);
        // For each literal: the orderings of a block's lower and upper bound against it that admit it.
        type Admits = fn(Ordering, Ordering) -> bool;
        let tests: Option<(Vec<Option<Key>>, Admits)> = match leaf {
            _ if floats => None,
            Predicate::Eq { value, .. } => {
                key(value).map(|k| (vec![k], (|lo, hi| lo != Greater && hi != Less) as fn(Ordering, Ordering) -> bool))
            }
            Predicate::In { values, .. } => values
                .iter()
                .map(key)
                .collect::<Option<Vec<_>>>()
                .map(|ks| (ks, (|lo, hi| lo != Greater && hi != Less) as fn(Ordering, Ordering) -> bool)),
            Predicate::Lt { value, .. } => {
                key(value).map(|k| (vec![k], (|lo, _| lo == Less) as fn(Ordering, Ordering) -> bool))
            }
            Predicate::Le { value, .. } => {
                key(value).map(|k| (vec![k], (|lo, _| lo != Greater) as fn(Ordering, Ordering) -> bool))
            }
            Predicate::Gt { value, .. } => {
                key(value).map(|k| (vec![k], (|_, hi| hi == Greater) as fn(Ordering, Ordering) -> bool))
            }
            Predicate::Ge { value, .. } => {
                key(value).map(|k| (vec![k], (|_, hi| hi != Less) as fn(Ordering, Ordering) -> bool))
            }
            _ => None,
        };
        let Some((literals, admits)) = tests else {
            return (0..self.blocks.len()).map(|b| self.block_may_match(b, leaf, column)).collect();
        };
        self.blocks
            .iter()
            .map(|info| {
                let Some((lower, upper)) = &info.keys else { return true };
                literals.iter().any(|literal| match literal {
                    None => false, // a comparison with NULL holds for no value
                    Some(v) => match (order(lower, v), order(upper, v)) {
                        (Some(lo), Some(hi)) => admits(lo, hi),
                        _ => true,
                    },
                })
            })
            .collect()
    }

    /// Whether block `b`'s values may hold one that `leaf` holds true for, by the block's bounds
    /// (judged as a file's bounds are).
    fn block_may_match(&self, b: usize, leaf: &Predicate, column: &str) -> bool {
        let info = &self.blocks[b];
        if info.lower.is_empty() || info.upper.is_empty() {
            return true;
        }
        let id: std::collections::HashMap<String, String> =
            [(crate::spec::schema::PARQUET_FIELD_ID.to_owned(), "1".to_owned())].into();
        let field = Field::new(column, self.data_type.clone(), true).with_metadata(id);
        let schema = Schema::new(vec![field]);
        let file = crate::spec::manifest::DataFile {
            record_count: info.values as i64,
            value_counts: [(1, info.values as i64)].into(),
            null_value_counts: [(1, 0)].into(),
            lower_bounds: [(1, info.lower.clone())].into(),
            upper_bounds: [(1, info.upper.clone())].into(),
            ..Default::default()
        };
        crate::scan::file_may_match(leaf, &file, &schema)
    }

    /// The rows where the single-column predicate `leaf` (over this index's column) is true, when
    /// `want` is true, or false, when `want` is false; exactly, with SQL's rules for nulls.
    pub fn rows_where(&self, leaf: &Predicate, want: bool) -> Result<RoaringBitmap> {
        if let Predicate::IsNull { .. } | Predicate::NotNull { .. } = leaf {
            let null_is_wanted = matches!(leaf, Predicate::IsNull { .. }) == want;
            return Ok(if null_is_wanted { self.nulls.clone() } else { self.all_rows() - &self.nulls });
        }
        let column = leaf_column(leaf);
        let schema = Arc::new(Schema::new(vec![Field::new(column, self.data_type.clone(), true)]));
        let mut rows = RoaringBitmap::new();
        // Bounds tell where a value may pass; where one may fail, every block has to be read.
        let read = if want { self.blocks_may_match(leaf, column) } else { vec![true; self.blocks.len()] };
        for (b, _) in read.iter().enumerate().filter(|(_, read)| **read) {
            let block = self.block(b)?;
            let batch = RecordBatch::try_new(schema.clone(), vec![block.values.clone()])?;
            let verdicts: BooleanArray = leaf.evaluate(&batch)?;
            for i in 0..verdicts.len() {
                if verdicts.is_valid(i) && verdicts.value(i) == want {
                    rows |= self.posting(&block, i)?;
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};

    fn build(column: ArrayRef, chunk: usize) -> Vec<u8> {
        let field = Field::new("c", column.data_type().clone(), true);
        let mut builder = ScalarIndexBuilder::new(&field).unwrap();
        for start in (0..column.len()).step_by(chunk) {
            builder.append(column.slice(start, chunk.min(column.len() - start)).as_ref()).unwrap();
        }
        builder.finish().unwrap()
    }

    /// The rows of `column` where `leaf` is `want`: the slow twin.
    fn brute(column: &ArrayRef, leaf: &Predicate, want: bool) -> RoaringBitmap {
        let schema = Arc::new(Schema::new(vec![Field::new("c", column.data_type().clone(), true)]));
        let verdicts = leaf.evaluate(&RecordBatch::try_new(schema, vec![column.clone()]).unwrap()).unwrap();
        (0..verdicts.len() as u32)
            .filter(|&i| verdicts.is_valid(i as usize) && verdicts.value(i as usize) == want)
            .collect()
    }

    #[test]
    fn lookups_over_many_blocks_equal_a_scan_of_the_column_and_read_only_their_blocks() {
        let mut rng = crate::rand::SplitMix64(3);
        let n = 30_000;
        // Keys mostly distinct (many blocks, the permutation), some repeated, some null.
        let keys: ArrayRef =
            Arc::new(Int64Array::from_iter((0..n).map(|_| (rng.below(10) != 0).then(|| rng.below(25_000) as i64))));
        let words: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|_| (rng.below(8) != 0).then(|| format!("w{}", rng.below(300)))),
        ));
        // Floats with both zeros and NaN, which the filter kernels tell apart (total order).
        let specials = [0.0, -0.0, f64::NAN, 1.5, -1.5];
        let floats: ArrayRef = Arc::new(arrow::array::Float64Array::from_iter((0..n).map(|_| {
            (rng.below(10) != 0).then(|| specials[rng.below(5) as usize] * if rng.below(2) == 0 { 1.0 } else { 3.0 })
        })));
        for (column, values) in [(keys, 25_000u64), (words, 300), (floats, 5)] {
            let bytes = Bytes::from(build(column.clone(), 7_000));
            let index = ScalarIndex::parse(bytes.clone(), n as u64, column.data_type(), "t").unwrap();
            let literal = |rng: &mut crate::rand::SplitMix64| -> serde_json::Value {
                match values {
                    300 => serde_json::json!(format!("w{}", rng.below(320))),
                    5 => serde_json::json!([0.0, -0.0, 1.5, -4.5, 3.0][rng.below(5) as usize]),
                    _ => serde_json::json!(rng.below(26_000) as i64),
                }
            };
            for round in 0..300 {
                let c = "c".to_owned();
                let leaf = match round % 9 {
                    0 => Predicate::Eq { column: c, value: literal(&mut rng) },
                    1 => Predicate::Ne { column: c, value: literal(&mut rng) },
                    2 => Predicate::Lt { column: c, value: literal(&mut rng) },
                    3 => Predicate::Ge { column: c, value: literal(&mut rng) },
                    4 => Predicate::In { column: c, values: (0..4).map(|_| literal(&mut rng)).collect() },
                    5 => Predicate::IsNull { column: c },
                    6 => Predicate::NotNull { column: c },
                    7 => Predicate::StartsWith { column: c, prefix: format!("w{}", rng.below(30)) },
                    _ => Predicate::Eq { column: c, value: serde_json::Value::Null },
                };
                if matches!(leaf, Predicate::StartsWith { .. }) && values != 300 {
                    continue;
                }
                for want in [true, false] {
                    assert_eq!(
                        index.rows_where(&leaf, want).unwrap(),
                        brute(&column, &leaf, want),
                        "{} want {want}",
                        leaf.to_json()
                    );
                }
            }
        }
        // A point lookup reads the header and one block, not the whole index.
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(0..200_000));
        let bytes = Bytes::from(build(keys.clone(), 50_000));
        let index = ScalarIndex::parse(bytes.clone(), 200_000, &DataType::Int64, "k").unwrap();
        let found =
            index.rows_where(&Predicate::Eq { column: "c".into(), value: serde_json::json!(123_456) }, true).unwrap();
        assert_eq!(found.iter().collect::<Vec<_>>(), vec![123_456]);
        assert!(index.bytes_read() * 20 < bytes.len() as u64, "{} of {}", index.bytes_read(), bytes.len());
        // A damaged block fails the lookups that read it, by name; the others still answer.
        let mut damaged = bytes.to_vec();
        let target = index.blocks[10].range.start + 40;
        damaged[target] ^= 1;
        let index = ScalarIndex::parse(Bytes::from(damaged), 200_000, &DataType::Int64, "k").unwrap();
        let eq = |v: i64| Predicate::Eq { column: "c".into(), value: serde_json::json!(v) };
        let err = index.rows_where(&eq(10 * BLOCK_VALUES as i64 + 5), true).unwrap_err();
        assert!(err.to_string().contains("block 10 checksum mismatch"), "{err}");
        assert_eq!(index.rows_where(&eq(7), true).unwrap().len(), 1);
        // A damaged header fails the parse.
        let mut header = bytes.to_vec();
        header[30] ^= 1;
        assert!(ScalarIndex::parse(Bytes::from(header), 200_000, &DataType::Int64, "k").is_err());
        assert!(ScalarIndex::parse(bytes.clone(), 199_999, &DataType::Int64, "k")
            .unwrap_err()
            .to_string()
            .contains("199999"));
    }
}
