//! One array's data file: a header page, then the rows back to back; and the redo journal that makes
//! replacing rows in place atomic.
//!
//! Layout: page 0 holds `b"HSARR001"`, the committed row count (`u64` at byte 8), a change sequence
//! (`u64` at byte 16, odd while rows are being replaced in place) and the row width in bytes (`u64` at
//! byte 24); rows start at byte 4096, so the data region maps page-aligned. The row count and the
//! sequence are read and written as atomics through a shared mapping of page 0: an 8-byte aligned
//! store is never torn by a killed process, and every process that maps the page sees it at once.
//!
//! - Append writes the new rows past the committed end, then stores the new count (the commit). A
//!   writer killed before that leaves bytes past the end that nobody reads and the next append
//!   overwrites.
//! - Replace first writes a journal beside the file (`<file>.journal`: the body, then its header, so
//!   a header is only ever seen over a whole body), then marks the sequence odd, writes the rows in
//!   place, marks it even and clears the journal. A valid journal is a committed replace: the next
//!   writer replays it (idempotently) before doing anything else, and a reader that finds the
//!   sequence odd lays the journal over what it read.
//! - Readers use the sequence as a seqlock: read it, copy, read it again, retry when it moved.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions, MmapRaw};

use crate::{Error, Result};

/// Bytes before the first row.
pub const HEADER: usize = 4096;
const MAGIC: &[u8; 8] = b"HSARR001";
const ROWS_AT: usize = 8;
const SEQ_AT: usize = 16;
const WIDTH_AT: usize = 24;

const JOURNAL_MAGIC: &[u8; 8] = b"HSJRN001";
/// Journal header: magic, entry count, row width, body length.
const JOURNAL_HEADER: usize = 32;

/// How many times a reader retries a copy that a writer changed under it before giving up.
const READ_ATTEMPTS: usize = 1000;

/// Writes `parts` back to back from byte `at` of `file`; returns how many bytes that was.
fn write_parts(file: &File, path: &Path, mut at: u64, parts: &[&[u8]]) -> Result<usize> {
    let mut len = 0;
    for part in parts {
        file.write_all_at(part, at).map_err(|e| io(path, e))?;
        traced!(Op::WriteAt(path.to_owned(), at, part.to_vec()));
        at += part.len() as u64;
        len += part.len();
    }
    Ok(len)
}

pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), source }
}

/// Where a test stops a replace, as a killed writer would.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KilledAt {
    JournalBody,
    JournalCommitted,
    Applying(usize),
}

/// An open data file.
pub(crate) struct DataFile {
    path: PathBuf,
    file: File,
    writable: bool,
    row_bytes: usize,
    /// Page 0, shared with every other process that has the file open.
    header: MmapRaw,
    /// The file from byte 0 through the rows it covered when mapped; remapped as rows are appended.
    map: Arc<Mmap>,
    /// The replace journal, kept open once it exists (a replace used to open it three times).
    journal: Option<File>,
}

impl DataFile {
    /// Writes a new data file holding `parts` (each whole rows of `row_bytes`, back to back) at
    /// `path`, which must not exist.
    pub fn create(path: &Path, row_bytes: usize, parts: &[&[u8]], durable: bool) -> Result<()> {
        debug_assert!(row_bytes > 0 && parts.iter().all(|p| p.len().is_multiple_of(row_bytes)));
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let file = OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| io(path, e))?;
        let mut header = vec![0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[ROWS_AT..ROWS_AT + 8].copy_from_slice(&((len / row_bytes) as u64).to_le_bytes());
        header[WIDTH_AT..WIDTH_AT + 8].copy_from_slice(&(row_bytes as u64).to_le_bytes());
        file.write_all_at(&header, 0).map_err(|e| io(path, e))?;
        traced!(Op::WriteAt(path.to_owned(), 0, header.clone()));
        write_parts(&file, path, HEADER as u64, parts)?;
        if durable {
            file.sync_all().map_err(|e| io(path, e))?;
            traced!(Op::SyncFile(path.to_owned()));
        }
        Ok(())
    }

    /// Opens the data file at `path`, checking that it is one and holds rows of `row_bytes`.
    pub fn open(path: &Path, row_bytes: usize, writable: bool) -> Result<DataFile> {
        let file = OpenOptions::new().read(true).write(writable).open(path).map_err(|e| match e.kind() {
            IoKind::NotFound => Error::NotFound(format!("array data file {}", path.display())),
            _ => io(path, e),
        })?;
        let len = file.metadata().map_err(|e| io(path, e))?.len();
        let corrupt = |what: &str| Error::Corrupt(format!("array data file {}: {what}", path.display()));
        if len < HEADER as u64 {
            return Err(corrupt("shorter than its header"));
        }
        let options = {
            let mut o = MmapOptions::new();
            o.len(HEADER);
            o
        };
        // SAFETY: page 0 is only ever changed through the atomics below (by this and other processes);
        // the mapping lives as long as `self`.
        let header = if writable { options.map_raw(&file) } else { options.map_raw_read_only(&file) }
            .map_err(|e| io(path, e))?;
        let mut data_file = DataFile {
            path: path.to_path_buf(),
            file,
            writable,
            row_bytes,
            header,
            map: Arc::new(
                MmapOptions::new().len(1).map_anon().and_then(|m| m.make_read_only()).map_err(|e| io(path, e))?,
            ),
            journal: None,
        };
        // SAFETY: the header page is mapped and at least HEADER bytes long.
        let magic = unsafe { std::slice::from_raw_parts(data_file.header.as_ptr(), 8) };
        if magic != MAGIC {
            return Err(corrupt("not a HyperStream array file"));
        }
        let width = data_file.word(WIDTH_AT).load(Ordering::Acquire);
        if width != row_bytes as u64 {
            return Err(corrupt(&format!("rows are {width} bytes wide but the catalog says {row_bytes}")));
        }
        let rows = data_file.rows();
        data_file.remap(rows)?;
        Ok(data_file)
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is a multiple of 8 inside the page-aligned header mapping, which lives as long
        // as `self`; every writer of these words (any process) writes them as atomics.
        unsafe { &*(self.header.as_ptr().add(at) as *const AtomicU64) }
    }

    /// The committed row count.
    pub fn rows(&self) -> u64 {
        self.word(ROWS_AT).load(Ordering::Acquire)
    }

    fn seq(&self) -> u64 {
        self.word(SEQ_AT).load(Ordering::Acquire)
    }

    /// The open replace journal; created when `create` (writers only), else `None` while there is none.
    fn journal(&mut self, create: bool) -> Result<Option<&File>> {
        if self.journal.is_none() {
            let path = self.journal_path();
            let opened = OpenOptions::new().read(true).write(self.writable).create(create).truncate(false).open(&path);
            match opened {
                Ok(file) => {
                    traced!(Op::WriteAt(path.clone(), 0, Vec::new())); // made, or opened as it is
                    self.journal = Some(file)
                }
                Err(e) if e.kind() == IoKind::NotFound && !create => return Ok(None),
                Err(e) => return Err(io(&path, e)),
            }
        }
        Ok(self.journal.as_ref())
    }

    fn journal_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".journal");
        PathBuf::from(p)
    }

    fn mapped_rows(&self) -> u64 {
        ((self.map.len().saturating_sub(HEADER)) / self.row_bytes) as u64
    }

    /// Maps the header and the first `rows` rows, once the file holds them all: a row count from a
    /// damaged or crafted header never makes a mapping past the file's end (whose pages would fault
    /// when read) nor wraps around.
    fn remap(&mut self, rows: u64) -> Result<()> {
        let len = rows
            .checked_mul(self.row_bytes as u64)
            .and_then(|bytes| bytes.checked_add(HEADER as u64))
            .filter(|&len| usize::try_from(len).is_ok());
        let present = self.file.metadata().map_err(|e| io(&self.path, e))?.len();
        let Some(len) = len.filter(|&len| len <= present) else {
            return Err(Error::Corrupt(format!(
                "array data file {}: {rows} rows of {} bytes committed but only {present} bytes present",
                self.path.display(),
                self.row_bytes
            )));
        };
        let len = len as usize;
        // SAFETY: rows below the committed count are only changed in place by replace, which readers
        // detect through the sequence; the file is never truncated below a committed length.
        let map = unsafe { MmapOptions::new().len(len).map(&self.file) }.map_err(|e| io(&self.path, e))?;
        self.map = Arc::new(map);
        Ok(())
    }

    /// A mapping covering at least the first `rows` rows (remapped when appends outgrew it).
    pub fn mapping(&mut self, rows: u64) -> Result<Arc<Mmap>> {
        if self.mapped_rows() < rows {
            self.remap(rows)?;
        }
        Ok(Arc::clone(&self.map))
    }

    /// Runs `read` over the rows as they stand (row count, the rows' bytes, and the sorted rows a
    /// committed replace is still writing) until it ran without a replace changing rows under it; the
    /// new values of those rows are then laid over its result by `overlay` (row, row bytes).
    pub fn read_consistent<T>(
        &mut self,
        mut read: impl FnMut(u64, &[u8], &[u64]) -> Result<T>,
        mut overlay: impl FnMut(&mut T, u64, &[u8]),
    ) -> Result<T> {
        for attempt in 0..READ_ATTEMPTS {
            let before = self.seq();
            let rows = self.rows();
            let journal = if before % 2 == 1 { self.read_journal()? } else { None };
            let mut replacing: Vec<u64> = journal.as_ref().map(|(i, _)| i.clone()).unwrap_or_default();
            replacing.sort_unstable();
            replacing.dedup();
            let map = self.mapping(rows)?;
            let data = &map[HEADER..HEADER + rows as usize * self.row_bytes];
            let mut out = read(rows, data, &replacing)?;
            // Orders the reads above before the sequence is read again (the seqlock's closing check).
            fence(Ordering::Acquire);
            if self.seq() == before {
                if let Some((indices, bytes)) = journal {
                    for (i, &row) in indices.iter().enumerate() {
                        if row < rows {
                            overlay(&mut out, row, &bytes[i * self.row_bytes..(i + 1) * self.row_bytes]);
                        }
                    }
                }
                return Ok(out);
            }
            if attempt > 10 {
                std::thread::yield_now();
            }
        }
        Err(Error::CommitConflict(format!(
            "rows of {} kept changing during {READ_ATTEMPTS} read attempts",
            self.path.display()
        )))
    }

    fn check_writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::invalid(format!("array store opened read-only: cannot change {}", self.path.display())))
        }
    }

    /// Appends whole rows; the row count is the commit.
    pub fn append(&mut self, parts: &[&[u8]], durable: bool) -> Result<u64> {
        self.check_writable()?;
        debug_assert!(parts.iter().all(|p| p.len().is_multiple_of(self.row_bytes)));
        let rows = self.rows();
        let at = HEADER as u64 + rows * self.row_bytes as u64;
        let len = write_parts(&self.file, &self.path, at, parts)?;
        if durable {
            self.file.sync_data().map_err(|e| io(&self.path, e))?;
            traced!(Op::SyncFile(self.path.clone()));
        }
        let new_rows = rows + (len / self.row_bytes) as u64;
        self.word(ROWS_AT).store(new_rows, Ordering::Release);
        traced!(Op::WriteAt(self.path.clone(), ROWS_AT as u64, new_rows.to_le_bytes().to_vec()));
        if durable {
            self.header.flush().map_err(|e| io(&self.path, e))?;
            traced!(Op::SyncRange(self.path.clone(), 0, HEADER as u64));
        }
        Ok(new_rows)
    }

    /// Replaces rows in place: row `indices[i]` gets `data[i]`. Every index must be below the row count.
    pub fn replace(&mut self, indices: &[u64], data: &[u8], durable: bool) -> Result<()> {
        self.check_writable()?;
        debug_assert_eq!(indices.len() * self.row_bytes, data.len());
        self.recover()?;
        self.write_journal(indices, data, durable)?;
        self.apply(indices, data, durable)
    }

    /// Replays a committed replace that a killed writer left, then clears the journal. Runs before
    /// every change, so a replace is never lost or half applied.
    pub fn recover(&mut self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        match self.read_journal()? {
            Some((indices, data)) => self.apply(&indices, &data, true),
            None if self.seq() % 2 == 1 => Err(Error::Corrupt(format!(
                "{}: rows were being replaced but the replace journal is gone",
                self.path.display()
            ))),
            None => Ok(()),
        }
    }

    fn apply(&mut self, indices: &[u64], data: &[u8], durable: bool) -> Result<()> {
        let seq = self.word(SEQ_AT);
        let start = seq.load(Ordering::Acquire);
        if start.is_multiple_of(2) {
            seq.store(start + 1, Ordering::Release);
            traced!(Op::WriteAt(self.path.clone(), SEQ_AT as u64, (start + 1).to_le_bytes().to_vec()));
        }
        for (i, &row) in indices.iter().enumerate() {
            let bytes = &data[i * self.row_bytes..(i + 1) * self.row_bytes];
            let at = HEADER as u64 + row * self.row_bytes as u64;
            self.file.write_all_at(bytes, at).map_err(|e| io(&self.path, e))?;
            traced!(Op::WriteAt(self.path.clone(), at, bytes.to_vec()));
        }
        if durable {
            self.file.sync_data().map_err(|e| io(&self.path, e))?;
            traced!(Op::SyncFile(self.path.clone()));
        }
        let odd = self.seq();
        self.word(SEQ_AT).store(odd + 1, Ordering::Release);
        traced!(Op::WriteAt(self.path.clone(), SEQ_AT as u64, (odd + 1).to_le_bytes().to_vec()));
        // Clearing the journal's magic retires it; a writer killed before this replays it again.
        let path = self.journal_path();
        let file = self.journal(true)?.expect("created");
        file.write_all_at(&[0u8; 8], 0).map_err(|e| io(&path, e))?;
        traced!(Op::WriteAt(path.clone(), 0, vec![0u8; 8]));
        Ok(())
    }

    /// A replace that stops as a killed writer would: after the journal body, after the journal
    /// commit, or after `applied` of the rows were written in place.
    #[cfg(test)]
    pub fn replace_killed(&mut self, indices: &[u64], data: &[u8], stop: KilledAt) -> Result<()> {
        self.recover()?;
        let path = self.journal_path();
        if stop == KilledAt::JournalBody {
            // The body lands but the header (the commit) does not.
            let body = vec![7u8; indices.len() * (8 + self.row_bytes)];
            let file = self.journal(true)?.expect("created");
            file.write_all_at(&body, JOURNAL_HEADER as u64).map_err(|e| io(&path, e))?;
            return Ok(());
        }
        self.write_journal(indices, data, false)?;
        if let KilledAt::Applying(applied) = stop {
            let seq = self.seq();
            self.word(SEQ_AT).store(seq + 1, Ordering::Release);
            for (i, &row) in indices.iter().enumerate().take(applied) {
                let bytes = &data[i * self.row_bytes..(i + 1) * self.row_bytes];
                self.file
                    .write_all_at(bytes, HEADER as u64 + row * self.row_bytes as u64)
                    .map_err(|e| io(&self.path, e))?;
            }
        }
        Ok(())
    }

    fn write_journal(&mut self, indices: &[u64], data: &[u8], durable: bool) -> Result<()> {
        let path = self.journal_path();
        let row_bytes = self.row_bytes;
        let made = self.journal.is_none() && !path.exists();
        let file = self.journal(true)?.expect("created");
        if durable && made {
            // The journal's name must outlive a power loss as its contents do: a data file whose
            // replace began (odd sequence) with its journal gone would not open.
            let dir = path.parent().expect("a journal lies in the store");
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io(dir, e))?;
            traced!(Op::SyncDir(dir.to_owned()));
        }
        let mut body = Vec::with_capacity(indices.len() * 8 + data.len());
        for i in indices {
            body.extend_from_slice(&i.to_le_bytes());
        }
        body.extend_from_slice(data);
        file.write_all_at(&body, JOURNAL_HEADER as u64).map_err(|e| io(&path, e))?;
        traced!(Op::WriteAt(path.clone(), JOURNAL_HEADER as u64, body.clone()));
        if durable {
            file.sync_data().map_err(|e| io(&path, e))?;
            traced!(Op::SyncFile(path.clone()));
        }
        let mut header = [0u8; JOURNAL_HEADER];
        header[..8].copy_from_slice(JOURNAL_MAGIC);
        header[8..16].copy_from_slice(&(indices.len() as u64).to_le_bytes());
        header[16..24].copy_from_slice(&(row_bytes as u64).to_le_bytes());
        header[24..32].copy_from_slice(&(body.len() as u64).to_le_bytes());
        file.write_all_at(&header, 0).map_err(|e| io(&path, e))?;
        traced!(Op::WriteAt(path.clone(), 0, header.to_vec()));
        if durable {
            file.sync_data().map_err(|e| io(&path, e))?;
            traced!(Op::SyncFile(path.clone()));
        }
        Ok(())
    }

    /// The committed replace in the journal, if one is there.
    fn read_journal(&mut self) -> Result<Option<(Vec<u64>, Vec<u8>)>> {
        let path = self.journal_path();
        let (row_bytes, rows) = (self.row_bytes, self.rows());
        let Some(file) = self.journal(false)? else {
            return Ok(None);
        };
        let mut header = [0u8; JOURNAL_HEADER];
        match file.read_exact_at(&mut header, 0) {
            Ok(()) => {}
            Err(e) if e.kind() == IoKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        }
        if &header[..8] != JOURNAL_MAGIC {
            return Ok(None);
        }
        let word = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().expect("8 bytes"));
        let (count, width, body_len) = (word(8), word(16), word(24));
        let corrupt = |what: &str| Error::Corrupt(format!("replace journal {}: {what}", path.display()));
        if width != row_bytes as u64 || count.checked_mul(8 + width) != Some(body_len) {
            return Err(corrupt("header disagrees with the array"));
        }
        let present = file.metadata().map_err(|e| io(&path, e))?.len();
        if body_len > present.saturating_sub(JOURNAL_HEADER as u64) {
            return Err(corrupt("shorter than its header says"));
        }
        let mut body = vec![0u8; body_len as usize];
        file.read_exact_at(&mut body, JOURNAL_HEADER as u64).map_err(|_| corrupt("shorter than its header says"))?;
        let split = count as usize * 8;
        let indices: Vec<u64> =
            body[..split].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        if let Some(bad) = indices.iter().find(|&&i| i >= rows) {
            return Err(corrupt(&format!("row {bad} is past the {rows} rows")));
        }
        body.drain(..split);
        Ok(Some((indices, body)))
    }
}
