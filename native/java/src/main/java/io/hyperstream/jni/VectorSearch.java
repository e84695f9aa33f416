package io.hyperstream.jni;

import static java.util.Objects.requireNonNull;

import java.util.Arrays;
import java.util.Objects;

/**
 * A nearest-neighbour search: the {@code k} rows whose {@code column} vectors are nearest
 * {@code query} by {@code metric} ({@code l2}, {@code cosine}, {@code inner_product} (the negated
 * dot product) or {@code l1}; the usual aliases such as {@code euclidean} and {@code dot_product}
 * are accepted). Over a binary column, whose values are bit-packed vectors, the metric is {@code
 * hamming} or {@code jaccard} and the query holds its bytes as numbers 0..255 ({@link #bitQuery}).
 * The native side checks the metric, k and the query's dimension and values.
 *
 * <p>Where the column has a vector index of the same metric, {@code efSearch} says how it is
 * used: {@link #EF_DEFAULT} lets the library pick (the index with a candidate list of
 * {@code max(k, 64)}), a positive value is the candidate list's length (larger: better recall,
 * slower), {@link #EXACT} skips the index. Small or very selectively filtered files are searched
 * exactly whatever it says.
 */
public record VectorSearch(String column, float[] query, String metric, long k, long efSearch) {
    /** Name of the column a search appends: the distance from the query, smaller is nearer. */
    public static final String DISTANCE_COLUMN = "_distance";
    /** {@link #efSearch()}: the library's default use of the index. */
    public static final long EF_DEFAULT = 0;
    /** {@link #efSearch()}: exact search, whatever index the column has. */
    public static final long EXACT = -1;

    /** A search that uses the column's index as the library picks. */
    public VectorSearch(String column, float[] query, String metric, long k) {
        this(column, query, metric, k, EF_DEFAULT);
    }

    public VectorSearch {
        requireNonNull(column, "column");
        requireNonNull(query, "query");
        requireNonNull(metric, "metric");
        query = query.clone();
    }

    /** Bit-packed {@code bits} as the query of a binary column's search: each byte as a number 0..255. */
    public static float[] bitQuery(byte[] bits) {
        float[] query = new float[bits.length];
        for (int i = 0; i < bits.length; i++) {
            query[i] = bits[i] & 0xff;
        }
        return query;
    }

    /** This search with another {@link #efSearch()}. */
    public VectorSearch withEfSearch(long ef) {
        return new VectorSearch(column, query, metric, k, ef);
    }

    @Override
    public float[] query() {
        return query.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VectorSearch other && column.equals(other.column) && Arrays.equals(query, other.query)
                && metric.equals(other.metric) && k == other.k && efSearch == other.efSearch;
    }

    @Override
    public int hashCode() {
        return Objects.hash(column, Arrays.hashCode(query), metric, k, efSearch);
    }

    @Override
    public String toString() {
        String index = efSearch == EF_DEFAULT ? "" : efSearch == EXACT ? " exact" : " ef " + efSearch;
        return metric + "(" + column + ", " + Arrays.toString(query) + ") top " + k + index;
    }
}
