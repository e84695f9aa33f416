package io.hyperstream.spark;

import java.math.BigDecimal;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructType;

/** Spark values into Arrow vectors; the one place write tasks convert values. */
final class SparkArrowWriter {
    private SparkArrowWriter() {}

    /**
     * Sets {@code vector[at]} from field {@code ordinal} of {@code from} (a row or an array), of
     * Spark type {@code type}. A null goes in only where the vector's field is nullable; a list must
     * have the vector's list size and no null elements. {@code what} names the value in errors.
     */
    static void set(FieldVector vector, int at, SpecializedGetters from, int ordinal, DataType type, String what) {
        if (from.isNullAt(ordinal)) {
            if (!vector.getField().isNullable()) {
                throw new IllegalArgumentException(what + " cannot be null");
            }
            vector.setNull(at);
            if (vector instanceof StructVector struct) {
                // Every child keeps a slot per row.
                struct.getChildrenFromFields().forEach(child -> child.setNull(at));
            }
            return;
        }
        if (vector instanceof FixedSizeListVector list) {
            ArrayData values = from.getArray(ordinal);
            int size = list.getListSize();
            if (values.numElements() != size) {
                throw new IllegalArgumentException(what + " holds " + values.numElements() + " values where " + size + " belong");
            }
            list.setNotNull(at);
            DataType element = ((ArrayType) type).elementType();
            for (int j = 0; j < size; j++) {
                set(list.getDataVector(), at * size + j, values, j, element, "an element of " + what);
            }
        } else if (vector instanceof ListVector list) {
            ArrayData values = from.getArray(ordinal);
            int start = list.startNewValue(at);
            DataType element = ((ArrayType) type).elementType();
            for (int j = 0; j < values.numElements(); j++) {
                set(list.getDataVector(), start + j, values, j, element, "an element of " + what);
            }
            list.endValue(at, values.numElements());
        } else if (vector instanceof StructVector struct && type instanceof StructType fields) {
            InternalRow row = from.getStruct(ordinal, fields.size());
            struct.setIndexDefined(at);
            for (int i = 0; i < fields.size(); i++) {
                set((FieldVector) struct.getChildByOrdinal(i), at, row, i, fields.fields()[i].dataType(),
                        "field '" + fields.fields()[i].name() + "' of " + what);
            }
        } else if (vector instanceof BitVector v) {
            v.setSafe(at, from.getBoolean(ordinal) ? 1 : 0);
        } else if (vector instanceof TinyIntVector v) {
            v.setSafe(at, (byte) integer(from, ordinal, type));
        } else if (vector instanceof SmallIntVector v) {
            v.setSafe(at, (short) integer(from, ordinal, type));
        } else if (vector instanceof IntVector v) {
            v.setSafe(at, Math.toIntExact(integer(from, ordinal, type)));
        } else if (vector instanceof BigIntVector v) {
            v.setSafe(at, integer(from, ordinal, type));
        } else if (vector instanceof Float4Vector v) {
            v.setSafe(at, type == DataTypes.DoubleType ? (float) from.getDouble(ordinal) : from.getFloat(ordinal));
        } else if (vector instanceof Float8Vector v) {
            v.setSafe(at, type == DataTypes.FloatType ? from.getFloat(ordinal) : from.getDouble(ordinal));
        } else if (vector instanceof VarCharVector v) {
            v.setSafe(at, from.getUTF8String(ordinal).getBytes());
        } else if (vector instanceof DateDayVector v) {
            v.setSafe(at, from.getInt(ordinal));
        } else if (vector instanceof TimeStampVector v) {
            v.setSafe(at, from.getLong(ordinal));
        } else if (vector instanceof VarBinaryVector v) {
            v.setSafe(at, from.getBinary(ordinal));
        } else if (vector instanceof DecimalVector v && type instanceof DecimalType decimal) {
            BigDecimal value = from.getDecimal(ordinal, decimal.precision(), decimal.scale()).toJavaBigDecimal();
            v.setSafe(at, value);
        } else {
            throw new UnsupportedOperationException("the HyperStream Spark connector cannot write " + what + " ("
                    + type.simpleString() + ") into " + vector.getField().getType() + " yet");
        }
    }

    /** An integer of whichever width Spark holds it in (reading a short as an int would misread negatives). */
    private static long integer(SpecializedGetters from, int ordinal, DataType type) {
        if (type == DataTypes.ByteType) {
            return from.getByte(ordinal);
        }
        if (type == DataTypes.ShortType) {
            return from.getShort(ordinal);
        }
        if (type == DataTypes.IntegerType) {
            return from.getInt(ordinal);
        }
        return from.getLong(ordinal);
    }
}
