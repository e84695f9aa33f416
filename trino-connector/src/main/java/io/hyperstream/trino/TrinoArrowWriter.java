package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;

import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DateTimeEncoding;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.Int128;
import io.trino.spi.type.LongTimestampWithTimeZone;
import io.trino.spi.type.RealType;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.TimestampWithTimeZoneType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarbinaryType;
import io.trino.spi.type.VarcharType;
import java.math.BigDecimal;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;

/** Trino block values into Arrow vectors; the one place page sinks convert values. */
final class TrinoArrowWriter {
    private TrinoArrowWriter() {}

    /**
     * Sets {@code vector[at]} from position {@code position} of {@code block} (of Trino type {@code
     * type}). A null goes in only where the vector's field is nullable; a list must have the
     * vector's list size and no null elements. {@code what} names the value in errors.
     */
    static void set(FieldVector vector, int at, Type type, Block block, int position, String what) {
        if (block.isNull(position)) {
            if (!vector.getField().isNullable()) {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, what + " cannot be null");
            }
            vector.setNull(at);
            if (vector instanceof StructVector struct) {
                // Every field keeps a slot per row.
                struct.getChildrenFromFields().forEach(child -> child.setNull(at));
            }
            return;
        }
        if (vector instanceof FixedSizeListVector list) {
            Block elements = ((ArrayType) type).getObject(block, position);
            int size = list.getListSize();
            if (elements.getPositionCount() != size) {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, what + " holds " + elements.getPositionCount()
                        + " values where " + size + " belong");
            }
            list.setNotNull(at);
            Type element = ((ArrayType) type).getElementType();
            for (int j = 0; j < size; j++) {
                set(list.getDataVector(), at * size + j, element, elements, j, "an element of " + what);
            }
        } else if (vector instanceof ListVector list) {
            Block elements = ((ArrayType) type).getObject(block, position);
            int start = list.startNewValue(at);
            Type element = ((ArrayType) type).getElementType();
            for (int j = 0; j < elements.getPositionCount(); j++) {
                set(list.getDataVector(), start + j, element, elements, j, "an element of " + what);
            }
            list.endValue(at, elements.getPositionCount());
        } else if (vector instanceof StructVector struct && type instanceof io.trino.spi.type.RowType row) {
            io.trino.spi.block.SqlRow value = row.getObject(block, position);
            struct.setIndexDefined(at);
            for (int i = 0; i < row.getFields().size(); i++) {
                set((FieldVector) struct.getChildByOrdinal(i), at, row.getFields().get(i).getType(), value.getRawFieldBlock(i),
                        value.getRawIndex(), "field " + row.getFields().get(i).getName().orElse(String.valueOf(i)) + " of " + what);
            }
        } else if (vector instanceof BitVector v) {
            v.setSafe(at, BooleanType.BOOLEAN.getBoolean(block, position) ? 1 : 0);
        } else if (vector instanceof BigIntVector v) {
            v.setSafe(at, integer(type, block, position));
        } else if (vector instanceof IntVector v) {
            v.setSafe(at, Math.toIntExact(integer(type, block, position)));
        } else if (vector instanceof Float4Vector v) {
            v.setSafe(at, type instanceof RealType ? RealType.REAL.getFloat(block, position) : (float) type.getDouble(block, position));
        } else if (vector instanceof Float8Vector v) {
            v.setSafe(at, type instanceof RealType ? RealType.REAL.getFloat(block, position) : DoubleType.DOUBLE.getDouble(block, position));
        } else if (vector instanceof VarCharVector v) {
            v.setSafe(at, VarcharType.VARCHAR.getSlice(block, position).getBytes());
        } else if (vector instanceof DecimalVector v) {
            DecimalType decimal = (DecimalType) type;
            BigDecimal value = decimal.isShort() ? BigDecimal.valueOf(decimal.getLong(block, position), decimal.getScale())
                    : new BigDecimal(((Int128) decimal.getObject(block, position)).toBigInteger(), decimal.getScale());
            v.setSafe(at, value.setScale(v.getScale(), java.math.RoundingMode.UNNECESSARY));
        } else if (vector instanceof DateDayVector v) {
            v.setSafe(at, Math.toIntExact(type.getLong(block, position)));
        } else if (vector instanceof TimeStampMicroVector v && type instanceof TimestampType timestamp && timestamp.isShort()) {
            v.setSafe(at, timestamp.getLong(block, position));
        } else if (vector instanceof TimeStampMicroTZVector v && type instanceof TimestampWithTimeZoneType zoned) {
            if (zoned.isShort()) {
                v.setSafe(at, DateTimeEncoding.unpackMillisUtc(zoned.getLong(block, position)) * 1000);
            } else {
                LongTimestampWithTimeZone value = (LongTimestampWithTimeZone) zoned.getObject(block, position);
                v.setSafe(at, value.getEpochMillis() * 1000 + value.getPicosOfMilli() / 1_000_000);
            }
        } else if (vector instanceof VarBinaryVector v) {
            v.setSafe(at, VarbinaryType.VARBINARY.getSlice(block, position).getBytes());
        } else {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "cannot write " + type + " into " + vector.getField());
        }
    }

    private static long integer(Type type, Block block, int position) {
        return type instanceof TinyintType tiny ? tiny.getByte(block, position) : type.getLong(block, position);
    }
}
