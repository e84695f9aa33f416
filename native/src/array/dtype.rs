//! Element types of stored arrays: numpy's fixed-width kinds, by numpy's names.

use std::fmt;

use crate::{Error, Result};

/// The element type of an array. Values are stored little-endian, `bool` as one byte (0 or 1), complex
/// numbers as (real, imaginary) pairs, exactly as numpy lays them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Complex64,
    Complex128,
}

impl DType {
    /// Every type, in the order the docs list them.
    pub const ALL: [DType; 14] = [
        DType::Bool,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// numpy's name for the type (`np.dtype(name)` gives it back).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
        }
    }

    /// Parses a numpy name (`float32`) or its Rust-style short form (`f32`, `u8`: sizes in bits).
    pub fn parse(name: &str) -> Result<DType> {
        let dtype = match name.trim().to_ascii_lowercase().as_str() {
            "bool" => DType::Bool,
            "uint8" | "u8" => DType::U8,
            "uint16" | "u16" => DType::U16,
            "uint32" | "u32" => DType::U32,
            "uint64" | "u64" => DType::U64,
            "int8" | "i8" => DType::I8,
            "int16" | "i16" => DType::I16,
            "int32" | "i32" => DType::I32,
            "int64" | "i64" => DType::I64,
            "float16" | "f16" | "half" => DType::F16,
            "float32" | "f32" | "float" => DType::F32,
            "float64" | "f64" | "double" => DType::F64,
            "complex64" => DType::Complex64,
            "complex128" => DType::Complex128,
            _ => {
                let known = DType::ALL.map(DType::name).join(", ");
                return Err(Error::invalid(format!("unknown array dtype '{name}' (known: {known})")));
            }
        };
        Ok(dtype)
    }

    /// The dtype an `.npy` descriptor (`'<f4'`, `'|u1'`) names; the byte-order mark may be `<`, `|`
    /// or `=` (this is a little-endian format).
    pub fn from_npy_descr(descr: &str) -> Option<DType> {
        let code = descr.trim_start_matches(['<', '|', '=']);
        DType::ALL.into_iter().find(|d| &d.npy_descr()[1..] == code)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
        }
    }

    /// The `.npy` header descriptor (`'<f4'`).
    pub fn npy_descr(self) -> &'static str {
        match self {
            DType::Bool => "|b1",
            DType::U8 => "|u1",
            DType::U16 => "<u2",
            DType::U32 => "<u4",
            DType::U64 => "<u8",
            DType::I8 => "|i1",
            DType::I16 => "<i2",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::F16 => "<f2",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::Complex64 => "<c8",
            DType::Complex128 => "<c16",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_parses_back_from_its_name_and_its_npy_descriptor() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()).unwrap(), d);
            assert_eq!(DType::from_npy_descr(d.npy_descr()), Some(d));
            assert_eq!(DType::from_npy_descr(&format!("={}", &d.npy_descr()[1..])), Some(d));
        }
        let e = DType::parse("float128").unwrap_err().to_string();
        assert!(e.contains("unknown array dtype 'float128'") && e.contains("complex64"), "{e}");
    }
}
