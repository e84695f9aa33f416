//! numpy's `.npy` format (versions 1 to 3, C order, little-endian), so arrays move between a store and
//! numpy without conversion code on either side.

use std::io::Write;
use std::path::Path;

use super::dtype::DType;
use super::file::io;
use super::store::{ArrayInfo, ArrayStore};
use crate::{Error, Result};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The `.npy` header for an array of `dtype` and `shape`, padded so the data starts on a multiple of 64.
pub fn header(dtype: DType, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {dims}, }}", dtype.npy_descr());
    let (version, len_bytes) = if dict.len() + 12 > u16::MAX as usize { (2u8, 4) } else { (1u8, 2) };
    let fixed = MAGIC.len() + 2 + len_bytes;
    let total = (fixed + dict.len() + 1).div_ceil(64) * 64;
    dict.push_str(&" ".repeat(total - fixed - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if len_bytes == 2 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Parses an `.npy` header: the dtype, the shape and where the data starts.
pub fn parse_header(bytes: &[u8], name: &str) -> Result<(DType, Vec<u64>, usize)> {
    let bad = |what: &str| Error::invalid(format!("{name} is not a readable .npy file: {what}"));
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("no .npy magic"));
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize, 12),
        v => return Err(bad(&format!("version {v}"))),
    };
    let dict = bytes.get(start..start + len).ok_or_else(|| bad("header is cut short"))?;
    let dict = std::str::from_utf8(dict).map_err(|_| bad("header is not text"))?;
    let value = |key: &str| -> Result<&str> {
        let at = dict.find(&format!("'{key}':")).ok_or_else(|| bad(&format!("no '{key}' in the header")))?;
        Ok(dict[at + key.len() + 3..].trim_start())
    };
    let descr = value("descr")?;
    let descr =
        descr.strip_prefix('\'').and_then(|d| d.split('\'').next()).ok_or_else(|| bad("descr is not a string"))?;
    if descr.starts_with('>') && !descr.ends_with('1') {
        return Err(bad(&format!("big-endian dtype '{descr}'")));
    }
    let dtype = DType::from_npy_descr(descr.trim_start_matches('>'))
        .ok_or_else(|| bad(&format!("dtype '{descr}' is not one the store keeps")))?;
    if value("fortran_order")?.starts_with("True") {
        return Err(bad("Fortran order (save it with np.ascontiguousarray first)"));
    }
    let shape = value("shape")?;
    let shape = shape.strip_prefix('(').and_then(|s| s.split(')').next()).ok_or_else(|| bad("shape is not a tuple"))?;
    let shape: Vec<u64> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|d| d.parse().map_err(|_| bad(&format!("dimension '{d}'"))))
        .collect::<Result<_>>()?;
    if shape.is_empty() {
        return Err(bad("a 0-d array has no rows"));
    }
    Ok((dtype, shape, start + len))
}

impl ArrayStore {
    /// Saves the `.npy` file at `path` as array `name`.
    pub fn import_npy(&self, name: &str, path: &Path) -> Result<ArrayInfo> {
        let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
        let (dtype, shape, data) = parse_header(&bytes, &path.display().to_string())?;
        let want = shape.iter().product::<u64>() as usize * dtype.size();
        if bytes.len() - data != want {
            return Err(Error::invalid(format!(
                "{}: shape {shape:?} of {dtype} needs {want} data bytes but the file has {}",
                path.display(),
                bytes.len() - data
            )));
        }
        self.save(name, dtype, &shape, &bytes[data..])
    }

    /// Writes array `name` to `path` as an `.npy` file (replacing any file there).
    pub fn export_npy(&self, name: &str, path: &Path) -> Result<ArrayInfo> {
        let array = self.load(name)?;
        let written = (|| {
            let mut file = std::fs::File::create(path)?;
            file.write_all(&header(array.info.dtype, &array.info.shape))?;
            file.write_all(&array.bytes)?;
            file.flush()
        })();
        written.map_err(|e| io(path, e))?;
        Ok(array.info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_back_and_align_the_data() {
        for (dtype, shape) in [(DType::F32, vec![3u64, 4]), (DType::Bool, vec![7]), (DType::Complex128, vec![2, 3, 5])]
        {
            let h = header(dtype, &shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(parse_header(&h, "x").unwrap(), (dtype, shape, h.len()));
        }
    }

    #[test]
    fn unreadable_headers_are_refused_by_name() {
        assert!(parse_header(b"PK\x03\x04 not npy", "a.npy")
            .unwrap_err()
            .to_string()
            .contains("a.npy is not a readable .npy file: no .npy magic"));
        let edited = |dtype, shape: &[u64], from: &str, to: &str| {
            let h = header(dtype, shape);
            let mut text = h[10..].to_vec();
            let at = text.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
            text.splice(at..at + from.len(), to.bytes());
            [h[..10].to_vec(), text].concat()
        };
        let fortran = edited(DType::F64, &[2, 2], "False", "True ");
        assert!(parse_header(&fortran, "f.npy").unwrap_err().to_string().contains("Fortran order"));
        let object = edited(DType::F64, &[2], "'<f8'", "'|O8'");
        assert!(parse_header(&object, "o.npy").unwrap_err().to_string().contains("dtype '|O8'"));
        let big = edited(DType::F64, &[2], "'<f8'", "'>f8'");
        assert!(parse_header(&big, "b.npy").unwrap_err().to_string().contains("big-endian"));
    }
}
