package io.hyperstream.spark;

import io.hyperstream.jni.Limits;
import io.hyperstream.jni.SampleTable;
import java.io.Serializable;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Options of the sample source, as given to {@code spark.read.format("hyperstream").option(...)}.
 *
 * <table>
 *   <caption>Options</caption>
 *   <tr><th>option</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>sample.rows</td><td>(required)</td><td>rows in the generated table</td></tr>
 *   <tr><td>sample.dimension</td><td>8</td><td>length of the {@code embedding} vectors</td></tr>
 *   <tr><td>sample.seed</td><td>0</td><td>seed of the vector values</td></tr>
 *   <tr><td>split.rows</td><td>1048576</td><td>most rows one Spark task reads</td></tr>
 *   <tr><td>batch.rows</td><td>8192</td><td>rows per columnar batch</td></tr>
 * </table>
 */
record SampleOptions(long rows, int dimension, long seed, long splitRows, int batchRows) implements Serializable {
    static final String ROWS = "sample.rows";
    static final String DIMENSION = "sample.dimension";
    static final String SEED = "sample.seed";
    static final String SPLIT_ROWS = "split.rows";
    static final String BATCH_ROWS = "batch.rows";
    private static final Set<String> KNOWN = Set.of(ROWS, DIMENSION, SEED, SPLIT_ROWS, BATCH_ROWS, "path");

    static SampleOptions from(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (!KNOWN.contains(key.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("unknown HyperStream option '" + key + "'; known options: "
                        + String.join(", ", KNOWN.stream().sorted().toList()));
            }
        }
        if (get(options, ROWS) == null) {
            throw new IllegalArgumentException("the HyperStream source needs option '" + ROWS
                    + "' (the generated sample table; stored tables by path are not supported yet)");
        }
        return new SampleOptions(
                parseLong(options, ROWS, 0),
                (int) parseLong(options, DIMENSION, 8),
                parseLong(options, SEED, 0),
                parseLong(options, SPLIT_ROWS, 1 << 20),
                Limits.batchRows("option '" + BATCH_ROWS + "'", parseLong(options, BATCH_ROWS, 8192)));
    }

    private static String get(Map<String, String> options, String key) {
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().equalsIgnoreCase(key)) {
                return e.getValue();
            }
        }
        return null;
    }

    private static long parseLong(Map<String, String> options, String key, long fallback) {
        String value = get(options, key);
        if (value == null) {
            return fallback;
        }
        try {
            long parsed = Long.parseLong(value.trim());
            if (key.equals(DIMENSION) && (parsed < Integer.MIN_VALUE || parsed > Integer.MAX_VALUE)) {
                throw new IllegalArgumentException("option '" + key + "' is out of range: " + value);
            }
            return parsed;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option '" + key + "' must be an integer, got '" + value + "'", e);
        }
    }

    SampleTable open() {
        return SampleTable.open(rows, dimension, seed);
    }

    String describe() {
        return "sample(rows=" + rows + ", dimension=" + dimension + ", seed=" + seed + ")";
    }
}
