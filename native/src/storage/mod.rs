//! Storage: one object_store per table location (a local directory, `file://`, `s3://`, `gs://`,
//! `az://`), with the create-if-absent put that commits rely on.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use url::Url;

use crate::runtime::block_on;
use crate::{Error, Result};

pub mod names;
#[cfg(test)]
pub(crate) mod power_loss;

/// A table location and the store behind it. Paths given to its methods are relative to the
/// location, `/`-separated (`metadata/v1.metadata.json`).
#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    location: String,
    /// The directory of a local location, which [`Storage::map`] memory-maps from.
    local: Option<std::path::PathBuf>,
    /// How a local location was spelled before its path (`file://`, `file:` or nothing): the
    /// paths [`Storage::uri`] writes into metadata keep it, as readers that need a scheme
    /// (Trino's file systems) resolve them by it.
    scheme: &'static str,
    /// What it was opened with, credentials among them: never in its `Debug` form.
    options: Arc<HashMap<String, String>>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&String> = self.options.keys().collect();
        f.debug_struct("Storage").field("location", &self.location).field("option keys", &keys).finish()
    }
}

impl Storage {
    /// Opens `location`: a local path, or a URL whose scheme object_store knows; `options` are its
    /// settings (`aws_endpoint`, `aws_access_key_id`, `aws_allow_http`, ...).
    pub fn open(location: &str, options: &HashMap<String, String>) -> Result<Self> {
        let location = location.trim_end_matches('/');
        if location.is_empty() {
            return Err(Error::invalid("table location is empty"));
        }
        let is_url = location.contains("://");
        if !is_url || location.starts_with("file://") {
            // `file:///d`, and `file:/d` as Iceberg Java writes local locations.
            let (scheme, dir) = match (location.strip_prefix("file://"), location.strip_prefix("file:")) {
                (Some(dir), _) => ("file://", dir),
                (None, Some(dir)) => ("file:", dir),
                (None, None) => ("", location),
            };
            let dir = std::path::absolute(dir).map_err(|e| io(dir, e))?;
            // Opening creates nothing: a write makes the folders it needs (see `put_local`), so
            // loading a table that is not there, or was just dropped, leaves no folder behind.
            let root = Path::from_absolute_path(&dir)
                .map_err(|e| Error::invalid(format!("bad table location {location}: {e}")))?;
            return Ok(Self {
                store: Arc::new(LocalFileSystem::new()),
                options: Arc::new(options.clone()),
                root,
                location: dir.display().to_string(),
                local: Some(dir),
                scheme,
            });
        }
        let url = Url::parse(location).map_err(|e| Error::invalid(format!("bad table location {location}: {e}")))?;
        let (store, root) = object_store::parse_url_opts(&url, options.iter())
            .map_err(|e| Error::invalid(format!("cannot open {location}: {e}")))?;
        Ok(Self {
            store: Arc::from(store),
            options: Arc::new(options.clone()),
            root,
            location: location.to_owned(),
            local: None,
            scheme: "",
        })
    }

    /// The options it was opened with (an object store's settings and credentials).
    pub fn options(&self) -> &HashMap<String, String> {
        &self.options
    }

    /// The location as given (local paths made absolute), without a trailing `/`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The full location of `relative`, as table metadata records file paths (a local location
    /// given with a `file:` scheme keeps it).
    pub fn uri(&self, relative: &str) -> String {
        format!("{}{}/{}", self.scheme, self.location, relative)
    }

    /// The path relative to the location of a full file path written by [`Storage::uri`]; fails
    /// for paths outside the table root.
    pub fn relative<'a>(&self, uri: &'a str) -> Result<&'a str> {
        let rest = uri
            .strip_prefix(self.location.as_str())
            .and_then(|r| r.strip_prefix('/'))
            .or_else(|| {
                // Iceberg Java writes local paths as `file:/...` or `file:///...`.
                uri.strip_prefix("file://")
                    .or_else(|| uri.strip_prefix("file:"))
                    .and_then(|u| u.strip_prefix(self.location.as_str()))
                    .and_then(|r| r.strip_prefix('/'))
            })
            .ok_or_else(|| Error::Corrupt(format!("{uri} lies outside the table root {}", self.location)))?;
        if rest.split('/').any(|part| part == ".." || part.is_empty()) {
            return Err(Error::Corrupt(format!("{uri} lies outside the table root {}", self.location)));
        }
        Ok(rest)
    }

    fn path(&self, relative: &str) -> Path {
        let mut path = self.root.clone();
        for part in relative.split('/').filter(|p| !p.is_empty()) {
            path = path.join(part);
        }
        path
    }

    pub fn get(&self, relative: &str) -> Result<Bytes> {
        let path = self.path(relative);
        block_on(async {
            let result = self.store.get(&path).await.map_err(|e| self.error(relative, e))?;
            result.bytes().await.map_err(|e| self.error(relative, e))
        })
    }

    /// The whole of `relative` without copying it when the table is local: the file is memory-mapped
    /// and only the pages a reader touches are loaded (`populate` loads them all up front, for a
    /// reader that touches every byte). Fetched like [`Storage::get`] otherwise.
    pub fn map(&self, relative: &str, populate: bool) -> Result<Bytes> {
        let Some(dir) = &self.local else {
            return self.get(relative);
        };
        let path = dir.join(relative);
        let file = std::fs::File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(format!("{} does not exist", self.uri(relative))),
            _ => io(&path.display().to_string(), e),
        })?;
        let mut options = memmap2::MmapOptions::new();
        if populate {
            options.populate();
        }
        // SAFETY: table files are written once under fresh names and never modified in place; a file
        // deleted while mapped stays readable until unmapped.
        let map = unsafe { options.map(&file) }.map_err(|e| io(&path.display().to_string(), e))?;
        Ok(Bytes::from_owner(map))
    }

    /// Whether `relative` exists.
    pub fn exists(&self, relative: &str) -> Result<bool> {
        let path = self.path(relative);
        block_on(async {
            match self.store.head(&path).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(self.error(relative, e)),
            }
        })
    }

    /// The size of `relative` in bytes, None when it is not there.
    pub fn size(&self, relative: &str) -> Result<Option<u64>> {
        let path = self.path(relative);
        block_on(async {
            match self.store.head(&path).await {
                Ok(meta) => Ok(Some(meta.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.error(relative, e)),
            }
        })
    }

    /// Writes `relative`, replacing what was there. On local disk the write is durable: see
    /// [`put_local`].
    pub fn put(&self, relative: &str, bytes: Bytes) -> Result<()> {
        if let Some(dir) = &self.local {
            let path = dir.join(relative);
            return put_local(&path, &bytes, false).map(|_| ()).map_err(|e| io(&path.display().to_string(), e));
        }
        let path = self.path(relative);
        block_on(async {
            self.store.put(&path, PutPayload::from(bytes)).await.map_err(|e| self.error(relative, e))?;
            Ok(())
        })
    }

    /// Writes `relative` only if nothing is there; `Ok(false)` when another writer was first. On
    /// local disk the write is durable: see [`put_local`].
    pub fn put_if_absent(&self, relative: &str, bytes: Bytes) -> Result<bool> {
        if let Some(dir) = &self.local {
            let path = dir.join(relative);
            return put_local(&path, &bytes, true).map_err(|e| io(&path.display().to_string(), e));
        }
        let path = self.path(relative);
        let options = PutOptions { mode: PutMode::Create, ..Default::default() };
        block_on(async {
            match self.store.put_opts(&path, PutPayload::from(bytes), options).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(self.error(relative, e)),
            }
        })
    }

    pub fn delete(&self, relative: &str) -> Result<()> {
        if let Some(dir) = &self.local {
            return remove_local(&dir.join(relative)).map_err(|e| io(relative, e));
        }
        let path = self.path(relative);
        block_on(async {
            match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(self.error(relative, e)),
            }
        })
    }

    /// Relative paths of every object under `prefix`.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(self.list_modified(prefix)?.into_iter().map(|(path, _)| path).collect())
    }

    /// Removes a dropped table's files: everything under its `data/`, `metadata/` and `staging/`
    /// (index sidecars and staged replacements among them), and for a local location those
    /// directories and then the location's own when nothing else is left in it (another table's
    /// files are never there, but a location is the catalog's to choose).
    pub fn delete_table_files(&self) -> Result<()> {
        for prefix in ["data", "metadata", "staging"] {
            for path in self.list(prefix)? {
                self.delete(&path)?;
            }
        }
        if let Some(dir) = &self.local {
            for sub in ["data", "metadata", "staging"] {
                match std::fs::remove_dir_all(dir.join(sub)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(io(&dir.join(sub).display().to_string(), e))
                    }
                    _ => {}
                }
            }
            let _ = std::fs::remove_dir(dir); // only when empty
        }
        Ok(())
    }

    /// For a local location, removes the folders `subs` and then the location's own where they are
    /// empty (an object store has no folders); anything still in them stays.
    pub fn remove_empty_folders(&self, subs: &[&str]) {
        let Some(dir) = &self.local else { return };
        for sub in subs {
            let folder = dir.join(sub);
            // Deepest first: a folder empties as its children go.
            let mut folders: Vec<std::path::PathBuf> = walk_folders(&folder);
            folders.sort_by_key(|f| std::cmp::Reverse(f.components().count()));
            for f in folders {
                let _ = std::fs::remove_dir(f);
            }
        }
        let _ = std::fs::remove_dir(dir);
    }

    /// Relative paths of every object under `prefix`, each with its last change in epoch milliseconds.
    pub fn list_modified(&self, prefix: &str) -> Result<Vec<(String, i64)>> {
        let path = self.path(prefix);
        let root = self.root.as_ref().to_owned();
        block_on(async {
            let objects: Vec<_> =
                self.store.list(Some(&path)).try_collect().await.map_err(|e| self.error(prefix, e))?;
            Ok(objects
                .into_iter()
                .map(|o| {
                    let full = o.location.as_ref();
                    let relative = full.strip_prefix(root.as_str()).unwrap_or(full).trim_start_matches('/').to_owned();
                    (relative, o.last_modified.timestamp_millis())
                })
                .collect())
        })
    }

    /// Staged files under `prefix` that a killed local writer left (`<name>#<digits>`, which
    /// listings skip), each with its last change in epoch milliseconds; none for object stores.
    pub fn list_staged(&self, prefix: &str) -> Result<Vec<(String, i64)>> {
        let Some(dir) = &self.local else {
            return Ok(Vec::new());
        };
        let mut staged = Vec::new();
        let mut pending = vec![dir.join(prefix)];
        while let Some(folder) = pending.pop() {
            let entries = match std::fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&folder.display().to_string(), e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io(&folder.display().to_string(), e))?;
                let meta = entry.metadata().map_err(|e| io(&entry.path().display().to_string(), e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if meta.is_dir() {
                    pending.push(entry.path());
                } else if is_staged(&name) {
                    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                    let relative = entry.path().strip_prefix(dir).map(|p| p.to_string_lossy().into_owned());
                    if let (Some(modified), Ok(relative)) = (modified, relative) {
                        staged.push((relative, modified.as_millis() as i64));
                    }
                }
            }
        }
        Ok(staged)
    }

    /// Deletes a staged file [`Storage::list_staged`] named.
    pub fn delete_staged(&self, relative: &str) -> Result<()> {
        let Some(dir) = &self.local else {
            return Ok(());
        };
        let path = dir.join(relative);
        remove_local(&path).map_err(|e| io(&path.display().to_string(), e))
    }

    fn error(&self, relative: &str, e: object_store::Error) -> Error {
        match e {
            object_store::Error::NotFound { .. } => Error::NotFound(self.uri(relative)),
            other => store_error(&self.uri(relative), other),
        }
    }
}

/// Whether a file name is a staged write (`<name>#<digits>`), as object_store's local store and
/// [`put_local`] name them.
fn is_staged(name: &str) -> bool {
    name.split_once('#').is_some_and(|(_, suffix)| !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes `bytes` to `path` durably: into a staged file beside it (`<name>#<n>`, which listings
/// skip), synced to disk, then renamed over `path` (or, with `create_only`, hard-linked to it, which
/// fails when `path` exists: `Ok(false)`), then the directory synced; directories it makes are made
/// durably first. After a power loss, `path` holds all of `bytes` or is as it was; never a part.
/// The power-loss tests (`power_loss.rs`) check this against a model that keeps only what was synced.
fn put_local(path: &std::path::Path, bytes: &[u8], create_only: bool) -> std::io::Result<bool> {
    use std::io::Write;
    let dir = path.parent().ok_or_else(|| std::io::Error::other("a file path without a directory"))?;
    create_dir_durably(dir)?;
    let name = path.file_name().ok_or_else(|| std::io::Error::other("a file path without a name"))?;
    let staged =
        dir.join(format!("{}#{}", name.to_string_lossy(), uuid::Uuid::new_v4().as_u128() % 10_000_000_000_000_000_000));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&staged)?;
        file.write_all(bytes)?;
        traced!(Op::Write(staged.clone(), bytes.to_vec()));
        file.sync_all()?;
        traced!(Op::SyncFile(staged.clone()));
        Ok(())
    })();
    if let Err(e) = written {
        let _ = remove_local(&staged);
        return Err(e);
    }
    let placed = if create_only {
        let linked = match std::fs::hard_link(&staged, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        };
        if matches!(linked, Ok(true)) {
            traced!(Op::Link(staged.clone(), path.to_owned()));
        }
        let _ = remove_local(&staged);
        linked?
    } else {
        if let Err(e) = std::fs::rename(&staged, path) {
            let _ = remove_local(&staged);
            return Err(e);
        }
        traced!(Op::Rename(staged.clone(), path.to_owned()));
        true
    };
    if placed {
        sync_dir(dir)?;
    }
    Ok(placed)
}

/// Makes `dir` and its missing ancestors, each made one durable (its parent synced after it).
fn create_dir_durably(dir: &std::path::Path) -> std::io::Result<()> {
    let missing: Vec<&std::path::Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    // Shallowest first: each one's entry is synced into its parent before the next is relied on.
    for made in missing.iter().rev() {
        traced!(Op::CreateDir(made.to_path_buf()));
        if let Some(parent) = made.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()?;
    traced!(Op::SyncDir(dir.to_owned()));
    Ok(())
}

/// Removes the file at `path`; one that is not there is not an error.
fn remove_local(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            traced!(Op::Remove(path.to_owned()));
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn io(path: &str, source: std::io::Error) -> Error {
    Error::Io { path: path.to_owned(), source }
}

fn store_error(path: &str, e: object_store::Error) -> Error {
    Error::Io { path: path.to_owned(), source: std::io::Error::other(e.to_string()) }
}

/// `folder` and every folder under it (none when it is not there).
fn walk_folders(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if folder.is_dir() {
        out.push(folder.to_path_buf());
        for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk_folders(&entry.path()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_storage_puts_gets_lists_and_refuses_a_second_create() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().join("t").to_str().unwrap(), &HashMap::new()).unwrap();
        assert!(storage.put_if_absent("metadata/v1.json", Bytes::from_static(b"one")).unwrap());
        assert!(!storage.put_if_absent("metadata/v1.json", Bytes::from_static(b"two")).unwrap());
        assert_eq!(storage.get("metadata/v1.json").unwrap(), Bytes::from_static(b"one"));
        storage.put("data/a.parquet", Bytes::from_static(b"a")).unwrap();
        let mut all = storage.list("").unwrap();
        all.sort();
        assert_eq!(all, vec!["data/a.parquet", "metadata/v1.json"]);
        assert!(storage.exists("data/a.parquet").unwrap());
        storage.delete("data/a.parquet").unwrap();
        assert!(!storage.exists("data/a.parquet").unwrap());
        assert!(matches!(storage.get("data/a.parquet"), Err(Error::NotFound(_))));
    }

    #[test]
    fn opening_a_missing_location_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone").join("t");
        let storage = Storage::open(missing.to_str().unwrap(), &HashMap::new()).unwrap();
        assert!(!storage.exists("metadata/version-hint.text").unwrap());
        assert!(storage.list("metadata").unwrap().is_empty());
        assert!(matches!(storage.get("metadata/v1.metadata.json"), Err(Error::NotFound(_))));
        assert!(!dir.path().join("gone").exists(), "a read made no folder");
        // A location with characters object paths encode reads back what was written.
        let odd = Storage::open(dir.path().join("a b%c").to_str().unwrap(), &HashMap::new()).unwrap();
        odd.put("data/x y.parquet", Bytes::from_static(b"x")).unwrap();
        assert_eq!(odd.list("data").unwrap(), vec!["data/x y.parquet"]);
        assert_eq!(odd.get("data/x y.parquet").unwrap(), Bytes::from_static(b"x"));
        let err = crate::table::iceberg::Table::load(missing.to_str().unwrap(), &HashMap::new()).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
        assert!(!dir.path().join("gone").exists(), "loading a table that is not there made no folder");
    }

    #[test]
    fn a_local_location_given_with_a_scheme_keeps_it_in_the_paths_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        for (location, written) in [
            (format!("file://{path}"), format!("file://{path}/data/a.parquet")),
            (format!("file:{path}"), format!("file:{path}/data/a.parquet")),
            (path.to_owned(), format!("{path}/data/a.parquet")),
        ] {
            let storage = Storage::open(&location, &HashMap::new()).unwrap();
            assert_eq!(storage.uri("data/a.parquet"), written, "{location}");
            // Every spelling of a path inside reads back as the same file.
            for uri in [written.as_str(), &format!("file://{path}/data/a.parquet"), &format!("{path}/data/a.parquet")] {
                assert_eq!(storage.relative(uri).unwrap(), "data/a.parquet", "{location}: {uri}");
            }
        }
    }

    #[test]
    fn local_writes_leave_no_staged_file_and_staged_leftovers_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        storage.put("data/p=1/a.parquet", Bytes::from_static(b"a")).unwrap();
        storage.put("data/p=1/a.parquet", Bytes::from_static(b"b")).unwrap();
        assert!(storage.put_if_absent("metadata/v1.metadata.json", Bytes::from_static(b"{}")).unwrap());
        assert!(!storage.put_if_absent("metadata/v1.metadata.json", Bytes::from_static(b"[]")).unwrap());
        assert_eq!(storage.get("data/p=1/a.parquet").unwrap(), Bytes::from_static(b"b"));
        assert_eq!(storage.get("metadata/v1.metadata.json").unwrap(), Bytes::from_static(b"{}"));
        assert!(storage.list_staged("").unwrap().is_empty(), "every write cleaned its staged file");
        // What a writer killed between its staged write and its rename leaves: invisible to listings,
        // found by list_staged and removed by delete_staged.
        std::fs::write(dir.path().join("data/p=1/b.parquet#12345"), b"half").unwrap();
        std::fs::write(dir.path().join("data/c#notdigits"), b"x").unwrap();
        assert!(!storage.list("data").unwrap().iter().any(|p| p.contains("#12345")));
        let staged: Vec<String> = storage.list_staged("data").unwrap().into_iter().map(|(p, _)| p).collect();
        assert_eq!(staged, vec!["data/p=1/b.parquet#12345"]);
        storage.delete_staged(&staged[0]).unwrap();
        assert!(storage.list_staged("data").unwrap().is_empty());
    }

    #[test]
    fn paths_outside_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let inside = storage.uri("data/x.parquet");
        assert_eq!(storage.relative(&inside).unwrap(), "data/x.parquet");
        assert!(storage.relative("/etc/passwd").is_err());
        assert!(storage.relative(&storage.uri("data/../../etc/passwd")).is_err());
        assert!(storage.relative(&format!("file://{inside}")).is_ok());
        assert!(storage.relative(&format!("file:{inside}")).is_ok());
    }

    #[test]
    fn unknown_schemes_are_invalid_arguments() {
        let err = Storage::open("nope://bucket/t", &HashMap::new()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
}
