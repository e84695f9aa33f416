package io.hyperstream.jni;

/**
 * The library's bounds on sizes users give (options, properties, arguments), for the engines to
 * check their options with before anything is allocated: the library checks the same values by the
 * same rule ({@code limits.rs}), so Spark and Trino refuse them alike, with an
 * {@link InvalidArgumentException} naming what was wrong.
 */
public final class Limits {
    private Limits() {}

    /** {@code rows} as rows per batch or page: 1 to 1,048,576. */
    public static int batchRows(String what, long rows) {
        NativeLibrary.load();
        return batchRowsNative(what, rows);
    }

    /** {@code k} as the rows a vector search answers: 1 to {@link #maxTopK()}. */
    public static int topK(String what, long k) {
        NativeLibrary.load();
        return topKNative(what, k);
    }

    /** The most rows a vector search answers: what a pushed-down LIMIT may be. */
    public static long maxTopK() {
        NativeLibrary.load();
        return maxTopKNative();
    }

    /**
     * {@code ef} as a search's use of an HNSW index: a candidate list length of 1 to 100,000, -1 for
     * exact search, or 0 for the library's choice.
     */
    public static long efSearch(String what, long ef) {
        NativeLibrary.load();
        return efSearchNative(what, ef);
    }

    /** {@code dimension} as the length of a vector: 1 to 65,536. */
    public static int dimension(String what, long dimension) {
        NativeLibrary.load();
        return dimensionNative(what, dimension);
    }

    /**
     * The row ranges {@code [start, end)} that cover rows {@code 0..rows} in splits of about {@code
     * splitRows} rows, evenly; at most 1,048,576 of them (more is refused: the split size is too small).
     */
    public static long[][] rowRanges(long rows, long splitRows) {
        NativeLibrary.load();
        return ranges(address -> rowRangesNative(rows, splitRows, address));
    }

    /** A range of rows {@code [start, end)} of a split plan, as the library hands it over. */
    record RowRange(long start, long end) {}

    /** The {@code [start, end)} pairs of the split plan the library exports at the address {@code exporter} is given. */
    static long[][] ranges(java.util.function.LongConsumer exporter) {
        return Records.read(exporter, RowRange.class).stream().map(r -> new long[] {r.start(), r.end()})
                .toArray(long[][]::new);
    }

    private static native int batchRowsNative(String what, long rows);

    private static native int dimensionNative(String what, long dimension);

    private static native int topKNative(String what, long k);

    private static native long maxTopKNative();

    private static native long efSearchNative(String what, long ef);

    private static native void rowRangesNative(long rows, long splitRows, long streamAddress);
}
