package io.hyperstream.spark;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The HyperStream catalog, which holds the vector distance functions ({@link VectorFunctions}):
 * with {@code spark.sql.catalog.hyperstream=io.hyperstream.spark.HyperStreamCatalog}, SQL calls
 * {@code hyperstream.cosine_distance(embedding, array(...))} and DataFrames {@code
 * call_function("hyperstream.cosine_distance", ...)}. Being V2 functions, they reach a HyperStream
 * scan as expressions it can push down ({@code ORDER BY ... LIMIT k} as a native top-k).
 */
public final class HyperStreamCatalog implements FunctionCatalog {
    private String name = "hyperstream";

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        return VectorFunctions.METRICS.keySet().stream().sorted()
                .map(f -> Identifier.of(namespace, f)).toArray(Identifier[]::new);
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        String function = ident.name().toLowerCase(java.util.Locale.ROOT);
        if (!VectorFunctions.isDistance(function)) {
            throw new NoSuchFunctionException(ident);
        }
        return VectorFunctions.unbound(function);
    }

    @Override
    public String toString() {
        return "HyperStreamCatalog(" + name + ", functions " + Arrays.toString(listFunctions(new String[0])) + ")";
    }
}
