//! Vector search over a table: per file through the sidecar, the HNSW graph or the Parquet column.

use super::*;
use crate::vector::Metric;

/// An index search is left for exact search when the filter leaves fewer rows than this many
/// times ef (exact is then as cheap and has no misses) ...
pub(super) const EXACT_BELOW_EF_TIMES: usize = 64;
/// ... or passes less than this share of the file's rows (a graph walk would wade through rows the
/// filter refuses).
pub(super) const EXACT_BELOW_SHARE: f64 = 0.02;

/// What a search reads and returns, worked out once for all its files: the columns read (`read`,
/// under `read_schema`), those returned (`output`), and the answer's schema (`out_schema`).
struct SearchColumns<'f> {
    read: Vec<String>,
    read_schema: ArrowSchema,
    output: Vec<String>,
    out_schema: SchemaRef,
    filter: Option<&'f Predicate>,
    batch_rows: usize,
}

impl Table {
    /// The `search.k` rows of `files` nearest `search.query` among those `filter` passes, nearest first,
    /// with the columns named in `columns` and their `_distance`; over a float vector column, a
    /// binary column of bit-packed vectors by `hamming` or `jaccard`, or a sparse vector column. Files are searched in parallel and
    /// their partial answers merged; ties go to the earlier file and row.
    pub fn search(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<&Predicate>,
        search: &VectorSearch,
        batch_rows: usize,
    ) -> Result<RecordBatch> {
        let schema = self.arrow_schema()?;
        let query = search.prepare_any(&schema)?;
        let files = self.prune(files, filter)?;
        let reading = self.search_columns(columns, filter, &search.column, batch_rows)?;
        let empty = || Hits::new(reading.out_schema.clone(), search.wanted());
        let hits = files
            .into_par_iter()
            .enumerate()
            // Ordinals: the file's position in the high bits, the row within it in the low 40.
            .map(|(i, file)| self.search_file(&file, (i as u64) << 40, &query, search, &reading))
            .try_reduce(empty, |a, b| a.merge(b))?;
        hits.finish()
    }

    /// For each of `queries` (vectors of `search.column`, searched by `search.metric` as `search`
    /// says otherwise: k, index use, backend, where rows without a vector go), the `search.k` rows of
    /// `files` nearest it among those `filter` passes, with the columns named in `columns` and their
    /// `_distance`, after a `_query` column: the query's position in `queries`. One batch, the rows of
    /// each query together in the order of `queries`, nearest first; each query's rows are those
    /// [`Table::search`] returns for it. A data file's filter and deletes are read once for all the
    /// queries, its vectors compared with every query in one pass of its sidecar (its HNSW graph,
    /// where it answers, walked per query), and its rows fetched once; files are searched in parallel.
    pub fn search_many(
        &self,
        files: Vec<DataFile>,
        columns: Option<&[String]>,
        filter: Option<&Predicate>,
        search: &VectorSearch,
        queries: &[Vec<f32>],
        batch_rows: usize,
    ) -> Result<RecordBatch> {
        if queries.is_empty() {
            return Err(Error::invalid("a batched vector search needs at least one query"));
        }
        let schema = self.arrow_schema()?;
        let prepared = queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                VectorSearch { query: q.clone(), ..search.clone() }.prepare_any(&schema).map_err(|e| {
                    Error::invalid(format!("query {i}: {}", e.to_string().trim_start_matches("invalid argument: ")))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let files = self.prune(files, filter)?;
        let reading = self.search_columns(columns, filter, &search.column, batch_rows)?;
        let empty =
            || prepared.iter().map(|_| Hits::new(reading.out_schema.clone(), search.wanted())).collect::<Vec<_>>();
        let answers = files
            .into_par_iter()
            .enumerate()
            .map(|(i, file)| {
                let first = (i as u64) << 40;
                if let Some(hits) = self.search_sidecar_many(&file, first, &prepared, search, &reading)? {
                    return Ok(hits);
                }
                prepared.iter().map(|q| self.search_file(&file, first, q, search, &reading)).collect::<Result<Vec<_>>>()
            })
            .try_reduce(empty, |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect())?;
        let mut fields =
            vec![Arc::new(arrow::datatypes::Field::new(crate::vector::QUERY_COLUMN, DataType::Int32, false))];
        fields.extend(reading.out_schema.fields().iter().cloned());
        let out = Arc::new(ArrowSchema::new(fields));
        let batches = answers
            .into_iter()
            .enumerate()
            .map(|(q, hits)| {
                let found = hits.finish()?;
                let mut columns: Vec<ArrayRef> =
                    vec![Arc::new(arrow::array::Int32Array::from(vec![q as i32; found.num_rows()]))];
                columns.extend(found.columns().iter().cloned());
                Ok(RecordBatch::try_new_with_options(
                    out.clone(),
                    columns,
                    &RecordBatchOptions::new().with_row_count(Some(found.num_rows())),
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(arrow::compute::concat_batches(&out, &batches)?)
    }

    /// The columns a search reads (those asked for, the filter's and the vector column) and returns.
    fn search_columns<'f>(
        &self,
        columns: Option<&[String]>,
        filter: Option<&'f Predicate>,
        vector_column: &str,
        batch_rows: usize,
    ) -> Result<SearchColumns<'f>> {
        let schema = self.arrow_schema()?;
        let mut extra: Vec<String> = filter.map(|f| f.columns().into_iter().collect()).unwrap_or_default();
        extra.push(vector_column.to_owned());
        let (read, output) = self.read_set(columns, &extra)?;
        let read_schema =
            schema.project(&read.iter().map(|n| schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?)?;
        let output_schema = read_schema
            .project(&output.iter().map(|n| read_schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?)?;
        let out_schema = Hits::schema_for(&output_schema)?;
        Ok(SearchColumns { read, read_schema, output, out_schema, filter, batch_rows })
    }

    /// Searches one data file, its rows' ordinals from `first`: through its sidecar (and graph)
    /// where it has one, else through the Parquet column.
    fn search_file(
        &self,
        file: &DataFile,
        first: u64,
        query: &Prepared,
        search: &VectorSearch,
        reading: &SearchColumns,
    ) -> Result<Hits> {
        let SearchColumns { read, read_schema, output, out_schema, filter, batch_rows } = reading;
        match query {
            Prepared::Float(query) => {
                if let Some(hits) = self.search_sidecar(file, output, out_schema, query, search, *filter, first)? {
                    return Ok(hits);
                }
                let stream = self.scan_files(vec![file.clone()], Some(read), *batch_rows)?;
                search_batches(
                    stream.map(|b| b.map_err(Error::from)),
                    read_schema,
                    output,
                    query,
                    &search.column,
                    *filter,
                    search.wanted(),
                    first,
                )
            }
            // Bit-packed and sparse vectors have no sidecar or graph: their own column is compared.
            Prepared::Bits(_) | Prepared::Sparse(_) => {
                let stream = self.scan_files(vec![file.clone()], Some(read), *batch_rows)?;
                search_row_batches(
                    stream.map(|b| b.map_err(Error::from)),
                    read_schema,
                    output,
                    query,
                    &search.column,
                    *filter,
                    search.wanted(),
                    first,
                )
            }
        }
    }

    /// The sidecar of `file`'s vector column, parsed, with the rows the filter passes (deleted
    /// ones left out) and those of them that have a vector; None when the file has no usable
    /// sidecar (a damaged one is reported), so that the caller searches the Parquet column. The
    /// sidecar is mapped with its pages populated (an exact search reads them all) unless
    /// `graph_only(passing rows)` says an HNSW graph answers every search of it (a walk reads a
    /// few thousand vectors; populating all of them cost more than the walk).
    fn sidecar_rows(
        &self,
        file: &DataFile,
        column: &str,
        dimension: usize,
        filter: Option<&Predicate>,
        graph_only: impl FnOnce(i32, usize) -> bool,
    ) -> Result<Option<(i32, Bytes, BooleanBuffer, BooleanBuffer)>> {
        let schema = self.arrow_schema()?;
        let Some(id) = schema.field_with_name(column).ok().and_then(field_id) else {
            return Ok(None);
        };
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        // Rows of the file (deleted ones included, so that positions are the file's) the filter
        // passes, less the deleted ones.
        let passed = match filter {
            None if file.deletes.is_empty() => BooleanBuffer::new_set(rows),
            _ => {
                let live = self.live_positions(file, filter)?;
                let mut bits = arrow::array::BooleanBufferBuilder::new(rows);
                bits.append_n(rows, false);
                for p in live.iter() {
                    bits.set_bit(p as usize, true);
                }
                bits.finish()
            }
        };
        let path = sidecar_path(self.storage.relative(&file.file_path)?, id);
        let populate = !graph_only(id, passed.count_set_bits());
        let region = match self.storage.map(&path, populate) {
            Ok(region) => region,
            Err(Error::NotFound(_)) => return Ok(None),
            Err(e) => {
                warn(&format!("vector sidecar {path} unreadable, searching the data file instead: {e}"));
                return Ok(None);
            }
        };
        let validity = match Sidecar::parse(&region, rows, dimension, &self.storage.uri(&path)) {
            Ok(sidecar) => sidecar.validity.clone(),
            Err(e) => {
                warn(&format!("{e}; searching the data file instead"));
                return Ok(None);
            }
        };
        let with_vector = &validity & &passed;
        Ok(Some((id, region, passed, with_vector)))
    }

    /// Whether a search as `search` asks, by `metric`, of a file of `rows` rows of which `passing`
    /// pass its filter, goes through the column's HNSW graph (when the file has a usable one):
    /// the search wants the index, the column's index has that metric, and the filter leaves
    /// enough rows for a walk to beat comparing them all.
    pub(super) fn graph_answers(
        &self,
        id: i32,
        metric: Metric,
        search: &VectorSearch,
        passing: usize,
        rows: usize,
    ) -> Option<usize> {
        let ef = search.index.ef(search.k)?;
        if self.vector_indexes().get(&id).is_none_or(|p| p.metric != metric) {
            return None;
        }
        if passing < EXACT_BELOW_EF_TIMES * ef || (passing as f64) < EXACT_BELOW_SHARE * rows as f64 {
            return None;
        }
        Some(ef)
    }

    /// Searches one data file through the sidecar of its vector column: contiguous vectors, no
    /// Parquet decoding but of the filter's columns and the k rows found. None when the file has no
    /// usable sidecar (a file another writer made, or a damaged sidecar, which is reported), so that
    /// the caller searches the Parquet column instead; the answer is the same either way.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn search_sidecar(
        &self,
        file: &DataFile,
        output: &[String],
        out_schema: &SchemaRef,
        query: &FloatQuery,
        search: &VectorSearch,
        filter: Option<&Predicate>,
        first_ordinal: u64,
    ) -> Result<Option<Hits>> {
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let graph_only = |id, passing| self.graph_answers(id, query.metric(), search, passing, rows).is_some();
        let Some((id, region, passed, with_vector)) =
            self.sidecar_rows(file, &search.column, query.dimension(), filter, graph_only)?
        else {
            return Ok(None);
        };
        let sidecar = Sidecar::parse(&region, rows, query.dimension(), "sidecar")?;
        let mut hits = Hits::new(out_schema.clone(), search.wanted());
        let take = |positions: &UInt32Array| self.take_rows_beside(file, output, positions, &search.column, &sidecar);
        match self.search_graph(file, id, query, search, &sidecar, &with_vector)? {
            Some(found) => {
                let found = found.into_iter().map(|n| Neighbor { ordinal: n.ordinal + first_ordinal, ..n }).collect();
                hits.add_found(found, &with_vector, &passed, first_ordinal, take)?
            }
            None => {
                hits.search_block(query, sidecar.vectors(), &with_vector, &passed, first_ordinal, search.backend, take)?
            }
        }
        Ok(Some(hits))
    }

    /// [`Table::search_sidecar`] for many float queries at once: the filter and deletes read once,
    /// the graph walked per query where it answers, the other queries compared with every vector
    /// in one pass, and the rows any query found fetched once. None when a query is not a float
    /// one or the file has no usable sidecar.
    fn search_sidecar_many(
        &self,
        file: &DataFile,
        first_ordinal: u64,
        queries: &[Prepared],
        search: &VectorSearch,
        reading: &SearchColumns,
    ) -> Result<Option<Vec<Hits>>> {
        let floats: Vec<&FloatQuery> = queries
            .iter()
            .filter_map(|q| match q {
                Prepared::Float(f) => Some(f),
                _ => None,
            })
            .collect();
        let Some(first_query) = floats.first().filter(|_| floats.len() == queries.len()) else {
            return Ok(None);
        };
        let dimension = first_query.dimension();
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let graph_only = |id, passing| self.graph_answers(id, first_query.metric(), search, passing, rows).is_some();
        let Some((id, region, passed, with_vector)) =
            self.sidecar_rows(file, &search.column, dimension, reading.filter, graph_only)?
        else {
            return Ok(None);
        };
        let sidecar = Sidecar::parse(&region, rows, dimension, "sidecar")?;
        let mut found = floats
            .iter()
            .map(|q| self.search_graph(file, id, q, search, &sidecar, &with_vector))
            .collect::<Result<Vec<_>>>()?;
        let exact: Vec<usize> = (0..found.len()).filter(|&i| found[i].is_none()).collect();
        if !exact.is_empty() {
            let compared: Vec<FloatQuery> = exact.iter().map(|&i| floats[i].clone()).collect();
            let tops = crate::vector::gpu::masked_batch_top_k(
                &compared,
                sidecar.vectors(),
                &with_vector,
                search.k,
                search.backend,
            )?;
            for (&i, top) in exact.iter().zip(tops) {
                found[i] = Some(top);
            }
        }
        // Every row an answer can take: those found, and the first k the filter passes without a vector.
        let mut wanted: Vec<u32> =
            found.iter().flatten().flat_map(|hits| hits.iter().map(|n| n.ordinal as u32)).collect();
        wanted.extend((&passed & &!&sidecar.validity).set_indices().take(search.k).map(|p| p as u32));
        wanted.sort_unstable();
        wanted.dedup();
        let fetched =
            self.take_rows_beside(file, &reading.output, &UInt32Array::from(wanted.clone()), &search.column, &sidecar)?;
        let take = |positions: &UInt32Array| -> Result<Vec<ArrayRef>> {
            let at = UInt32Array::from_iter_values(
                positions
                    .values()
                    .iter()
                    .map(|p| wanted.binary_search(p).expect("every row an answer takes was fetched") as u32),
            );
            fetched.iter().map(|c| Ok(arrow::compute::take(c.as_ref(), &at, None)?)).collect()
        };
        found
            .into_iter()
            .map(|top| {
                let top = top.expect("every query was searched");
                let mut hits = Hits::new(reading.out_schema.clone(), search.wanted());
                let top = top.into_iter().map(|n| Neighbor { ordinal: n.ordinal + first_ordinal, ..n }).collect();
                hits.add_found(top, &with_vector, &passed, first_ordinal, take)?;
                Ok(hits)
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Maps a file kept beside a data file (a graph), its pages left to load as a walk touches
    /// them, or None when it is missing or unreadable; the latter is reported as a warning saying
    /// what is done `instead`.
    pub(super) fn map_beside(&self, path: &str, what: &str, instead: &str) -> Option<Bytes> {
        match self.storage.map(path, false) {
            Ok(region) => Some(region),
            Err(Error::NotFound(_)) => None,
            Err(e) => {
                warn(&format!("{what} {path} unreadable, {instead}: {e}"));
                None
            }
        }
    }

    /// Searches one file's HNSW graph among the rows of `candidates`, rows numbered within the
    /// file. None, for exact search instead, when the search asks for exact results, the column has
    /// no index (or one of another metric), the filter leaves few rows, the file has no usable
    /// graph (a file written before the index, or a damaged graph, which is reported), or the walk
    /// found fewer than k of the rows the filter passes.
    pub(super) fn search_graph(
        &self,
        file: &DataFile,
        id: i32,
        query: &FloatQuery,
        search: &VectorSearch,
        sidecar: &Sidecar,
        candidates: &BooleanBuffer,
    ) -> Result<Option<Vec<Neighbor>>> {
        let selected = candidates.count_set_bits();
        let Some(ef) = self.graph_answers(id, query.metric(), search, selected, sidecar.rows) else {
            return Ok(None);
        };
        let path = hnsw_path(self.storage.relative(&file.file_path)?, id);
        let Some(region) = self.map_beside(&path, "HNSW graph", "searching exactly instead") else {
            return Ok(None);
        };
        let found = HnswGraph::parse(&region, sidecar.rows, sidecar.dimension, &self.storage.uri(&path))
            .and_then(|graph| graph.search(query, sidecar.vectors(), search.k, ef, candidates));
        match found {
            // A graph whose allowed rows lie apart from where the walk went (a filter refusing most
            // of the file's neighbourhoods) can find fewer than k of them: exact search then, so a
            // filtered search never under-returns.
            Ok(found) if found.len() < search.k.min(selected) => Ok(None),
            Ok(found) => Ok(Some(found)),
            Err(e) => {
                warn(&format!("{e}; searching exactly instead"));
                Ok(None)
            }
        }
    }

    /// [`Table::take_rows`] with the values of the vector column `column`, when asked for, taken
    /// from the file's `sidecar` (the same vectors, contiguous) instead of decompressing the
    /// Parquet pages that hold them: a 768-d vector's page holds only about 300 rows.
    fn take_rows_beside(
        &self,
        file: &DataFile,
        columns: &[String],
        positions: &UInt32Array,
        column: &str,
        sidecar: &Sidecar,
    ) -> Result<Vec<ArrayRef>> {
        let schema = self.read_schema()?;
        let at = columns.iter().position(|c| c == column);
        let (Some(at), Ok(field)) = (at, schema.field_with_name(column)) else {
            return self.take_rows(file, columns, positions);
        };
        let (DataType::FixedSizeList(item, n), dimension) = (field.data_type(), sidecar.dimension) else {
            return self.take_rows(file, columns, positions);
        };
        if usize::try_from(*n).ok() != Some(dimension) {
            return self.take_rows(file, columns, positions);
        }
        let others: Vec<String> = columns.iter().filter(|c| *c != column).cloned().collect();
        let mut taken = self.take_rows(file, &others, positions)?;
        let mut values = Vec::with_capacity(positions.len() * dimension);
        for &p in positions.values() {
            let p = p as usize;
            values.extend_from_slice(&sidecar.vectors()[p * dimension..(p + 1) * dimension]);
        }
        let valid = positions.values().iter().map(|&p| sidecar.validity.value(p as usize)).collect::<BooleanBuffer>();
        let vectors = arrow::array::FixedSizeListArray::try_new(
            item.clone(),
            *n,
            Arc::new(arrow::array::Float32Array::from(values)),
            Some(arrow::buffer::NullBuffer::new(valid)).filter(|nulls| nulls.null_count() > 0),
        )?;
        taken.insert(at, Arc::new(vectors));
        Ok(taken)
    }

    /// The `columns` of the rows at `positions` (in that order) of one data file, reading only the
    /// pages that hold them.
    pub(super) fn take_rows(
        &self,
        file: &DataFile,
        columns: &[String],
        positions: &UInt32Array,
    ) -> Result<Vec<ArrayRef>> {
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        let mut sorted: Vec<u32> = positions.values().to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let ranges = sorted.iter().map(|&p| p as usize..p as usize + 1);
        let rows = usize::try_from(file.record_count).unwrap_or(0);
        let table_schema = self.read_schema()?;
        let (read, _) = self.read_set(Some(columns), &[])?;
        let indices = read.iter().map(|n| table_schema.index_of(n)).collect::<std::result::Result<Vec<_>, _>>()?;
        let mut scan = TableScan {
            storage: self.storage.clone(),
            schema: Arc::new(table_schema.project(&indices)?),
            lineage: read.iter().any(|n| lineage::is_lineage(n) || n == ROW_POSITION),
            reading: String::new(),
            // Positions are the file's own: its deletes were left out when they were chosen.
            files: VecDeque::from([DataFile { deletes: Vec::new(), ..file.clone() }]),
            current: None,
            batch_rows: sorted.len().max(1),
            selection: Some(RowSelection::from_consecutive_ranges(ranges, rows)),
            prune: None,
            scalar: Vec::new(),
            defaults: self.initial_defaults()?,
        };
        let schema = scan.schema.clone();
        let batches = scan.by_ref().collect::<std::result::Result<Vec<_>, _>>()?;
        let found = arrow::compute::concat_batches(&schema, &batches)?;
        if found.num_rows() != sorted.len() {
            return Err(Error::Corrupt(format!("data file {} is shorter than its manifest says", file.file_path)));
        }
        // Back from file order to the order asked for, and to the column order asked for.
        let order = UInt32Array::from_iter_values(
            positions.values().iter().map(|p| sorted.binary_search(p).expect("sorted holds every position") as u32),
        );
        let found = take_record_batch(&found, &order)?;
        columns.iter().map(|c| Ok(found.column(found.schema().index_of(c)?).clone())).collect()
    }
}
