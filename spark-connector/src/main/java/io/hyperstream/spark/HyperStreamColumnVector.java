package io.hyperstream.spark;

import org.apache.arrow.memory.ArrowBuf;
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
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark {@link ColumnVector} over an Arrow vector. Spark's own {@code ArrowColumnVector} takes
 * Spark's bundled (unrelocated) Arrow classes and rejects fixed-size lists, so the connector, whose
 * Arrow is relocated, brings its own. Values are read in place from the Arrow buffers; strings are
 * {@link UTF8String} views over them.
 */
final class HyperStreamColumnVector extends ColumnVector {
    private final ValueVector vector;
    private final HyperStreamColumnVector elements;
    private final int listSize;

    private HyperStreamColumnVector(ValueVector vector) {
        super(SparkTypes.toDataType(vector.getField()));
        this.vector = vector;
        if (vector instanceof FixedSizeListVector list) {
            this.elements = new HyperStreamColumnVector(list.getDataVector());
            this.listSize = list.getListSize();
        } else {
            this.elements = null;
            this.listSize = 0;
        }
    }

    static HyperStreamColumnVector of(FieldVector vector) {
        return new HyperStreamColumnVector(vector);
    }

    @Override
    public void close() {
        // The Arrow vectors belong to the reader's VectorSchemaRoot, which releases them.
    }

    @Override
    public boolean hasNull() {
        return vector.getNullCount() > 0;
    }

    @Override
    public int numNulls() {
        return vector.getNullCount();
    }

    @Override
    public boolean isNullAt(int rowId) {
        return vector.isNull(rowId);
    }

    @Override
    public boolean getBoolean(int rowId) {
        return ((BitVector) vector).get(rowId) == 1;
    }

    @Override
    public byte getByte(int rowId) {
        return ((TinyIntVector) vector).get(rowId);
    }

    @Override
    public short getShort(int rowId) {
        return ((SmallIntVector) vector).get(rowId);
    }

    @Override
    public int getInt(int rowId) {
        // Spark holds a date as its day number.
        return vector instanceof DateDayVector days ? days.get(rowId) : ((IntVector) vector).get(rowId);
    }

    @Override
    public long getLong(int rowId) {
        // Spark holds a timestamp as microseconds since the epoch, as Iceberg does.
        return vector instanceof TimeStampVector micros ? micros.get(rowId) : ((BigIntVector) vector).get(rowId);
    }

    @Override
    public float getFloat(int rowId) {
        return ((Float4Vector) vector).get(rowId);
    }

    @Override
    public double getDouble(int rowId) {
        return ((Float8Vector) vector).get(rowId);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (vector.isNull(rowId)) {
            return null;
        }
        VarCharVector strings = (VarCharVector) vector;
        ArrowBuf offsets = strings.getOffsetBuffer();
        int start = offsets.getInt((long) rowId * VarCharVector.OFFSET_WIDTH);
        int end = offsets.getInt((long) (rowId + 1) * VarCharVector.OFFSET_WIDTH);
        return UTF8String.fromAddress(null, strings.getDataBuffer().memoryAddress() + start, end - start);
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        if (elements == null) {
            throw new UnsupportedOperationException(vector.getField() + " is not a list column");
        }
        if (vector.isNull(rowId)) {
            return null;
        }
        return new ColumnarArray(elements, rowId * listSize, listSize);
    }

    @Override
    public ColumnarMap getMap(int ordinal) {
        throw new UnsupportedOperationException("map columns are not supported yet");
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (vector.isNull(rowId)) {
            return null;
        }
        return Decimal.apply(((DecimalVector) vector).getObject(rowId), precision, scale);
    }

    @Override
    public byte[] getBinary(int rowId) {
        return vector.isNull(rowId) ? null : ((VarBinaryVector) vector).get(rowId);
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        if (elements != null && ordinal == 0) {
            return elements;
        }
        throw new UnsupportedOperationException("struct columns are not supported yet");
    }
}
