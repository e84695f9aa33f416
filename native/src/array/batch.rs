//! Batch mode: changes to a store kept in memory and written at once. Many small appends and
//! replacements then cost one write each per array instead of one each: rows replaced and appended
//! go into the array's data file in place (one journaled replace of every row, then one append),
//! while arrays made, rewritten (a drop of rows) or dropped commit together with one catalog
//! change.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::buffer::Buffer;

use super::dtype::DType;
use super::store::{check_fits, check_indices, whole_rows, ArrayData, ArrayInfo, ArrayStore};
use crate::{Error, Result};

/// An array as the batch holds it.
enum Held {
    /// Changes to the stored array's first `base_rows` rows (`replaced`, by row) and rows after
    /// them (`appended`): flushed in place.
    Delta {
        info: ArrayInfo,
        base_rows: u64,
        replaced: BTreeMap<u64, Vec<u8>>,
        appended: Vec<u8>,
    },
    /// The whole array (after a save or a drop of rows): flushed as a new data file.
    Whole {
        info: ArrayInfo,
        bytes: Vec<u8>,
    },
    Dropped,
}

impl Held {
    fn info(&self) -> Option<&ArrayInfo> {
        match self {
            Held::Delta { info, .. } | Held::Whole { info, .. } => Some(info),
            Held::Dropped => None,
        }
    }
}

/// Changes to the arrays of a store, held in memory until [`ArrayBatch::flush`]. Reads through the
/// batch see its changes; other readers of the store see them once flushed. Dropping a batch
/// discards what it did not flush.
pub struct ArrayBatch {
    store: Arc<ArrayStore>,
    held: Mutex<BTreeMap<String, Held>>,
}

impl ArrayStore {
    /// A batch of changes to this store (see [`ArrayBatch`]).
    pub fn batch(self: &Arc<Self>) -> ArrayBatch {
        ArrayBatch { store: Arc::clone(self), held: Mutex::new(BTreeMap::new()) }
    }
}

impl ArrayBatch {
    fn held(&self) -> Result<MutexGuard<'_, BTreeMap<String, Held>>> {
        self.held.lock().map_err(|_| Error::Internal("array batch poisoned by an earlier panic".into()))
    }

    /// Array `name` as the batch holds it, starting as an empty delta over the stored array.
    fn array<'h>(&self, held: &'h mut BTreeMap<String, Held>, name: &str) -> Result<&'h mut Held> {
        if !held.contains_key(name) {
            let info = self.store.info(name)?;
            let base_rows = info.rows();
            held.insert(
                name.to_string(),
                Held::Delta { info, base_rows, replaced: BTreeMap::new(), appended: Vec::new() },
            );
        }
        let array = held.get_mut(name).expect("just inserted");
        if matches!(array, Held::Dropped) {
            return Err(dropped(name));
        }
        Ok(array)
    }

    /// Array `name` whole in memory, with the batch's changes.
    fn whole<'h>(
        &self,
        held: &'h mut BTreeMap<String, Held>,
        name: &str,
    ) -> Result<(&'h mut ArrayInfo, &'h mut Vec<u8>)> {
        let array = self.array(held, name)?;
        if let Held::Delta { .. } = array {
            let data = self.load_delta(array)?;
            *array = Held::Whole { info: data.info, bytes: data.bytes.to_vec() };
        }
        match array {
            Held::Whole { info, bytes } => Ok((info, bytes)),
            _ => unreachable!("made whole above"),
        }
    }

    /// The stored array with a delta's changes laid over it.
    fn load_delta(&self, delta: &Held) -> Result<ArrayData> {
        let Held::Delta { info, base_rows, replaced, appended } = delta else {
            return Err(Error::Internal("not a delta".into()));
        };
        let width = info.row_bytes();
        let stored = self.store.slice(&info.name, 0, *base_rows)?;
        let mut bytes = Vec::with_capacity(stored.bytes.len() + appended.len());
        bytes.extend_from_slice(&stored.bytes);
        for (&row, new) in replaced {
            bytes[row as usize * width..(row as usize + 1) * width].copy_from_slice(new);
        }
        bytes.extend_from_slice(appended);
        Ok(ArrayData { info: info.clone(), bytes: Buffer::from_vec(bytes) })
    }

    /// How many arrays the batch has changed and not flushed.
    pub fn pending(&self) -> Result<usize> {
        Ok(self.held()?.len())
    }

    /// The names of the arrays, with the batch's changes.
    pub fn names(&self) -> Result<Vec<String>> {
        let held = self.held()?;
        let mut names: Vec<String> = self.store.names()?.into_iter().filter(|n| !held.contains_key(n)).collect();
        names.extend(held.iter().filter(|(_, h)| h.info().is_some()).map(|(n, _)| n.clone()));
        names.sort();
        Ok(names)
    }

    pub fn info(&self, name: &str) -> Result<ArrayInfo> {
        match self.held()?.get(name) {
            Some(h) => h.info().cloned().ok_or_else(|| dropped(name)),
            None => self.store.info(name),
        }
    }

    /// A copy of array `name` with the batch's changes.
    pub fn load(&self, name: &str) -> Result<ArrayData> {
        match self.held()?.get(name) {
            Some(Held::Whole { info, bytes }) => {
                Ok(ArrayData { info: info.clone(), bytes: Buffer::from_slice_ref(bytes) })
            }
            Some(delta @ Held::Delta { .. }) => self.load_delta(delta),
            Some(Held::Dropped) => Err(dropped(name)),
            None => self.store.load(name),
        }
    }

    /// Creates (or replaces) array `name`, as [`ArrayStore::save`] does.
    pub fn save(&self, name: &str, dtype: DType, shape: &[u64], bytes: &[u8]) -> Result<ArrayInfo> {
        let info = super::store::new_array(name, dtype, shape.get(1..).unwrap_or_default(), &[bytes])?;
        if shape.first() != Some(&info.rows()) {
            return Err(Error::invalid(format!(
                "save {name}: shape {shape:?} does not hold {} bytes of {dtype}",
                bytes.len()
            )));
        }
        self.held()?.insert(name.to_string(), Held::Whole { info: info.clone(), bytes: bytes.to_vec() });
        Ok(info)
    }

    /// Appends rows to array `name`; returns its new row count.
    pub fn append(&self, name: &str, bytes: &[u8]) -> Result<u64> {
        let mut held = self.held()?;
        let array = self.array(&mut held, name)?;
        let (Held::Delta { info, appended: more, .. } | Held::Whole { info, bytes: more }) = array else {
            unreachable!("array() refuses dropped arrays")
        };
        info.shape[0] += whole_rows(info, bytes.len(), "append to")?;
        more.extend_from_slice(bytes);
        Ok(info.rows())
    }

    /// Replaces rows `indices` of array `name` with `bytes`, one row per index (the last wins).
    pub fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        let mut held = self.held()?;
        let array = self.array(&mut held, name)?;
        let info = array.info().expect("not dropped").clone();
        let rows = whole_rows(&info, bytes.len(), "replace rows of")?;
        if rows != indices.len() as u64 {
            return Err(Error::invalid(format!("replace rows of {name}: {} indices but {rows} rows", indices.len())));
        }
        check_indices(&info, indices)?;
        let width = info.row_bytes();
        for (&row, new) in indices.iter().zip(bytes.chunks_exact(width)) {
            match array {
                Held::Delta { base_rows, replaced, .. } if row < *base_rows => {
                    replaced.insert(row, new.to_vec());
                }
                Held::Delta { base_rows, appended, .. } => {
                    let at = (row - *base_rows) as usize * width;
                    appended[at..at + width].copy_from_slice(new);
                }
                Held::Whole { bytes, .. } => {
                    bytes[row as usize * width..(row as usize + 1) * width].copy_from_slice(new)
                }
                Held::Dropped => unreachable!("array() refuses dropped arrays"),
            }
        }
        Ok(())
    }

    /// Drops rows `indices` of array `name`; the rows after them move up. Returns the new row count.
    pub fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64> {
        let mut held = self.held()?;
        check_indices(self.array(&mut held, name)?.info().expect("not dropped"), indices)?;
        let (info, bytes) = self.whole(&mut held, name)?;
        let dropped: roaring::RoaringTreemap = indices.iter().copied().collect();
        let width = info.row_bytes();
        let mut kept = Vec::with_capacity(bytes.len());
        for (row, row_bytes) in bytes.chunks_exact(width).enumerate() {
            if !dropped.contains(row as u64) {
                kept.extend_from_slice(row_bytes);
            }
        }
        *bytes = kept;
        info.shape[0] -= dropped.len();
        Ok(info.rows())
    }

    /// Drops array `name`.
    pub fn drop_array(&self, name: &str) -> Result<()> {
        let mut held = self.held()?;
        let exists = match held.get(name) {
            Some(h) => h.info().is_some(),
            None => self.store.contains(name)?,
        };
        if !exists {
            return Err(Error::NotFound(format!("array '{name}'")));
        }
        held.insert(name.to_string(), Held::Dropped);
        Ok(())
    }

    /// Writes every change: arrays made, rewritten or dropped with one catalog replacement (readers
    /// see all of them or none), then each other array's replaced rows with one journaled replace
    /// and its appended rows with one append (each atomic; rows other writers appended meanwhile
    /// stay before them). The batch is empty afterwards; on an error it keeps what was not written.
    pub fn flush(&self) -> Result<()> {
        let mut held = self.held()?;
        let changes: Vec<(String, Option<(&ArrayInfo, &[u8])>)> = held
            .iter()
            .filter_map(|(name, h)| match h {
                Held::Whole { info, bytes } => Some((name.clone(), Some((info, bytes.as_slice())))),
                Held::Dropped => Some((name.clone(), None)),
                Held::Delta { .. } => None,
            })
            .collect();
        if !changes.is_empty() {
            self.store.commit_changes(&changes)?;
        }
        held.retain(|_, h| matches!(h, Held::Delta { .. }));
        while let Some((name, delta)) = held.pop_first() {
            let Held::Delta { info, base_rows, replaced, appended } = &delta else {
                unreachable!("only deltas are left")
            };
            let written = (|| {
                let now = self.store.info(&name)?;
                if now.rows() < *base_rows || check_fits(&now, info.dtype, info.row_shape()).is_err() {
                    return Err(Error::CommitConflict(format!(
                        "array '{name}' was rewritten by another writer since the batch read it; its batched changes were not written"
                    )));
                }
                if !replaced.is_empty() {
                    let rows: Vec<u64> = replaced.keys().copied().collect();
                    let bytes: Vec<u8> = replaced.values().flatten().copied().collect();
                    self.store.replace(&name, &rows, &bytes)?;
                }
                if !appended.is_empty() {
                    self.store.append(&name, appended)?;
                }
                Ok(())
            })();
            if let Err(e) = written {
                // Replacing the same rows again is harmless; the append, the last step, did not happen.
                held.insert(name, delta);
                return Err(e);
            }
        }
        Ok(())
    }
}

fn dropped(name: &str) -> Error {
    Error::NotFound(format!("array '{name}' (dropped in this batch)"))
}
