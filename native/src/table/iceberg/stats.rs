//! Statistics from metadata: live row counts, aggregates answered without a scan, column statistics.

use super::*;

impl Table {
    /// The rows `files` hold, less those their delete files delete: an exact count from the
    /// manifests and the delete files alone, without reading data (COUNT(*) answered from metadata).
    pub fn live_rows(&self, files: &[DataFile]) -> Result<u64> {
        files.iter().try_fold(0u64, |total, file| {
            let rows = u64::try_from(file.record_count).unwrap_or(0);
            let deleted = match file.deletes.is_empty() {
                true => 0,
                false => deleted_positions(&self.storage, file)?.range_cardinality(0..rows),
            };
            Ok(total + rows - deleted)
        })
    }

    /// `aggregates` over a snapshot's rows from its manifests alone, as one row; None when the
    /// metadata cannot answer them all exactly (see [`crate::scan::aggregate_from_metadata`]).
    pub fn aggregate_from_metadata(
        &self,
        snapshot: Option<&Snapshot>,
        aggregates: &[crate::scan::MetadataAggregate],
    ) -> Result<Option<RecordBatch>> {
        let files = self.data_files(snapshot)?;
        let live = self.live_rows(&files)?;
        let properties = &self.metadata.properties;
        let truncation = |column: &str| crate::scan::bound_truncation(properties, column);
        crate::scan::aggregate_from_metadata(&files, &*self.arrow_schema()?, live, aggregates, &truncation)
    }

    /// Each column's statistics over a snapshot's rows, from its manifests and the distinct-value
    /// sketches beside its data files: (column, estimated distinct values, null count). A count is
    /// None where a file lacks what it needs (a file written before sketches were kept, or before the
    /// column existed, or a damaged sketch, which is warned about); deleted rows are not subtracted
    /// (statistics, not answers).
    pub fn column_statistics(&self, snapshot: Option<&Snapshot>) -> Result<Vec<(String, Option<u64>, Option<u64>)>> {
        use crate::index::ndv::{ndv_path, parse, Sketch};
        let schema = self.arrow_schema()?;
        let files = self.data_files(snapshot)?;
        let ids: Vec<Option<i32>> = schema
            .fields()
            .iter()
            .map(|f| field_id(f).filter(|_| crate::index::ndv::sketched(f.data_type())))
            .collect();
        let mut merged: HashMap<i32, Option<Sketch>> =
            ids.iter().flatten().map(|&id| (id, Some(Sketch::default()))).collect();
        for file in &files {
            let path = ndv_path(self.storage.relative(&file.file_path)?);
            let sketches = match self.storage.get(&path) {
                Ok(bytes) => {
                    parse(&bytes, &path).map_err(|e| log::warn!("{e}; its columns get no distinct-value estimate")).ok()
                }
                Err(_) => None,
            };
            let sketches: HashMap<i32, Sketch> = sketches.unwrap_or_default().into_iter().collect();
            for (id, total) in merged.iter_mut() {
                match (total.as_mut(), sketches.get(id)) {
                    (Some(total), Some(sketch)) => total.merge(sketch),
                    _ => *total = None,
                }
            }
        }
        Ok(schema
            .fields()
            .iter()
            .zip(&ids)
            .map(|(field, id)| {
                let ndv = id.and_then(|id| merged.get(&id).cloned().flatten()).map(|s| s.estimate());
                let nulls = field_id(field).and_then(|id| {
                    files.iter().map(|f| f.null_value_counts.get(&id).map(|n| *n as u64)).sum::<Option<u64>>()
                });
                (field.name().clone(), ndv, nulls)
            })
            .collect())
    }
}
