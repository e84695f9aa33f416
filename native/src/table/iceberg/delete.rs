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

impl Table {
    /// Deletes the rows `filter` passes (every row when None) from the current snapshot and commits
    /// that as a "delete" snapshot; returns it and how many rows it deleted (None and 0 when no row
    /// passed, and nothing is committed). Data files are never rewritten: a data file none of whose
    /// rows are left leaves the table, and the deleted rows of the others are listed in position
    /// delete files, one per data file (holding all of that file's deleted rows, so it replaces the
    /// one the file had). Older snapshots keep every row for time travel.
    pub fn delete_where(&mut self, filter: Option<&Predicate>) -> Result<(Option<i64>, u64)> {
        self.writable()?;
        if let Some(filter) = filter {
            self.read_set(Some(&[]), &filter.columns().into_iter().collect::<Vec<_>>())?;
        }
        self.refresh()?;
        self.commit_with_retries("a delete", |table| {
            let change = Change::new(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            let mut removed: Vec<DataFile> = Vec::new();
            let mut replaced: Vec<DataFile> = Vec::new();
            let mut added: Vec<DataFile> = Vec::new();
            let mut deleted_rows = 0u64;
            for file in table.prune(table.data_files(parent.as_ref())?, filter)? {
                let before = deleted_positions(&table.storage, &file)?;
                let passing = table.positions_passing(&file, filter)? - &before;
                if passing.is_empty() {
                    continue;
                }
                deleted_rows += passing.len();
                replaced.extend(file.deletes.iter().cloned());
                match table.put_deletes(&file, before | passing)? {
                    Some(deletes) => added.push(deletes),
                    None => removed.push(file),
                }
            }
            if deleted_rows == 0 {
                return Ok(Some((None, 0)));
            }
            let replaced = unique_by_path(replaced);
            let delta = RowDelta {
                operation: Operation::Delete,
                removed: &removed,
                replaced: &replaced,
                added_deletes: &added,
                added: &[],
            };
            if table.commit_row_delta(&change, parent.as_ref(), &delta)? {
                return Ok(Some((Some(change.snapshot_id), deleted_rows)));
            }
            for file in &added {
                table.storage.delete(table.storage.relative(&file.file_path)?)?;
            }
            Ok(None)
        })
    }

    /// Writes the delete file that deletes rows `deleted` (all it will have) of data file `file`,
    /// and returns its description; None, writing nothing, when no row of the file is left (the
    /// file itself leaves the table). Format version 3 deletes with a deletion vector, 2 with a
    /// position delete file.
    pub(super) fn put_deletes(&self, file: &DataFile, deleted: RoaringTreemap) -> Result<Option<DataFile>> {
        if deleted.len() >= u64::try_from(file.record_count).unwrap_or(0) {
            return Ok(None);
        }
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
        Ok(Some(description))
    }

    /// Commits a row-level change (UPDATE, MERGE, a DELETE by row) as one snapshot: the rows at
    /// `deletes` (data file path -> positions in it) are deleted and the data files `added` (the
    /// new and changed rows, written with their indexes) join the table. The change read the table
    /// at snapshot `read` (None: the current one); a file it deletes rows of must still be live
    /// with the delete files it had then, or the commit fails with [`Error::CommitConflict`]
    /// (another writer deleted or changed rows of it meanwhile). Appends by others land beside it.
    /// Returns the snapshot id, None when there was nothing to change.
    pub fn commit_row_changes(
        &mut self,
        read: Option<i64>,
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
        if deletes.is_empty() {
            return self.commit_append(added).map(Some);
        }
        let base = self.snapshot(read, None)?.cloned();
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
        let operation = if added.is_empty() { Operation::Delete } else { Operation::Overwrite };
        let committed = self.commit_with_retries("a row-level change", |table| {
            table.check_unchanged(&touched)?;
            let change = Change::new(&table.metadata);
            let parent = table.metadata.current_snapshot().cloned();
            let (mut removed, mut added_deletes) = (Vec::new(), Vec::new());
            for file in &touched {
                let before = deleted_positions(&table.storage, file)?;
                match table.put_deletes(file, before | &deletes[&file.file_path])? {
                    Some(deletes) => added_deletes.push(deletes),
                    None => removed.push(file.clone()),
                }
            }
            let replaced = delete_files_of(&touched);
            let delta = RowDelta {
                operation,
                removed: &removed,
                replaced: &replaced,
                added_deletes: &added_deletes,
                added: &added,
            };
            if table.commit_row_delta(&change, parent.as_ref(), &delta)? {
                return Ok(Some(change.snapshot_id));
            }
            for file in &added_deletes {
                table.storage.delete(table.storage.relative(&file.file_path)?)?;
            }
            Ok(None)
        });
        committed.map(Some)
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
