//! The array store: a directory of named N-d arrays, a catalog that names them, and one data file per
//! array (see [`super::file`] for what makes in-place changes safe).
//!
//! The catalog (`arrays.json`: each array's dtype, row shape and data file) changes only when an
//! array is created, overwritten, dropped or loses rows, and always by writing a new catalog beside
//! the old one and renaming it over it; an array's row count lives in its data file, so appends and
//! replacements never touch the catalog. Writers take an exclusive `flock` on `.lock` for each change;
//! readers take no lock.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::buffer::{Buffer, MutableBuffer};
use memmap2::{Advice, Mmap, MmapMut};
use serde::{Deserialize, Serialize};

use super::dtype::DType;
use super::file::{io, DataFile, HEADER};
use crate::{Error, Result};

const CATALOG: &str = "arrays.json";
const LOCK: &str = ".lock";
const FORMAT: u32 = 1;

/// How a store writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// Sync data and metadata to the device before a change returns, so that it survives power loss,
    /// not just a killed process.
    pub durable: bool,
    /// Open without the right to change anything (and without creating the directory).
    pub read_only: bool,
}

/// What an array is: its dtype and shape (rows first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

impl ArrayInfo {
    pub fn rows(&self) -> u64 {
        self.shape[0]
    }

    /// The shape of one row (empty for a 1-d array).
    pub fn row_shape(&self) -> &[u64] {
        &self.shape[1..]
    }

    /// Elements per row.
    pub fn row_elements(&self) -> usize {
        self.row_shape().iter().product::<u64>() as usize
    }

    pub fn row_bytes(&self) -> usize {
        self.row_elements() * self.dtype.size()
    }
}

/// An array copied into memory: its description and its rows' bytes (64-byte aligned).
#[derive(Debug, Clone)]
pub struct ArrayData {
    pub info: ArrayInfo,
    pub bytes: Buffer,
}

/// A memory-mapped view of an array's rows as they were counted when the view was made. Rows
/// replaced in place later show through (as with numpy's memmap); rows appended later do not.
#[derive(Debug, Clone)]
pub struct LazyArray {
    pub info: ArrayInfo,
    map: Arc<Mmap>,
}

impl LazyArray {
    /// The rows' bytes, back to back.
    pub fn bytes(&self) -> &[u8] {
        let len = self.info.rows() as usize * self.info.row_bytes();
        &self.map[HEADER..HEADER + len]
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Catalog {
    format: u32,
    next_file: u64,
    arrays: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    dtype: String,
    row_shape: Vec<u64>,
    file: String,
}

impl Entry {
    fn of(info: &ArrayInfo, file: String) -> Entry {
        Entry { dtype: info.dtype.name().to_string(), row_shape: info.row_shape().to_vec(), file }
    }

    fn dtype(&self) -> Result<DType> {
        DType::parse(&self.dtype)
    }

    fn row_bytes(&self) -> Result<usize> {
        let values = self.row_shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        values
            .and_then(|v| usize::try_from(v).ok())
            .and_then(|v| v.checked_mul(self.dtype().ok()?.size()))
            .ok_or_else(|| Error::Corrupt(format!("rows of shape {:?} are too large", self.row_shape)))
    }
}

/// Whether `file` is a name the store gives its data files: `data-<digits>.hsa`.
fn is_data_file_name(file: &str) -> bool {
    file.strip_prefix("data-")
        .and_then(|rest| rest.strip_suffix(".hsa"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What identifies one version of the catalog file: a rename gives it a new inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i64,
}

struct State {
    catalog: Catalog,
    stamp: Option<Stamp>,
    /// Open data files by file name.
    files: HashMap<String, DataFile>,
}

/// A directory of named arrays. Every method may be called from any thread; other processes may
/// read the same directory while one writes.
pub struct ArrayStore {
    root: PathBuf,
    options: StoreOptions,
    lock_file: File,
    state: Mutex<State>,
}

impl std::fmt::Debug for ArrayStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayStore").field("root", &self.root).field("options", &self.options).finish()
    }
}

/// Holds the writer lock of a store until dropped.
struct WriterLock<'a>(&'a File);

impl<'a> WriterLock<'a> {
    fn take(file: &'a File, root: &Path, wait: bool) -> Result<Option<Self>> {
        let op = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
        // SAFETY: flock on a descriptor this store owns for its whole life.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(Some(WriterLock(file)));
        }
        let e = std::io::Error::last_os_error();
        if !wait && e.kind() == std::io::ErrorKind::WouldBlock {
            return Ok(None);
        }
        Err(io(&root.join(LOCK), e))
    }
}

impl Drop for WriterLock<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `take`; unlocking a held lock cannot fail in a way we could act on.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn check_row_shape(row_shape: &[u64]) -> Result<()> {
    if let Some(d) = row_shape.iter().position(|&d| d == 0) {
        return Err(Error::invalid(format!("dimension {} of the shape is 0: only the row count may be 0", d + 1)));
    }
    row_shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d).filter(|&n| n <= u32::MAX as u64))
        .ok_or_else(|| Error::invalid(format!("rows of shape {row_shape:?} are too large")))?;
    Ok(())
}

pub(crate) fn whole_rows(info: &ArrayInfo, bytes: usize, what: &str) -> Result<u64> {
    let width = info.row_bytes();
    if !bytes.is_multiple_of(width) {
        let row =
            if info.row_shape().is_empty() { "values".to_string() } else { format!("rows of {:?}", info.row_shape()) };
        return Err(Error::invalid(format!(
            "{what} '{}': {bytes} bytes are not whole {row} {} ({width} bytes each)",
            info.name, info.dtype
        )));
    }
    Ok((bytes / width) as u64)
}

/// The description of a new array `name` with rows of `row_shape` from `parts`, checked.
pub(crate) fn new_array(name: &str, dtype: DType, row_shape: &[u64], parts: &[&[u8]]) -> Result<ArrayInfo> {
    crate::storage::names::check_name("array", name)?;
    check_row_shape(row_shape)?;
    let mut info = ArrayInfo { name: name.to_string(), dtype, shape: [&[0], row_shape].concat() };
    for part in parts {
        info.shape[0] += whole_rows(&info, part.len(), "save")?;
    }
    Ok(info)
}

/// Checks that every row index is below the array's row count.
pub(crate) fn check_indices(info: &ArrayInfo, indices: &[u64]) -> Result<()> {
    match indices.iter().find(|&&i| i >= info.rows()) {
        Some(bad) => {
            Err(Error::invalid(format!("row {bad} is out of range for array '{}' of {} rows", info.name, info.rows())))
        }
        None => Ok(()),
    }
}

/// Copies of at least this many bytes go to memory backed by huge pages where the kernel allows them:
/// a fresh 4 KiB-page buffer costs a page fault per 4 KiB, which made a full load 3x slower than the
/// copy itself (numpy advises huge pages for its large arrays for the same reason).
const HUGE_PAGES_FROM: usize = 4 << 20;

/// A new aligned buffer of `len` bytes that `fill` writes.
fn buffer_with(len: usize, fill: impl FnOnce(&mut [u8])) -> Buffer {
    if len >= HUGE_PAGES_FROM {
        if let Ok(mut map) = MmapMut::map_anon(len) {
            let _ = map.advise(Advice::HugePage);
            fill(&mut map[..]);
            let ptr = NonNull::new(map.as_mut_ptr()).expect("mappings are not null");
            // SAFETY: `ptr..ptr + len` is the mapping, which the owner passed along keeps alive and
            // which nothing writes after this point.
            return unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(map)) };
        }
    }
    let mut out = MutableBuffer::from_len_zeroed(len);
    fill(out.as_slice_mut());
    out.into()
}

/// Copies `data` into a new aligned buffer.
fn copy_of(data: &[u8]) -> Buffer {
    buffer_with(data.len(), |out| out.copy_from_slice(data))
}

/// Copies the given rows out of `data` (rows of `width` bytes) into one aligned buffer.
fn gather(data: &[u8], width: usize, rows: impl ExactSizeIterator<Item = u64>) -> Buffer {
    buffer_with(rows.len() * width, |out| {
        for (row, to) in rows.zip(out.chunks_exact_mut(width)) {
            let at = row as usize * width;
            to.copy_from_slice(&data[at..at + width]);
        }
    })
}

impl ArrayStore {
    /// Opens the store in `root`, creating it when absent (unless read-only). A writable open also
    /// finishes any change a killed writer left committed but unapplied, and removes files that no
    /// catalog version names.
    pub fn open(root: impl AsRef<Path>, options: StoreOptions) -> Result<ArrayStore> {
        let root = root.as_ref().to_path_buf();
        if !options.read_only {
            std::fs::create_dir_all(&root).map_err(|e| io(&root, e))?;
        } else if !root.join(CATALOG).exists() {
            return Err(Error::NotFound(format!("array store {}", root.display())));
        }
        let lock_path = root.join(LOCK);
        let lock_file = if options.read_only {
            File::open(&lock_path)
        } else {
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path)
        }
        .map_err(|e| io(&lock_path, e))?;
        let empty = Catalog { format: FORMAT, next_file: 1, arrays: BTreeMap::new() };
        let store = ArrayStore {
            root,
            options,
            lock_file,
            state: Mutex::new(State { catalog: empty, stamp: None, files: HashMap::new() }),
        };
        if !options.read_only {
            if let Some(_lock) = WriterLock::take(&store.lock_file, &store.root, false)? {
                let mut state = store.state()?;
                if store.root.join(CATALOG).exists() {
                    store.refresh(&mut state)?;
                } else {
                    let catalog = state.catalog.clone();
                    store.write_catalog(&mut state, catalog)?;
                }
                store.recover_all(&mut state)?;
            }
        }
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn options(&self) -> StoreOptions {
        self.options
    }

    fn state(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::Internal("array store state poisoned by an earlier panic".into()))
    }

    fn catalog_path(&self) -> PathBuf {
        self.root.join(CATALOG)
    }

    /// Rereads the catalog when another writer replaced it.
    fn refresh(&self, state: &mut State) -> Result<()> {
        let path = self.catalog_path();
        let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                Error::NotFound(format!("array store {} (no {CATALOG})", self.root.display()))
            }
            _ => io(&path, e),
        })?;
        let stamp =
            Stamp { ino: meta.ino(), size: meta.size(), mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec() };
        if state.stamp == Some(stamp) {
            return Ok(());
        }
        let text = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let catalog: Catalog = serde_json::from_slice(&text)
            .map_err(|e| Error::Corrupt(format!("array store catalog {}: {e}", path.display())))?;
        if catalog.format != FORMAT {
            return Err(Error::Corrupt(format!(
                "array store catalog {}: unknown format {}",
                path.display(),
                catalog.format
            )));
        }
        // The catalog names the files a drop deletes and the sizes every row is read with: only the
        // store's own file names and shapes that fit are taken from it.
        for (name, entry) in &catalog.arrays {
            let checked = entry.dtype().and_then(|_| check_row_shape(&entry.row_shape)).and_then(|_| {
                if is_data_file_name(&entry.file) {
                    Ok(())
                } else {
                    Err(Error::invalid(format!(
                        "file {:?} is not a data file name of this store (data-<n>.hsa)",
                        entry.file
                    )))
                }
            });
            checked.map_err(|e| Error::Corrupt(format!("array {name:?} in {}: {e}", path.display())))?;
        }
        state.files.retain(|file, _| catalog.arrays.values().any(|e| &e.file == file));
        state.catalog = catalog;
        state.stamp = Some(stamp);
        Ok(())
    }

    fn write_catalog(&self, state: &mut State, catalog: Catalog) -> Result<()> {
        let path = self.catalog_path();
        let tmp = self.root.join(format!("{CATALOG}.tmp-{}", uuid::Uuid::new_v4()));
        let text = serde_json::to_vec_pretty(&catalog).expect("catalogs serialize");
        let written = (|| {
            let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            std::io::Write::write_all(&mut file, &text)?;
            traced!(Op::Write(tmp.clone(), text.clone()));
            if self.options.durable {
                file.sync_all()?;
                traced!(Op::SyncFile(tmp.clone()));
            }
            std::fs::rename(&tmp, &path)?;
            traced!(Op::Rename(tmp.clone(), path.clone()));
            if self.options.durable {
                File::open(&self.root)?.sync_all()?;
                traced!(Op::SyncDir(self.root.clone()));
            }
            Ok(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&path, e));
        }
        state.catalog = catalog;
        state.stamp = None;
        self.refresh(state)
    }

    fn check_writable(&self) -> Result<()> {
        if self.options.read_only {
            return Err(Error::invalid(format!("array store {} was opened read-only", self.root.display())));
        }
        Ok(())
    }

    /// Runs a change under the writer lock over a fresh catalog.
    fn change<T>(&self, f: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        self.check_writable()?;
        let mut state = self.state()?;
        let _lock = WriterLock::take(&self.lock_file, &self.root, true)?;
        self.refresh(&mut state)?;
        f(&mut state)
    }

    /// Runs a read over a fresh catalog; retried when a writer swapped the array's data file away
    /// between reading the catalog and opening the file.
    fn read<T>(&self, f: impl Fn(&mut State) -> Result<T>) -> Result<T> {
        let mut state = self.state()?;
        let mut last = None;
        for _ in 0..10 {
            self.refresh(&mut state)?;
            match f(&mut state) {
                Err(Error::NotFound(what)) if what.starts_with("array data file") => {
                    state.stamp = None;
                    last = Some(Error::NotFound(what));
                }
                other => return other,
            }
        }
        Err(last.expect("the loop ran"))
    }

    fn recover_all(&self, state: &mut State) -> Result<()> {
        let names: Vec<String> = state.catalog.arrays.keys().cloned().collect();
        for name in names {
            self.file(state, &name)?.recover()?;
        }
        // Files no catalog names: the leftovers of writers killed mid-change.
        let known: Vec<String> = state.catalog.arrays.values().map(|e| e.file.clone()).collect();
        let entries = std::fs::read_dir(&self.root).map_err(|e| io(&self.root, e))?;
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let data = file_name.strip_suffix(".journal").unwrap_or(&file_name);
            let ours = (data.starts_with("data-") && data.ends_with(".hsa"))
                || file_name.starts_with(&format!("{CATALOG}.tmp-"));
            if ours && !known.iter().any(|k| k == data) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    fn entry<'s>(state: &'s State, name: &str) -> Result<&'s Entry> {
        state.catalog.arrays.get(name).ok_or_else(|| Error::NotFound(format!("array '{name}'")))
    }

    /// The open data file of array `name`.
    fn file<'s>(&self, state: &'s mut State, name: &str) -> Result<&'s mut DataFile> {
        let entry = Self::entry(state, name)?;
        let (file, width) = (entry.file.clone(), entry.row_bytes()?);
        if !state.files.contains_key(&file) {
            let opened = DataFile::open(&self.root.join(&file), width, !self.options.read_only)?;
            state.files.insert(file.clone(), opened);
        }
        Ok(state.files.get_mut(&file).expect("just inserted"))
    }

    fn info_locked(&self, state: &mut State, name: &str) -> Result<ArrayInfo> {
        let entry = Self::entry(state, name)?.clone();
        let rows = self.file(state, name)?.rows();
        let mut shape = vec![rows];
        shape.extend_from_slice(&entry.row_shape);
        Ok(ArrayInfo { name: name.to_string(), dtype: entry.dtype()?, shape })
    }

    /// The names of the arrays, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        self.read(|state| Ok(state.catalog.arrays.keys().cloned().collect()))
    }

    pub fn contains(&self, name: &str) -> Result<bool> {
        self.read(|state| Ok(state.catalog.arrays.contains_key(name)))
    }

    /// The dtype and current shape of array `name`.
    pub fn info(&self, name: &str) -> Result<ArrayInfo> {
        self.read(|state| self.info_locked(state, name))
    }

    /// Creates array `name` (replacing any array of that name) with `shape` (rows first) and `bytes`
    /// (the elements in row-major order, little-endian).
    pub fn save(&self, name: &str, dtype: DType, shape: &[u64], bytes: &[u8]) -> Result<ArrayInfo> {
        if shape.is_empty() {
            return Err(Error::invalid(format!("array {name}: a shape needs at least one dimension (the rows)")));
        }
        let info = new_array(name, dtype, &shape[1..], &[bytes])?;
        if info.rows() != shape[0] {
            return Err(Error::invalid(format!(
                "save {name}: shape {shape:?} has {} rows but {} bytes hold {}",
                shape[0],
                bytes.len(),
                info.rows()
            )));
        }
        self.change(|state| self.save_locked(state, &info, &[bytes]))
    }

    /// Creates array `name` (replacing any array of that name) with rows of `row_shape` from `parts`
    /// (runs of whole rows, in order), as one change.
    pub fn save_parts(&self, name: &str, dtype: DType, row_shape: &[u64], parts: &[&[u8]]) -> Result<ArrayInfo> {
        let info = new_array(name, dtype, row_shape, parts)?;
        self.change(|state| self.save_locked(state, &info, parts))
    }

    fn save_locked(&self, state: &mut State, info: &ArrayInfo, parts: &[&[u8]]) -> Result<ArrayInfo> {
        let mut catalog = state.catalog.clone();
        let (file, path) = self.new_data_file(&mut catalog, info, parts)?;
        let old = catalog.arrays.insert(info.name.clone(), Entry::of(info, file));
        if let Err(e) = self.write_catalog(state, catalog) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        if let Some(old) = old {
            self.remove_data_file(&old.file);
        }
        Ok(info.clone())
    }

    /// Writes a data file for `info` holding `parts`, under the next file name of `catalog`.
    fn new_data_file(&self, catalog: &mut Catalog, info: &ArrayInfo, parts: &[&[u8]]) -> Result<(String, PathBuf)> {
        let file = format!("data-{}.hsa", catalog.next_file);
        catalog.next_file += 1;
        let path = self.root.join(&file);
        DataFile::create(&path, info.row_bytes(), parts, self.options.durable)?;
        Ok((file, path))
    }

    /// Commits several arrays' new contents (`None`: dropped) with one catalog replacement, for
    /// [`super::batch::ArrayBatch::flush`].
    pub(crate) fn commit_changes(&self, changes: &[(String, Option<(&ArrayInfo, &[u8])>)]) -> Result<()> {
        self.change(|state| {
            let mut catalog = state.catalog.clone();
            let mut created = Vec::new();
            let mut replaced = Vec::new();
            let written = (|| {
                for (name, change) in changes {
                    let old = match change {
                        Some((info, bytes)) => {
                            let (file, path) = self.new_data_file(&mut catalog, info, &[bytes])?;
                            created.push(path);
                            catalog.arrays.insert(name.clone(), Entry::of(info, file))
                        }
                        None => catalog.arrays.remove(name),
                    };
                    replaced.extend(old.map(|e| e.file));
                }
                self.write_catalog(state, catalog)
            })();
            if let Err(e) = written {
                for path in created {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
            for file in replaced {
                self.remove_data_file(&file);
            }
            Ok(())
        })
    }

    fn remove_data_file(&self, file: &str) {
        let path = self.root.join(file);
        let journal = PathBuf::from(format!("{}.journal", path.display()));
        if std::fs::remove_file(&journal).is_ok() {
            traced!(Op::Remove(journal));
        }
        if std::fs::remove_file(&path).is_ok() {
            traced!(Op::Remove(path));
        }
    }

    /// Copies array `name` into memory.
    pub fn load(&self, name: &str) -> Result<ArrayData> {
        self.read_rows(
            name,
            |info, data, _| Ok(ArrayData { info: info.clone(), bytes: copy_of(data) }),
            |out, info, row, new| overwrite_row(&mut out.bytes, info.row_bytes(), row as usize, new),
        )
    }

    /// A memory-mapped view of array `name`: no copy is made.
    pub fn lazy(&self, name: &str) -> Result<LazyArray> {
        self.read(|state| {
            let info = self.info_locked(state, name)?;
            let map = self.file(state, name)?.mapping(info.rows())?;
            Ok(LazyArray { info, map })
        })
    }

    /// Copies rows `indices` (in that order, repeats allowed) of array `name`.
    pub fn get_rows(&self, name: &str, indices: &[u64]) -> Result<ArrayData> {
        self.read_rows(
            name,
            |info, data, _| {
                check_indices(info, indices)?;
                let mut info = info.clone();
                info.shape[0] = indices.len() as u64;
                Ok(ArrayData { bytes: gather(data, info.row_bytes(), indices.iter().copied()), info })
            },
            |out, info, row, new| {
                for (at, _) in indices.iter().enumerate().filter(|(_, &i)| i == row) {
                    overwrite_row(&mut out.bytes, info.row_bytes(), at, new);
                }
            },
        )
    }

    /// Copies rows `start..end` of array `name`.
    pub fn slice(&self, name: &str, start: u64, end: u64) -> Result<ArrayData> {
        self.read_rows(
            name,
            |info, data, _| {
                if start > end || end > info.rows() {
                    return Err(Error::invalid(format!(
                        "rows {start}..{end} are out of range for array '{name}' of {} rows",
                        info.rows()
                    )));
                }
                let width = info.row_bytes();
                let mut info = info.clone();
                info.shape[0] = end - start;
                Ok(ArrayData { bytes: copy_of(&data[start as usize * width..end as usize * width]), info })
            },
            |out, info, row, new| {
                if (start..end).contains(&row) {
                    overwrite_row(&mut out.bytes, info.row_bytes(), (row - start) as usize, new);
                }
            },
        )
    }

    /// Runs `read` over a consistent view of the array's rows: its description, the rows' bytes and
    /// the rows a replace is still writing (which `overlay` then gets with their new bytes).
    pub(crate) fn read_rows<T>(
        &self,
        name: &str,
        read: impl Fn(&ArrayInfo, &[u8], &[u64]) -> Result<T>,
        overlay: impl Fn(&mut T, &ArrayInfo, u64, &[u8]),
    ) -> Result<T> {
        self.read(|state| {
            let info = self.info_locked(state, name)?;
            let file = self.file(state, name)?;
            file.read_consistent(
                |rows, data, replacing| {
                    let mut now = info.clone();
                    now.shape[0] = rows;
                    read(&now, data, replacing)
                },
                |out, row, new| overlay(out, &info, row, new),
            )
        })
    }

    /// Appends rows (whole rows of the array's dtype and row shape) to array `name`; returns the new
    /// row count.
    pub fn append(&self, name: &str, bytes: &[u8]) -> Result<u64> {
        self.change(|state| self.append_locked(state, name, &[bytes]))
    }

    fn append_locked(&self, state: &mut State, name: &str, parts: &[&[u8]]) -> Result<u64> {
        let info = self.info_locked(state, name)?;
        for part in parts {
            whole_rows(&info, part.len(), "append to")?;
        }
        let file = self.file(state, name)?;
        file.recover()?;
        file.append(parts, self.options.durable)
    }

    /// Moves arrays `parts` of `staging` (what engine tasks wrote, one array each) into array `name`
    /// as one change: appended in order, or making the array anew when `overwrite` or when there is
    /// none. The parts must agree on dtype and row shape, with each other and with the array they
    /// join; nothing changes otherwise. Returns the array as it then is.
    pub fn commit_parts(
        &self,
        name: &str,
        staging: &ArrayStore,
        parts: &[String],
        overwrite: bool,
    ) -> Result<ArrayInfo> {
        let views = parts.iter().map(|p| staging.lazy(p)).collect::<Result<Vec<_>>>()?;
        let Some(first) = views.first().map(|v| v.info.clone()) else {
            return Err(Error::invalid(format!("commit to array '{name}': no parts to commit")));
        };
        if let Some(odd) = views.iter().find(|v| v.info.dtype != first.dtype || v.info.row_shape() != first.row_shape())
        {
            return Err(Error::invalid(format!(
                "commit to array '{name}': parts disagree: rows of {} {:?}, then of {} {:?}",
                first.dtype,
                first.row_shape(),
                odd.info.dtype,
                odd.info.row_shape()
            )));
        }
        let bytes: Vec<&[u8]> = views.iter().map(|v| v.bytes()).collect();
        let new = new_array(name, first.dtype, first.row_shape(), &bytes)?;
        self.change(|state| {
            if overwrite || !state.catalog.arrays.contains_key(name) {
                return self.save_locked(state, &new, &bytes);
            }
            let info = self.info_locked(state, name)?;
            check_fits(&info, first.dtype, first.row_shape())?;
            self.append_locked(state, name, &bytes)?;
            self.info_locked(state, name)
        })
    }

    /// Replaces rows `indices` of array `name` in place with `bytes` (one row per index, in order; a
    /// repeated index takes its last row). Nothing changes when an index is out of range.
    pub fn replace(&self, name: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        self.change(|state| {
            let info = self.info_locked(state, name)?;
            let rows = whole_rows(&info, bytes.len(), "replace rows of")?;
            if rows != indices.len() as u64 {
                return Err(Error::invalid(format!(
                    "replace rows of {name}: {} indices but {rows} rows",
                    indices.len()
                )));
            }
            check_indices(&info, indices)?;
            if indices.is_empty() {
                return Ok(());
            }
            self.file(state, name)?.replace(indices, bytes, self.options.durable)
        })
    }

    /// Starts a replace and stops it as a killed writer would (tests of recovery).
    #[cfg(test)]
    pub(crate) fn replace_killed(
        &self,
        name: &str,
        indices: &[u64],
        bytes: &[u8],
        stop: super::file::KilledAt,
    ) -> Result<()> {
        self.change(|state| self.file(state, name)?.replace_killed(indices, bytes, stop))
    }

    /// Drops array `name`.
    pub fn drop_array(&self, name: &str) -> Result<()> {
        self.change(|state| {
            let mut catalog = state.catalog.clone();
            let entry = catalog.arrays.remove(name).ok_or_else(|| Error::NotFound(format!("array '{name}'")))?;
            self.write_catalog(state, catalog)?;
            self.remove_data_file(&entry.file);
            Ok(())
        })
    }

    /// Drops rows `indices` (repeats allowed) of array `name`; the rows after them move up. Returns the
    /// new row count. The array is rewritten into a new data file, so readers of the old rows keep them.
    pub fn drop_rows(&self, name: &str, indices: &[u64]) -> Result<u64> {
        self.change(|state| {
            let info = self.info_locked(state, name)?;
            check_indices(&info, indices)?;
            let mut dropped = roaring::RoaringTreemap::new();
            dropped.extend(indices.iter().copied());
            let file = self.file(state, name)?;
            file.recover()?;
            let map = file.mapping(info.rows())?;
            let data = &map[HEADER..HEADER + info.rows() as usize * info.row_bytes()];
            let kept: Vec<u64> = (0..info.rows()).filter(|r| !dropped.contains(*r)).collect();
            let bytes = gather(data, info.row_bytes(), kept.iter().copied());
            let mut shape = info.shape.clone();
            shape[0] = kept.len() as u64;
            let new = ArrayInfo { shape, ..info };
            self.save_locked(state, &new, &[&bytes])?;
            Ok(new.rows())
        })
    }
}

/// Checks that rows of `dtype` and `row_shape` fit the array `info` describes.
pub(crate) fn check_fits(info: &ArrayInfo, dtype: DType, row_shape: &[u64]) -> Result<()> {
    if info.dtype != dtype || info.row_shape() != row_shape {
        return Err(Error::invalid(format!(
            "rows of {dtype} {row_shape:?} do not fit array '{}' of {} {:?}",
            info.name,
            info.dtype,
            info.row_shape()
        )));
    }
    Ok(())
}

/// Sets row `at` of `bytes` (rows of `width`) to `new`.
fn overwrite_row(bytes: &mut Buffer, width: usize, at: usize, new: &[u8]) {
    let mut owned = std::mem::replace(bytes, Buffer::from_vec(Vec::<u8>::new()))
        .into_mutable()
        .unwrap_or_else(|shared| MutableBuffer::from(shared.as_slice().to_vec()));
    owned.as_slice_mut()[at * width..(at + 1) * width].copy_from_slice(new);
    *bytes = owned.into();
}

impl ArrayStore {
    /// Array `name` as Arrow batches of up to `batch_rows` rows each (see [`super::batches`]), each
    /// batch read consistently when it is asked for.
    pub fn stream(self: &Arc<Self>, name: &str, batch_rows: usize) -> Result<crate::scan::BatchStream> {
        // The rows counted now; rows appended later are not streamed (as with a lazy view).
        let rows = self.info(name)?.rows();
        self.stream_rows(name, 0, rows, batch_rows, false)
    }

    /// Rows `start..end` of array `name` as Arrow batches of up to `batch_rows` rows each, in the
    /// engines' types when `engine` (see [`super::batches::to_engine`]): one split of an engine scan.
    pub fn stream_rows(
        self: &Arc<Self>,
        name: &str,
        start: u64,
        end: u64,
        batch_rows: usize,
        engine: bool,
    ) -> Result<crate::scan::BatchStream> {
        let info = self.info(name)?;
        if start > end || end > info.rows() {
            return Err(Error::invalid(format!(
                "rows {start}..{end} are out of range for array '{name}' of {} rows",
                info.rows()
            )));
        }
        let schema = if engine {
            super::batches::engine_schema(info.dtype, info.row_shape())
        } else {
            super::batches::schema(info.dtype, info.row_shape())
        };
        let (store, name, batch_rows) = (Arc::clone(self), name.to_string(), batch_rows.max(1) as u64);
        let mut next = start;
        let batches = std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let stop = (next + batch_rows).min(end);
            let batch =
                store.slice(&name, next, stop).and_then(|a| super::batches::to_batch(&a.info, next..stop, a.bytes));
            next = stop;
            Some(if engine { batch.and_then(super::batches::to_engine) } else { batch })
        })
        .map(|r| r.map_err(|e| arrow::error::ArrowError::ExternalError(Box::new(e))));
        Ok(Box::new(arrow::record_batch::RecordBatchIterator::new(batches, schema)))
    }
}
