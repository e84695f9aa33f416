//! Row deletes: position delete files (format version 2) or deletion vectors (3).

use super::*;

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
                let after = before | passing;
                replaced.extend(file.deletes.iter().cloned());
                if after.len() >= u64::try_from(file.record_count).unwrap_or(0) {
                    removed.push(file);
                    continue;
                }
                // Format version 3 deletes with deletion vectors; 2 with position delete files.
                let (bytes, mut description) = match table.metadata.format_version >= 3 {
                    true => crate::spec::deletes::write_deletion_vector(&file.file_path, &after)?,
                    false => crate::spec::deletes::write(&file.file_path, &after)?,
                };
                let extension = if is_deletion_vector(&description) { "puffin" } else { "parquet" };
                let path = format!("data/{}-deletes.{extension}", uuid::Uuid::new_v4());
                table.storage.put(&path, bytes)?;
                description.file_path = table.storage.uri(&path);
                // Iceberg readers match delete files to data files within a partition.
                description.spec_id = file.spec_id;
                description.partition = file.partition.clone();
                added.push(description);
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
