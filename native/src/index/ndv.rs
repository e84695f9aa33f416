//! Distinct-value sketches: a HyperLogLog of each column of a data file, kept beside it, merged
//! across a snapshot's files into each column's estimated number of distinct values (NDV), which
//! the engines' cost-based optimizers take as statistics.
//!
//! The sketch is the textbook HyperLogLog (Flajolet et al., with linear counting for small
//! cardinalities) over 2^12 one-byte registers (a standard error of about 1.6%), hashing each value's
//! bytes with XXH64 (seed 0), so sketches written by any process merge. Its registers are stored raw:
//! this module owns the file format, which the HyperLogLog crates (randomly keyed SipHash, serde
//! encodings) would not keep stable.
//!
//! File layout (`<data file stem>.all.ndv`), little-endian: `HSNDV001`, precision u8, column count
//! u32, per column its field id i32 and 2^precision registers, then a CRC-32 of all before it.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};

use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"HSNDV001";
/// Registers are 2^PRECISION.
const PRECISION: u32 = 12;
const REGISTERS: usize = 1 << PRECISION;

/// Where the sketches of the data file at `data_path` live.
pub fn ndv_path(data_path: &str) -> String {
    let stem = data_path.strip_suffix(".parquet").unwrap_or(data_path);
    format!("{stem}.all.ndv")
}

/// Whether a column of this type is sketched: the flat types a scalar index takes, and a few more
/// (not vectors, lists or structs).
pub fn sketched(data_type: &DataType) -> bool {
    super::indexable(data_type) || matches!(data_type, DataType::Date64 | DataType::LargeBinary)
}

/// A HyperLogLog sketch of one column's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sketch {
    registers: Vec<u8>,
}

impl Default for Sketch {
    fn default() -> Self {
        Sketch { registers: vec![0; REGISTERS] }
    }
}

fn hash(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

impl Sketch {
    fn insert_hash(&mut self, h: u64) {
        let register = (h >> (64 - PRECISION)) as usize;
        // The rank: the position of the first one bit after the register's bits (a sentinel bit
        // bounds it when they are all zero).
        let rest = (h << PRECISION) | (1 << (PRECISION - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if rank > self.registers[register] {
            self.registers[register] = rank;
        }
    }

    /// Adds the non-null values of `column` (of a [`sketched`] type; others add nothing).
    pub fn add(&mut self, column: &dyn Array) {
        macro_rules! primitive {
            ($t:ty) => {{
                let a = column.as_primitive::<$t>();
                for i in 0..a.len() {
                    if a.is_valid(i) {
                        self.insert_hash(hash(&a.value(i).to_le_bytes()));
                    }
                }
            }};
        }
        match column.data_type() {
            DataType::Boolean => {
                let a = column.as_boolean();
                for i in (0..a.len()).filter(|&i| a.is_valid(i)) {
                    self.insert_hash(hash(&[a.value(i) as u8]));
                }
            }
            DataType::Int8 => primitive!(Int8Type),
            DataType::Int16 => primitive!(Int16Type),
            DataType::Int32 => primitive!(Int32Type),
            DataType::Int64 => primitive!(Int64Type),
            DataType::Timestamp(TimeUnit::Second, _) => primitive!(TimestampSecondType),
            DataType::Timestamp(TimeUnit::Millisecond, _) => primitive!(TimestampMillisecondType),
            DataType::Timestamp(TimeUnit::Microsecond, _) => primitive!(TimestampMicrosecondType),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => primitive!(TimestampNanosecondType),
            DataType::UInt8 => primitive!(UInt8Type),
            DataType::UInt16 => primitive!(UInt16Type),
            DataType::UInt32 => primitive!(UInt32Type),
            DataType::UInt64 => primitive!(UInt64Type),
            DataType::Float32 => primitive!(Float32Type),
            DataType::Float64 => primitive!(Float64Type),
            DataType::Date32 => primitive!(Date32Type),
            DataType::Date64 => primitive!(Date64Type),
            DataType::Decimal128(..) => primitive!(Decimal128Type),
            DataType::Utf8 => {
                column.as_string::<i32>().iter().flatten().for_each(|v| self.insert_hash(hash(v.as_bytes())))
            }
            DataType::LargeUtf8 => {
                column.as_string::<i64>().iter().flatten().for_each(|v| self.insert_hash(hash(v.as_bytes())))
            }
            DataType::Binary => column.as_binary::<i32>().iter().flatten().for_each(|v| self.insert_hash(hash(v))),
            DataType::LargeBinary => column.as_binary::<i64>().iter().flatten().for_each(|v| self.insert_hash(hash(v))),
            _ => {}
        }
    }

    /// Takes in `other`'s values (the sketch of the union).
    pub fn merge(&mut self, other: &Sketch) {
        for (mine, theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(*theirs);
        }
    }

    /// The estimated number of distinct values added.
    pub fn estimate(&self) -> u64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self.registers.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        let estimate = if raw <= 2.5 * m && zeros > 0 { m * (m / zeros as f64).ln() } else { raw };
        estimate.round() as u64
    }
}

/// The bytes of a sketch file holding `columns` (field id, sketch).
pub fn to_bytes(columns: &[(i32, Sketch)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(17 + columns.len() * (4 + REGISTERS) + 4);
    out.extend_from_slice(MAGIC);
    out.push(PRECISION as u8);
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for (id, sketch) in columns {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&sketch.registers);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The sketches of a sketch file, checked whole.
pub fn parse(bytes: &[u8], name: &str) -> Result<Vec<(i32, Sketch)>> {
    let corrupt = |what: &str| Error::Corrupt(format!("distinct-value sketches {name}: {what}"));
    if bytes.len() < 17 + 4 || &bytes[..8] != MAGIC {
        return Err(corrupt("not a sketch file"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(corrupt("checksum mismatch"));
    }
    if body[8] as u32 != PRECISION {
        return Err(corrupt(&format!("precision {} (this library reads {PRECISION})", body[8])));
    }
    let count = u32::from_le_bytes(body[9..13].try_into().expect("4 bytes")) as usize;
    if body.len() != 13 + count * (4 + REGISTERS) {
        return Err(corrupt("truncated"));
    }
    Ok(body[13..]
        .chunks_exact(4 + REGISTERS)
        .map(|c| (i32::from_le_bytes(c[..4].try_into().expect("4 bytes")), Sketch { registers: c[4..].to_vec() }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};

    #[test]
    fn estimates_are_within_a_few_percent_and_merge_as_unions() {
        for n in [0u64, 1, 10, 1_000, 50_000, 400_000] {
            let mut sketch = Sketch::default();
            sketch.add(&Int64Array::from_iter_values((0..n as i64).map(|i| i * 7919)));
            sketch.add(&Int64Array::from_iter_values((0..n as i64).map(|i| i * 7919))); // repeats count once
            let estimate = sketch.estimate() as f64;
            assert!((estimate - n as f64).abs() <= (n as f64 * 0.05).max(1.0), "{n}: {estimate}");
        }
        // Two overlapping halves merge into the union's count.
        let (mut a, mut b) = (Sketch::default(), Sketch::default());
        a.add(&StringArray::from_iter_values((0..60_000).map(|i| format!("v{i}"))));
        b.add(&StringArray::from_iter_values((30_000..100_000).map(|i| format!("v{i}"))));
        a.merge(&b);
        assert!((a.estimate() as f64 - 100_000.0).abs() < 5_000.0, "{}", a.estimate());
        // Nulls are not values.
        let mut nulls = Sketch::default();
        nulls.add(&Int64Array::from(vec![None, Some(1), None]));
        assert_eq!(nulls.estimate(), 1);
    }

    #[test]
    fn files_round_trip_and_damage_is_named() {
        let mut s = Sketch::default();
        s.add(&Int64Array::from_iter_values(0..1000));
        let bytes = to_bytes(&[(3, s.clone()), (7, Sketch::default())]);
        assert_eq!(parse(&bytes, "f").unwrap(), vec![(3, s), (7, Sketch::default())]);
        let mut flipped = bytes.clone();
        flipped[100] ^= 1;
        assert!(parse(&flipped, "f").unwrap_err().to_string().contains("checksum"));
        assert!(parse(&bytes[..50], "f").is_err());
    }
}
