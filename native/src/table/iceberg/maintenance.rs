//! Table maintenance: compaction, rollback, snapshot expiry, orphan removal.

use super::*;

/// The table properties of snapshot expiry's defaults, as Iceberg names them.
pub const MAX_SNAPSHOT_AGE: &str = "history.expire.max-snapshot-age-ms";
pub const MIN_SNAPSHOTS_TO_KEEP: &str = "history.expire.min-snapshots-to-keep";
pub const MAX_REF_AGE: &str = "history.expire.max-ref-age-ms";

/// What [`Table::rewrite_data_files`] committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    pub snapshot_id: i64,
    /// Data files rewritten (they left the table with their delete files).
    pub rewritten: usize,
    /// Data files written in their place.
    pub written: usize,
}

/// At most `remaining` rows of a stream, the rest of a batch kept for the next chunk.
pub(super) struct Chunk<'a> {
    pub(super) source: &'a mut BatchStream,
    pub(super) leftover: &'a mut Option<RecordBatch>,
    pub(super) remaining: usize,
    pub(super) schema: SchemaRef,
}

impl Iterator for Chunk<'_> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let batch = match self.leftover.take() {
            Some(batch) => batch,
            None => match self.source.next()? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e)),
            },
        };
        if batch.num_rows() > self.remaining {
            *self.leftover = Some(batch.slice(self.remaining, batch.num_rows() - self.remaining));
            let head = batch.slice(0, self.remaining);
            self.remaining = 0;
            return Some(Ok(head));
        }
        self.remaining -= batch.num_rows();
        Some(Ok(batch))
    }
}

impl RecordBatchReader for Chunk<'_> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Table {
    /// Removes the files under `data/` and `metadata/` that no version of the table references (what
    /// killed or aborted writers left) and that last changed before `older_than_ms`, which must be at
    /// least a day ago ([`limits::MIN_ORPHAN_AGE_MS`](crate::limits::MIN_ORPHAN_AGE_MS)): a writer
    /// that has written its files but not committed them yet keeps them. Returns their paths.
    /// Referenced are every metadata version up to the current one (and any newer one a writer
    /// committed meanwhile) and the version hint, and, for every snapshot, its manifest list, its
    /// manifests and their data files with the files kept beside them (vector sidecars, graphs);
    /// staged files a killed writer left (`<name>#<n>`) go too.
    pub fn remove_orphan_files(&mut self, older_than_ms: i64) -> Result<Vec<String>> {
        let cutoff = crate::limits::orphan_cutoff(older_than_ms, now_ms())?;
        self.remove_orphan_files_unchecked(cutoff)
    }

    /// [`Table::remove_orphan_files`] without the minimum age: only for a caller that knows no writer
    /// is running on the table (a test after its writer was killed, an operator with the table
    /// offline), as Iceberg's action API allows what its procedures refuse.
    pub fn remove_orphan_files_unchecked(&mut self, older_than_ms: i64) -> Result<Vec<String>> {
        self.writable()?;
        self.refresh()?;
        let mut referenced = self.files_of(&self.metadata)?;
        referenced.extend((1..=self.version.number).map(metadata_file));
        // Versions a catalog service wrote under names of its own, as the metadata log keeps them.
        let logged = self.metadata.metadata_log.iter().map(|m| m.metadata_file.as_str());
        for file in logged.chain([self.version.location.as_str()]) {
            if let Ok(path) = self.storage.relative(file) {
                referenced.insert(path.to_owned());
            }
        }
        referenced.insert(VERSION_HINT.to_owned());
        let stems: std::collections::HashSet<&str> =
            referenced.iter().filter_map(|p| p.strip_suffix(".parquet")).collect();
        // A sidecar or graph is `<data file stem>.<field id>.<kind>`.
        let beside_a_data_file = |path: &str| path.rsplitn(3, '.').nth(2).is_some_and(|stem| stems.contains(stem));
        // A version committed after the refresh above is another writer's newest: never an orphan.
        let newer_version = |path: &str| metadata_version(path).is_some_and(|v| v > self.version.number);
        let mut removed = Vec::new();
        // `staging/` holds what staged replacements wrote (committed files among them, referenced).
        for prefix in ["data", "metadata", "staging"] {
            for (path, modified_ms) in self.storage.list_modified(prefix)? {
                if modified_ms < older_than_ms
                    && !referenced.contains(&path)
                    && !beside_a_data_file(&path)
                    && !newer_version(&path)
                {
                    self.storage.delete(&path)?;
                    removed.push(path);
                }
            }
            for (path, modified_ms) in self.storage.list_staged(prefix)? {
                if modified_ms < older_than_ms {
                    self.storage.delete_staged(&path)?;
                    removed.push(path);
                }
            }
        }
        removed.sort();
        Ok(removed)
    }

    /// The files a metadata version's snapshots reference, relative to the table: their manifest
    /// lists, manifests and live data and delete files (an entry marking a file deleted does not
    /// keep it: the snapshot before, while it exists, lists the file live), and its statistics and
    /// partition statistics files.
    pub(super) fn files_of(&self, metadata: &TableMetadata) -> Result<std::collections::HashSet<String>> {
        self.files_reached(metadata, false)
    }

    /// As [`Table::files_of`]; with `missing_ok`, a manifest list or manifest that is not there
    /// (someone else purged it) reaches nothing instead of failing.
    fn files_reached(&self, metadata: &TableMetadata, missing_ok: bool) -> Result<std::collections::HashSet<String>> {
        let get = |path: &str| match self.storage.get(path) {
            Err(Error::NotFound(_)) if missing_ok => Ok(None),
            other => other.map(Some),
        };
        let mut referenced = std::collections::HashSet::new();
        for snapshot in &metadata.snapshots {
            let list_path = self.storage.relative(&snapshot.manifest_list)?.to_owned();
            let Some(list) = get(&list_path)? else { continue };
            for manifest in read_manifest_list(&list, &snapshot.manifest_list)? {
                let manifest_path = self.storage.relative(&manifest.manifest_path)?.to_owned();
                if referenced.contains(&manifest_path) {
                    continue; // manifests carry over from snapshot to snapshot
                }
                let Some(bytes) = get(&manifest_path)? else { continue };
                for entry in read_manifest(&bytes, &manifest.manifest_path)? {
                    if entry.status != STATUS_DELETED {
                        referenced.insert(self.storage.relative(&entry.data_file.file_path)?.to_owned());
                    }
                }
                referenced.insert(manifest_path);
            }
            referenced.insert(list_path);
        }
        for statistics in metadata.statistics.iter().chain(&metadata.partition_statistics) {
            if let Some(path) = statistics["statistics-path"].as_str() {
                referenced.insert(self.storage.relative(path)?.to_owned());
            }
        }
        Ok(referenced)
    }

    /// Expires snapshots as Iceberg's `ExpireSnapshots` does, in a new metadata version; then
    /// deletes the files only the expired snapshots referenced (data files with their sidecars and
    /// graphs, manifests, manifest lists, statistics files). Time travel to an expired snapshot
    /// fails afterwards. Returns the expired snapshots' ids.
    ///
    /// Each branch keeps its newest `min-snapshots-to-keep` ancestors and every ancestor younger
    /// than its `max-snapshot-age-ms`; a branch's own retention comes first, then `retain_last` and
    /// `older_than_ms` when given, then the table's `history.expire.min-snapshots-to-keep` (1) and
    /// `history.expire.max-snapshot-age-ms` (5 days). A tag keeps its snapshot. A branch or tag
    /// (not `main`) older than its `max-ref-age-ms` (or the table's `history.expire.max-ref-age-ms`)
    /// goes. A snapshot no branch or tag reaches stays while younger than `older_than_ms`.
    pub fn expire_snapshots(&mut self, older_than_ms: Option<i64>, retain_last: Option<usize>) -> Result<Vec<i64>> {
        self.writable()?;
        self.refresh()?;
        let now = now_ms();
        self.commit_with_retries("expiring snapshots", |table| {
            let metadata = &table.metadata;
            let property = |key: &str, default: i64| -> Result<i64> {
                match metadata.properties.get(key) {
                    Some(value) => value
                        .parse()
                        .map_err(|_| Error::invalid(format!("table property {key} is not a whole number: '{value}'"))),
                    None => Ok(default),
                }
            };
            let older_than = match older_than_ms {
                Some(cutoff) => cutoff,
                None => now - property(MAX_SNAPSHOT_AGE, 5 * 24 * 3_600_000)?,
            };
            let min_snapshots = match retain_last {
                Some(n) => n.max(1) as i64,
                None => property(MIN_SNAPSHOTS_TO_KEEP, 1)?.max(1),
            };
            let max_ref_age = property(MAX_REF_AGE, i64::MAX)?;
            let ancestors = |id: i64| {
                std::iter::successors(metadata.snapshot(id).ok(), |s| {
                    s.parent_snapshot_id.and_then(|p| metadata.snapshot(p).ok())
                })
            };
            let mut refs = metadata.refs.clone();
            refs.retain(|name, r| {
                let Ok(snapshot) = metadata.snapshot(r.snapshot_id) else { return false };
                name == "main" || now.saturating_sub(snapshot.timestamp_ms) <= r.max_ref_age_ms.unwrap_or(max_ref_age)
            });
            let mut keep: std::collections::HashSet<i64> = metadata.current_snapshot_id.into_iter().collect();
            for r in refs.values() {
                if !r.is_branch() {
                    keep.insert(r.snapshot_id);
                    continue;
                }
                let min = r.min_snapshots_to_keep.map_or(min_snapshots, i64::from);
                let cutoff = r.max_snapshot_age_ms.map_or(older_than, |age| now - age);
                for (kept, snapshot) in ancestors(r.snapshot_id).enumerate() {
                    if (kept as i64) < min || snapshot.timestamp_ms >= cutoff {
                        keep.insert(snapshot.snapshot_id);
                    } else {
                        break;
                    }
                }
            }
            let reached: std::collections::HashSet<i64> =
                refs.values().flat_map(|r| ancestors(r.snapshot_id).map(|s| s.snapshot_id)).collect();
            keep.extend(
                metadata
                    .snapshots
                    .iter()
                    .filter(|s| !reached.contains(&s.snapshot_id) && s.timestamp_ms >= older_than)
                    .map(|s| s.snapshot_id),
            );
            let (kept, expired): (Vec<Snapshot>, Vec<Snapshot>) =
                metadata.snapshots.iter().cloned().partition(|s| keep.contains(&s.snapshot_id));
            if expired.is_empty() && refs.len() == metadata.refs.len() {
                return Ok(Some(Vec::new()));
            }
            let of_kept =
                |statistics: &serde_json::Value| statistics["snapshot-id"].as_i64().is_none_or(|id| keep.contains(&id));
            let next = table.next_metadata(|next| {
                next.snapshots = kept;
                next.refs = refs;
                next.snapshot_log.retain(|e| keep.contains(&e.snapshot_id));
                next.statistics.retain(of_kept);
                next.partition_statistics.retain(of_kept);
                Ok(())
            })?;
            let before = table.files_of(&table.metadata)?;
            if !table.try_commit(next)? {
                return Ok(None);
            }
            let after = table.files_of(&table.metadata)?;
            for path in before.difference(&after) {
                table.storage.delete(path)?;
                for beside in table.files_beside(path) {
                    table.storage.delete(&beside)?;
                }
            }
            Ok(Some(expired.iter().map(|s| s.snapshot_id).collect()))
        })
    }

    /// Deletes the files this table's metadata reaches (DROP TABLE ... PURGE): every version's
    /// snapshots' manifest lists, manifests, data and delete files with the index files beside them,
    /// statistics files, the logged metadata versions, the current one and the version hint; then,
    /// for a local table, the folders left empty. Nothing is found by listing a prefix, so a file of
    /// another table (or one outside this table's location, which a catalog may name) is never
    /// deleted: a reachable file outside the location fails the purge before anything is deleted.
    /// Returns how many files it deleted.
    pub fn purge_files(&self) -> Result<usize> {
        self.writable()?;
        // What a catalog server purged already is simply not there any more.
        let mut files: Vec<String> = self.files_reached(&self.metadata, true)?.into_iter().collect();
        let data: Vec<String> = files.iter().filter(|p| p.ends_with(".parquet")).cloned().collect();
        for path in data {
            files.extend(self.files_beside(&path));
        }
        for logged in
            self.metadata.metadata_log.iter().map(|m| m.metadata_file.as_str()).chain([self.version.location.as_str()])
        {
            files.push(self.storage.relative(logged)?.to_owned());
        }
        files.push(VERSION_HINT.to_owned());
        files.sort();
        files.dedup();
        for path in &files {
            self.storage.delete(path)?;
        }
        self.storage.remove_empty_folders(&["data", "metadata", "staging"]);
        Ok(files.len())
    }

    /// Deletes uncommitted data files (an aborted write's).
    pub fn delete_files(&self, files: &[DataFile]) -> Result<()> {
        self.writable()?;
        for file in files {
            let path = self.storage.relative(&file.file_path)?;
            self.storage.delete(path)?;
            for beside in self.files_beside(path) {
                self.storage.delete(&beside)?;
            }
        }
        Ok(())
    }

    /// Compaction: rewrites the live rows of the current snapshot's files that have deleted rows,
    /// and of its small files (fewer than `target_rows` rows, when there are two or more), into new
    /// files of up to `target_rows` rows (with their vector sidecars and graphs), committed as one
    /// "replace" snapshot: every read answers as before, from fewer files and without delete files.
    /// None when no file needs it. A concurrent change to a file being rewritten fails the commit
    /// (`CommitConflict`) and removes what was written; other concurrent commits are kept.
    pub fn rewrite_data_files(&mut self, target_rows: usize) -> Result<Option<Rewrite>> {
        self.writable()?;
        if target_rows == 0 {
            return Err(Error::invalid("target rows per file must be positive"));
        }
        self.refresh()?;
        let parent = self.metadata.current_snapshot().cloned();
        let files = self.data_files(parent.as_ref())?;
        let small = files.iter().filter(|f| f.deletes.is_empty() && (f.record_count as usize) < target_rows).count();
        let (mut chosen, others): (Vec<DataFile>, Vec<DataFile>) = files
            .into_iter()
            .partition(|f| !f.deletes.is_empty() || (small >= 2 && (f.record_count as usize) < target_rows));
        // A partition's files are read one after another, so that each new file holds few partitions.
        chosen.sort_by(|a, b| (a.spec_id, &a.partition).cmp(&(b.spec_id, &b.partition)));
        if chosen.is_empty() {
            return Ok(None);
        }
        // A delete entry leaves with the files it serves, and stays while it serves one not rewritten.
        let still_served: std::collections::HashSet<_> =
            others.iter().flat_map(|f| f.deletes.iter().map(delete_key)).collect();
        let replaced: Vec<DataFile> =
            delete_files_of(&chosen).into_iter().filter(|d| !still_served.contains(&delete_key(d))).collect();
        // Every column, and in a format version 3 table each row's lineage, which moves with it.
        let read = self.stored_schema()?;
        let names: Vec<String> = read.fields().iter().map(|f| f.name().clone()).collect();
        let mut rows = self.scan_files(chosen.clone(), Some(&names), 64 * 1024)?;
        let schema = rows.schema();
        let mut written = Vec::new();
        let mut leftover = None;
        loop {
            let chunk =
                Chunk { source: &mut rows, leftover: &mut leftover, remaining: target_rows, schema: schema.clone() };
            match self.write_rows(chunk, read.clone()) {
                Ok(files) => written.extend(files),
                Err(Error::InvalidArgument(m)) if m.starts_with("nothing to append") => break,
                Err(e) => {
                    self.delete_files(&written)?;
                    return Err(e);
                }
            }
        }
        let delta = RowDelta {
            operation: Operation::Replace,
            removed: &chosen,
            replaced: &replaced,
            added_deletes: &[],
            added: &written,
        };
        let mut rebased = false;
        let committed = self.commit_with_retries("a rewrite of data files", |table| {
            // Rebased only while every rewritten file is live as it was read.
            if std::mem::replace(&mut rebased, true) {
                table.check_unchanged(&chosen)?;
            }
            let change = Change::new(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            Ok(table.commit_row_delta(&change, parent.as_ref(), &delta)?.then_some(change.snapshot_id))
        });
        match committed {
            Ok(snapshot_id) => Ok(Some(Rewrite { snapshot_id, rewritten: chosen.len(), written: written.len() })),
            Err(e @ Error::CommitConflict(_)) => {
                self.delete_files(&written)?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Makes an earlier snapshot of the table's history current again (an ancestor of the current
    /// one): reads see its rows; the snapshots after it stay for time travel until they expire.
    pub fn rollback_to(&mut self, snapshot_id: i64) -> Result<()> {
        self.writable()?;
        self.commit_metadata(|next| {
            next.snapshot(snapshot_id)?;
            let mut at = next.current_snapshot_id;
            while let Some(id) = at {
                if id == snapshot_id {
                    break;
                }
                at = next.snapshot(id).ok().and_then(|s| s.parent_snapshot_id);
            }
            if at.is_none() {
                return Err(Error::invalid(format!(
                    "snapshot {snapshot_id} is not an ancestor of the current snapshot"
                )));
            }
            next.set_current_snapshot(snapshot_id, now_ms().max(next.last_updated_ms + 1));
            Ok(())
        })
    }
}
