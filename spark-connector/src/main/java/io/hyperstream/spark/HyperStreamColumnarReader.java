package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import java.io.IOException;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one split as Spark {@link ColumnarBatch}es whose columns are views over the Arrow vectors
 * imported from native code; no value is copied on the way.
 */
final class HyperStreamColumnarReader implements PartitionReader<ColumnarBatch> {
    private final BufferAllocator allocator;
    private final AutoCloseable source;
    private final ArrowReader reader;
    private ColumnarBatch batch;
    /** How many leading columns of each batch Spark reads (-1: all). */
    private int columns = -1;
    /** Rows still to hand out (a pushed LIMIT stops the split after it). */
    private long remaining = Long.MAX_VALUE;

    private HyperStreamColumnarReader(String name, AutoCloseable source, Function<BufferAllocator, ArrowReader> open) {
        this.allocator = Allocators.child(name);
        this.source = source;
        try {
            this.reader = open.apply(allocator);
        } catch (RuntimeException e) {
            closeQuietly(source);
            allocator.close();
            throw e;
        }
    }

    /** A split of the generated sample table. */
    static HyperStreamColumnarReader sample(SampleInputPartition split) {
        SampleTable table = split.options().open();
        return new HyperStreamColumnarReader("spark-sample-" + split.start(), table,
                allocator -> table.scan(allocator, split.start(), split.end(), split.options().batchRows(), split.projection()));
    }

    /** A row range of an array, in the engines' types. */
    static HyperStreamColumnarReader arrayRows(HyperStreamArrayTable.ArrayInputPartition split) {
        ArrayOptions options = split.options();
        ArrayStore store = ArrayStore.open(options.path(), false, true);
        return new HyperStreamColumnarReader("spark-array-" + split.start(), store,
                allocator -> store.scan(allocator, options.array(), split.start(), split.end(), options.batchRows(), true));
    }

    /** Data files of a stored table: a filtered scan, or a vector search over all of them. */
    static HyperStreamColumnarReader dataFile(TableInputPartition split) {
        NativeTable table = split.options().openRead();
        int batchRows = split.options().batchRows();
        VectorOption search = split.search();
        HyperStreamColumnarReader reader = new HyperStreamColumnarReader("spark-file", table, allocator -> search == null
                ? table.scanFiles(allocator, split.dataFiles(), split.columns(), split.filter(), batchRows)
                : table.search(allocator, split.dataFiles(), split.columns(), split.filter(), search.toSearch(), batchRows));
        // A search always returns _distance last; it is dropped unless the scan asked for it.
        reader.columns = search != null && !split.distanceColumn() ? split.columns().length : -1;
        reader.remaining = split.limit() > 0 ? split.limit() : Long.MAX_VALUE;
        return reader;
    }

    @Override
    public boolean next() throws IOException {
        if (remaining <= 0 || !reader.loadNextBatch()) {
            return false;
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        ColumnVector[] vectors = new ColumnVector[columns < 0 ? root.getFieldVectors().size() : columns];
        for (int i = 0; i < vectors.length; i++) {
            vectors[i] = HyperStreamColumnVector.of(root.getVector(i));
        }
        int rows = (int) Math.min(root.getRowCount(), remaining);
        remaining -= rows;
        batch = new ColumnarBatch(vectors, rows);
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() throws IOException {
        try {
            reader.close();
        } finally {
            closeQuietly(source);
            allocator.close();
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
