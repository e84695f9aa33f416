package io.hyperstream.jni;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The generated sample table of the native library: every value is a documented function of the
 * row id (see {@code native/src/table/sample.rs}), so any reader can check what reached it.
 *
 * <p>Columns: {@code id bigint}, {@code value double = id * 0.5}, {@code category string =
 * "cat-" + id % 7} (null when {@code id % 10 == 9}), {@code flag boolean = id % 3 == 0}, {@code
 * embedding float[dimension]} with element {@code j = ((id * 31 + j * 17 + seed) % 1000) / 1000}.
 */
public final class SampleTable extends NativeHandle {
    private final long rows;
    private final int dimension;
    private final long seed;

    private SampleTable(long handle, long rows, int dimension, long seed) {
        super("sample table (" + rows + " rows, dimension " + dimension + ")", handle);
        this.rows = rows;
        this.dimension = dimension;
        this.seed = seed;
    }

    /** Opens a sample table; rows >= 0, dimension in 1..65536. */
    public static SampleTable open(long rows, int dimension, long seed) {
        NativeLibrary.load();
        return new SampleTable(openNative(rows, dimension, seed), rows, dimension, seed);
    }

    public long rows() {
        return rows;
    }

    public int dimension() {
        return dimension;
    }

    public long seed() {
        return seed;
    }

    /** The table's Arrow schema, as the native side declares it. */
    public Schema schema(BufferAllocator allocator) {
        return call(h -> ArrowStreams.importSchema(allocator, address -> exportSchema(h, address)));
    }

    /** Row ranges {@code [start, end)} of at most {@code targetRows} rows each, planned natively. */
    public long[][] planSplits(long targetRows) {
        return call(h -> Limits.ranges(address -> planSplits(h, targetRows, address)));
    }

    /**
     * Streams rows {@code [start, end)} in batches of {@code batchRows}, keeping the columns at
     * {@code projection} (every column when null). The reader owns the native stream, which keeps
     * its own reference to the table: it may outlive this handle.
     */
    public ArrowReader scan(BufferAllocator allocator, long start, long end, int batchRows, int[] projection) {
        return call(h -> ArrowStreams.importStream(allocator,
                address -> scanNative(h, start, end, batchRows, projection, address)));
    }

    /**
     * The first {@code poolBatches} batches of {@code batchRows} rows (columns at {@code projection},
     * every column when null), held natively and replayed by the bridge benchmark.
     */
    public BatchReplay replay(int batchRows, int poolBatches, int[] projection) {
        return call(h -> new BatchReplay(BatchReplay.openNative(h, batchRows, poolBatches, projection)));
    }

    private static native long openNative(long rows, int dimension, long seed);

    private static native void exportSchema(long handle, long schemaAddress);

    private static native void planSplits(long handle, long targetRows, long streamAddress);

    private static native void scanNative(long handle, long start, long end, int batchRows, int[] projection,
            long streamAddress);
}
