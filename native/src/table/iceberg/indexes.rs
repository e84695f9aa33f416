//! Index DDL: scalar indexes and HNSW vector indexes declared, built beside data files, dropped.

use super::*;

/// Counts of the HNSW graphs built through one table handle, as written and as declared.
#[derive(Debug, Default)]
pub struct IndexBuilds {
    pub(super) files: std::sync::atomic::AtomicU64,
    pub(super) vectors: std::sync::atomic::AtomicU64,
    pub(super) nanos: std::sync::atomic::AtomicU64,
}

impl IndexBuilds {
    pub(super) fn add(&self, vectors: usize, took: std::time::Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        self.files.fetch_add(1, Relaxed);
        self.vectors.fetch_add(vectors as u64, Relaxed);
        self.nanos.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// Graphs built so far: (data files, vectors in them, nanoseconds spent building).
    pub fn totals(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.files.load(Relaxed), self.vectors.load(Relaxed), self.nanos.load(Relaxed))
    }
}

impl Table {
    /// A column's field id and Arrow field, for a scalar index.
    pub(super) fn scalar_column(&self, column: &str) -> Result<(i32, arrow::datatypes::Field)> {
        let schema = self.arrow_schema()?;
        let field = schema
            .field_with_name(column)
            .map_err(|_| Error::NotFound(format!("column '{column}' is not in the table schema")))?;
        let id = field_id(field).ok_or_else(|| Error::Internal(format!("column '{column}' has no field id")))?;
        if !crate::index::indexable(field.data_type()) {
            return Err(Error::invalid(format!(
                "column '{column}' of type {} cannot have a scalar index",
                field.data_type()
            )));
        }
        Ok((id, field.clone()))
    }

    /// Declares a scalar index on a column and builds it for every live data file from the column's
    /// values (no data file is rewritten). Files written from then on (appends, compaction) are
    /// indexed as they are written; filtered scans use the index to read only the rows that may
    /// pass. Returns the number of files indexed.
    pub fn create_scalar_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, field) = self.scalar_column(column)?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            let mut builder = crate::index::ScalarIndexBuilder::new(&field)?;
            for batch in self.scan_files(
                vec![DataFile { deletes: Vec::new(), ..file.clone() }],
                Some(&[column.to_owned()]),
                64 * 1024,
            )? {
                builder.append(batch?.column(0).as_ref())?;
            }
            let path = crate::index::scalar_index_path(self.storage.relative(&file.file_path)?, id);
            self.storage.put(&path, Bytes::from(builder.finish()?))?;
        }
        self.commit_properties(&[(scalar_index_property(id), Some("inverted".to_owned()))])?;
        Ok(files.len())
    }

    /// Drops a column's scalar index: scans stop using it and the live files' index files are
    /// deleted. Returns the number of files whose index was deleted.
    pub fn drop_scalar_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, _) = self.scalar_column(column)?;
        if !self.metadata.properties.contains_key(&scalar_index_property(id)) {
            return Err(Error::NotFound(format!("column '{column}' has no scalar index")));
        }
        self.commit_properties(&[(scalar_index_property(id), None)])?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            self.storage.delete(&crate::index::scalar_index_path(self.storage.relative(&file.file_path)?, id))?;
        }
        Ok(files.len())
    }

    pub fn vector_indexes(&self) -> HashMap<i32, HnswParams> {
        self.metadata
            .properties
            .iter()
            .filter_map(|(k, v)| {
                let id: i32 = k.strip_prefix("hyperstream.vector.")?.strip_suffix(".index")?.parse().ok()?;
                match HnswParams::from_json(v) {
                    Ok(params) => Some((id, params)),
                    Err(e) => {
                        warn(&format!("table {}: ignoring the index of field {id}: {e}", self.location()));
                        None
                    }
                }
            })
            .collect()
    }

    /// The field id and dimension of a float vector column.
    pub fn vector_column(&self, column: &str) -> Result<(i32, usize)> {
        let schema = self.arrow_schema()?;
        let field = schema
            .field_with_name(column)
            .map_err(|_| Error::NotFound(format!("vector column '{column}' is not in the table schema")))?;
        match (field.data_type(), field_id(field)) {
            (DataType::FixedSizeList(item, n), Some(id)) if item.data_type() == &DataType::Float32 => {
                Ok((id, *n as usize))
            }
            (other, _) => Err(Error::invalid(format!("column '{column}' is {other}, not a float vector column"))),
        }
    }

    /// Declares an HNSW index on a vector column and builds it for every live data file from its
    /// vector sidecar (no data file is rewritten; a missing or damaged sidecar is rebuilt from the
    /// Parquet column first). Files appended from then on are indexed as they are written. Returns
    /// the number of files indexed.
    pub fn create_vector_index(&mut self, column: &str, params: HnswParams) -> Result<usize> {
        self.writable()?;
        let params = params.validate()?;
        let (id, dimension) = self.vector_column(column)?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for (done, file) in files.iter().enumerate() {
            let started = std::time::Instant::now();
            self.index_file(file, column, id, dimension, params)?;
            progress(&format!(
                "HNSW index on {}.{column}: file {} of {} ({} rows) built in {:.2} s",
                self.location(),
                done + 1,
                files.len(),
                file.record_count,
                started.elapsed().as_secs_f64()
            ));
        }
        self.commit_properties(&[(index_property(id), Some(params.to_json()))])?;
        Ok(files.len())
    }

    /// Drops a vector column's index: searches are exact again, and the live files' graphs are
    /// deleted. Returns the number of files whose graph was deleted.
    pub fn drop_vector_index(&mut self, column: &str) -> Result<usize> {
        self.writable()?;
        let (id, _) = self.vector_column(column)?;
        if !self.metadata.properties.contains_key(&index_property(id)) {
            return Err(Error::NotFound(format!("column '{column}' has no vector index")));
        }
        self.commit_properties(&[(index_property(id), None)])?;
        let files = self.data_files(self.metadata.current_snapshot())?;
        for file in &files {
            self.storage.delete(&hnsw_path(self.storage.relative(&file.file_path)?, id))?;
        }
        Ok(files.len())
    }

    /// The stored HNSW graph of the vectors in a sidecar's bytes, counted in [`Table::index_builds`].
    pub(super) fn graph_of(
        &self,
        sidecar: &[u8],
        rows: usize,
        dimension: usize,
        params: HnswParams,
        name: &str,
    ) -> Result<Bytes> {
        let started = std::time::Instant::now();
        let sidecar = Sidecar::parse(sidecar, rows, dimension, name)?;
        let graph = HnswGraph::build(sidecar.vectors(), dimension, &sidecar.validity, params)?.to_bytes();
        self.index_builds.add(sidecar.validity.count_set_bits(), started.elapsed());
        Ok(graph)
    }

    /// The HNSW graphs built through this handle so far (by writes and by declaring indexes).
    pub fn index_builds(&self) -> &IndexBuilds {
        &self.index_builds
    }

    /// Builds and stores the graph of one data file's vector column.
    pub(super) fn index_file(
        &self,
        file: &DataFile,
        column: &str,
        id: i32,
        dimension: usize,
        params: HnswParams,
    ) -> Result<()> {
        let path = self.storage.relative(&file.file_path)?.to_owned();
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let side = sidecar_path(&path, id);
        let stored = match self.storage.map(&side, false) {
            Ok(region) if Sidecar::parse(&region, rows, dimension, &side).is_ok() => Some(region),
            _ => None,
        };
        let region = match stored {
            Some(region) => region,
            None => {
                let mut builder = SidecarBuilder::new(id, dimension);
                for batch in self.scan_files(vec![file.clone()], Some(&[column.to_owned()]), 64 * 1024)? {
                    builder.append(batch?.column(0).as_ref())?;
                }
                let bytes = builder.finish();
                self.storage.put(&side, bytes.clone())?;
                bytes
            }
        };
        let graph = self.graph_of(&region, rows, dimension, params, &self.storage.uri(&side))?;
        self.storage.put(&hnsw_path(&path, id), graph)
    }
}
