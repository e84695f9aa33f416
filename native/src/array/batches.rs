//! Arrays as Arrow record batches, the form they cross the JNI boundary and reach the engines in:
//! an `index` column (the row's position, `Int64`) and a `value` column: the element itself for a 1-d
//! array, otherwise a fixed-size list of the row's elements in row-major order (complex numbers as
//! (real, imaginary) pairs of floats). The `value` field's metadata keeps the dtype and row shape, so
//! a batch converts back to exactly the array it came from.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    make_array, Array, ArrayData as ArrowData, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, Int64Array,
    RecordBatch,
};
use arrow::buffer::{BooleanBuffer, Buffer};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::dtype::DType;
use super::store::ArrayInfo;
use crate::{Error, Result};

pub const INDEX_COLUMN: &str = "index";
pub const VALUE_COLUMN: &str = "value";
/// Field metadata keys on the `value` column.
pub const DTYPE_KEY: &str = "hyperstream.dtype";
pub const SHAPE_KEY: &str = "hyperstream.shape";

/// The Arrow type of one element, and how many of them make one element of `dtype`.
fn element_type(dtype: DType) -> (DataType, usize) {
    match dtype {
        DType::Bool => (DataType::Boolean, 1),
        DType::U8 => (DataType::UInt8, 1),
        DType::U16 => (DataType::UInt16, 1),
        DType::U32 => (DataType::UInt32, 1),
        DType::U64 => (DataType::UInt64, 1),
        DType::I8 => (DataType::Int8, 1),
        DType::I16 => (DataType::Int16, 1),
        DType::I32 => (DataType::Int32, 1),
        DType::I64 => (DataType::Int64, 1),
        DType::F16 => (DataType::Float16, 1),
        DType::F32 => (DataType::Float32, 1),
        DType::F64 => (DataType::Float64, 1),
        DType::Complex64 => (DataType::Float32, 2),
        DType::Complex128 => (DataType::Float64, 2),
    }
}

fn dtype_of(element: &DataType) -> Option<DType> {
    DType::ALL.into_iter().find(|&d| element_type(d) == (element.clone(), 1))
}

/// The `value` field of an array.
pub fn value_field(dtype: DType, row_shape: &[u64]) -> Field {
    let (element, lanes) = element_type(dtype);
    let row: usize = row_shape.iter().product::<u64>() as usize * lanes;
    let data_type = if row_shape.is_empty() && lanes == 1 {
        element
    } else {
        DataType::FixedSizeList(Arc::new(Field::new("item", element, false)), row as i32)
    };
    let shape = serde_json::to_string(row_shape).expect("shapes serialize");
    Field::new(VALUE_COLUMN, data_type, false).with_metadata(HashMap::from([
        (DTYPE_KEY.to_string(), dtype.name().to_string()),
        (SHAPE_KEY.to_string(), shape),
    ]))
}

/// The schema of an array's batches.
pub fn schema(dtype: DType, row_shape: &[u64]) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(INDEX_COLUMN, DataType::Int64, false), value_field(dtype, row_shape)]))
}

/// The element type the engines read `dtype` as: Spark and Trino have no unsigned integers and no
/// half floats, so uint8, uint16 and uint32 widen to the next signed type, uint64 to
/// decimal(20, 0), float16 to float32. Every value converts exactly.
fn engine_element(dtype: DType) -> DataType {
    match dtype {
        DType::U8 => DataType::Int16,
        DType::U16 => DataType::Int32,
        DType::U32 => DataType::Int64,
        DType::U64 => DataType::Decimal128(20, 0),
        DType::F16 => DataType::Float32,
        other => element_type(other).0,
    }
}

/// `field` with elements of `element` in place of its own (same name, list size and metadata).
fn with_element(field: &Field, element: DataType) -> Field {
    let data_type = match field.data_type() {
        DataType::FixedSizeList(item, size) => {
            DataType::FixedSizeList(Arc::new(item.as_ref().clone().with_data_type(element)), *size)
        }
        _ => element,
    };
    field.clone().with_data_type(data_type)
}

/// The schema of an array's batches in the engines' types (see [`to_engine`]).
pub fn engine_schema(dtype: DType, row_shape: &[u64]) -> SchemaRef {
    let value = with_element(&value_field(dtype, row_shape), engine_element(dtype));
    Arc::new(Schema::new(vec![Field::new(INDEX_COLUMN, DataType::Int64, false), value]))
}

/// A batch of [`to_batch`] with its values converted to the engines' types ([`engine_element`]);
/// the field metadata still names the stored dtype.
pub fn to_engine(batch: RecordBatch) -> Result<RecordBatch> {
    let field = batch.schema().field(1).clone();
    let dtype = DType::parse(field.metadata().get(DTYPE_KEY).map(String::as_str).unwrap_or_default())?;
    let target = with_element(&field, engine_element(dtype));
    if &target == batch.schema().field(1) {
        return Ok(batch);
    }
    let value = arrow::compute::cast(batch.column(1), target.data_type())?;
    let schema = Schema::new(vec![batch.schema().field(0).clone(), target]);
    Ok(RecordBatch::try_new(Arc::new(schema), vec![batch.column(0).clone(), value])?)
}

/// Elements of `element` converted to `dtype`'s element type, for rows whose field names a dtype
/// other than the one their elements have (engines write unsigned integers widened, see
/// [`engine_element`]). Integers convert to integers and to floats, floats to floats; a value the
/// dtype cannot hold is an error, never wrapped or rounded into range.
fn convert_elements(elements: ArrayRef, dtype: DType) -> Result<ArrayRef> {
    let from = elements.data_type().clone();
    let to = element_type(dtype).0;
    let integral = |t: &DataType| t.is_integer() || matches!(t, DataType::Decimal128(_, 0));
    let allowed =
        (integral(&from) && (to.is_integer() || to.is_floating())) || (from.is_floating() && to.is_floating());
    if !allowed {
        return Err(Error::invalid(format!("values of {from} cannot be stored in a {dtype} array")));
    }
    let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
    arrow::compute::cast_with_options(&elements, &to, &options)
        .map_err(|e| Error::invalid(format!("values of {from} do not fit a {dtype} array: {e}")))
}

/// The `value` column holding `bytes` (whole rows of `info`'s dtype and row shape).
pub fn value_column(info: &ArrayInfo, bytes: Buffer) -> Result<ArrayRef> {
    let field = value_field(info.dtype, info.row_shape());
    let (element, lanes) = element_type(info.dtype);
    let rows = bytes.len() / info.row_bytes();
    let elements = rows * info.row_elements() * lanes;
    let values: ArrayRef = if info.dtype == DType::Bool {
        Arc::new(BooleanArray::new(BooleanBuffer::from_iter(bytes.iter().map(|&b| b != 0)), None))
    } else {
        make_array(ArrowData::try_new(element.clone(), elements, None, 0, vec![bytes], vec![])?)
    };
    match field.data_type() {
        DataType::FixedSizeList(item, size) => {
            Ok(Arc::new(FixedSizeListArray::try_new(item.clone(), *size, values, None)?))
        }
        _ => Ok(values),
    }
}

/// A batch of rows `indices` (their positions) holding `bytes`.
pub fn to_batch(info: &ArrayInfo, indices: impl IntoIterator<Item = u64>, bytes: Buffer) -> Result<RecordBatch> {
    let value = value_column(info, bytes)?;
    let index: Int64Array = indices.into_iter().map(|i| i as i64).collect();
    if index.len() != value.len() {
        return Err(Error::Internal(format!("{} positions for {} rows", index.len(), value.len())));
    }
    Ok(RecordBatch::try_new(schema(info.dtype, info.row_shape()), vec![Arc::new(index), value])?)
}

fn unstorable(element: &DataType) -> Error {
    Error::invalid(format!("rows of {element} cannot be stored: elements must be booleans, integers or floats"))
}

/// The dtype, row shape and row bytes of a column of rows: a fixed-size list of primitive elements
/// (or a primitive column for a 1-d array), read as the dtype `field`'s metadata names when it is
/// given (complex numbers, N-d rows), else as its element type and a 1-d row.
pub fn from_column(column: &dyn Array, field: Option<&Field>) -> Result<(DType, Vec<u64>, Buffer)> {
    if column.null_count() > 0 {
        return Err(Error::invalid("array rows cannot be null"));
    }
    let (elements, list_size) = match column.data_type() {
        DataType::FixedSizeList(_, size) => {
            let list = column.as_fixed_size_list();
            let size = *size as usize;
            let start = if list.is_empty() { 0 } else { list.value_offset_at(0) };
            (list.values().slice(start, list.len() * size), Some(size))
        }
        _ => (column.slice(0, column.len()), None),
    };
    if elements.null_count() > 0 {
        return Err(Error::invalid("array elements cannot be null"));
    }
    let element = elements.data_type().clone();
    let plain = dtype_of(&element);
    let named = field.and_then(|f| f.metadata().get(DTYPE_KEY)).map(|d| DType::parse(d)).transpose()?;
    let (dtype, elements) = match named {
        Some(d) if element_type(d).0 == element => (d, elements),
        Some(d) => (d, convert_elements(elements, d)?),
        None => (plain.ok_or_else(|| unstorable(&element))?, elements),
    };
    let lanes = element_type(dtype).1;
    let per_row = list_size.unwrap_or(1);
    if per_row % lanes != 0 {
        return Err(Error::invalid(format!("rows of {per_row} floats are not whole {dtype} values")));
    }
    let default_shape = if list_size.is_none() { vec![] } else { vec![(per_row / lanes) as u64] };
    let row_shape = match field.and_then(|f| f.metadata().get(SHAPE_KEY)) {
        Some(s) => {
            let shape: Vec<u64> =
                serde_json::from_str(s).map_err(|e| Error::invalid(format!("bad {SHAPE_KEY} {s:?}: {e}")))?;
            if shape.iter().product::<u64>() as usize * lanes != per_row
                || (shape.is_empty() != list_size.is_none() && lanes == 1)
            {
                return Err(Error::invalid(format!("{SHAPE_KEY} {shape:?} does not match rows of {per_row} elements")));
            }
            shape
        }
        None => default_shape,
    };
    let bytes = if dtype == DType::Bool {
        let bits = elements.as_boolean();
        Buffer::from_iter(bits.values().iter().map(u8::from))
    } else {
        let data = elements.to_data();
        let size = dtype.size() / lanes;
        data.buffers()[0].slice_with_length(data.offset() * size, data.len() * size)
    };
    Ok((dtype, row_shape, bytes))
}

/// Rows gathered from batches: their dtype, row shape and bytes.
pub type Rows = (DType, Vec<u64>, Vec<u8>);

/// The rows of a batch stream (its `value` column, or its only column), gathered for a save, an
/// append or a replace: their dtype, row shape and bytes. Every batch must agree on the first two.
pub fn rows_from_batches(
    batches: impl Iterator<Item = std::result::Result<RecordBatch, arrow::error::ArrowError>>,
) -> Result<Option<Rows>> {
    let mut out: Option<Rows> = None;
    for batch in batches {
        let batch = batch?;
        let schema = batch.schema();
        let at = match schema.index_of(VALUE_COLUMN) {
            Ok(i) => i,
            Err(_) if batch.num_columns() == 1 => 0,
            Err(_) => {
                return Err(Error::invalid(format!(
                    "array rows need a '{VALUE_COLUMN}' column (or a single column), got {:?}",
                    schema.fields().iter().map(|f| f.name()).collect::<Vec<_>>()
                )))
            }
        };
        let (dtype, row_shape, bytes) = from_column(batch.column(at).as_ref(), Some(schema.field(at)))?;
        match &mut out {
            None => out = Some((dtype, row_shape, bytes.to_vec())),
            Some((d, s, all)) => {
                if *d != dtype || *s != row_shape {
                    return Err(Error::invalid(format!(
                        "batches disagree: rows of {d} {s:?}, then of {dtype} {row_shape:?}"
                    )));
                }
                all.extend_from_slice(&bytes);
            }
        }
    }
    Ok(out)
}
