package io.hyperstream.spark;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark {@link ColumnVector} over an Arrow vector. Spark's own {@code ArrowColumnVector} takes
 * Spark's bundled (unrelocated) Arrow classes and rejects fixed-size lists, so the connector, whose
 * Arrow is relocated, brings its own. Values are read in place from the Arrow buffers, at their
 * addresses (as Spark's own off-heap vectors read theirs: Arrow's checked getters cost a bounds and
 * a null check per value, which made scans slower than Spark's Parquet reader); strings are
 * {@link UTF8String} views over them. The buffers live as long as the batch, which is all Spark
 * reads them for.
 */
final class HyperStreamColumnVector extends ColumnVector {
    private final ValueVector vector;
    /** A list's elements, and its fixed size (-1: each row's own length, from the offsets). */
    private final HyperStreamColumnVector elements;
    private final int listSize;
    /** A struct's fields. */
    private final HyperStreamColumnVector[] children;
    /** Whether any value is null; then the address of the validity bitmap. */
    private final boolean anyNull;
    private final long validity;
    /** The address of the values (fixed width: the value buffer; strings: the data buffer), and of a string column's offsets. */
    private final long values;
    private final long offsets;

    private HyperStreamColumnVector(ValueVector vector) {
        super(SparkTypes.toDataType(vector.getField()));
        this.vector = vector;
        this.anyNull = vector.getNullCount() > 0;
        this.validity = anyNull ? vector.getValidityBuffer().memoryAddress() : 0;
        if (vector instanceof BaseFixedWidthVector fixed) {
            this.values = fixed.getDataBuffer().memoryAddress();
            this.offsets = 0;
        } else if (vector instanceof BaseVariableWidthVector variable) {
            this.values = variable.getDataBuffer().memoryAddress();
            this.offsets = variable.getOffsetBuffer().memoryAddress();
        } else if (vector instanceof ListVector list) {
            this.values = 0;
            this.offsets = list.getOffsetBuffer().memoryAddress();
        } else {
            this.values = 0;
            this.offsets = 0;
        }
        this.children = vector instanceof StructVector struct
                ? struct.getChildrenFromFields().stream().map(HyperStreamColumnVector::new).toArray(HyperStreamColumnVector[]::new)
                : new HyperStreamColumnVector[0];
        if (vector instanceof FixedSizeListVector list) {
            this.elements = new HyperStreamColumnVector(list.getDataVector());
            this.listSize = list.getListSize();
        } else if (vector instanceof ListVector list) {
            this.elements = new HyperStreamColumnVector(list.getDataVector());
            this.listSize = -1;
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
        return anyNull;
    }

    @Override
    public int numNulls() {
        return vector.getNullCount();
    }

    @Override
    public boolean isNullAt(int rowId) {
        return anyNull && !bit(validity, rowId);
    }

    private static boolean bit(long bitmap, int index) {
        return (Platform.getByte(null, bitmap + (index >>> 3)) & (1 << (index & 7))) != 0;
    }

    @Override
    public boolean getBoolean(int rowId) {
        return bit(values, rowId);
    }

    @Override
    public byte getByte(int rowId) {
        return Platform.getByte(null, values + rowId);
    }

    @Override
    public short getShort(int rowId) {
        return Platform.getShort(null, values + 2L * rowId);
    }

    /** An int, or a date (Spark holds one as its day number, as Arrow's date32 does). */
    @Override
    public int getInt(int rowId) {
        return Platform.getInt(null, values + 4L * rowId);
    }

    /** A long, or a timestamp (Spark holds one as microseconds since the epoch, as Iceberg does). */
    @Override
    public long getLong(int rowId) {
        return Platform.getLong(null, values + 8L * rowId);
    }

    @Override
    public float getFloat(int rowId) {
        return Platform.getFloat(null, values + 4L * rowId);
    }

    @Override
    public double getDouble(int rowId) {
        return Platform.getDouble(null, values + 8L * rowId);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        int start = Platform.getInt(null, offsets + 4L * rowId);
        int end = Platform.getInt(null, offsets + 4L * (rowId + 1));
        return UTF8String.fromAddress(null, values + start, end - start);
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        if (elements == null) {
            throw new UnsupportedOperationException(vector.getField() + " is not a list column");
        }
        if (isNullAt(rowId)) {
            return null;
        }
        if (listSize < 0) {
            int start = Platform.getInt(null, offsets + 4L * rowId);
            return new ColumnarArray(elements, start, Platform.getInt(null, offsets + 4L * (rowId + 1)) - start);
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
        if (ordinal >= 0 && ordinal < children.length) {
            return children[ordinal];
        }
        if (elements != null && ordinal == 0) {
            return elements;
        }
        throw new UnsupportedOperationException(vector.getField() + " has no child " + ordinal);
    }
}
