//! The per-file reader: row groups, pages and index candidates chosen, deletes applied, batches out.

use super::*;

/// Reads data files one after another, mapping each file's columns to the table schema by field id.
pub(super) struct TableScan {
    pub(super) storage: Storage,
    pub(super) schema: SchemaRef,
    pub(super) files: VecDeque<DataFile>,
    /// The file being read: its reader, where each output column is in its batches, and its first
    /// row id and data sequence number (row lineage).
    pub(super) current: Option<(ParquetRecordBatchReader, Vec<Option<usize>>, (Option<i64>, Option<i64>))>,
    pub(super) batch_rows: usize,
    /// Rows to read from the (single) file; all when None.
    pub(super) selection: Option<RowSelection>,
    /// The filter whose row groups are worth reading (see [`row_groups_may_match`]); all when None.
    pub(super) prune: Option<Predicate>,
    /// The filter's columns with a scalar index (name, field id, type): the rows their indexes rule
    /// out are not read.
    pub(super) scalar: Vec<(String, i32, DataType)>,
    /// Whether row lineage columns or `_pos` are read: batches then carry each row's position in
    /// its file.
    pub(super) lineage: bool,
    /// The path of the file being read, which its read errors name.
    pub(super) reading: String,
    /// The `initial-default` of columns that have one, by name: what a file written before the
    /// column existed holds in it (null for the others).
    pub(super) defaults: HashMap<String, serde_json::Value>,
}

/// The part of a whole-file row `selection` that falls in the row groups `kept`, as a selection
/// over just their rows (what a reader of those row groups alone takes).
pub(super) fn within_row_groups(
    selection: &RowSelection,
    metadata: &parquet::file::metadata::ParquetMetaData,
    kept: &[usize],
) -> RowSelection {
    let mut selected = Vec::new();
    let mut at = 0usize;
    for selector in selection.iter() {
        if !selector.skip {
            selected.push(at..at + selector.row_count);
        }
        at += selector.row_count;
    }
    let mut starts = Vec::with_capacity(metadata.num_row_groups());
    let mut start = 0usize;
    for g in 0..metadata.num_row_groups() {
        starts.push(start);
        start += metadata.row_group(g).num_rows() as usize;
    }
    let mut ranges = Vec::new();
    let mut base = 0usize;
    for &g in kept {
        let (first, rows) = (starts[g], metadata.row_group(g).num_rows() as usize);
        for range in &selected {
            let (lo, hi) = (range.start.max(first), range.end.min(first + rows));
            if lo < hi {
                ranges.push(lo - first + base..hi - first + base);
            }
        }
        base += rows;
    }
    RowSelection::from_consecutive_ranges(ranges.into_iter(), base)
}

/// Of the pages of root columns `roots`, how many there are, how many hold a row that is read and
/// their compressed bytes: rows are read in the row groups `kept` (ascending) as `selection` says (a
/// selection over those groups' rows, one after another; None reads every row of them). Without a
/// page index a column chunk counts as one page.
pub(super) fn pages_read(
    metadata: &parquet::file::metadata::ParquetMetaData,
    schema: &parquet::schema::types::SchemaDescriptor,
    roots: &[usize],
    kept: &[usize],
    selection: Option<&RowSelection>,
) -> (u64, u64, u64) {
    let mut selected: Vec<std::ops::Range<usize>> = Vec::new();
    if let Some(selection) = selection {
        let mut at = 0usize;
        for selector in selection.iter() {
            if !selector.skip {
                selected.push(at..at + selector.row_count);
            }
            at += selector.row_count;
        }
    }
    let reads = |lo: usize, hi: usize| {
        selection.is_none() || {
            let i = selected.partition_point(|r| r.end <= lo);
            i < selected.len() && selected[i].start < hi
        }
    };
    let leaves: Vec<usize> =
        (0..schema.num_columns()).filter(|&c| roots.contains(&schema.get_column_root_idx(c))).collect();
    let (mut pages, mut read, mut bytes) = (0u64, 0u64, 0u64);
    let mut base = 0usize;
    for g in 0..metadata.num_row_groups() {
        let group = metadata.row_group(g);
        let rows = group.num_rows().max(0) as usize;
        let is_kept = kept.binary_search(&g).is_ok();
        let reads = |lo: usize, hi: usize| is_kept && reads(lo, hi);
        for &c in &leaves {
            let locations = metadata.page_index().and_then(|p| p.page_locations(g, c));
            match locations {
                Some(locations) if !locations.is_empty() => {
                    for (i, page) in locations.iter().enumerate() {
                        let start = page.first_row_index as usize;
                        let end = locations.get(i + 1).map_or(rows, |next| next.first_row_index as usize);
                        pages += 1;
                        if reads(base + start, base + end) {
                            read += 1;
                            bytes += page.compressed_page_size.max(0) as u64;
                        }
                    }
                }
                _ => {
                    pages += 1;
                    if reads(base, base + rows) {
                        read += 1;
                        bytes += group.column(c).compressed_size().max(0) as u64;
                    }
                }
            }
        }
        if is_kept {
            base += rows;
        }
    }
    (pages, read, bytes)
}

/// The rows of `bitmap` as a selection over a file of `rows` rows.
pub(super) fn bitmap_selection(bitmap: &roaring::RoaringBitmap, rows: usize) -> RowSelection {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for row in bitmap.iter().map(|r| r as usize).filter(|r| *r < rows) {
        match ranges.last_mut() {
            Some(last) if last.end == row => last.end += 1,
            _ => ranges.push(row..row + 1),
        }
    }
    RowSelection::from_consecutive_ranges(ranges.into_iter(), rows)
}

pub(super) fn field_id(field: &arrow::datatypes::Field) -> Option<i32> {
    field.metadata().get(PARQUET_FIELD_ID).and_then(|v| v.parse().ok())
}

impl TableScan {
    /// What reading `file` takes: its reader builder with the row groups and rows to read chosen by
    /// every pruning level (footer statistics, scalar indexes, deletes), and the counts of each.
    pub(super) fn plan(&self, file: &DataFile) -> Result<(ParquetRecordBatchReaderBuilder<Bytes>, ScanExplain)> {
        // Mapped, not read: only the pages of the projected columns and selected rows are touched.
        let bytes = self.storage.map(self.storage.relative(&file.file_path)?, false)?;
        // The offset index (where each page starts) lets a row selection (a filter's, or the rows a
        // search found) skip whole pages instead of decoding and dropping them; the column index
        // (each page's min and max) lets a filter skip the pages it rules out.
        let when = |wanted: bool| if wanted { PageIndexPolicy::Optional } else { PageIndexPolicy::Skip };
        let mut options = ArrowReaderOptions::new()
            .with_offset_index_policy(when(self.prune.is_some() || self.selection.is_some()))
            .with_column_index_policy(when(self.prune.is_some()));
        if self.lineage {
            let position = arrow::datatypes::Field::new(ROW_POSITION, DataType::Int64, false)
                .with_extension_type(parquet::arrow::RowNumber);
            options = options
                .with_virtual_columns(vec![Arc::new(position)])
                .map_err(|e| Error::Internal(format!("row positions: {e}")))?;
        }
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options)
            .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
        let total = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let groups = builder.metadata().num_row_groups();
        // A split of a big file reads its own row groups only.
        let split: Vec<usize> = match file.row_groups {
            Some([first, end]) => (first.min(groups)..end.min(groups)).collect(),
            None => (0..groups).collect(),
        };
        let split_rows = split.iter().map(|&g| builder.metadata().row_group(g).num_rows().max(0) as u64).sum();
        let mut explain = ScanExplain { files: 1, row_groups: split.len(), rows: split_rows, ..Default::default() };
        let mut selection = self.selection.clone();
        if !file.deletes.is_empty() {
            let deleted = deleted_positions(&self.storage, file)?;
            if !deleted.is_empty() {
                explain.rows_deleted = deleted.len() as u64;
                let kept = crate::spec::deletes::kept(&deleted, total);
                selection = Some(match selection {
                    Some(asked) => asked.intersection(&kept),
                    None => kept,
                });
            }
        }
        let mut kept: Vec<usize> = match &self.prune {
            Some(filter) => row_groups_may_match(filter, builder.metadata(), &self.schema)
                .into_iter()
                .filter(|g| split.contains(g))
                .collect(),
            None => split.clone(),
        };
        explain.row_groups_pruned_by_stats = split.len() - kept.len();
        if let Some(filter) = &self.prune {
            let before = kept.len();
            kept.retain(|&g| self.bloom_may_match(&builder, g, filter));
            explain.row_groups_pruned_by_bloom = before - kept.len();
            // Pages whose column index rules the filter out: their rows are not read, and a row
            // group left without a page is not opened.
            let mut ranges = Vec::new();
            let (mut start, mut narrowed) = (0usize, false);
            let mut emptied = Vec::new();
            for g in 0..groups {
                let rows = builder.metadata().row_group(g).num_rows().max(0) as usize;
                if kept.contains(&g) {
                    match crate::scan::pages_may_match(filter, builder.metadata(), g, &self.schema) {
                        Some(pages) => {
                            let left: usize = pages.iter().map(|r| r.len()).sum();
                            narrowed |= left < rows;
                            if left == 0 {
                                emptied.push(g);
                            }
                            ranges.extend(pages.into_iter().map(|r| r.start + start..r.end + start));
                        }
                        None => ranges.push(start..start + rows),
                    }
                }
                start += rows;
            }
            if narrowed {
                let pages = RowSelection::from_consecutive_ranges(ranges.into_iter(), total as usize);
                selection = Some(match selection {
                    Some(asked) => asked.intersection(&pages),
                    None => pages,
                });
                kept.retain(|g| !emptied.contains(g));
                explain.row_groups_pruned_by_stats += emptied.len();
            }
        }
        let (candidates, index_bytes) = self.index_candidates(file, total);
        if let Some(candidates) = candidates {
            explain.rows_pruned_by_index = total - candidates.len();
            selection = Some(match selection {
                Some(asked) => asked.intersection(&bitmap_selection(&candidates, total as usize)),
                None => bitmap_selection(&candidates, total as usize),
            });
            // Row groups holding no candidate are not opened at all.
            let mut start = 0u64;
            let mut holding = Vec::with_capacity(groups);
            for g in 0..groups {
                let rows = builder.metadata().row_group(g).num_rows().max(0) as u64;
                if rows > 0 && candidates.range_cardinality(start as u32..(start + rows) as u32) > 0 {
                    holding.push(g);
                }
                start += rows;
            }
            let before = kept.len();
            kept.retain(|g| holding.contains(g));
            explain.row_groups_pruned_by_index = before - kept.len();
        }
        let (builder, selection) = if kept.len() < groups {
            // The selection covers the kept groups' rows only, one after another.
            let selection = selection.map(|s| within_row_groups(&s, builder.metadata(), &kept));
            (builder.with_row_groups(kept.clone()), selection)
        } else {
            (builder, selection)
        };
        explain.rows_read = match &selection {
            Some(selection) => selection.row_count() as u64,
            None => kept.iter().map(|&g| builder.metadata().row_group(g).num_rows().max(0) as u64).sum(),
        };
        let (pages, pages_read, bytes) = pages_read(
            builder.metadata(),
            builder.parquet_schema(),
            &self.read_roots(builder.schema()),
            &kept,
            selection.as_ref(),
        );
        explain.pages = pages;
        explain.pages_read = pages_read;
        explain.bytes_read = bytes + index_bytes;
        let builder = match selection {
            Some(selection) => builder.with_row_selection(selection),
            None => builder,
        };
        Ok((builder, explain))
    }

    /// Whether row group `group` may hold a row `filter` passes by the Parquet bloom filters of its
    /// columns. A column without one, or whose filter cannot be read, rules nothing out.
    pub(super) fn bloom_may_match(
        &self,
        builder: &ParquetRecordBatchReaderBuilder<Bytes>,
        group: usize,
        filter: &Predicate,
    ) -> bool {
        let parquet = builder.parquet_schema();
        let metadata = builder.metadata().row_group(group);
        // Each column's filter is read once, however many values (an IN list) probe it.
        let mut filters: HashMap<usize, Option<parquet::bloom_filter::Sbbf>> = HashMap::new();
        let mut probe = |column: &str, literal: &dyn Array| -> Option<bool> {
            let id = field_id(self.schema.field_with_name(column).ok()?)?;
            // The file's top-level leaf column of that field id.
            let leaf = (0..parquet.num_columns()).find(|&c| {
                let info = parquet.column(c).self_type().get_basic_info().clone();
                parquet.column(c).path().parts().len() == 1 && info.has_id() && info.id() == id
            })?;
            metadata.column(leaf).bloom_filter_offset()?;
            let bloom = filters
                .entry(leaf)
                .or_insert_with(|| builder.get_row_group_column_bloom_filter(group, leaf).ok().flatten())
                .as_ref()?;
            use arrow::array::AsArray;
            use arrow::datatypes::{Date32Type, Int16Type, Int32Type, Int8Type, TimestampMicrosecondType};
            Some(match literal.data_type() {
                DataType::Int8 => bloom.check(&(literal.as_primitive::<Int8Type>().value(0) as i32)),
                DataType::Int16 => bloom.check(&(literal.as_primitive::<Int16Type>().value(0) as i32)),
                DataType::Int32 => bloom.check(&literal.as_primitive::<Int32Type>().value(0)),
                DataType::Date32 => bloom.check(&literal.as_primitive::<Date32Type>().value(0)),
                DataType::Int64 => bloom.check(&literal.as_primitive::<Int64Type>().value(0)),
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, _) => {
                    bloom.check(&literal.as_primitive::<TimestampMicrosecondType>().value(0))
                }
                DataType::Utf8 => bloom.check(literal.as_string::<i32>().value(0).as_bytes()),
                DataType::Binary => bloom.check(literal.as_binary::<i32>().value(0)),
                _ => return None,
            })
        };
        crate::scan::bloom_may_match(filter, &self.schema, &mut probe)
    }

    /// Each scan column's root column in a file of `file_schema` (by field id; None where the file
    /// predates the column).
    pub(super) fn roots(&self, file_schema: &ArrowSchema) -> Vec<Option<usize>> {
        self.schema
            .fields()
            .iter()
            .map(|f| field_id(f).and_then(|id| file_schema.fields().iter().position(|ff| field_id(ff) == Some(id))))
            .collect()
    }

    /// The file's root columns the scan reads, ascending.
    pub(super) fn read_roots(&self, file_schema: &ArrowSchema) -> Vec<usize> {
        let mut wanted: Vec<usize> = self.roots(file_schema).into_iter().flatten().collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted
    }

    pub(super) fn open(
        &self,
        file: &DataFile,
    ) -> Result<(ParquetRecordBatchReader, Vec<Option<usize>>, (Option<i64>, Option<i64>))> {
        let (builder, _) = self.plan(file)?;
        // Table columns by field id -> root column index in the file.
        let roots = self.roots(builder.schema());
        let wanted = self.read_roots(builder.schema());
        let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.clone());
        let reader = builder
            .with_projection(mask)
            .with_batch_size(self.batch_rows)
            .build()
            .map_err(|e| Error::Corrupt(format!("data file {}: {e}", file.file_path)))?;
        // Position of each table column within the projected batch.
        let positions = roots.iter().map(|r| r.map(|root| wanted.binary_search(&root).unwrap_or(0))).collect();
        Ok((reader, positions, (file.first_row_id, file.sequence_number)))
    }

    /// The rows of `file` (of `rows` rows) that may pass the scan's filter by the scalar indexes of
    /// its columns, or None where no index narrows it. A missing index (a file written before the
    /// index was declared) is skipped silently, a damaged one with a warning: either way the file is
    /// read without it, so the answer stays the same.
    pub(super) fn index_candidates(&self, file: &DataFile, rows: u64) -> (Option<roaring::RoaringBitmap>, u64) {
        let Some(filter) = self.prune.as_ref() else {
            return (None, 0);
        };
        if self.scalar.is_empty() || rows > u32::MAX as u64 {
            return (None, 0);
        }
        let Ok(data_path) = self.storage.relative(&file.file_path) else {
            return (None, 0);
        };
        let mut loaded: HashMap<i32, Option<Arc<crate::index::ScalarIndex>>> = HashMap::new();
        let mut index_of = |column: &str| -> Option<Arc<crate::index::ScalarIndex>> {
            let (_, id, data_type) = self.scalar.iter().find(|(name, ..)| name == column)?;
            loaded
                .entry(*id)
                .or_insert_with(|| {
                    let path = crate::index::scalar_index_path(data_path, *id);
                    let parsed = match self.storage.map(&path, false) {
                        Ok(region) => {
                            crate::index::ScalarIndex::parse(region, rows, data_type, &self.storage.uri(&path))
                        }
                        Err(Error::NotFound(_)) => return None,
                        Err(e) => Err(e),
                    };
                    match parsed {
                        Ok(index) => Some(Arc::new(index)),
                        Err(e) => {
                            warn(&format!("{e}; reading {} without it", file.file_path));
                            None
                        }
                    }
                })
                .clone()
        };
        let candidates = match crate::index::candidate_rows(filter, true, rows as u32, &mut index_of) {
            Ok(candidates) => candidates,
            Err(e) => {
                warn(&format!("scalar index of {}: {e}; reading the file without it", file.file_path));
                None
            }
        };
        let bytes = loaded.values().flatten().map(|index| index.bytes_read()).sum();
        (candidates, bytes)
    }

    pub(super) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.current.is_none() {
                let Some(file) = self.files.pop_front() else {
                    return Ok(None);
                };
                self.current = Some(self.open(&file)?);
                self.reading = file.file_path;
            }
            let (reader, positions, (first_row_id, sequence_number)) = self.current.as_mut().expect("opened above");
            // A page that no longer decodes is the file's damage: named, whether the decoder returned
            // an error or panicked on it.
            let next =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next())).unwrap_or_else(|payload| {
                    let message = crate::error::panic_message(payload.as_ref());
                    Some(Err(ArrowError::ParquetError(format!("the decoder panicked: {message}"))))
                });
            match next {
                None => self.current = None,
                Some(batch) => {
                    let batch = batch.map_err(|e| Error::Corrupt(format!("data file {}: {e}", self.reading)))?;
                    let mut columns = Vec::with_capacity(self.schema.fields().len());
                    let row_positions = batch
                        .column_by_name(ROW_POSITION)
                        .and_then(|c| arrow::array::AsArray::as_primitive_opt::<Int64Type>(c));
                    for (field, position) in self.schema.fields().iter().zip(positions.iter()) {
                        if let Some(rows) = row_positions.filter(|_| lineage::is_lineage(field.name())) {
                            let stored = position.map(|p| batch.column(p));
                            columns.push(lineage::values(field.name(), stored, rows, *first_row_id, *sequence_number));
                            continue;
                        }
                        match field.name().as_str() {
                            FILE_PATH => {
                                let path = arrow::array::StringArray::from_iter_values(std::iter::repeat_n(
                                    self.reading.as_str(),
                                    batch.num_rows(),
                                ));
                                columns.push(Arc::new(path));
                                continue;
                            }
                            ROW_POSITION => {
                                let rows = row_positions.ok_or_else(|| {
                                    Error::Internal("a read of _pos was planned without row positions".into())
                                })?;
                                columns.push(Arc::new(rows.clone()));
                                continue;
                            }
                            _ => {}
                        }
                        columns.push(match position {
                            Some(p) => {
                                let column = batch.column(*p);
                                if column.data_type() == field.data_type() {
                                    column.clone()
                                } else {
                                    cast(column, field.data_type())?
                                }
                            }
                            None => match self.defaults.get(field.name()) {
                                Some(value) => crate::spec::schema::default_column(
                                    field.name(),
                                    value,
                                    field.data_type(),
                                    batch.num_rows(),
                                )?,
                                None => new_null_array(field.data_type(), batch.num_rows()),
                            },
                        });
                    }
                    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                    return Ok(Some(RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?));
                }
            }
        }
    }
}

impl Iterator for TableScan {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // What goes wrong with a file's batches is the file's (a damaged footer can declare columns
        // its pages do not hold): its errors name it.
        let next = self.next_batch().map_err(|e| if self.reading.is_empty() { e } else { e.within(&self.reading) });
        next.map_err(|e| ArrowError::ExternalError(Box::new(e))).transpose()
    }
}

impl RecordBatchReader for TableScan {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
