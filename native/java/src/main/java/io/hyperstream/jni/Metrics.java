package io.hyperstream.jni;

import java.util.List;

/**
 * Distance metric names, as the native library reads them: both engines map their distance
 * functions and metric arguments through here, so a name means the same metric everywhere.
 */
public final class Metrics {
    /** The metrics over float vectors (dense or sparse), nearest first by ascending distance. */
    public static final List<String> FLOAT = List.of("l2", "cosine", "inner_product", "l1");

    private Metrics() {}

    /**
     * The native metric {@code name} stands for ({@code l2}, {@code cosine}, {@code inner_product},
     * {@code l1}, {@code hamming}, {@code jaccard}): a metric's own name or an alias the library
     * takes ({@code euclidean_distance}, {@code dot_product}, {@code l1_distance}, ...).
     *
     * @throws InvalidArgumentException naming the known metrics when it stands for none
     */
    public static String of(String name) {
        NativeLibrary.load();
        return ofNative(name);
    }

    /** As {@link #of}, refusing the metrics over bit vectors (a float query cannot be compared with them). */
    public static String overFloats(String name) {
        String metric;
        try {
            metric = of(name);
        } catch (InvalidArgumentException e) {
            metric = null;
        }
        if (metric == null || !FLOAT.contains(metric)) {
            throw new InvalidArgumentException("unknown metric '" + name + "' for a float vector query: use "
                    + String.join(", ", FLOAT));
        }
        return metric;
    }

    /** Whether {@code metric} (a native name) compares bit-packed binary vectors. */
    public static boolean overBits(String metric) {
        return metric.equals("hamming") || metric.equals("jaccard");
    }

    private static native String ofNative(String name);
}
