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
 *
 * <p>{@code backend} says where an exact search of a file's contiguous vectors runs: {@code auto}
 * (a GPU when the library has one compiled in, one answers and the file is large enough to pay
 * for copying its vectors over; the CPU otherwise), {@code cpu}, {@code cuda} or {@code wgpu}
 * (an error of the search when that backend is not compiled in or no device answers). Every
 * backend gives the same answer; see {@link NativeLibrary#gpuBackends()}.
 *
 * <p>Rows the filter passes that have no vector have no distance: they complete an answer of fewer
 * than k rows, after the nearest (SQL's {@code NULLS LAST}), or, with {@code nullsFirst}, come
 * before them, up to k ({@code NULLS FIRST}).
 */
public record VectorSearch(String column, float[] query, String metric, long k, long efSearch, String backend,
        boolean nullsFirst) implements java.io.Serializable {
    /** Name of the column a search appends: the distance from the query, smaller is nearer. */
    public static final String DISTANCE_COLUMN = "_distance";
    /** Name of the column a batched search ({@link NativeTable#searchMany}) puts first: the position of the search a row answers. */
    public static final String QUERY_COLUMN = "_query";
    /** {@link #efSearch()}: the library's default use of the index. */
    public static final long EF_DEFAULT = 0;
    /** {@link #efSearch()}: exact search, whatever index the column has. */
    public static final long EXACT = -1;
    /** {@link #backend()}: the library picks (see the class comment). */
    public static final String AUTO = "auto";

    /** A search that uses the column's index as the library picks. */
    public VectorSearch(String column, float[] query, String metric, long k) {
        this(column, query, metric, k, EF_DEFAULT, AUTO, false);
    }

    /** A search that uses the column's index as {@code efSearch} says, on the backend the library picks. */
    public VectorSearch(String column, float[] query, String metric, long k, long efSearch) {
        this(column, query, metric, k, efSearch, AUTO, false);
    }

    /** A search with rows without a vector after the nearest. */
    public VectorSearch(String column, float[] query, String metric, long k, long efSearch, String backend) {
        this(column, query, metric, k, efSearch, backend, false);
    }

    public VectorSearch {
        requireNonNull(column, "column");
        requireNonNull(query, "query");
        requireNonNull(metric, "metric");
        requireNonNull(backend, "backend");
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

    /** This search with another query. */
    public VectorSearch withQuery(float[] other) {
        return new VectorSearch(column, other, metric, k, efSearch, backend, nullsFirst);
    }

    /** This search with another {@link #efSearch()}. */
    public VectorSearch withEfSearch(long ef) {
        return new VectorSearch(column, query, metric, k, ef, backend, nullsFirst);
    }

    /** This search on another {@link #backend()}. */
    public VectorSearch withBackend(String name) {
        return new VectorSearch(column, query, metric, k, efSearch, name, nullsFirst);
    }

    /** This search with rows without a vector before ({@code true}) or after the nearest. */
    public VectorSearch withNullsFirst(boolean first) {
        return new VectorSearch(column, query, metric, k, efSearch, backend, first);
    }

    @Override
    public float[] query() {
        return query.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VectorSearch other && column.equals(other.column) && Arrays.equals(query, other.query)
                && metric.equals(other.metric) && k == other.k && efSearch == other.efSearch
                && backend.equals(other.backend) && nullsFirst == other.nullsFirst;
    }

    @Override
    public int hashCode() {
        return Objects.hash(column, Arrays.hashCode(query), metric, k, efSearch, backend, nullsFirst);
    }

    @Override
    public String toString() {
        String index = efSearch == EF_DEFAULT ? "" : efSearch == EXACT ? " exact" : " ef " + efSearch;
        String where = backend.equals(AUTO) ? "" : " on " + backend;
        return metric + "(" + column + ", " + Arrays.toString(query) + ") top " + k + index + where
                + (nullsFirst ? " nulls first" : "");
    }
}
