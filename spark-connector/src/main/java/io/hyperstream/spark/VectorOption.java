package io.hyperstream.spark;

import static java.util.Objects.requireNonNull;

import io.hyperstream.jni.VectorSearch;
import java.io.Serializable;
import java.util.Arrays;

/**
 * A vector search a Spark scan runs natively: the {@code k} rows whose {@code column} is nearest
 * {@code query} by the native {@code metric}, from a pushed {@code ORDER BY <distance> LIMIT k} or the
 * {@code vector.search.*} read options. {@code function} names what Spark called it (for plans);
 * {@code efSearch} is how the column's HNSW index is used (see {@link VectorSearch#efSearch()}), {@code
 * backend} where an exact comparison runs (see {@link VectorSearch#backend()}), {@code nullsFirst} whether
 * rows without a vector come before the nearest ({@code ORDER BY ... NULLS FIRST}).
 */
record VectorOption(String function, String column, float[] query, String metric, long k, long efSearch, String backend,
        boolean nullsFirst)
        implements Serializable {
    VectorOption {
        requireNonNull(function, "function");
        requireNonNull(column, "column");
        requireNonNull(query, "query");
        requireNonNull(metric, "metric");
        requireNonNull(backend, "backend");
    }

    VectorSearch toSearch() {
        return new VectorSearch(column, query, metric, k, efSearch, backend, nullsFirst);
    }

    @Override
    public String toString() {
        String shown = query.length <= 4 ? Arrays.toString(query) : "[" + query.length + " values]";
        String index = efSearch == VectorSearch.EF_DEFAULT ? "" : efSearch == VectorSearch.EXACT ? " exact" : " ef=" + efSearch;
        String where = backend.equals(VectorSearch.AUTO) ? "" : " on " + backend;
        return "nativeTopK=" + k + " by " + function + "(" + column + ", " + shown + ")" + index + where
                + (nullsFirst ? " nulls first" : "");
    }
}
