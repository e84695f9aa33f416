package io.hyperstream.spark;

import io.hyperstream.jni.ArrayStore;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
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
        String what = "a written row" + (value instanceof FixedSizeListVector && shape == null
                ? " (rows hold the first row's length; option 'shape' sets it)" : "");
        SparkArrowWriter.set(value, row, from, ordinal, sparkType, what);
    }
}
