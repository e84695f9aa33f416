//! Vector sidecars: each vector column of a data file also kept beside it as one contiguous block of
//! little-endian `f32`s, so that exact search reads vectors at memory speed instead of decoding
//! Parquet lists. A sidecar is an optimisation only: Parquet stays the source of truth, and a missing
//! or damaged sidecar sends the search back to the Parquet path.
//!
//! Layout (little-endian): `b"HSVEC001"`, dimension `u32`, reserved `u32`, rows `u64`, data offset
//! `u64`, then the validity bitmap (one bit per row, LSB first, 1 = the row has a vector), then from
//! the data offset (a multiple of 64) `rows × dimension` floats; rows without a vector hold zeros.

use arrow::array::{Array, AsArray};
use arrow::buffer::{BooleanBuffer, Buffer};
use arrow::datatypes::Float32Type;
use bytes::Bytes;

use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"HSVEC001";
const HEADER: usize = 32;

/// The sidecar path of vector field `field_id` of the data file at `data_path`.
pub fn sidecar_path(data_path: &str, field_id: i32) -> String {
    let stem = data_path.strip_suffix(".parquet").unwrap_or(data_path);
    format!("{stem}.{field_id}.f32vec")
}

/// Accumulates one vector column of a data file as it is written.
#[derive(Debug)]
pub struct SidecarBuilder {
    pub field_id: i32,
    dimension: usize,
    values: Vec<f32>,
    validity: Vec<bool>,
}

impl SidecarBuilder {
    pub fn new(field_id: i32, dimension: usize) -> Self {
        SidecarBuilder { field_id, dimension, values: Vec::new(), validity: Vec::new() }
    }

    /// Appends a fixed-size list column of `f32` with this builder's dimension.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    pub fn append(&mut self, column: &dyn Array) -> Result<()> {
        let list = column.as_fixed_size_list_opt().filter(|l| l.value_length() as usize == self.dimension).ok_or_else(
            || Error::Internal(format!("sidecar of field {} expects float[{}]", self.field_id, self.dimension)),
        )?;
        let items = list.values().as_primitive::<Float32Type>();
        let values = &items.values()[..list.len() * self.dimension];
        for row in 0..list.len() {
            let whole = list.is_valid(row)
                && (items.null_count() == 0
                    || (row * self.dimension..(row + 1) * self.dimension).all(|i| items.is_valid(i)));
            self.validity.push(whole);
            if whole {
                self.values.extend_from_slice(&values[row * self.dimension..(row + 1) * self.dimension]);
            } else {
                self.values.extend(std::iter::repeat_n(0.0, self.dimension));
            }
        }
        Ok(())
    }

    /// What the builder holds (bytes).
    pub fn memory(&self) -> usize {
        self.values.capacity() * 4 + self.validity.capacity()
    }

    /// The sidecar's bytes.
    pub fn finish(self) -> Bytes {
        let rows = self.validity.len();
        let bitmap = BooleanBuffer::from(self.validity);
        let bitmap = bitmap.sliced();
        let bitmap = &bitmap.as_slice()[..rows.div_ceil(8)];
        let offset = (HEADER + bitmap.len()).div_ceil(64) * 64;
        let mut out = Vec::with_capacity(offset + self.values.len() * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dimension as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(rows as u64).to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        out.extend_from_slice(bitmap);
        out.resize(offset, 0);
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        Bytes::from(out)
    }
}

/// A sidecar read back: its rows' validity and their vectors, back to back.
#[derive(Debug)]
pub struct Sidecar<'a> {
    pub dimension: usize,
    pub rows: usize,
    pub validity: BooleanBuffer,
    vectors: std::borrow::Cow<'a, [f32]>,
}

impl<'a> Sidecar<'a> {
    /// Checks and reads `bytes`, which must describe `rows` vectors of `dimension`; `name` is for errors.
    pub fn parse(bytes: &'a [u8], rows: usize, dimension: usize, name: &str) -> Result<Sidecar<'a>> {
        let corrupt = |what: &str| Error::Corrupt(format!("vector sidecar {name}: {what}"));
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(corrupt("not a vector sidecar"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let (dim, count, offset) = (u32_at(8) as usize, u64_at(16) as usize, u64_at(24) as usize);
        if dim != dimension || count != rows {
            return Err(corrupt(&format!("holds {count} x {dim}, the data file {rows} x {dimension}")));
        }
        let bitmap_end = HEADER + rows.div_ceil(8);
        let end = rows
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(offset))
            .ok_or_else(|| corrupt("sizes overflow"))?;
        if offset < bitmap_end || bytes.len() != end {
            return Err(corrupt(&format!("is {} bytes, expected {end}", bytes.len())));
        }
        let validity = BooleanBuffer::new(Buffer::from(&bytes[HEADER..bitmap_end]), 0, rows);
        let data = &bytes[offset..end];
        // SAFETY: every bit pattern is a valid f32; align_to only reinterprets the aligned middle.
        let (head, floats, _) = unsafe { data.align_to::<f32>() };
        let vectors = if head.is_empty() && floats.len() == rows * dim && cfg!(target_endian = "little") {
            std::borrow::Cow::Borrowed(floats)
        } else {
            std::borrow::Cow::Owned(
                data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect(),
            )
        };
        Ok(Sidecar { dimension: dim, rows, validity, vectors })
    }

    /// Every row's vector, back to back (zeros where the row has none).
    pub fn vectors(&self) -> &[f32] {
        &self.vectors
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{FixedSizeListArray, Float32Array};
    use arrow::buffer::NullBuffer;
    use arrow::datatypes::{DataType, Field};

    use super::*;

    #[test]
    fn sidecars_round_trip_and_damage_is_named() {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let values =
            Float32Array::from(vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0), None, Some(6.0), Some(7.0), Some(8.0)]);
        let nulls = NullBuffer::from(vec![true, true, true, false]);
        let list = FixedSizeListArray::new(item, 2, Arc::new(values), Some(nulls));
        let mut builder = SidecarBuilder::new(3, 2);
        builder.append(&list).unwrap();
        builder.append(&list.slice(0, 1)).unwrap();
        let bytes = builder.finish();
        let sidecar = Sidecar::parse(&bytes, 5, 2, "t").unwrap();
        // Row 2 has a null element and row 3 is null: both count as rows without a vector.
        assert_eq!(sidecar.validity.iter().collect::<Vec<_>>(), vec![true, true, false, false, true]);
        assert_eq!(sidecar.vectors(), &[1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0]);
        assert!(Sidecar::parse(&bytes, 6, 2, "t").unwrap_err().to_string().contains("holds 5 x 2"));
        assert!(Sidecar::parse(&bytes[..bytes.len() - 1], 5, 2, "t").is_err());
        assert!(Sidecar::parse(b"PAR1....", 5, 2, "t").unwrap_err().to_string().contains("not a vector sidecar"));
        assert_eq!(sidecar_path("/t/data/x.parquet", 3), "/t/data/x.3.f32vec");
    }
}
