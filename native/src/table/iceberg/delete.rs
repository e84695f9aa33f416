//! Row deletes: position delete files (format version 2) or deletion vectors (3).

use super::*;
use base64::Engine;

/// The rows of data file `file` at `positions` that a writer task of a row-level change deletes,
/// as the text fragment it hands to the commit (`{"file": ..., "rows": <serialized bitmap>}`).
pub fn row_deletes_fragment(file: &str, positions: &[i64]) -> Result<String> {
    let mut rows = RoaringTreemap::new();
    for &p in positions {
        rows.insert(u64::try_from(p).map_err(|_| Error::invalid(format!("row position {p} of {file} is negative")))?);
    }
    let mut bytes = Vec::with_capacity(rows.serialized_size());
    rows.serialize_into(&mut bytes).map_err(|e| Error::Internal(e.to_string()))?;
    let fragment = serde_json::json!({"file": file, "rows": base64::engine::general_purpose::STANDARD.encode(bytes)});
    Ok(fragment.to_string())
}

/// The rows the fragments of [`row_deletes_fragment`] delete, by data file (the union of every
/// task's rows of a file).
pub fn row_deletes(fragments: &[String]) -> Result<BTreeMap<String, RoaringTreemap>> {
    let mut deletes: BTreeMap<String, RoaringTreemap> = BTreeMap::new();
    for fragment in fragments {
        let bad = |why: String| Error::invalid(format!("not a row deletes fragment ({why}): {fragment}"));
        let value: serde_json::Value = serde_json::from_str(fragment).map_err(|e| bad(e.to_string()))?;
        let (Some(file), Some(rows)) = (value["file"].as_str(), value["rows"].as_str()) else {
            return Err(bad("it needs a file and rows".into()));
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(rows).map_err(|e| bad(e.to_string()))?;
        let rows = RoaringTreemap::deserialize_from(&bytes[..]).map_err(|e| bad(e.to_string()))?;
        *deletes.entry(file.to_owned()).or_default() |= rows;
    }
    Ok(deletes)
}

/// The row-level operations, each with its own isolation property (`write.<name>.isolation-level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOperation {
    Delete,
    Update,
    Merge,
}

impl RowOperation {
    pub fn name(self) -> &'static str {
        match self {
            RowOperation::Delete => "delete",
            RowOperation::Update => "update",
            RowOperation::Merge => "merge",
        }
    }

    /// The operation of its name (`delete`, `update`, `merge`, any case).
    pub fn of(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "delete" => Ok(RowOperation::Delete),
            "update" => Ok(RowOperation::Update),
            "merge" => Ok(RowOperation::Merge),
            _ => Err(Error::invalid(format!("{name:?} is not a row-level operation (delete, update or merge)"))),
        }
    }
}

/// Iceberg's isolation levels of a row-level change. Both fail a change when a file it deletes rows
/// of was changed meanwhile; `Serializable` also when a concurrent commit added rows it would have read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    Serializable,
    Snapshot,
}

/// What a row-level change read, which its commit checks the commits that landed since against.
#[derive(Clone, Copy, Debug)]
pub struct ChangeRead<'a> {
    /// The snapshot its scan read; None when the table had none (every commit since is concurrent).
    pub snapshot: Option<i64>,
    pub operation: RowOperation,
    /// The filter its scan pushed to the table; None: it read every row.
    pub filter: Option<&'a Predicate>,
}

/// What deleting more rows of one data file changes among the table's files, by Iceberg's RowDelta
/// rules: the data file leaves when no row of it is left; else one new delete entry holds its
/// deleted rows in place of the entries that served it alone (`replaced`). An entry that may serve
/// other data files too (a position delete file of a partition; a deletion vector's Puffin file
/// holds others' vectors apart, so each vector is its own entry) stays untouched.
pub(super) struct FileDeletes {
    /// The data file, when no row of it is left.
    pub(super) removed: Option<DataFile>,
    /// The delete entries that served it alone.
    pub(super) replaced: Vec<DataFile>,
    /// The new delete entry (written), when rows of it are left.
    pub(super) added: Option<DataFile>,
}

impl Table {
    /// Deletes the rows `filter` passes (every row when None) from the current snapshot and commits
    /// that as a "delete" snapshot; returns it and how many rows it deleted (None and 0 when no row
    /// passed, and nothing is committed). Data files are never rewritten: a data file none of whose
    /// rows are left leaves the table, and the deleted rows of the others are written as delete
    /// files ([`Table::delete_rows`]). Older snapshots keep every row for time travel.
    pub fn delete_where(&mut self, filter: Option<&Predicate>) -> Result<(Option<i64>, u64)> {
        self.writable()?;
        if let Some(filter) = filter {
            self.read_set(Some(&[]), &filter.columns().into_iter().collect::<Vec<_>>())?;
        }
        self.refresh()?;
        self.commit_with_retries("a delete", |table| {
            let change = Change::new(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            let mut changes = Vec::new();
            let mut deleted_rows = 0u64;
            for file in table.prune(table.data_files(parent.as_ref())?, filter)? {
                let before = deleted_positions(&table.storage, &file)?;
                let passing = table.positions_passing(&file, filter)? - &before;
                if passing.is_empty() {
                    continue;
                }
                deleted_rows += passing.len();
                changes.push(table.delete_rows(&file, &passing)?);
            }
            if deleted_rows == 0 {
                return Ok(Some((None, 0)));
            }
            Ok(table
                .commit_deletes(&change, parent.as_ref(), Operation::Delete, changes, &[])?
                .then_some((Some(change.snapshot_id), deleted_rows)))
        })
    }

    /// Commits `changes` (and data files `added`) as `change`'s snapshot on top of `parent`;
    /// false, with the delete files written for it removed, when another writer committed first.
    fn commit_deletes(
        &mut self,
        change: &Change,
        parent: Option<&Snapshot>,
        operation: Operation,
        changes: Vec<FileDeletes>,
        added: &[DataFile],
    ) -> Result<bool> {
        let (mut removed, mut replaced, mut added_deletes) = (Vec::new(), Vec::new(), Vec::new());
        for file in changes {
            removed.extend(file.removed);
            replaced.extend(file.replaced);
            added_deletes.extend(file.added);
        }
        let delta =
            RowDelta { operation, removed: &removed, replaced: &replaced, added_deletes: &added_deletes, added };
        if self.commit_row_delta(change, parent, &delta)? {
            return Ok(true);
        }
        for file in &added_deletes {
            self.storage.delete(self.storage.relative(&file.file_path)?)?;
        }
        Ok(false)
    }

    /// Deletes rows `more` of data file `file` (live as the current snapshot has it, with its
    /// delete entries): writes the delete file that takes the place of those serving it alone and
    /// says what the commit changes ([`FileDeletes`]). Format version 3 deletes with a deletion
    /// vector holding every deleted row of the file (Iceberg readers take a file's vector alone,
    /// so older position deletes of it are folded in); 2 with a position delete file holding the
    /// rows of the entries it replaces and the new ones.
    pub(super) fn delete_rows(&self, file: &DataFile, more: &RoaringTreemap) -> Result<FileDeletes> {
        let (own, shared): (Vec<&DataFile>, Vec<&DataFile>) = file.deletes.iter().partition(|d| serves_only(d, file));
        let replaced: Vec<DataFile> = own.iter().map(|d| (*d).clone()).collect();
        let own = positions_deleted_by(&self.storage, file, own.into_iter())?;
        let shared = positions_deleted_by(&self.storage, file, shared.into_iter())?;
        if (&own | &shared | more).len() >= u64::try_from(file.record_count).unwrap_or(0) {
            return Ok(FileDeletes { removed: Some(file.clone()), replaced, added: None });
        }
        let deleted = match self.metadata.format_version >= 3 {
            true => own | shared | more,
            false => own | more,
        };
        let (bytes, mut description) = match self.metadata.format_version >= 3 {
            true => crate::spec::deletes::write_deletion_vector(&file.file_path, &deleted)?,
            false => crate::spec::deletes::write(&file.file_path, &deleted)?,
        };
        let extension = if is_deletion_vector(&description) { "puffin" } else { "parquet" };
        let path = format!("data/{}-deletes.{extension}", uuid::Uuid::new_v4());
        self.storage.put(&path, bytes)?;
        description.file_path = self.storage.uri(&path);
        // Iceberg readers match delete files to data files within a partition.
        description.spec_id = file.spec_id;
        description.partition = file.partition.clone();
        Ok(FileDeletes { removed: None, replaced, added: Some(description) })
    }

    /// Commits a row-level change (UPDATE, MERGE, a DELETE by row) as one snapshot: the rows at
    /// `deletes` (data file path -> positions in it) are deleted and the data files `added` (the
    /// new and changed rows, written with their indexes) join the table. `read` says what the
    /// change read; the commit checks the commits that landed since as Iceberg's RowDelta does:
    /// a file it deletes rows of must still be live with the delete files it had then, and under
    /// `serializable` isolation (the default of `write.<operation>.isolation-level`) no commit may
    /// have added a data file that can hold a row the change's scan would have read; otherwise the
    /// commit fails with [`Error::CommitConflict`] and nothing lands. Returns the snapshot id, None
    /// when there was nothing to change.
    pub fn commit_row_changes(
        &mut self,
        read: &ChangeRead,
        deletes: BTreeMap<String, RoaringTreemap>,
        added: Vec<DataFile>,
    ) -> Result<Option<i64>> {
        self.writable()?;
        self.check_inside(&added)?;
        self.refresh()?;
        let deletes: BTreeMap<String, RoaringTreemap> =
            deletes.into_iter().filter(|(_, rows)| !rows.is_empty()).collect();
        if deletes.is_empty() && added.is_empty() {
            return Ok(None);
        }
        let isolation = self.isolation(read.operation)?;
        if deletes.is_empty() && isolation == Isolation::Snapshot {
            return self.commit_append(added).map(Some);
        }
        let base = match read.snapshot {
            Some(id) => Some(self.metadata.snapshot(id)?.clone()),
            None => None,
        };
        let touched: Vec<DataFile> =
            self.data_files(base.as_ref())?.into_iter().filter(|f| deletes.contains_key(&f.file_path)).collect();
        if let Some(path) = deletes.keys().find(|path| !touched.iter().any(|f| &f.file_path == *path)) {
            return Err(Error::invalid(format!(
                "a row-level change deletes rows of {path}, which is not a data file of {} at the snapshot it read",
                self.location()
            )));
        }
        for file in &touched {
            let rows = &deletes[&file.file_path];
            let last = rows.max().unwrap_or(0);
            if last >= u64::try_from(file.record_count).unwrap_or(0) {
                return Err(Error::invalid(format!(
                    "a row-level change deletes row {last} of {}, which holds {} rows",
                    file.file_path, file.record_count
                )));
            }
        }
        let operation = match (deletes.is_empty(), added.is_empty()) {
            (true, _) => Operation::Append,
            (false, true) => Operation::Delete,
            (false, false) => Operation::Overwrite,
        };
        let committed = self.commit_with_retries("a row-level change", |table| {
            table.check_unchanged(&touched)?;
            if isolation == Isolation::Serializable {
                table.check_no_rows_added_since(read)?;
            }
            let change = Change::new(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            let changes = touched
                .iter()
                .map(|file| table.delete_rows(file, &deletes[&file.file_path]))
                .collect::<Result<Vec<_>>>()?;
            Ok(table
                .commit_deletes(&change, parent.as_ref(), operation, changes, &added)?
                .then_some(change.snapshot_id))
        });
        committed.map(Some)
    }

    /// The isolation level the table asks of a row-level `operation`
    /// (`write.<operation>.isolation-level`, Iceberg's names; `serializable` when unset).
    pub fn isolation(&self, operation: RowOperation) -> Result<Isolation> {
        let key = format!("write.{}.isolation-level", operation.name());
        match self.metadata.properties.get(&key).map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("serializable") => Ok(Isolation::Serializable),
            Some("snapshot") => Ok(Isolation::Snapshot),
            Some(other) => {
                Err(Error::invalid(format!("table property {key} is {other:?}: it takes serializable or snapshot")))
            }
        }
    }

    /// Serializable isolation's check (Iceberg's `validateNoConflictingDataFiles`): no commit
    /// between the snapshot `read` names (before the first one when the change read an empty
    /// table) and the current one added a data file that may hold a row the change's filter
    /// passes (any row, without a filter). Compaction adds no rows and is not such a commit.
    pub(super) fn check_no_rows_added_since(&self, read: &ChangeRead) -> Result<()> {
        let mut added = Vec::new();
        let mut at = self.metadata.current_snapshot();
        while let Some(snapshot) = at.filter(|s| Some(s.snapshot_id) != read.snapshot) {
            if matches!(snapshot.summary.get("operation").map(String::as_str), Some("append" | "overwrite")) {
                let id = snapshot.snapshot_id;
                for manifest in self.manifests(snapshot)? {
                    if manifest.content != 0 || manifest.added_snapshot_id != id {
                        continue;
                    }
                    let entries = self.entries_of(&manifest).map_err(|e| e.within(&snapshot.manifest_list))?;
                    added.extend(
                        entries
                            .into_iter()
                            .filter(|e| e.status == STATUS_ADDED && e.snapshot_id.unwrap_or(id) == id)
                            .map(|e| e.data_file),
                    );
                }
            }
            at = snapshot.parent_snapshot_id.and_then(|parent| self.metadata.snapshot(parent).ok());
        }
        match self.prune(added, read.filter)?.first() {
            None => Ok(()),
            Some(file) => Err(Error::CommitConflict(format!(
                "another writer added rows to {} that this change's scan would have read ({}); under serializable \
                 isolation nothing was committed",
                self.location(),
                file.file_path
            ))),
        }
    }

    /// The positions of the rows of one data file that `filter` passes, its deleted rows left out:
    /// the rows a search or scan of the file takes.
    pub(super) fn live_positions(&self, file: &DataFile, filter: Option<&Predicate>) -> Result<RoaringTreemap> {
        let mut live = self.positions_passing(file, filter)?;
        live -= deleted_positions(&self.storage, file)?;
        Ok(live)
    }

    /// The positions of the rows of one data file (deleted rows included) that `filter` passes.
    pub(super) fn positions_passing(&self, file: &DataFile, filter: Option<&Predicate>) -> Result<RoaringTreemap> {
        let rows = u64::try_from(file.record_count).unwrap_or(0);
        let Some(filter) = filter else {
            return Ok((0..rows).collect());
        };
        let columns: Vec<String> = filter.columns().into_iter().collect();
        let whole = DataFile { deletes: Vec::new(), ..file.clone() };
        let mut positions = RoaringTreemap::new();
        let mut at = 0u64;
        for batch in self.scan_files(vec![whole], Some(&columns), 64 * 1024)? {
            let passed = filter.evaluate(&batch?)?;
            positions
                .extend((0..passed.len()).filter(|&i| passed.is_valid(i) && passed.value(i)).map(|i| at + i as u64));
            at += passed.len() as u64;
        }
        if at != rows {
            return Err(Error::Corrupt(format!(
                "data file {} holds {at} rows, its manifest says {rows}",
                file.file_path
            )));
        }
        Ok(positions)
    }
}
