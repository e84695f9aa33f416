//! What a store and a batch of changes both take: saves, appends, replaces and drops.

use super::{ArrayBatch, ArrayInfo, ArrayStore, DType};
use crate::Result;

/// The changes a store takes at once and a batch of changes collects for one flush: what callers
/// (the engines through the bridge) do to either alike.
pub trait ArrayChanges {
    fn info(&self, name: &str) -> Result<ArrayInfo>;
    fn save(&self, name: &str, dtype: DType, row_shape: &[u64], bytes: &[u8]) -> Result<u64>;
    fn append(&self, name: &str, bytes: &[u8]) -> Result<u64>;
    fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()>;
    fn drop_array(&self, name: &str) -> Result<()>;
    fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64>;
}

impl ArrayChanges for ArrayStore {
    fn info(&self, name: &str) -> Result<ArrayInfo> {
        ArrayStore::info(self, name)
    }
    fn save(&self, name: &str, dtype: DType, row_shape: &[u64], bytes: &[u8]) -> Result<u64> {
        Ok(self.save_parts(name, dtype, row_shape, &[bytes])?.rows())
    }
    fn append(&self, name: &str, bytes: &[u8]) -> Result<u64> {
        ArrayStore::append(self, name, bytes)
    }
    fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        ArrayStore::replace(self, name, indices, bytes)
    }
    fn drop_array(&self, name: &str) -> Result<()> {
        ArrayStore::drop_array(self, name)
    }
    fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64> {
        ArrayStore::drop_rows(self, name, indices)
    }
}

impl ArrayChanges for ArrayBatch {
    fn info(&self, name: &str) -> Result<ArrayInfo> {
        ArrayBatch::info(self, name)
    }
    fn save(&self, name: &str, dtype: DType, row_shape: &[u64], bytes: &[u8]) -> Result<u64> {
        let rows = (bytes.len() / (row_shape.iter().product::<u64>() as usize * dtype.size()).max(1)) as u64;
        Ok(ArrayBatch::save(self, name, dtype, &[&[rows][..], row_shape].concat(), bytes)?.rows())
    }
    fn append(&self, name: &str, bytes: &[u8]) -> Result<u64> {
        ArrayBatch::append(self, name, bytes)
    }
    fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        ArrayBatch::replace(self, name, indices, bytes)
    }
    fn drop_array(&self, name: &str) -> Result<()> {
        ArrayBatch::drop_array(self, name)
    }
    fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64> {
        ArrayBatch::drop_rows(self, name, indices)
    }
}
