package io.hyperstream.spark;

import io.hyperstream.jni.ArrayStore;
import java.io.Serializable;
import java.math.BigDecimal;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;

/**
 * How a write task turns the written column into Arrow rows for an array: values in Spark's own
 * types, with the target dtype and row shape (where known) named in the field metadata, so that the
 * native library converts them, refusing values the dtype cannot hold. {@code dtype} and {@code
 * shape} are null where the array does not exist yet and no option named them: the values' type
 * and the first row's length then decide.
 */
record ArrayLayout(int ordinal, DataType sparkType, String dtype, long[] shape) implements Serializable {
    ArrayLayout {
        DataType element = sparkType instanceof ArrayType array ? array.elementType() : sparkType;
        elementType(element); // fails early, on the driver, for a column no array can hold
    }

    boolean isList() {
        return sparkType instanceof ArrayType;
    }

    /** Elements of one row's list: the row shape's, complex numbers counting two. */
    int rowElements() {
        return ArrayStore.listSize(dtype, shape);
    }

    /** The Arrow schema of staged rows whose lists hold {@code listSize} elements. */
    Schema arrowSchema(int listSize) {
        Map<String, String> metadata = new HashMap<>();
        if (dtype != null) {
            metadata.put("hyperstream.dtype", dtype);
        }
        if (shape != null) {
            metadata.put("hyperstream.shape", java.util.Arrays.toString(shape));
        }
        Field value;
        if (sparkType instanceof ArrayType array) {
            Field item = new Field("item", FieldType.notNullable(elementType(array.elementType())), null);
            value = new Field("value", new FieldType(false, new ArrowType.FixedSizeList(listSize), null, metadata), List.of(item));
        } else {
            value = new Field("value", new FieldType(false, elementType(sparkType), null, metadata), null);
        }
        return new Schema(List.of(value));
    }

    private static ArrowType elementType(DataType type) {
        if (type == DataTypes.BooleanType) {
            return ArrowType.Bool.INSTANCE;
        }
        if (type == DataTypes.ByteType || type == DataTypes.ShortType || type == DataTypes.IntegerType || type == DataTypes.LongType) {
            return new ArrowType.Int(type.defaultSize() * 8, true);
        }
        if (type == DataTypes.FloatType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        }
        if (type == DataTypes.DoubleType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        }
        if (type instanceof DecimalType decimal && decimal.scale() == 0) {
            return new ArrowType.Decimal(decimal.precision(), 0, 128);
        }
        throw new IllegalArgumentException("array rows cannot hold " + type.simpleString()
                + " values: write booleans, integers, whole decimals or floats (or arrays of them)");
    }

    /** Sets row {@code row} of {@code value} from the written row. */
    void set(FieldVector value, int row, SpecializedGetters from) {
        if (from.isNullAt(ordinal)) {
            throw new IllegalArgumentException("a written row holds null: array rows cannot be null");
        }
        if (!(value instanceof FixedSizeListVector list)) {
            setElement(value, row, from, ordinal, sparkType);
            return;
        }
        ArrayData values = from.getArray(ordinal);
        int size = list.getListSize();
        if (values.numElements() != size) {
            throw new IllegalArgumentException("a written row holds " + values.numElements() + " values; rows of this "
                    + "array hold " + size + (shape == null ? " (the first row's length; option 'shape' sets it)" : ""));
        }
        list.setNotNull(row);
        DataType element = ((ArrayType) sparkType).elementType();
        FieldVector items = list.getDataVector();
        for (int j = 0; j < size; j++) {
            if (values.isNullAt(j)) {
                throw new IllegalArgumentException("a written row holds a null element: array elements cannot be null");
            }
            setElement(items, row * size + j, values, j, element);
        }
    }

    private static void setElement(FieldVector vector, int at, SpecializedGetters from, int ordinal, DataType type) {
        if (vector instanceof BitVector v) {
            v.setSafe(at, from.getBoolean(ordinal) ? 1 : 0);
        } else if (vector instanceof TinyIntVector v) {
            v.setSafe(at, from.getByte(ordinal));
        } else if (vector instanceof SmallIntVector v) {
            v.setSafe(at, from.getShort(ordinal));
        } else if (vector instanceof IntVector v) {
            v.setSafe(at, from.getInt(ordinal));
        } else if (vector instanceof BigIntVector v) {
            v.setSafe(at, from.getLong(ordinal));
        } else if (vector instanceof Float4Vector v) {
            v.setSafe(at, from.getFloat(ordinal));
        } else if (vector instanceof Float8Vector v) {
            v.setSafe(at, from.getDouble(ordinal));
        } else if (vector instanceof DecimalVector v) {
            DecimalType decimal = (DecimalType) type;
            BigDecimal value = from.getDecimal(ordinal, decimal.precision(), decimal.scale()).toJavaBigDecimal();
            v.setSafe(at, value);
        } else {
            throw new IllegalStateException("no array element setter for " + vector.getField());
        }
    }
}
