//! Where a commit lands: [`TableOperations`] loads a table's newest metadata and puts the next
//! version in its place, or says another writer's got there first. Everything above it (snapshots,
//! manifests, the retry loop, conflict checks) is the same whatever the catalog; today tables live
//! in the file-system layout ([`FileSystemOperations`]); a catalog service is another implementation.

use super::*;

/// One metadata version of a table: its number (1 for a new table, counting up) and where its
/// metadata file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub number: u64,
    pub location: String,
}

/// A table's metadata versions, as a catalog keeps them (Iceberg Java's `TableOperations`).
pub trait TableOperations: std::fmt::Debug + Send + Sync {
    /// The newest version of the table under `storage` and its metadata.
    fn load(&self, storage: &Storage) -> Result<(Version, TableMetadata)>;

    /// Puts `next` in place as the version after `base` (`None` for a new table), returning the
    /// version it became and its metadata as the catalog keeps it; `Ok(None)` when another
    /// writer's version is there. An ambiguous outcome is [`Error::CommitStateUnknown`].
    fn commit(
        &self,
        storage: &Storage,
        base: Option<(&Version, &TableMetadata)>,
        next: &TableMetadata,
    ) -> Result<Option<(Version, TableMetadata)>>;

    /// Whether the tasks of a query open the table at its metadata file rather than through these
    /// operations (a catalog service's, which a task must not call: [`Table::task_options`]).
    fn tasks_open_metadata_file(&self) -> bool {
        false
    }
}

/// Iceberg's file-system layout: `metadata/v<N>.metadata.json`, each version put with a
/// create-if-absent put, and `metadata/version-hint.text` naming the newest (a hint only: readers
/// probe past a stale one).
#[derive(Debug, Default)]
pub struct FileSystemOperations;

impl TableOperations for FileSystemOperations {
    fn load(&self, storage: &Storage) -> Result<(Version, TableMetadata)> {
        let number = latest_version(storage)?;
        let path = metadata_file(number);
        let location = storage.uri(&path);
        let metadata = TableMetadata::from_json(&storage.get(&path)?, &location)?;
        Ok((Version { number, location }, metadata))
    }

    fn commit(
        &self,
        storage: &Storage,
        base: Option<(&Version, &TableMetadata)>,
        next: &TableMetadata,
    ) -> Result<Option<(Version, TableMetadata)>> {
        let number = base.map_or(0, |(v, _)| v.number) + 1;
        let path = metadata_file(number);
        if !put_version(storage, &path, Bytes::from(next.to_json()?))? {
            return Ok(None);
        }
        // The hint only speeds up loading; readers probe past a stale one. A new table's is written
        // before it is handed out.
        let hint = storage.put(VERSION_HINT, Bytes::from(number.to_string()));
        if base.is_none() {
            hint?;
        }
        Ok(Some((Version { number, location: storage.uri(&path) }, next.clone())))
    }
}

/// A table opened at one metadata file (Iceberg Java's `StaticTableOperations`): what the tasks of
/// a distributed query open a catalog's table with ([`Table::task_options`]), so that they read and
/// write data files without calling the catalog or holding its credential. Nothing commits through it.
#[derive(Debug)]
pub struct MetadataFileOperations {
    /// The metadata file, as a full location.
    location: String,
    /// The folder that holds it.
    folder: Storage,
}

impl MetadataFileOperations {
    pub fn open(location: &str, options: &HashMap<String, String>) -> Result<Self> {
        let (folder, _) = location
            .rsplit_once('/')
            .ok_or_else(|| Error::invalid(format!("metadata file location {location} names no folder")))?;
        Ok(Self { location: location.to_owned(), folder: Storage::open(folder, options)? })
    }

    /// The version the metadata file holds, numbered as a catalog numbers its versions.
    pub fn read(&self) -> Result<(Version, TableMetadata)> {
        let name = self.location.rsplit('/').next().unwrap_or_default();
        let metadata = TableMetadata::from_json(&self.folder.get(name)?, &self.location)?;
        let number = metadata.metadata_log.len() as u64 + 1;
        Ok((Version { number, location: self.location.clone() }, metadata))
    }
}

impl TableOperations for MetadataFileOperations {
    fn load(&self, _storage: &Storage) -> Result<(Version, TableMetadata)> {
        self.read()
    }

    fn commit(
        &self,
        _: &Storage,
        _: Option<(&Version, &TableMetadata)>,
        _: &TableMetadata,
    ) -> Result<Option<(Version, TableMetadata)>> {
        Err(Error::invalid(format!(
            "the table was opened at its metadata file {} for a query's tasks: its changes commit through its catalog",
            self.location
        )))
    }

    fn tasks_open_metadata_file(&self) -> bool {
        true
    }
}

pub(super) const VERSION_HINT: &str = "metadata/version-hint.text";

pub(super) fn metadata_file(version: u64) -> String {
    format!("metadata/v{version}.metadata.json")
}

/// Puts a new metadata version at `path` if none is there; `Ok(false)` when another writer's is.
///
/// An object store can store a put and still fail to answer it (a 5xx, a dropped connection), and
/// its client retries: a retried conditional put then finds the version "already there", put there
/// by itself. What is at the path decides: our own bytes (which name a fresh snapshot id and time)
/// are our commit; other bytes are another writer's; nothing there after a failure is no commit (the
/// failure stands); and when reading it back fails, the outcome is unknown
/// ([`Error::CommitStateUnknown`]): whether the put failed or found a version there, that version
/// may be ours.
pub(super) fn put_version(storage: &Storage, path: &str, bytes: Bytes) -> Result<bool> {
    let failed = match storage.put_if_absent(path, bytes.clone()) {
        Ok(true) => return Ok(true),
        Ok(false) => None,
        Err(e) => Some(e),
    };
    match storage.get(path) {
        Ok(found) => Ok(found == bytes),
        Err(Error::NotFound(_)) => match failed {
            Some(e) => Err(e),
            None => Ok(false), // answered "there" but gone since: a race with a drop; the caller retries
        },
        Err(unknown) => {
            let put = match failed {
                Some(e) => format!("failed ({e})"),
                None => "found a version there (perhaps its own, stored by a retry)".to_owned(),
            };
            Err(Error::CommitStateUnknown(format!(
                "the put of {} {put} and reading it back failed ({unknown}): reload the table to see whether the \
                 commit took effect, and keep the files it names",
                storage.uri(path)
            )))
        }
    }
}

/// The version `path` holds when it is a metadata version file (`metadata/v<N>.metadata.json`).
pub(super) fn metadata_version(path: &str) -> Option<u64> {
    path.strip_prefix("metadata/v")?.strip_suffix(".metadata.json")?.parse().ok()
}

fn latest_version(storage: &Storage) -> Result<u64> {
    let hinted = match storage.get(VERSION_HINT) {
        Ok(bytes) => std::str::from_utf8(&bytes).ok().and_then(|s| s.trim().parse::<u64>().ok()),
        Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let mut version = match hinted {
        Some(v) => v,
        None => storage
            .list("metadata")?
            .iter()
            .filter_map(|p| metadata_version(p))
            .max()
            .ok_or_else(|| Error::NotFound(format!("no HyperStream or Iceberg table at {}", storage.location())))?,
    };
    while storage.exists(&metadata_file(version + 1))? {
        version += 1;
    }
    if !storage.exists(&metadata_file(version))? {
        return Err(Error::Corrupt(format!("{} names version {version}, which is missing", storage.uri(VERSION_HINT))));
    }
    Ok(version)
}
