//! Batch mode: changes to a store kept in memory and written at once. Many small appends and
//! replacements then cost one write per array touched instead of one each, and the whole batch
//! commits as one catalog change: readers see all of its changes or none of them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::buffer::Buffer;

use super::dtype::DType;
use super::store::{check_fits, check_indices, ArrayData, ArrayInfo, ArrayStore};
use crate::{Error, Result};

/// An array as the batch holds it.
struct Held {
    info: ArrayInfo,
    bytes: Vec<u8>,
}

/// Changes to the arrays of a store, held in memory until [`ArrayBatch::flush`]. Reads through the
/// batch see its changes; other readers of the store see them once flushed. An array is read into
/// memory when the batch first changes it. Dropping a batch discards what it did not flush.
pub struct ArrayBatch {
    store: Arc<ArrayStore>,
    /// Arrays changed so far: `None` for one the batch dropped.
    held: Mutex<BTreeMap<String, Option<Held>>>,
}

impl ArrayStore {
    /// A batch of changes to this store (see [`ArrayBatch`]).
    pub fn batch(self: &Arc<Self>) -> ArrayBatch {
        ArrayBatch { store: Arc::clone(self), held: Mutex::new(BTreeMap::new()) }
    }
}

impl ArrayBatch {
    fn held(&self) -> Result<MutexGuard<'_, BTreeMap<String, Option<Held>>>> {
        self.held.lock().map_err(|_| Error::Internal("array batch poisoned by an earlier panic".into()))
    }

    /// Array `name` as the batch holds it, read from the store the first time.
    fn array<'h>(&self, held: &'h mut BTreeMap<String, Option<Held>>, name: &str) -> Result<&'h mut Held> {
        if !held.contains_key(name) {
            let data = self.store.load(name)?;
            held.insert(name.to_string(), Some(Held { info: data.info, bytes: data.bytes.to_vec() }));
        }
        held.get_mut(name).and_then(Option::as_mut).ok_or_else(|| Error::NotFound(format!("array '{name}' (dropped in this batch)")))
    }

    /// How many arrays the batch has changed and not flushed.
    pub fn pending(&self) -> Result<usize> {
        Ok(self.held()?.len())
    }

    /// The names of the arrays, with the batch's changes.
    pub fn names(&self) -> Result<Vec<String>> {
        let held = self.held()?;
        let mut names: Vec<String> = self.store.names()?.into_iter().filter(|n| !held.contains_key(n)).collect();
        names.extend(held.iter().filter(|(_, h)| h.is_some()).map(|(n, _)| n.clone()));
        names.sort();
        Ok(names)
    }

    pub fn info(&self, name: &str) -> Result<ArrayInfo> {
        match self.held()?.get(name) {
            Some(Some(h)) => Ok(h.info.clone()),
            Some(None) => Err(Error::NotFound(format!("array '{name}' (dropped in this batch)"))),
            None => self.store.info(name),
        }
    }

    /// A copy of array `name` with the batch's changes.
    pub fn load(&self, name: &str) -> Result<ArrayData> {
        match self.held()?.get(name) {
            Some(Some(h)) => Ok(ArrayData { info: h.info.clone(), bytes: Buffer::from_slice_ref(&h.bytes) }),
            Some(None) => Err(Error::NotFound(format!("array '{name}' (dropped in this batch)"))),
            None => self.store.load(name),
        }
    }

    /// Creates (or replaces) array `name`, as [`ArrayStore::save`] does.
    pub fn save(&self, name: &str, dtype: DType, shape: &[u64], bytes: &[u8]) -> Result<ArrayInfo> {
        let info = super::store::new_array(name, dtype, shape.get(1..).unwrap_or_default(), &[bytes])?;
        if shape.first() != Some(&info.rows()) {
            return Err(Error::invalid(format!("save {name}: shape {shape:?} does not hold {} bytes of {dtype}", bytes.len())));
        }
        self.held()?.insert(name.to_string(), Some(Held { info: info.clone(), bytes: bytes.to_vec() }));
        Ok(info)
    }

    /// Appends rows to array `name`; returns its new row count.
    pub fn append(&self, name: &str, bytes: &[u8]) -> Result<u64> {
        let mut held = self.held()?;
        let array = self.array(&mut held, name)?;
        let rows = super::store::whole_rows(&array.info, bytes.len(), "append to")?;
        array.bytes.extend_from_slice(bytes);
        array.info.shape[0] += rows;
        Ok(array.info.rows())
    }

    /// Appends rows of `dtype` and `row_shape`, checked against the array first.
    pub fn append_rows(&self, name: &str, dtype: DType, row_shape: &[u64], bytes: &[u8]) -> Result<u64> {
        check_fits(&self.info(name)?, dtype, row_shape)?;
        self.append(name, bytes)
    }

    /// Replaces rows `indices` of array `name` with `bytes`, one row per index (the last wins).
    pub fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        let mut held = self.held()?;
        let array = self.array(&mut held, name)?;
        let rows = super::store::whole_rows(&array.info, bytes.len(), "replace rows of")?;
        if rows != indices.len() as u64 {
            return Err(Error::invalid(format!("replace rows of {name}: {} indices but {rows} rows", indices.len())));
        }
        check_indices(&array.info, indices)?;
        let width = array.info.row_bytes();
        for (&row, new) in indices.iter().zip(bytes.chunks_exact(width)) {
            let at = row as usize * width;
            array.bytes[at..at + width].copy_from_slice(new);
        }
        Ok(())
    }

    /// Drops rows `indices` of array `name`; the rows after them move up. Returns the new row count.
    pub fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64> {
        let mut held = self.held()?;
        let array = self.array(&mut held, name)?;
        check_indices(&array.info, indices)?;
        let dropped: roaring::RoaringTreemap = indices.iter().copied().collect();
        let width = array.info.row_bytes();
        let mut kept = Vec::with_capacity(array.bytes.len());
        for (row, bytes) in array.bytes.chunks_exact(width).enumerate() {
            if !dropped.contains(row as u64) {
                kept.extend_from_slice(bytes);
            }
        }
        array.bytes = kept;
        array.info.shape[0] -= dropped.len();
        Ok(array.info.rows())
    }

    /// Drops array `name`.
    pub fn drop_array(&self, name: &str) -> Result<()> {
        let mut held = self.held()?;
        let exists = match held.get(name) {
            Some(h) => h.is_some(),
            None => self.store.contains(name)?,
        };
        if !exists {
            return Err(Error::NotFound(format!("array '{name}'")));
        }
        held.insert(name.to_string(), None);
        Ok(())
    }

    /// Writes every change as one commit of the store: each array changed gets a new data file, and
    /// one catalog replacement makes them all current. The batch is empty afterwards; on an error
    /// nothing of it is committed and it keeps its changes.
    pub fn flush(&self) -> Result<()> {
        let mut held = self.held()?;
        if held.is_empty() {
            return Ok(());
        }
        let changes: Vec<(String, Option<(&ArrayInfo, &[u8])>)> =
            held.iter().map(|(name, h)| (name.clone(), h.as_ref().map(|h| (&h.info, h.bytes.as_slice())))).collect();
        self.store.commit_changes(&changes)?;
        held.clear();
        Ok(())
    }
}
