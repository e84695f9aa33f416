package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.BatchListReader;
import io.hyperstream.jni.NativeTable;
import java.io.IOException;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One write task: Spark rows into Arrow batches in the table's schema, then native data files (one,
 * or one per partition), whose descriptions go to the driver in the commit message.
 */
final class HyperStreamDataWriter implements DataWriter<InternalRow> {
    /** The data files a task wrote: one, one per partition in a partitioned table, none without rows. */
    record Written(String[] dataFiles) implements WriterCommitMessage {}

    /** {@code schema}: the written rows' Spark types, one field per table column in order. */
    record Factory(PathOptions options, org.apache.spark.sql.types.StructType schema) implements DataWriterFactory {
        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new HyperStreamDataWriter(options, schema);
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

    private final org.apache.spark.sql.types.StructType sparkSchema;

    private HyperStreamDataWriter(PathOptions options, org.apache.spark.sql.types.StructType sparkSchema) {
        this.options = options;
        this.sparkSchema = sparkSchema;
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
            FieldVector vector = vectors.get(i);
            SparkArrowWriter.set(vector, rows, row, i, sparkSchema.fields()[i].dataType(), "column '" + vector.getName() + "'");
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

    @Override
    public WriterCommitMessage commit() throws IOException {
        if (rows > 0) {
            flushBatch();
        }
        if (batches.batchCount() == 0) {
            return new Written(new String[0]);
        }
        handedOver = true; // native code closes the reader
        return new Written(table.writeDataFiles(allocator, batches));
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
