//! Exact vector search over record-batch streams: the k rows nearest a query, optionally among the
//! rows a filter passes, with their distance in a `_distance` column. Partial results from files or
//! splits merge into the global answer ([`Hits::merge`]).

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, Float64Array, RecordBatch, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Float32Type, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchIterator;

use super::gpu::{batch_top_k, Backend};
use super::metric::{BitQuery, FloatQuery, Metric};
use super::sparse::SparseQuery;
use super::topk::{exact_top_k, result_order, Neighbor, TopK};
use crate::scan::{BatchStream, Predicate};
use crate::{Error, Result};

/// The column a search adds to its rows: the distance from the query (smaller is nearer).
pub const DISTANCE_COLUMN: &str = "_distance";
/// Name of the column a batched search puts first: the position of the query a row answers.
pub const QUERY_COLUMN: &str = "_query";

/// What to search for.
#[derive(Debug, Clone)]
pub struct VectorSearch {
    /// The vector column.
    pub column: String,
    pub query: Vec<f32>,
    pub metric: Metric,
    pub k: usize,
    /// Whether a vector index may answer, and how widely it looks.
    pub index: IndexUse,
    /// Where an exact search of a file's contiguous vectors runs.
    pub backend: Backend,
    /// Whether rows without a vector come before the nearest rather than after them.
    pub nulls_first: bool,
}

/// How a search may use a column's vector index (HNSW): approximate, with a candidate list of `ef`
/// rows (more finds more of the true nearest, slower), or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexUse {
    /// The index where the column has one, with `ef` = max(k, [`DEFAULT_EF`]).
    #[default]
    Default,
    /// The index where the column has one, with this `ef` (raised to k).
    Ef(usize),
    /// Exact search, index or not.
    Exact,
}

/// The candidate list an index search keeps unless told otherwise.
pub const DEFAULT_EF: usize = 64;

impl IndexUse {
    /// From the engines' integer form: 0 the default, -1 exact, a positive number the ef.
    pub fn from_code(code: i64) -> Result<Self> {
        Ok(match crate::limits::ef_search("ef_search", code)? {
            0 => IndexUse::Default,
            -1 => IndexUse::Exact,
            n => IndexUse::Ef(n as usize),
        })
    }

    /// The ef of an index search for k rows; None for exact search.
    pub fn ef(self, k: usize) -> Option<usize> {
        match self {
            IndexUse::Default => Some(k.max(DEFAULT_EF)),
            IndexUse::Ef(ef) => Some(ef.max(k)),
            IndexUse::Exact => None,
        }
    }
}

impl VectorSearch {
    /// How many rows the search returns and where those without a vector go.
    pub fn wanted(&self) -> Wanted {
        Wanted { k: self.k, nulls_first: self.nulls_first }
    }

    /// A search that uses the column's index, if any, as [`IndexUse::Default`] says.
    pub fn new(column: impl Into<String>, query: Vec<f32>, metric: Metric, k: usize) -> Self {
        VectorSearch {
            column: column.into(),
            query,
            metric,
            k,
            index: IndexUse::Default,
            backend: Backend::Auto,
            nulls_first: false,
        }
    }

    /// Checks the search against the schema of what it reads: the column exists and holds float
    /// vectors of the query's dimension.
    pub fn prepare(&self, schema: &Schema) -> Result<FloatQuery> {
        let field = schema
            .field_with_name(&self.column)
            .map_err(|_| Error::NotFound(format!("vector column '{}' is not in the table schema", self.column)))?;
        let dimension = match field.data_type() {
            DataType::FixedSizeList(item, n) if item.data_type() == &DataType::Float32 => *n as usize,
            other => {
                return Err(Error::invalid(format!(
                    "column '{}' is {other}, not a float vector column (declare its dimension to search it)",
                    self.column
                )))
            }
        };
        FloatQuery::new(self.metric, self.query.clone(), dimension)
            .map_err(|e| Error::invalid(format!("searching '{}': {}", self.column, strip_kind(&e))))
    }
}

/// A search's query checked against its column: float vectors, bit-packed binary ones, or sparse ones.
#[derive(Debug, Clone)]
pub enum Prepared {
    Float(FloatQuery),
    Bits(BitQuery),
    Sparse(SparseQuery),
}

impl VectorSearch {
    /// Checks the search against the schema of what it reads: a float vector column for the float
    /// metrics, a binary column (each value a bit-packed vector) for `hamming` and `jaccard`, whose
    /// query holds the bytes as numbers 0..=255.
    pub fn prepare_any(&self, schema: &Schema) -> Result<Prepared> {
        let field = schema
            .field_with_name(&self.column)
            .map_err(|_| Error::NotFound(format!("vector column '{}' is not in the table schema", self.column)))?;
        if is_sparse_column(field.data_type()) {
            return SparseQuery::from_pairs(self.metric, &self.query)
                .map(Prepared::Sparse)
                .map_err(|e| Error::invalid(format!("searching '{}': {}", self.column, strip_kind(&e))));
        }
        if is_bit_column(field.data_type()) {
            return BitQuery::new(self.metric, &self.query)
                .map(Prepared::Bits)
                .map_err(|e| Error::invalid(format!("searching '{}': {}", self.column, strip_kind(&e))));
        }
        if self.metric.is_binary() {
            return Err(Error::invalid(format!(
                "metric '{}' compares bit-packed binary columns, but '{}' is {}",
                self.metric,
                self.column,
                field.data_type()
            )));
        }
        self.prepare(schema).map(Prepared::Float)
    }
}

/// Whether a column of this type holds bit-packed binary vectors for `hamming` and `jaccard`.
pub fn is_bit_column(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_) | DataType::BinaryView)
}

/// Whether a column of this type holds sparse vectors: a struct of `indices` (list of int) and
/// `values` (list of float).
pub fn is_sparse_column(data_type: &DataType) -> bool {
    let DataType::Struct(fields) = data_type else {
        return false;
    };
    let list_of = |name: &str, item: DataType| {
        fields.find(name).is_some_and(|(_, f)| matches!(f.data_type(), DataType::List(i) if i.data_type() == &item))
    };
    fields.len() == 2 && list_of("indices", DataType::Int32) && list_of("values", DataType::Float32)
}

/// Each row's distance from a query compared row by row (bit-packed and sparse vectors), over one
/// batch's column; rows without a vector are not asked for.
fn row_distance<'a>(query: &'a Prepared, column: &'a dyn Array) -> Result<Box<dyn Fn(usize) -> Result<f32> + 'a>> {
    Ok(match query {
        Prepared::Bits(query) => {
            let values = bit_values(column)?;
            Box::new(move |i| query.distance(values(i)))
        }
        Prepared::Sparse(query) => {
            let (indices, values) = sparse_lists(column)?;
            Box::new(move |i| {
                let (idx, val) = (indices.value(i), values.value(i));
                query.distance(
                    idx.as_primitive::<arrow::datatypes::Int32Type>().values(),
                    val.as_primitive::<Float32Type>().values(),
                )
            })
        }
        Prepared::Float(_) => {
            return Err(Error::Internal("float vectors are searched in blocks, not row by row".into()))
        }
    })
}

/// The `indices` and `values` lists of a sparse vector column.
fn sparse_lists(column: &dyn Array) -> Result<(&arrow::array::ListArray, &arrow::array::ListArray)> {
    let parts = column.as_struct_opt().ok_or_else(|| Error::invalid("not a sparse vector column"))?;
    let list = |name: &str| {
        parts
            .column_by_name(name)
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| Error::invalid(format!("a sparse vector column has no '{name}' list")))
    };
    Ok((list("indices")?, list("values")?))
}

/// Row `i`'s bytes of a binary column, whichever its layout.
fn bit_values<'a>(array: &'a dyn Array) -> Result<Box<dyn Fn(usize) -> &'a [u8] + 'a>> {
    Ok(match array.data_type() {
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            Box::new(move |i| a.value(i))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            Box::new(move |i| a.value(i))
        }
        DataType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            Box::new(move |i| a.value(i))
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            Box::new(move |i| a.value(i))
        }
        other => return Err(Error::invalid(format!("a {other} column holds no bit-packed vectors"))),
    })
}

fn strip_kind(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m) => m.clone(),
        other => other.to_string(),
    }
}

/// A found row's place in the answer: rows with a vector by distance, then rows whose vector is
/// null (they have no distance, and come last as SQL's `NULLS LAST` puts them), each by ordinal.
#[derive(Debug, Clone, Copy)]
struct Key {
    null: bool,
    neighbor: Neighbor,
}

/// Rows without a vector last, or first when `nulls_first`; the others nearest first.
fn key_order(a: &Key, b: &Key, nulls_first: bool) -> std::cmp::Ordering {
    let nulls = if nulls_first { b.null.cmp(&a.null) } else { a.null.cmp(&b.null) };
    nulls.then_with(|| result_order(&a.neighbor, &b.neighbor))
}

/// How many rows a search returns, and where its rows without a vector (the filter passes them, but
/// they have no distance) go: after the nearest, completing the answer when fewer than k have a
/// vector (SQL's `ORDER BY distance NULLS LAST`), or before them (`NULLS FIRST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    pub k: usize,
    pub nulls_first: bool,
}

impl From<usize> for Wanted {
    fn from(k: usize) -> Wanted {
        Wanted { k, nulls_first: false }
    }
}

/// Rows found so far with their keys, at most k after each compaction.
#[derive(Debug, Clone)]
pub struct Hits {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    keys: Vec<Key>,
    k: usize,
    nulls_first: bool,
}

impl Hits {
    /// No rows yet; `schema` is the output's (the projected columns, then `_distance`).
    pub fn new(schema: SchemaRef, wanted: impl Into<Wanted>) -> Self {
        let Wanted { k, nulls_first } = wanted.into();
        Hits { schema, batches: Vec::new(), keys: Vec::new(), k, nulls_first }
    }

    /// The output schema for `projected` columns.
    pub fn schema_for(projected: &Schema) -> Result<SchemaRef> {
        if projected.field_with_name(DISTANCE_COLUMN).is_ok() {
            return Err(Error::invalid(format!("the table has a column named {DISTANCE_COLUMN}, which a search adds")));
        }
        let mut fields: Vec<Arc<Field>> = projected.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(DISTANCE_COLUMN, DataType::Float64, true)));
        Ok(Arc::new(Schema::new(fields)))
    }

    /// Searches one block of rows (`vectors`, back to back) whose ordinals start at `first_ordinal`:
    /// the k nearest of the rows in `with_vector`, completed, when fewer, by rows of `passed` that have
    /// no vector. `take` fetches the output columns of the chosen rows, given their positions.
    #[allow(clippy::too_many_arguments)]
    pub fn search_block(
        &mut self,
        query: &FloatQuery,
        vectors: &[f32],
        with_vector: &BooleanBuffer,
        passed: &BooleanBuffer,
        first_ordinal: u64,
        backend: Backend,
        take: impl FnOnce(&UInt32Array) -> Result<Vec<arrow::array::ArrayRef>>,
    ) -> Result<()> {
        let top = block_top_k(query, vectors, with_vector, first_ordinal, self.k, backend)?;
        self.add_found(top, with_vector, passed, first_ordinal, take)
    }

    /// Adds the rows a search of one block found (`found`, nearest first, ordinals from
    /// `first_ordinal`) and rows of `passed` outside `with_vector`: when fewer than k were found, or
    /// up to k of them when those go first.
    pub fn add_found(
        &mut self,
        found: Vec<Neighbor>,
        with_vector: &BooleanBuffer,
        passed: &BooleanBuffer,
        first_ordinal: u64,
        take: impl FnOnce(&UInt32Array) -> Result<Vec<arrow::array::ArrayRef>>,
    ) -> Result<()> {
        let k = self.k;
        let mut keys: Vec<Key> = found.into_iter().take(k).map(|neighbor| Key { null: false, neighbor }).collect();
        // Rows without a vector complete an answer of fewer than k, or go first.
        let room = if self.nulls_first { k } else { k - keys.len() };
        if room > 0 {
            let without = passed & &!with_vector;
            keys.extend(without.set_indices().take(room).map(|row| Key {
                null: true,
                neighbor: Neighbor { distance: f32::NAN, ordinal: first_ordinal + row as u64 },
            }));
        }
        let positions =
            UInt32Array::from_iter_values(keys.iter().map(|key| (key.neighbor.ordinal - first_ordinal) as u32));
        let mut columns = take(&positions)?;
        columns.push(Arc::new(
            keys.iter().map(|key| (!key.null).then_some(key.neighbor.distance as f64)).collect::<Float64Array>(),
        ));
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(keys.len())),
        )?;
        self.add(batch, keys)
    }

    fn add(&mut self, batch: RecordBatch, keys: Vec<Key>) -> Result<()> {
        debug_assert_eq!(batch.num_rows(), keys.len());
        if keys.is_empty() {
            return Ok(());
        }
        self.batches.push(batch);
        self.keys.extend(keys);
        if self.keys.len() > 4 * self.k.max(256) {
            self.compact()?;
        }
        Ok(())
    }

    /// Folds `other`'s rows in (both must come from searches with the same output schema).
    pub fn merge(mut self, other: Hits) -> Result<Hits> {
        self.batches.extend(other.batches);
        self.keys.extend(other.keys);
        self.compact()?;
        Ok(self)
    }

    /// Keeps the k best rows, sorted.
    fn compact(&mut self) -> Result<()> {
        let merged = concat_batches(&self.schema, &self.batches)?;
        let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
        order.sort_by(|a, b| key_order(&self.keys[*a as usize], &self.keys[*b as usize], self.nulls_first));
        order.truncate(self.k);
        self.keys = order.iter().map(|i| self.keys[*i as usize]).collect();
        self.batches = vec![take_record_batch(&merged, &UInt32Array::from(order))?];
        Ok(())
    }

    /// The k nearest rows, nearest first.
    pub fn finish(mut self) -> Result<RecordBatch> {
        self.compact()?;
        Ok(self.batches.pop().unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone())))
    }
}

/// Under [`Backend::Auto`], a block whose rows without a vector (or failing the filter) are more than
/// this stays on the CPU: a GPU answers for every row, so it is asked for that many more than k.
const GPU_MAX_LEFT_OUT: usize = 4096;

/// The `k` rows of `with_vector` in `vectors` nearest `query`, nearest first, ordinals from
/// `first_ordinal`: on the CPU, or on a GPU when `backend` chooses one, asked for the k nearest of
/// every row plus as many as are left out, and those then dropped (the answer is the same).
fn block_top_k(
    query: &FloatQuery,
    vectors: &[f32],
    with_vector: &BooleanBuffer,
    first_ordinal: u64,
    k: usize,
    backend: Backend,
) -> Result<Vec<Neighbor>> {
    let left_out = with_vector.len() - with_vector.count_set_bits();
    let chosen = match backend {
        _ if vectors.is_empty() => Backend::Cpu,
        Backend::Auto if left_out > GPU_MAX_LEFT_OUT => Backend::Cpu,
        backend => backend.choose(vectors.len()),
    };
    if matches!(chosen, Backend::Cpu | Backend::Auto) {
        return Ok(exact_top_k(query, vectors, Some(with_vector), first_ordinal, k).into_sorted());
    }
    let found =
        batch_top_k(vectors, query.dimension(), query.metric(), &[query.vector().to_vec()], k + left_out, chosen)?;
    let hits = found.neighbors.into_iter().next().unwrap_or_default();
    Ok(hits
        .into_iter()
        .filter(|n| with_vector.value(n.ordinal as usize))
        .take(k)
        .map(|n| Neighbor { ordinal: n.ordinal + first_ordinal, ..n })
        .collect())
}

/// Searches `batches`, which hold the `output` columns, the vector column and whatever `filter`
/// reads; rows get ordinals from `first_ordinal` on, in stream order.
pub fn search_batches(
    batches: impl Iterator<Item = Result<RecordBatch>>,
    input: &Schema,
    output: &[String],
    query: &FloatQuery,
    column: &str,
    filter: Option<&Predicate>,
    wanted: impl Into<Wanted>,
    first_ordinal: u64,
) -> Result<Hits> {
    let (vector_index, output_indices, mut hits) = search_setup(input, output, column, wanted.into())?;
    let mut ordinal = first_ordinal;
    for batch in batches {
        let batch = batch?;
        let rows = batch.num_rows();
        let (with_vector, passed) = candidates(&batch, vector_index, query.dimension(), filter)?;
        let items = batch.column(vector_index).as_fixed_size_list().values().as_primitive::<Float32Type>().clone();
        let projected = batch.project(&output_indices)?;
        // Blocks of a record batch are too small to pay for a GPU.
        hits.search_block(
            query,
            &items.values()[..rows * query.dimension()],
            &with_vector,
            &passed,
            ordinal,
            Backend::Cpu,
            |positions| Ok(take_record_batch(&projected, positions)?.columns().to_vec()),
        )?;
        ordinal += rows as u64;
    }
    Ok(hits)
}

/// The vector column's and the output columns' positions in `input`, and no hits yet.
fn search_setup(input: &Schema, output: &[String], column: &str, wanted: Wanted) -> Result<(usize, Vec<usize>, Hits)> {
    let vector_index =
        input.index_of(column).map_err(|_| Error::NotFound(format!("vector column '{column}' is not read")))?;
    let output_indices = output
        .iter()
        .map(|n| input.index_of(n).map_err(|_| Error::NotFound(format!("column '{n}' is not in the table schema"))))
        .collect::<Result<Vec<_>>>()?;
    let hits = Hits::new(Hits::schema_for(&input.project(&output_indices)?)?, wanted);
    Ok((vector_index, output_indices, hits))
}

/// As [`search_batches`], over a column compared row by row: bit-packed or sparse vectors.
#[allow(clippy::too_many_arguments)]
pub fn search_row_batches(
    batches: impl Iterator<Item = Result<RecordBatch>>,
    input: &Schema,
    output: &[String],
    query: &Prepared,
    column: &str,
    filter: Option<&Predicate>,
    wanted: impl Into<Wanted>,
    first_ordinal: u64,
) -> Result<Hits> {
    let (vector_index, output_indices, mut hits) = search_setup(input, output, column, wanted.into())?;
    let mut ordinal = first_ordinal;
    for batch in batches {
        let batch = batch?;
        let (with_vector, passed) = row_candidates(&batch, vector_index, filter)?;
        let distance = row_distance(query, batch.column(vector_index).as_ref())?;
        let mut top = TopK::new(hits.k);
        for row in with_vector.set_indices() {
            top.push(Neighbor { distance: distance(row)?, ordinal: ordinal + row as u64 });
        }
        let projected = batch.project(&output_indices)?;
        hits.add_found(top.into_sorted(), &with_vector, &passed, ordinal, |positions| {
            Ok(take_record_batch(&projected, positions)?.columns().to_vec())
        })?;
        ordinal += batch.num_rows() as u64;
    }
    Ok(hits)
}

/// The rows of `batch` that pass `filter` and have a vector in column `vector_index` (a non-null
/// value; for sparse vectors, both lists too), and the rows that pass `filter` at all.
fn row_candidates(
    batch: &RecordBatch,
    vector_index: usize,
    filter: Option<&Predicate>,
) -> Result<(BooleanBuffer, BooleanBuffer)> {
    let passed = passing(batch, filter)?;
    let column = batch.column(vector_index);
    let mut valid = column.logical_nulls().map(|n| n.into_inner());
    if is_sparse_column(column.data_type()) {
        let (indices, values) = sparse_lists(column.as_ref())?;
        for list in [indices, values] {
            if let Some(nulls) = list.logical_nulls() {
                valid = Some(and(valid, nulls.into_inner()));
            }
        }
    }
    let with_vector = match valid {
        Some(valid) => &valid & &passed,
        None => passed.clone(),
    };
    Ok((with_vector, passed))
}

fn passing(batch: &RecordBatch, filter: Option<&Predicate>) -> Result<BooleanBuffer> {
    Ok(match filter {
        Some(filter) => true_and_known(&filter.evaluate(batch)?),
        None => BooleanBuffer::new_set(batch.num_rows()),
    })
}

/// The rows of `batch` that pass `filter` and have a whole vector in column `vector_index`, and the
/// rows that pass `filter` at all.
fn candidates(
    batch: &RecordBatch,
    vector_index: usize,
    dim: usize,
    filter: Option<&Predicate>,
) -> Result<(BooleanBuffer, BooleanBuffer)> {
    let rows = batch.num_rows();
    let vectors = batch.column(vector_index).as_fixed_size_list_opt().ok_or_else(|| {
        Error::invalid(format!("column '{}' is not a float vector column", batch.schema().field(vector_index).name()))
    })?;
    let mut whole = vectors.logical_nulls().map(|n| n.into_inner());
    if let Some(item_nulls) = vectors.values().logical_nulls() {
        // A vector with a null element has no distance, like a null vector.
        let complete: BooleanBuffer =
            (0..rows).map(|r| (r * dim..(r + 1) * dim).all(|i| item_nulls.is_valid(i))).collect();
        whole = Some(and(whole, complete));
    }
    let passed = passing(batch, filter)?;
    let with_vector = match whole {
        Some(whole) => &whole & &passed,
        None => passed.clone(),
    };
    Ok((with_vector, passed))
}

/// `inner` (which holds the vector column) with the `output` columns and each row's distance from
/// `query` in a last `_distance` column, null where the row has no whole vector.
pub fn with_distances(inner: BatchStream, query: Prepared, column: &str, output: Vec<usize>) -> Result<BatchStream> {
    let input = inner.schema();
    let vector_index =
        input.index_of(column).map_err(|_| Error::NotFound(format!("vector column '{column}' is not read")))?;
    let schema = Hits::schema_for(&input.project(&output)?)?;
    let out = schema.clone();
    let batches = inner.map(move |batch| -> std::result::Result<RecordBatch, ArrowError> {
        let batch = batch?;
        let distances =
            row_distances(&batch, vector_index, &query).map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
        let mut columns = batch.project(&output)?.columns().to_vec();
        columns.push(Arc::new(distances));
        RecordBatch::try_new(out.clone(), columns)
    });
    Ok(Box::new(RecordBatchIterator::new(batches, schema)))
}

/// Each row's distance from `query`, null where the row has no whole vector.
fn row_distances(batch: &RecordBatch, vector_index: usize, query: &Prepared) -> Result<Float64Array> {
    match query {
        Prepared::Float(query) => {
            let dim = query.dimension();
            let (with_vector, _) = candidates(batch, vector_index, dim, None)?;
            let items = batch.column(vector_index).as_fixed_size_list().values().as_primitive::<Float32Type>().clone();
            let values = items.values();
            Ok((0..batch.num_rows())
                .map(|r| with_vector.value(r).then(|| query.distance(&values[r * dim..(r + 1) * dim]) as f64))
                .collect())
        }
        Prepared::Bits(_) | Prepared::Sparse(_) => {
            let (with_vector, _) = row_candidates(batch, vector_index, None)?;
            let distance = row_distance(query, batch.column(vector_index).as_ref())?;
            (0..batch.num_rows())
                .map(|r| with_vector.value(r).then(|| distance(r).map(f64::from)).transpose())
                .collect()
        }
    }
}

fn and(mask: Option<BooleanBuffer>, other: BooleanBuffer) -> BooleanBuffer {
    match mask {
        Some(m) => &m & &other,
        None => other,
    }
}

/// True where the predicate is true (unknown counts as false).
fn true_and_known(passed: &BooleanArray) -> BooleanBuffer {
    match passed.nulls() {
        Some(nulls) => passed.values() & nulls.inner(),
        None => passed.values().clone(),
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{FixedSizeListArray, Float32Array, Int64Array};
    use arrow::datatypes::Int64Type;

    use super::*;
    use crate::vector::test_values;

    fn table(rows: usize, dim: usize, seed: u64) -> RecordBatch {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("embedding", DataType::FixedSizeList(item.clone(), dim as i32), true),
        ]);
        let nulls = arrow::buffer::NullBuffer::from((0..rows).map(|i| i % 7 != 5).collect::<Vec<_>>());
        let vectors = FixedSizeListArray::new(
            item,
            dim as i32,
            Arc::new(Float32Array::from(test_values(seed, rows * dim))),
            Some(nulls),
        );
        RecordBatch::try_new(
            Arc::new(schema),
            vec![Arc::new(Int64Array::from_iter_values(0..rows as i64)), Arc::new(vectors)],
        )
        .unwrap()
    }

    #[test]
    fn search_over_split_streams_merges_to_the_single_stream_answer() {
        let dim = 5;
        let all = table(3_000, dim, 1);
        let schema = all.schema();
        let search = VectorSearch::new("embedding", test_values(2, dim), Metric::L2, 25);
        let query = search.prepare(&schema).unwrap();
        let filter = Predicate::from_json(r#"{"op":"gt","column":"id","value":100}"#).unwrap();
        let output = vec!["id".to_owned()];
        let whole = search_batches(
            std::iter::once(Ok(all.clone())),
            &schema,
            &output,
            &query,
            "embedding",
            Some(&filter),
            25,
            0,
        )
        .unwrap()
        .finish()
        .unwrap();
        // Three splits with ordinals continuing where the last ended, merged in another order.
        let parts: Vec<Hits> = [(0, 1000), (1000, 1700), (1700, 3000)]
            .into_iter()
            .map(|(s, e)| {
                let slices = (s..e).step_by(128).map(|b| Ok(all.slice(b, 128.min(e - b))));
                search_batches(slices, &schema, &output, &query, "embedding", Some(&filter), 25, s as u64).unwrap()
            })
            .collect();
        let mut parts = parts.into_iter().rev();
        let first = parts.next().unwrap();
        let merged = parts.fold(first, |a, b| a.merge(b).unwrap()).finish().unwrap();
        assert_eq!(whole, merged);
        assert_eq!(merged.num_rows(), 25);
        let ids = merged.column(0).as_primitive::<Int64Type>().values();
        assert!(ids.iter().all(|id| *id > 100 && id % 7 != 5), "a filtered or null row came back: {ids:?}");
        let distances = merged.column(1).as_primitive::<arrow::datatypes::Float64Type>().values();
        assert!(distances.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(merged.schema().field(1).name(), DISTANCE_COLUMN);
    }

    #[test]
    fn rows_without_a_vector_come_last_with_a_null_distance() {
        let all = table(14, 2, 3); // rows 5 and 12 have null vectors
        let schema = all.schema();
        let search = VectorSearch::new("embedding", vec![0.1, 0.2], Metric::L1, 14);
        let query = search.prepare(&schema).unwrap();
        let output = vec!["id".to_owned()];
        let found =
            search_batches(std::iter::once(Ok(all.clone())), &schema, &output, &query, "embedding", None, 14, 0)
                .unwrap()
                .finish()
                .unwrap();
        let ids = found.column(0).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(&ids[12..], &[5, 12]);
        let distances = found.column(1).as_primitive::<arrow::datatypes::Float64Type>();
        assert_eq!(distances.null_count(), 2);
        assert!(distances.is_null(12) && distances.is_null(13));
        // Every row's distance, in stream order, agrees with the top-k's.
        let stream: BatchStream =
            Box::new(arrow::record_batch::RecordBatchIterator::new(vec![Ok(all.clone())], schema.clone()));
        let every = with_distances(stream, super::Prepared::Float(query), "embedding", vec![0])
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let every_d = every.column(1).as_primitive::<arrow::datatypes::Float64Type>();
        for (rank, id) in ids.iter().enumerate() {
            assert_eq!(every_d.is_null(*id as usize), distances.is_null(rank));
            if !distances.is_null(rank) {
                assert_eq!(every_d.value(*id as usize), distances.value(rank));
            }
        }
    }

    #[test]
    fn rows_without_a_vector_come_first_when_asked() {
        let all = table(14, 2, 3); // rows 5 and 12 have null vectors
        let schema = all.schema();
        let query = VectorSearch::new("embedding", vec![0.1, 0.2], Metric::L1, 14).prepare(&schema).unwrap();
        let output = vec!["id".to_owned()];
        let ids = |k: usize, nulls_first: bool, slices: usize| -> (Vec<i64>, usize) {
            let rows = 14 / slices;
            let streams = (0..slices).map(|s| {
                let part = all.slice(s * rows, if s + 1 == slices { 14 - s * rows } else { rows });
                search_batches(
                    std::iter::once(Ok(part)),
                    &schema,
                    &output,
                    &query,
                    "embedding",
                    None,
                    Wanted { k, nulls_first },
                    (s * rows) as u64,
                )
                .unwrap()
            });
            let found = streams.reduce(|a, b| a.merge(b).unwrap()).unwrap().finish().unwrap();
            let nulls = found.column(1).null_count();
            (found.column(0).as_primitive::<Int64Type>().values().to_vec(), nulls)
        };
        let (last, _) = ids(14, false, 1);
        for slices in [1, 2, 7] {
            // The slow twin: the same rows as NULLS LAST, the two without a vector moved to the front.
            let (first, nulls) = ids(14, true, slices);
            assert_eq!(nulls, 2);
            assert_eq!(&first[..2], &[5, 12], "{slices} slices");
            assert_eq!(&first[2..], &last[..12], "{slices} slices");
            assert_eq!(ids(3, true, slices).0, vec![5, 12, last[0]]);
            assert_eq!(ids(1, true, slices).0, vec![5]);
            assert_eq!(ids(3, false, slices).0, last[..3].to_vec());
        }
    }

    #[test]
    fn bad_searches_are_refused() {
        let schema = table(10, 3, 1).schema();
        let search = |column: &str, query: Vec<f32>| VectorSearch::new(column, query, Metric::Cosine, 3);
        let err = search("missing", vec![1.0; 3]).prepare(&schema).unwrap_err();
        assert!(matches!(&err, Error::NotFound(m) if m.contains("'missing'")), "{err}");
        let err = search("id", vec![1.0; 3]).prepare(&schema).unwrap_err();
        assert!(err.to_string().contains("not a float vector column"), "{err}");
        let err = search("embedding", vec![1.0; 4]).prepare(&schema).unwrap_err();
        assert!(err.to_string().contains("4 dimensions but the column has 3"), "{err}");
        let err = search("embedding", vec![1.0, f32::NAN, 0.0]).prepare(&schema).unwrap_err();
        assert!(err.to_string().contains("NaN"), "{err}");
    }
}
