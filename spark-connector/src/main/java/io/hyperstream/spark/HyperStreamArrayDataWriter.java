package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.BatchListReader;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One task of a write to an array: its rows, batch by batch, into an array of its own (the part) in
 * the write's staging store; the part's name goes to the driver, which commits every part at once.
 */
final class HyperStreamArrayDataWriter implements DataWriter<InternalRow> {
    /** The part a task staged (null when it had no rows). */
    record Staged(String part) implements WriterCommitMessage {}

    record Factory(ArrayOptions options, String staging, ArrayLayout layout) implements DataWriterFactory {
        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new HyperStreamArrayDataWriter(this, "part-" + partitionId + "-" + taskId);
        }
    }

    private final Factory factory;
    private final String part;
    private final BufferAllocator allocator;
    private final ArrayStore store;
    private Schema schema;
    private VectorSchemaRoot root;
    private int rows;
    private boolean staged;

    private HyperStreamArrayDataWriter(Factory factory, String part) {
        this.factory = factory;
        this.part = part;
        this.allocator = Allocators.child("spark-array-write");
        this.store = ArrayStore.open(factory.staging(), false, false);
    }

    @Override
    public void write(InternalRow row) {
        if (root == null) {
            ArrayLayout layout = factory.layout();
            int listSize = !layout.isList() ? 0
                    : layout.shape() != null ? layout.rowElements() : row.isNullAt(layout.ordinal()) ? 0
                    : row.getArray(layout.ordinal()).numElements();
            schema = layout.arrowSchema(listSize);
            root = VectorSchemaRoot.create(schema, allocator);
            root.allocateNew();
        }
        factory.layout().set(root.getVector(0), rows, row);
        rows++;
        if (rows == factory.options().batchRows()) {
            stageBatch();
        }
    }

    /** Appends the rows so far to the part (creating it with the first batch). */
    private void stageBatch() {
        root.setRowCount(rows);
        root.getVector(0).setValueCount(rows);
        BatchListReader batch = new BatchListReader(allocator, schema);
        batch.add(root);
        if (staged) {
            store.append(allocator, part, batch);
        } else {
            store.save(allocator, part, batch);
            staged = true;
        }
        root.close();
        root = VectorSchemaRoot.create(schema, allocator);
        root.allocateNew();
        rows = 0;
    }

    @Override
    public WriterCommitMessage commit() {
        if (rows > 0) {
            stageBatch();
        }
        return new Staged(staged ? part : null);
    }

    @Override
    public void abort() {
        // The driver discards the whole staging store.
    }

    @Override
    public void close() {
        try {
            if (root != null) {
                root.close();
            }
            store.close();
        } finally {
            allocator.close();
        }
    }
}
