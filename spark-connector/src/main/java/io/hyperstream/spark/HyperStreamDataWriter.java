package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.BatchListReader;
import io.hyperstream.jni.NativeTable;
import java.io.IOException;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One write task: Spark rows into Arrow batches in the table's schema, then one native data file,
 * whose description goes to the driver in the commit message.
 */
final class HyperStreamDataWriter implements DataWriter<InternalRow> {
    /** The data file a task wrote (null when it had no rows). */
    record Written(String dataFile) implements WriterCommitMessage {}

    record Factory(PathOptions options) implements DataWriterFactory {
        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new HyperStreamDataWriter(options);
        }
    }

    private final PathOptions options;
    private final BufferAllocator allocator;
    private final NativeTable table;
    private final Schema schema;
    private final BatchListReader batches;
    private VectorSchemaRoot root;
    private int rows;
    private boolean handedOver;

    private HyperStreamDataWriter(PathOptions options) {
        this.options = options;
        this.allocator = Allocators.child("spark-write");
        this.table = NativeTable.load(options.path(), options.storage());
        this.schema = table.schema(allocator);
        this.batches = new BatchListReader(allocator, schema);
        this.root = VectorSchemaRoot.create(schema, allocator);
        root.allocateNew();
    }

    @Override
    public void write(InternalRow row) {
        List<FieldVector> vectors = root.getFieldVectors();
        for (int i = 0; i < vectors.size(); i++) {
            set(vectors.get(i), rows, row, i);
        }
        rows++;
        if (rows == options.batchRows()) {
            flushBatch();
        }
    }

    private void flushBatch() {
        root.setRowCount(rows);
        batches.add(root);
        root.close();
        root = VectorSchemaRoot.create(schema, allocator);
        root.allocateNew();
        rows = 0;
    }

    private static void set(FieldVector vector, int index, InternalRow row, int ordinal) {
        if (row.isNullAt(ordinal)) {
            if (!vector.getField().isNullable()) {
                throw new IllegalArgumentException("column '" + vector.getName() + "' is required but a row holds null");
            }
            vector.setNull(index);
            return;
        }
        if (vector instanceof BigIntVector v) {
            v.setSafe(index, row.getLong(ordinal));
        } else if (vector instanceof IntVector v) {
            v.setSafe(index, row.getInt(ordinal));
        } else if (vector instanceof Float8Vector v) {
            v.setSafe(index, row.getDouble(ordinal));
        } else if (vector instanceof Float4Vector v) {
            v.setSafe(index, row.getFloat(ordinal));
        } else if (vector instanceof BitVector v) {
            v.setSafe(index, row.getBoolean(ordinal) ? 1 : 0);
        } else if (vector instanceof VarCharVector v) {
            v.setSafe(index, row.getUTF8String(ordinal).getBytes());
        } else if (vector instanceof FixedSizeListVector list && list.getDataVector() instanceof Float4Vector elements) {
            ArrayData values = row.getArray(ordinal);
            int dimension = list.getListSize();
            if (values.numElements() != dimension) {
                throw new IllegalArgumentException("column '" + vector.getName() + "' holds vectors of dimension "
                        + dimension + "; a row has " + values.numElements() + " values");
            }
            list.setNotNull(index);
            for (int j = 0; j < dimension; j++) {
                if (values.isNullAt(j)) {
                    throw new IllegalArgumentException("vector column '" + vector.getName() + "' cannot hold null elements");
                }
                elements.setSafe(index * dimension + j, values.getFloat(j));
            }
        } else {
            throw new UnsupportedOperationException("the HyperStream Spark connector cannot write column '"
                    + vector.getName() + "' of type " + vector.getField().getType() + " yet");
        }
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        if (rows > 0) {
            flushBatch();
        }
        if (batches.batchCount() == 0) {
            return new Written(null);
        }
        handedOver = true; // native code closes the reader
        return new Written(table.writeDataFile(allocator, batches));
    }

    @Override
    public void abort() {
        // Nothing was written natively before commit(); buffered batches go with close().
    }

    @Override
    public void close() throws IOException {
        try {
            root.close();
            if (!handedOver) {
                batches.close();
            }
        } finally {
            table.close();
            allocator.close();
        }
    }
}
