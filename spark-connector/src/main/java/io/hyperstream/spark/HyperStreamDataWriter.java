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
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
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
    /** The HNSW graphs this task built for the files it wrote; known once it has written them. */
    private NativeTable.IndexBuilds built = new NativeTable.IndexBuilds(0, 0, 0);
    /** What the task wrote, once it has. */
    private Written written;

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

    /**
     * Spark 4 hands a task its rows in one call and reads the task's metrics before {@link #commit}:
     * the data files (and their HNSW graphs) are written here so that those metrics count the graphs.
     * Spark 3.5 calls {@link #write} per row and reads the metrics before commit only, so its UI shows
     * no task index builds (the files are the same).
     */
    public void writeAll(java.util.Iterator<InternalRow> records) throws IOException {
        while (records.hasNext()) {
            write(records.next());
        }
        finish();
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        return finish();
    }

    /** Writes the buffered rows as native data files, once. */
    private Written finish() {
        if (written != null) {
            return written;
        }
        if (rows > 0) {
            flushBatch();
        }
        if (batches.batchCount() == 0) {
            written = new Written(new String[0]);
            return written;
        }
        handedOver = true; // native code closes the reader
        written = new Written(table.writeDataFiles(allocator, batches));
        built = table.indexBuilds();
        return written;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return WriteMetrics.task(built);
    }

    @Override
    public void abort() {
        // Files written but never handed to the driver are this task's to delete; buffered
        // batches go with close().
        if (written != null && written.dataFiles().length > 0) {
            table.deleteFiles(written.dataFiles());
        }
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
