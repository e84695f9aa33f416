//! The one commit path: every change to a table is a new metadata version, put where no other
//! writer's is (create-if-absent); a writer that loses the race reloads the winner's metadata and
//! retries on top of it. A crash at any point leaves the table at the previous or the next version.

use super::*;

/// How many times a writer tries to commit before it gives up on a busy table.
pub(super) const COMMIT_ATTEMPTS: usize = 50;

/// A short random wait after the `attempt`-th lost commit race (up to 2^attempt ms, at most 16),
/// so that writers racing in step fall out of step.
pub(super) fn backoff(attempt: usize) {
    let cap = 1u64 << attempt.min(4);
    let jitter = uuid::Uuid::new_v4().as_u64_pair().0 % (cap * 1000);
    std::thread::sleep(std::time::Duration::from_micros(jitter));
}

/// The identity of a snapshot being committed: its id and sequence number.
pub(super) struct Change {
    pub(super) snapshot_id: i64,
    pub(super) sequence_number: i64,
}

impl Change {
    pub(super) fn new(metadata: &TableMetadata) -> Self {
        Self {
            snapshot_id: (uuid::Uuid::new_v4().as_u64_pair().0 >> 1) as i64,
            sequence_number: metadata.last_sequence_number + 1,
        }
    }

    /// Moves the change on top of `metadata`'s latest commit (a retry keeps the snapshot id).
    pub(super) fn rebase(&mut self, metadata: &TableMetadata) {
        self.sequence_number = metadata.last_sequence_number + 1;
    }

    /// A manifest written for this change, as its list records it at the current sequence number
    /// (its added entries inherit that number).
    pub(super) fn sequenced(&self, manifest: &ManifestFile) -> ManifestFile {
        ManifestFile {
            sequence_number: self.sequence_number,
            min_sequence_number: self.sequence_number,
            ..manifest.clone()
        }
    }

    /// A manifest entry of this snapshot's (its sequence numbers inherited from the manifest).
    pub(super) fn entry(&self, status: i32, file: &DataFile) -> ManifestEntry {
        ManifestEntry {
            status,
            snapshot_id: Some(self.snapshot_id),
            sequence_number: None,
            file_sequence_number: None,
            // A file added here takes new row ids (from its manifest); one listed as deleted keeps its own.
            data_file: DataFile {
                deletes: Vec::new(),
                first_row_id: if status == STATUS_ADDED { None } else { file.first_row_id },
                sequence_number: None,
                ..file.clone()
            },
        }
    }
}

/// What a snapshot changes in the files of its parent: data files `removed` and `added`, delete
/// files `replaced` and `added_deletes`.
pub(super) struct RowDelta<'a> {
    pub(super) operation: Operation,
    pub(super) removed: &'a [DataFile],
    pub(super) replaced: &'a [DataFile],
    pub(super) added_deletes: &'a [DataFile],
    pub(super) added: &'a [DataFile],
}

/// The running totals a snapshot summary carries.
pub(super) struct Totals {
    pub(super) records: i64,
    pub(super) data_files: i64,
    pub(super) delete_files: i64,
    pub(super) position_deletes: i64,
    pub(super) equality_deletes: i64,
}

impl Totals {
    pub(super) fn of(snapshot: Option<&Snapshot>) -> Self {
        let total = |key: &str| snapshot.and_then(|s| s.summary.get(key)).and_then(|v| v.parse().ok()).unwrap_or(0);
        Self {
            records: total("total-records"),
            data_files: total("total-data-files"),
            delete_files: total("total-delete-files"),
            position_deletes: total("total-position-deletes"),
            equality_deletes: total("total-equality-deletes"),
        }
    }
}

impl Table {
    /// Commits written data files as one append snapshot; returns its id.
    pub fn commit_append(&mut self, files: Vec<DataFile>) -> Result<i64> {
        if files.is_empty() {
            return Err(Error::invalid("nothing to commit: no data files"));
        }
        self.check_inside(&files)?;
        self.commit_snapshot(Operation::Append, files)
    }

    /// Refuses data files that lie outside the table's root (a commit names only its own files).
    pub(super) fn check_inside(&self, files: &[DataFile]) -> Result<()> {
        for file in files {
            self.storage.relative(&file.file_path).map_err(|_| {
                Error::invalid(format!("data file {} lies outside the table root {}", file.file_path, self.location()))
            })?;
        }
        Ok(())
    }

    /// The one optimistic commit loop. `attempt` builds a change on the table's current metadata
    /// and tries to land it: `Some` when it landed, `None` when another writer's commit got there
    /// first; then the table reloads the winner's metadata and `attempt` runs again on top of it,
    /// after a short random wait, up to [`COMMIT_ATTEMPTS`] times. An attempt that finds the
    /// winner's change in conflict with its own fails with [`Error::CommitConflict`] instead
    /// ([`Table::check_unchanged`]). `what` names the change in the error of a writer that gives up.
    pub(super) fn commit_with_retries<T>(
        &mut self,
        what: &str,
        mut attempt: impl FnMut(&mut Self) -> Result<Option<T>>,
    ) -> Result<T> {
        self.writable()?;
        for lost in 0..COMMIT_ATTEMPTS {
            if let Some(done) = attempt(self)? {
                return Ok(done);
            }
            self.refresh()?;
            backoff(lost);
        }
        Err(Error::CommitConflict(format!(
            "gave up {what} on {} after {COMMIT_ATTEMPTS} lost commit races; nothing was committed",
            self.location()
        )))
    }

    /// The one conflict check: the data files a change read (and rewrites or removes rows of) are
    /// still live in the current snapshot, each with the delete files it had when read. A change
    /// built on them cannot be rebased once another writer removed one or deleted rows from it.
    pub(super) fn check_unchanged(&self, read: &[DataFile]) -> Result<()> {
        let live = self.data_files(self.metadata.current_snapshot())?;
        let unchanged = read.iter().all(|r| {
            live.iter().any(|l| {
                l.file_path == r.file_path && l.deletes.iter().map(delete_key).eq(r.deletes.iter().map(delete_key))
            })
        });
        match unchanged {
            true => Ok(()),
            false => Err(Error::CommitConflict(format!(
                "another writer changed files of {} that this change read; nothing was committed",
                self.location()
            ))),
        }
    }

    /// Lands `next` as the table's next metadata version unless another writer's landed first
    /// (false): the one place a commit leaves the table handle for where the table lives.
    pub(super) fn try_commit(&mut self, next: TableMetadata) -> Result<bool> {
        self.writable()?;
        let base = Some((&self.version, &self.metadata));
        let Some((version, metadata)) = self.operations.commit(&self.storage, base, &next)? else {
            return Ok(false);
        };
        self.metadata = metadata;
        self.version = version;
        Ok(true)
    }

    /// The metadata of the next version as `change` makes it of the current one: logged after
    /// the current version, updated now (and after it).
    pub(super) fn next_metadata(&self, change: impl FnOnce(&mut TableMetadata) -> Result<()>) -> Result<TableMetadata> {
        let mut next = self.metadata.clone();
        change(&mut next)?;
        next.metadata_log.push(MetadataLogEntry {
            timestamp_ms: self.metadata.last_updated_ms,
            metadata_file: self.version.location.clone(),
        });
        next.last_updated_ms = now_ms().max(self.metadata.last_updated_ms + 1);
        Ok(next)
    }

    /// Commits the metadata `change` makes of the current version's, retried on top of the
    /// winner's when another writer commits first (`change` sees the latest metadata each time).
    pub(super) fn commit_metadata(&mut self, change: impl Fn(&mut TableMetadata) -> Result<()>) -> Result<()> {
        self.commit_with_retries("a metadata change", |table| {
            let next = table.next_metadata(&change)?;
            Ok(table.try_commit(next)?.then_some(()))
        })
    }

    /// Commits written data files as one snapshot that replaces every row of the table (Spark's
    /// overwrite, Trino's TRUNCATE when there are none): the files live until now are marked
    /// deleted in it, so older snapshots keep them for time travel. Returns the snapshot id.
    pub fn commit_overwrite(&mut self, files: Vec<DataFile>) -> Result<i64> {
        self.check_inside(&files)?;
        self.commit_snapshot(Operation::Overwrite, files)
    }

    /// Writes manifests of `entries` (`content`: 0 data files, 1 delete files), one per partition
    /// spec they were written under, and returns their entries for a manifest list.
    pub(super) fn put_manifests(
        &self,
        entries: &[ManifestEntry],
        content: i32,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<Vec<ManifestFile>> {
        let mut by_spec: BTreeMap<i32, Vec<ManifestEntry>> = BTreeMap::new();
        for entry in entries {
            by_spec.entry(entry.data_file.spec_id).or_default().push(entry.clone());
        }
        by_spec
            .into_iter()
            .map(|(spec_id, entries)| self.put_manifest(&entries, spec_id, content, snapshot_id, sequence_number))
            .collect()
    }

    /// Writes one manifest of `entries`, all of partition spec `spec_id`.
    pub(super) fn put_manifest(
        &self,
        entries: &[ManifestEntry],
        spec_id: i32,
        content: i32,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<ManifestFile> {
        let schema = self.metadata.current_schema()?;
        let schema_json = serde_json::to_string(&schema.to_json()).map_err(|e| Error::Internal(e.to_string()))?;
        let spec = self.metadata.partition_specs.iter().find(|s| s.spec_id == spec_id).ok_or_else(|| {
            Error::Corrupt(format!("{}: partition spec {spec_id} is not in the table metadata", self.location()))
        })?;
        let partition = partition_types(spec, self.arrow_schema()?.as_ref())?;
        let spec_json = serde_json::to_string(&spec.fields).map_err(|e| Error::Internal(e.to_string()))?;
        let kind = if content == 0 { "data" } else { "deletes" };
        let manifest = write_manifest(
            entries,
            &schema_json,
            schema.schema_id,
            &spec_json,
            spec_id,
            &partition,
            kind,
            self.metadata.format_version,
        )?;
        let manifest_path = format!("metadata/{}-m0.avro", uuid::Uuid::new_v4());
        let manifest_length = manifest.len() as i64;
        self.storage.put(&manifest_path, Bytes::from(manifest))?;
        let count = |status: i32| entries.iter().filter(move |e| e.status == status);
        let summaries = partition
            .iter()
            .map(|p| {
                let values = entries.iter().map(|e| e.data_file.partition.get(&p.field_id));
                let mut summary =
                    FieldSummary { contains_null: values.clone().any(|v| v.is_none()), ..Default::default() };
                for value in values.flatten() {
                    if summary.lower_bound.as_ref().is_none_or(|lo| less(&p.data_type, value, lo)) {
                        summary.lower_bound = Some(value.clone());
                    }
                    if summary.upper_bound.as_ref().is_none_or(|hi| less(&p.data_type, hi, value)) {
                        summary.upper_bound = Some(value.clone());
                    }
                }
                if matches!(p.data_type, DataType::Float32 | DataType::Float64) {
                    summary.contains_nan = Some(false);
                }
                summary
            })
            .collect();
        Ok(ManifestFile {
            manifest_path: self.storage.uri(&manifest_path),
            manifest_length,
            partition_spec_id: spec_id,
            content,
            sequence_number,
            // Entries kept from older snapshots carry their own (older) sequence numbers.
            min_sequence_number: entries
                .iter()
                .filter(|e| e.status != STATUS_DELETED)
                .map(|e| e.sequence_number.unwrap_or(sequence_number))
                .min()
                .unwrap_or(sequence_number),
            added_snapshot_id: snapshot_id,
            added_files_count: count(STATUS_ADDED).count() as i32,
            existing_files_count: count(STATUS_EXISTING).count() as i32,
            deleted_files_count: count(STATUS_DELETED).count() as i32,
            added_rows_count: count(STATUS_ADDED).map(|e| e.data_file.record_count).sum(),
            existing_rows_count: count(STATUS_EXISTING).map(|e| e.data_file.record_count).sum(),
            deleted_rows_count: count(STATUS_DELETED).map(|e| e.data_file.record_count).sum(),
            partitions: Some(summaries),
            // Assigned by the manifest list that first lists it.
            first_row_id: None,
        })
    }

    /// Commits a snapshot that adds `added` on top of the current snapshot's files ("append"), or in
    /// place of them ("overwrite": they and their delete files are listed as deleted).
    pub(super) fn commit_snapshot(&mut self, operation: Operation, added: Vec<DataFile>) -> Result<i64> {
        self.commit_snapshot_with(operation, added, None)
    }

    /// As [`Table::commit_snapshot`], with `redefine` (when given) applied to the metadata the
    /// snapshot is committed in (a replacement's new schema, spec and order), the same commit.
    pub(super) fn commit_snapshot_with(
        &mut self,
        operation: Operation,
        added: Vec<DataFile>,
        redefine: Option<&dyn Fn(&mut TableMetadata) -> Result<()>>,
    ) -> Result<i64> {
        let unchanged: &dyn Fn(&mut TableMetadata) -> Result<()> = &|_| Ok(());
        let overwrite = operation == Operation::Overwrite;
        // Files written long before their commit (a slow task of a distributed write) may have been
        // taken for orphans meanwhile: a snapshot never names a file that is not there.
        for file in &added {
            if !self.storage.exists(self.storage.relative(&file.file_path)?)? {
                return Err(Error::NotFound(format!(
                    "cannot commit {}: it does not exist (was it removed as an orphan before its commit?)",
                    file.file_path
                )));
            }
        }
        let mut change = Change::new(&self.metadata);
        // The manifest of the added files does not depend on the parent: it is written once and
        // kept across lost races (its entries take the sequence number the list gives it), so a
        // retry costs little more than the manifest list.
        let added_manifests = {
            let entries: Vec<ManifestEntry> = added.iter().map(|f| change.entry(STATUS_ADDED, f)).collect();
            match redefine {
                None => self.put_manifests(&entries, 0, change.snapshot_id, change.sequence_number)?,
                // Under the schema and spec they are committed with (a replacement's new ones).
                Some(redefine) => {
                    let mut redefined = self.clone();
                    redefine(&mut redefined.metadata)?;
                    redefined.put_manifests(&entries, 0, change.snapshot_id, change.sequence_number)?
                }
            }
        };
        let redefine = redefine.unwrap_or(unchanged);
        let committed = self.commit_with_retries(&format!("the {operation} commit"), |table| {
            change.rebase(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            let mut manifests: Vec<ManifestFile> = added_manifests.iter().map(|m| change.sequenced(m)).collect();
            let mut written = Vec::new();
            let added_rows: i64 = added.iter().map(|f| f.record_count).sum();
            let mut summary = BTreeMap::from([
                ("added-data-files".to_owned(), added.len().to_string()),
                ("added-records".to_owned(), added_rows.to_string()),
            ]);
            let mut totals = Totals::of(parent.as_ref());
            totals.records += added_rows;
            totals.data_files += added.len() as i64;
            if overwrite {
                let removed = table.data_files(parent.as_ref())?;
                let removed_deletes = delete_files_of(&removed);
                for (content, files) in [(0, &removed), (1, &removed_deletes)] {
                    if !files.is_empty() {
                        let entries: Vec<ManifestEntry> =
                            files.iter().map(|f| change.entry(STATUS_DELETED, f)).collect();
                        written.extend(table.put_manifests(
                            &entries,
                            content,
                            change.snapshot_id,
                            change.sequence_number,
                        )?);
                    }
                }
                summary.insert("deleted-data-files".to_owned(), removed.len().to_string());
                summary.insert(
                    "deleted-records".to_owned(),
                    removed.iter().map(|f| f.record_count).sum::<i64>().to_string(),
                );
                totals = Totals {
                    records: added_rows,
                    data_files: added.len() as i64,
                    delete_files: 0,
                    position_deletes: 0,
                    equality_deletes: 0,
                };
            } else if let Some(p) = &parent {
                manifests.extend(table.manifests(p)?);
            }
            manifests.extend(written.iter().cloned());
            if table.commit_manifests(&change, operation, manifests, summary, totals, redefine)? {
                return Ok(Some(change.snapshot_id));
            }
            table.discard(&written)?;
            Ok(None)
        });
        if let Err(Error::CommitConflict(_)) = committed {
            self.discard(&added_manifests)?;
        }
        committed
    }

    /// Deletes manifests a lost commit attempt wrote.
    pub(super) fn discard(&self, manifests: &[ManifestFile]) -> Result<()> {
        for manifest in manifests {
            self.storage.delete(self.storage.relative(&manifest.manifest_path)?)?;
        }
        Ok(())
    }

    /// Writes the manifest list of `change`'s snapshot and commits the snapshot on top of the
    /// current one; false when another writer committed first (the list is removed again; the
    /// caller discards the manifests it wrote for this attempt, rebases and retries).
    pub(super) fn commit_manifests(
        &mut self,
        change: &Change,
        operation: Operation,
        manifests: Vec<ManifestFile>,
        mut summary: BTreeMap<String, String>,
        totals: Totals,
        redefine: &dyn Fn(&mut TableMetadata) -> Result<()>,
    ) -> Result<bool> {
        let parent = self.metadata.current_snapshot().cloned();
        let snapshot_id = change.snapshot_id;
        let mut next = self.next_metadata(redefine)?;
        // Row lineage (format version 3): the data manifests new to this snapshot take their
        // first row ids from the table's next-row-id, one per row they add or carry.
        let first_row_id = (self.metadata.format_version >= 3).then(|| self.metadata.next_row_id.unwrap_or(0));
        let mut next_row_id = first_row_id;
        let manifests: Vec<ManifestFile> = manifests
            .into_iter()
            .map(|m| match (m.content, m.first_row_id, next_row_id.as_mut()) {
                (0, None, Some(next)) => {
                    let first = *next;
                    *next += m.added_rows_count + m.existing_rows_count;
                    ManifestFile { first_row_id: Some(first), ..m }
                }
                _ => m,
            })
            .collect();
        let list = write_manifest_list(
            &manifests,
            snapshot_id,
            parent.as_ref().map(|p| p.snapshot_id),
            change.sequence_number,
            first_row_id,
        )?;
        let list_path = format!("metadata/snap-{snapshot_id}-1-{}.avro", uuid::Uuid::new_v4());
        self.storage.put(&list_path, Bytes::from(list))?;
        summary.insert("operation".to_owned(), operation.as_str().to_owned());
        summary.insert("total-records".to_owned(), totals.records.to_string());
        summary.insert("total-data-files".to_owned(), totals.data_files.to_string());
        summary.insert("total-delete-files".to_owned(), totals.delete_files.to_string());
        summary.insert("total-position-deletes".to_owned(), totals.position_deletes.to_string());
        summary.insert("total-equality-deletes".to_owned(), totals.equality_deletes.to_string());
        let now = next.last_updated_ms;
        next.add_snapshot(Snapshot {
            snapshot_id,
            parent_snapshot_id: parent.as_ref().map(|p| p.snapshot_id),
            sequence_number: change.sequence_number,
            timestamp_ms: now,
            manifest_list: self.storage.uri(&list_path),
            summary,
            schema_id: Some(next.current_schema_id),
            first_row_id,
            added_rows: first_row_id.zip(next_row_id).map(|(first, next)| next - first),
            other: BTreeMap::new(),
        });
        if next_row_id.is_some() {
            next.next_row_id = next_row_id;
        }
        if self.try_commit(next)? {
            return Ok(true);
        }
        self.storage.delete(&list_path)?;
        Ok(false)
    }

    /// Commits `change`'s snapshot on top of `parent`: `delta`'s removed data files and replaced
    /// delete files are listed as deleted (the manifests holding them are rewritten, the others
    /// carried over), its added files as added. False when another writer committed first.
    pub(super) fn commit_row_delta(
        &mut self,
        change: &Change,
        parent: Option<&Snapshot>,
        delta: &RowDelta,
    ) -> Result<bool> {
        let removed: std::collections::HashSet<&str> = delta.removed.iter().map(|f| f.file_path.as_str()).collect();
        let replaced: std::collections::HashSet<_> = delta.replaced.iter().map(delete_key).collect();
        // Data files by path; delete entries by entry, as several may share one file.
        let gone = |file: &DataFile| match file.content {
            0 => removed.contains(file.file_path.as_str()),
            _ => replaced.contains(&delete_key(file)),
        };
        let mut manifests = Vec::new();
        let mut written = Vec::new();
        for manifest in match parent {
            Some(p) => self.manifests(p)?,
            None => Vec::new(),
        } {
            let list = parent.map(|p| p.manifest_list.as_str()).unwrap_or_default();
            let entries = self.entries_of(&manifest).map_err(|e| e.within(list))?;
            if !entries.iter().any(|e| e.status != STATUS_DELETED && gone(&e.data_file)) {
                manifests.push(manifest);
                continue;
            }
            let kept: Vec<ManifestEntry> = entries
                .into_iter()
                .filter(|e| e.status != STATUS_DELETED)
                .map(|e| match gone(&e.data_file) {
                    true => ManifestEntry { status: STATUS_DELETED, snapshot_id: Some(change.snapshot_id), ..e },
                    false => ManifestEntry { status: STATUS_EXISTING, ..e },
                })
                .collect();
            written.extend(self.put_manifests(&kept, manifest.content, change.snapshot_id, change.sequence_number)?);
        }
        for (content, files) in [(0, delta.added), (1, delta.added_deletes)] {
            if !files.is_empty() {
                let entries: Vec<ManifestEntry> = files.iter().map(|f| change.entry(STATUS_ADDED, f)).collect();
                written.extend(self.put_manifests(&entries, content, change.snapshot_id, change.sequence_number)?);
            }
        }
        manifests.extend(written.iter().cloned());
        let rows = |files: &[DataFile]| files.iter().map(|f| f.record_count).sum::<i64>();
        let summary = BTreeMap::from([
            ("added-data-files".to_owned(), delta.added.len().to_string()),
            ("added-records".to_owned(), rows(delta.added).to_string()),
            ("deleted-data-files".to_owned(), delta.removed.len().to_string()),
            ("deleted-records".to_owned(), rows(delta.removed).to_string()),
            ("added-delete-files".to_owned(), delta.added_deletes.len().to_string()),
            ("added-position-delete-files".to_owned(), delta.added_deletes.len().to_string()),
            ("added-position-deletes".to_owned(), rows(delta.added_deletes).to_string()),
            ("removed-delete-files".to_owned(), delta.replaced.len().to_string()),
            ("removed-position-deletes".to_owned(), rows(delta.replaced).to_string()),
        ]);
        let mut totals = Totals::of(parent);
        totals.records += rows(delta.added) - rows(delta.removed);
        totals.data_files += delta.added.len() as i64 - delta.removed.len() as i64;
        totals.delete_files += delta.added_deletes.len() as i64 - delta.replaced.len() as i64;
        let by_kind = |files: &[DataFile]| -> (i64, i64) {
            let equality =
                rows(&files.iter().filter(|d| d.content == CONTENT_EQUALITY_DELETES).cloned().collect::<Vec<_>>());
            (rows(files) - equality, equality)
        };
        let ((added_positions, added_equality), (removed_positions, removed_equality)) =
            (by_kind(delta.added_deletes), by_kind(delta.replaced));
        totals.position_deletes += added_positions - removed_positions;
        totals.equality_deletes += added_equality - removed_equality;
        let committed = self.commit_manifests(change, delta.operation, manifests, summary, totals, &|_| Ok(()))?;
        if !committed {
            self.discard(&written)?;
        }
        Ok(committed)
    }
}
