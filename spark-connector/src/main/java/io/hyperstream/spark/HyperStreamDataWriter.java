package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeLibrary;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.TableWriter;
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
 * One write task: Spark rows into Arrow batches in the table's schema, each handed at once to the
 * native writer, which rolls its bounded buffer into data files (one partition each in a
 * partitioned table); their descriptions go to the driver in the commit message. The task holds one
 * batch of rows in Arrow memory at a time.
 */
final class HyperStreamDataWriter implements DataWriter<InternalRow> {
    /** The data files a task wrote: one, one per partition in a partitioned table, none without rows. */
    record Written(String[] dataFiles) implements WriterCommitMessage {}

    /**
     * {@code schema}: the written rows' Spark types, one field per table column in order;
     * {@code lineage}: the rows of a row-level change of a format version 3 table, each with the
     * {@code _row_id} of the row it replaces (see {@link #writeWithRowId}).
     */
    record Factory(PathOptions options, org.apache.spark.sql.types.StructType schema, boolean lineage) implements DataWriterFactory {
        Factory(PathOptions options, org.apache.spark.sql.types.StructType schema) {
            this(options, schema, false);
        }

        @Override
        public HyperStreamDataWriter createWriter(int partitionId, long taskId) {
            applyWriteMemoryLimit();
            return new HyperStreamDataWriter(options, schema, lineage);
        }
    }

    /** The Spark configuration key of what an executor's table writers together buffer (bytes). */
    static final String WRITE_MEMORY_LIMIT = "spark.hyperstream.write.memoryLimit";

    /** Sets the executor's write memory limit when its Spark configuration has one. */
    private static void applyWriteMemoryLimit() {
        org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
        if (env != null && env.conf().contains(WRITE_MEMORY_LIMIT)) {
            NativeLibrary.setWriteMemoryLimit(env.conf().getSizeAsBytes(WRITE_MEMORY_LIMIT));
        }
    }

    private final PathOptions options;
    private final BufferAllocator allocator;
    private final NativeTable table;
    private final Schema schema;
    private final TableWriter writer;
    private VectorSchemaRoot root;
    private int rows;
    /** The HNSW graphs this task built for the files it wrote; known once it has written them. */
    private NativeTable.IndexBuilds built = new NativeTable.IndexBuilds(0, 0, 0);
    /** What the task wrote, once it has. */
    private Written written;

    private final org.apache.spark.sql.types.StructType sparkSchema;

    private HyperStreamDataWriter(PathOptions options, org.apache.spark.sql.types.StructType sparkSchema, boolean lineage) {
        this.options = options;
        this.sparkSchema = sparkSchema;
        this.allocator = Allocators.child("spark-write");
        this.table = NativeTable.load(options.path(), options.storage());
        Schema columns = table.schema(allocator);
        this.schema = lineage ? NativeTable.withRowId(columns) : columns;
        this.writer = lineage ? table.openLineageWriter() : table.openWriter();
        this.root = VectorSchemaRoot.create(schema, allocator);
        root.allocateNew();
    }

    @Override
    public void write(InternalRow row) {
        writeWithRowId(row, null);
    }

    /** Writes {@code row}; in a lineage writer, as the row whose id is {@code rowId} (null: a new row). */
    void writeWithRowId(InternalRow row, Long rowId) {
        List<FieldVector> vectors = root.getFieldVectors();
        int columns = sparkSchema.fields().length;
        for (int i = 0; i < columns; i++) {
            FieldVector vector = vectors.get(i);
            SparkArrowWriter.set(vector, rows, row, i, sparkSchema.fields()[i].dataType(), "column '" + vector.getName() + "'");
        }
        if (vectors.size() > columns) {
            org.apache.arrow.vector.BigIntVector ids = (org.apache.arrow.vector.BigIntVector) vectors.get(columns);
            if (rowId == null) {
                ids.setNull(rows);
            } else {
                ids.setSafe(rows, rowId);
            }
        }
        rows++;
        if (rows == options.batchRows()) {
            flushBatch();
        }
    }

    private void flushBatch() {
        root.setRowCount(rows);
        writer.write(allocator, root);
        root.clear();
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

    /** Hands over the last rows and has the writer write what it still holds, once. */
    private Written finish() {
        if (written != null) {
            return written;
        }
        if (rows > 0) {
            flushBatch();
        }
        written = new Written(writer.finish());
        built = table.indexBuilds();
        return written;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return WriteMetrics.task(built);
    }

    @Override
    public void abort() {
        // Files written but never handed to the driver (rolled ones too) are this task's to delete.
        writer.abort();
    }

    @Override
    public void close() throws IOException {
        try {
            root.close();
            writer.close();
        } finally {
            table.close();
            allocator.close();
        }
    }
}
