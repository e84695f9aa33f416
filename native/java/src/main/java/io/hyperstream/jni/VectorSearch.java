package io.hyperstream.jni;

import static java.util.Objects.requireNonNull;

import java.util.Arrays;

/**
 * A nearest-neighbour search: the {@code k} rows whose {@code column} vectors are nearest
 * {@code query} by {@code metric} ({@code l2}, {@code cosine}, {@code inner_product} (the negated
 * dot product) or {@code l1}; the usual aliases such as {@code euclidean} and {@code dot_product}
 * are accepted). The native side checks the metric, k and the query's dimension and values.
 */
public record VectorSearch(String column, float[] query, String metric, long k) {
    /** Name of the column a search appends: the distance from the query, smaller is nearer. */
    public static final String DISTANCE_COLUMN = "_distance";

    public VectorSearch {
        requireNonNull(column, "column");
        requireNonNull(query, "query");
        requireNonNull(metric, "metric");
        query = query.clone();
    }

    @Override
    public float[] query() {
        return query.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VectorSearch other && column.equals(other.column) && Arrays.equals(query, other.query)
                && metric.equals(other.metric) && k == other.k;
    }

    @Override
    public int hashCode() {
        return 31 * (31 * (31 * column.hashCode() + Arrays.hashCode(query)) + metric.hashCode()) + Long.hashCode(k);
    }

    @Override
    public String toString() {
        return metric + "(" + column + ", " + Arrays.toString(query) + ") top " + k;
    }
}
