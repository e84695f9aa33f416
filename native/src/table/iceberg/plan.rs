//! Scan planning: which files and row groups a read takes, splits, and what EXPLAIN reports.

use super::*;

/// What a filtered scan reads and what each pruning level left out ([`Table::explain`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScanExplain {
    /// Data files asked for, and those left out by their manifest bounds.
    pub files: usize,
    pub files_pruned: usize,
    /// Row groups of the files read, and those left out by footer statistics, by bloom filters and by
    /// scalar indexes.
    pub row_groups: usize,
    pub row_groups_pruned_by_stats: usize,
    pub row_groups_pruned_by_bloom: usize,
    pub row_groups_pruned_by_index: usize,
    /// Rows of the files read; of those, deleted (delete files), ruled out by scalar indexes, and read.
    pub rows: u64,
    pub rows_deleted: u64,
    pub rows_pruned_by_index: u64,
    pub rows_read: u64,
    /// Pages of the read columns in the files read, and those holding a row that is read (a page
    /// holding none is skipped through the page index); a column chunk without a page index counts
    /// as one page.
    pub pages: u64,
    pub pages_read: u64,
    /// Bytes fetched from storage: the read pages' compressed bytes and the scalar index files used.
    pub bytes_read: u64,
    /// For a vector search ([`Table::explain_search`]): of the files searched, those whose HNSW
    /// graph the search walks and those it compares exactly, by the rows of each the filter passes.
    pub files_by_graph: usize,
    pub files_exact: usize,
}

impl ScanExplain {
    /// The counts as one Arrow row, a column each named as its field, and `reading`: the
    /// descriptions (JSON) of the files that hold a row to read. What crosses to the engines.
    pub fn to_batch(&self, reading: &[DataFile]) -> Result<RecordBatch> {
        let counts = serde_json::to_value(self).map_err(|e| Error::Internal(e.to_string()))?;
        let counts = counts.as_object().ok_or_else(|| Error::Internal("ScanExplain is not an object".into()))?;
        let mut fields = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (name, value) in counts {
            fields.push(arrow::datatypes::Field::new(name, DataType::Int64, false));
            columns.push(Arc::new(arrow::array::Int64Array::from(vec![value.as_i64().unwrap_or(i64::MAX)])));
        }
        let descriptions = reading
            .iter()
            .map(|f| serde_json::to_string(f).map(Some))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let mut builder = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
        builder.append_value(descriptions);
        let reading = builder.finish();
        fields.push(arrow::datatypes::Field::new("reading", reading.data_type().clone(), false));
        columns.push(Arc::new(reading));
        Ok(RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns)?)
    }

    pub(super) fn add(&mut self, other: &ScanExplain) {
        self.files += other.files;
        self.files_pruned += other.files_pruned;
        self.row_groups += other.row_groups;
        self.row_groups_pruned_by_stats += other.row_groups_pruned_by_stats;
        self.row_groups_pruned_by_bloom += other.row_groups_pruned_by_bloom;
        self.row_groups_pruned_by_index += other.row_groups_pruned_by_index;
        self.rows += other.rows;
        self.rows_deleted += other.rows_deleted;
        self.rows_pruned_by_index += other.rows_pruned_by_index;
        self.rows_read += other.rows_read;
        self.pages += other.pages;
        self.pages_read += other.pages_read;
        self.bytes_read += other.bytes_read;
        self.files_by_graph += other.files_by_graph;
        self.files_exact += other.files_exact;
    }
}

impl Table {
    /// Streams `files` with the columns named in `columns` (every column when `None`), as the
    /// current schema types them.
    pub fn scan_files(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        self.scan_row_groups(files, columns, batch_rows, None)
    }

    /// As [`Table::scan_files`], skipping the row groups whose footer statistics show that no row
    /// passes `prune` (the columns it reads must be among `columns`). A filter over the stream still
    /// decides the rows: pruning only skips what it would drop.
    pub(super) fn scan_row_groups(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
        prune: Option<&Predicate>,
    ) -> Result<BatchStream> {
        Ok(Box::new(self.table_scan(files, columns, batch_rows, prune)?))
    }

    pub(super) fn table_scan(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        batch_rows: usize,
        prune: Option<&Predicate>,
    ) -> Result<TableScan> {
        let table_schema = self.read_schema()?;
        let indices = match columns {
            None => (0..self.arrow_schema()?.fields().len()).collect::<Vec<_>>(),
            Some(names) => names
                .iter()
                .map(|n| {
                    table_schema
                        .index_of(n)
                        .map_err(|_| Error::NotFound(format!("column '{n}' is not in the table schema")))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let schema = Arc::new(table_schema.project(&indices)?);
        let lineage = schema.fields().iter().any(|f| lineage::is_lineage(f.name()) || f.name() == ROW_POSITION);
        let indexed = self.scalar_indexes();
        let scalar = match prune {
            Some(filter) => filter
                .columns()
                .into_iter()
                .filter_map(|name| {
                    let field = table_schema.field_with_name(&name).ok()?;
                    let id = field_id(field).filter(|id| indexed.contains(id))?;
                    Some((name, id, field.data_type().clone()))
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(TableScan {
            storage: self.storage.clone(),
            schema,
            files: files.into(),
            current: None,
            batch_rows: batch_rows.max(1),
            selection: None,
            prune: prune.cloned(),
            scalar,
            lineage,
            reading: String::new(),
            defaults: self.initial_defaults()?,
        })
    }

    /// How a scan of `files` filtered by `filter` would prune, level by level, without reading any
    /// data page: file bounds, row-group statistics, scalar indexes (their files are read) and deletes.
    pub fn explain(&self, files: Vec<DataFile>, filter: Option<&Predicate>) -> Result<ScanExplain> {
        Ok(self.explain_files(files, filter)?.0)
    }

    /// As [`Table::explain`], with the files that hold a row to read: those a scan has to open (a
    /// file whose every row the bounds, statistics, indexes or deletes rule out is left out).
    pub fn explain_files(
        &self,
        files: Vec<DataFile>,
        filter: Option<&Predicate>,
    ) -> Result<(ScanExplain, Vec<DataFile>)> {
        let asked = files.len();
        let kept = self.prune(files, filter)?;
        let mut total = ScanExplain { files_pruned: asked - kept.len(), ..Default::default() };
        // Files are planned in parallel, each by a scan of its own (a scan holds its open reader).
        let explained = kept
            .into_par_iter()
            .map(|file| Ok((self.table_scan(Vec::new(), None, 1, filter)?.plan(&file)?.1, file)))
            .collect::<Result<Vec<_>>>()?;
        let mut reading = Vec::new();
        for (explain, file) in explained {
            total.add(&explain);
            if explain.rows_read > 0 {
                reading.push(file);
            }
        }
        total.files = asked;
        Ok((total, reading))
    }

    /// [`Table::explain`] of a vector search of `files` as `search` asks, among the rows `filter`
    /// passes, with how many files it walks the HNSW graph of and how many it compares exactly:
    /// the choice [`Table::search`] makes per file, from the same count of the file's passing rows
    /// (the filter is evaluated, deletes applied). A file counted for its graph is still compared
    /// exactly when it has no usable graph or the walk finds fewer than k passing rows. Without a
    /// filter no data file is opened.
    pub fn explain_search(
        &self,
        files: Vec<DataFile>,
        filter: Option<&Predicate>,
        search: &VectorSearch,
    ) -> Result<ScanExplain> {
        let schema = self.arrow_schema()?;
        let graph = match search.prepare_any(&schema)? {
            Prepared::Float(query) => {
                schema.field_with_name(&search.column).ok().and_then(field_id).map(|id| (id, query.metric()))
            }
            Prepared::Bits(_) | Prepared::Sparse(_) => None,
        };
        let asked = files.len();
        let kept = self.prune(files, filter)?;
        let explained = kept
            .into_par_iter()
            .map(|file| {
                let rows = u64::try_from(file.record_count).unwrap_or(0);
                let mut explain = match filter {
                    Some(filter) => self.table_scan(Vec::new(), None, 1, Some(filter))?.plan(&file)?.1,
                    None => ScanExplain { rows, rows_read: rows, ..Default::default() },
                };
                if explain.rows_read == 0 {
                    return Ok(explain);
                }
                let passing = match filter.is_none() && file.deletes.is_empty() {
                    true => rows,
                    false => self.live_positions(&file, filter)?.len(),
                };
                let by_graph = graph.is_some_and(|(id, metric)| {
                    let passing = usize::try_from(passing).unwrap_or(usize::MAX);
                    self.graph_answers(id, metric, search, passing, usize::try_from(rows).unwrap_or(0)).is_some()
                });
                if by_graph {
                    explain.files_by_graph = 1;
                } else {
                    explain.files_exact = 1;
                }
                Ok(explain)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut total = ScanExplain::default();
        for explain in &explained {
            total.add(explain);
        }
        total.files = asked;
        total.files_pruned = asked - explained.len();
        Ok(total)
    }

    /// The files of `files` that may hold a row `filter` passes, by their partition values and
    /// column statistics.
    pub fn prune(&self, files: Vec<DataFile>, filter: Option<&Predicate>) -> Result<Vec<DataFile>> {
        let Some(filter) = filter else { return Ok(files) };
        let schema = self.arrow_schema()?;
        let partitions = PartitionPruner::new(&self.metadata, &schema);
        let files = match partitions.is_empty() {
            true => files,
            false => files.into_iter().filter(|f| partitions.may_match(filter, f)).collect(),
        };
        Ok(prune_files(files, filter, schema.as_ref()))
    }

    /// `files` as scan splits: a file of more row groups than one and more than `split_rows` rows is
    /// cut into runs of whole row groups of about `split_rows` rows each (each split's `row_groups`
    /// and `record_count` are its own), the others stay whole. The splits of a file read its rows
    /// once between them, deletes and filters applied as for the whole file.
    pub fn split_files(&self, files: Vec<DataFile>, split_rows: u64) -> Result<Vec<DataFile>> {
        let mut splits = Vec::with_capacity(files.len());
        for file in files {
            if (file.record_count as u64) <= split_rows.max(1) || file.row_groups.is_some() {
                splits.push(file);
                continue;
            }
            let bytes = self.storage.map(self.storage.relative(&file.file_path)?, false)?;
            let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&bytes)
                .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
            let groups: Vec<u64> = metadata.row_groups().iter().map(|g| g.num_rows().max(0) as u64).collect();
            let (mut first, mut rows) = (0, 0u64);
            for (g, n) in groups.iter().enumerate() {
                rows += n;
                if rows >= split_rows || g + 1 == groups.len() {
                    splits.push(DataFile {
                        row_groups: Some([first, g + 1]),
                        record_count: rows as i64,
                        ..file.clone()
                    });
                    first = g + 1;
                    rows = 0;
                }
            }
        }
        Ok(splits)
    }

    /// The names of `columns` (every column when `None`) together with the extra columns a read
    /// needs, in table order: the read set and, within it, the positions of `columns`.
    pub(super) fn read_set(&self, columns: Option<&[String]>, extra: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let schema = self.read_schema()?;
        let output: Vec<String> = match columns {
            Some(names) => names.to_vec(),
            None => self.arrow_schema()?.fields().iter().map(|f| f.name().clone()).collect(),
        };
        let mut read: Vec<String> = Vec::new();
        for field in schema.fields() {
            if output.contains(field.name()) || extra.contains(field.name()) {
                read.push(field.name().clone());
            }
        }
        for name in output.iter().chain(extra) {
            if !read.contains(name) {
                return Err(Error::NotFound(format!("column '{name}' is not in the table schema")));
            }
        }
        Ok((read, output))
    }

    /// Streams the rows of `files` that `filter` passes, with the columns named in `columns`.
    pub fn scan(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<Predicate>,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        let Some(filter) = filter else {
            return self.scan_files(files, columns, batch_rows);
        };
        let files = self.prune(files, Some(&filter))?;
        let extra: Vec<String> = filter.columns().into_iter().collect();
        let (read, output) = self.read_set(columns, &extra)?;
        let inner = self.scan_row_groups(files, Some(&read), batch_rows, Some(&filter))?;
        let positions =
            output.iter().map(|n| read.iter().position(|r| r == n).expect("read holds the output")).collect();
        filtered(inner, filter, positions)
    }

    /// Streams the rows of `files` that `filter` passes, with the columns named in `columns` and a
    /// last `_distance` column: each row's distance from `search.query` (`search.k` is not used).
    pub fn scan_with_distances(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<Predicate>,
        search: &VectorSearch,
        batch_rows: usize,
    ) -> Result<BatchStream> {
        let query = search.prepare_any(self.arrow_schema()?.as_ref())?;
        let files = self.prune(files, filter.as_ref())?;
        let mut extra: Vec<String> = filter.as_ref().map(|f| f.columns().into_iter().collect()).unwrap_or_default();
        extra.push(search.column.clone());
        let (read, output) = self.read_set(columns, &extra)?;
        let positions: Vec<usize> =
            output.iter().map(|n| read.iter().position(|r| r == n).expect("read holds the output")).collect();
        let every: Vec<usize> = (0..read.len()).collect();
        let rows = match filter {
            Some(filter) => {
                filtered(self.scan_row_groups(files, Some(&read), batch_rows, Some(&filter))?, filter, every)?
            }
            None => self.scan_files(files, Some(&read), batch_rows)?,
        };
        with_distances(rows, query, &search.column, positions)
    }
}
