package io.hyperstream.spark;

import io.hyperstream.jni.Limits;
import java.io.Serializable;
import java.util.Locale;
import java.util.Map;

/**
 * Options of an array of an array store read or written as a DataFrame ({@code
 * .option("array", name).load(storeDirectory)}).
 *
 * <table>
 *   <caption>Options</caption>
 *   <tr><th>option</th><th>meaning</th></tr>
 *   <tr><td>path</td><td>the array store's directory (a local path)</td></tr>
 *   <tr><td>array</td><td>the array's name</td></tr>
 *   <tr><td>dtype</td><td>on a write that creates the array: its numpy dtype (default: from the {@code value}
 *       column's type: boolean, int8/16/32/64 for byte/short/int/long, float32, float64)</td></tr>
 *   <tr><td>shape</td><td>on a write that creates the array: the shape of one row, comma-separated (default: the
 *       length of the first row's list, or none for a scalar column)</td></tr>
 *   <tr><td>split.rows</td><td>rows per Spark task on reads (1,048,576)</td></tr>
 *   <tr><td>batch.rows</td><td>rows per columnar batch, read and write (8192)</td></tr>
 *   <tr><td>durable</td><td>sync every commit to the device before it returns (false)</td></tr>
 * </table>
 */
record ArrayOptions(String path, String array, String dtype, long[] shape, long splitRows, int batchRows, boolean durable)
        implements Serializable {
    static final String ARRAY = "array";

    static boolean isArray(Map<String, String> options) {
        return options.keySet().stream().anyMatch(k -> k.equalsIgnoreCase(ARRAY));
    }

    static ArrayOptions from(Map<String, String> options) {
        String path = null;
        String array = null;
        String dtype = null;
        long[] shape = null;
        long splitRows = 1 << 20;
        int batchRows = 8192;
        boolean durable = false;
        for (Map.Entry<String, String> e : options.entrySet()) {
            String value = e.getValue().trim();
            switch (e.getKey().toLowerCase(Locale.ROOT)) {
                case "path" -> path = value;
                case ARRAY -> array = value;
                case "dtype" -> dtype = value;
                case "shape" -> shape = parseShape(value);
                case SampleOptions.SPLIT_ROWS -> splitRows = positive(e.getKey(), value);
                case SampleOptions.BATCH_ROWS -> batchRows = Limits.batchRows("option '" + e.getKey() + "'", positive(e.getKey(), value));
                case "durable" -> durable = Boolean.parseBoolean(value);
                default -> throw new IllegalArgumentException("unknown HyperStream array option '" + e.getKey()
                        + "'; known: path, array, dtype, shape, split.rows, batch.rows, durable");
            }
        }
        if (path == null || path.isBlank()) {
            throw new IllegalArgumentException("a HyperStream array needs its store's directory: .load(path) or .save(path)");
        }
        if (array == null || array.isBlank()) {
            throw new IllegalArgumentException("option 'array' needs the array's name");
        }
        return new ArrayOptions(path, array, dtype, shape, splitRows, batchRows, durable);
    }

    private static long[] parseShape(String value) {
        String[] parts = value.replace("(", "").replace(")", "").replace("[", "").replace("]", "").split(",");
        long[] shape = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            shape[i] = positive("shape", parts[i].trim());
        }
        return shape;
    }

    private static long positive(String key, String value) {
        try {
            long n = Long.parseLong(value);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("option '" + key + "' must be a positive integer, got '" + value + "'");
    }
}
