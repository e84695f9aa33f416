package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.airlift.slice.Slice;
import io.hyperstream.jni.Metrics;
import io.hyperstream.jni.VectorSearch;
import io.trino.spi.block.Block;
import io.trino.spi.connector.CatalogSchemaName;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.expression.Call;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.expression.Constant;
import io.trino.spi.expression.FunctionName;
import io.trino.spi.expression.StandardFunctions;
import io.trino.spi.expression.Variable;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarbinaryType;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A distance between a vector column and a constant query vector that the native scan computes:
 * Trino's {@code euclidean_distance}, {@code cosine_distance} and {@code dot_product} over
 * {@code array(real)} / {@code array(double)} columns, and the catalog's {@code system.l1_distance}
 * there, {@code system.hamming_distance} / {@code jaccard_distance} over {@code varbinary} columns
 * of bit-packed vectors, and {@code system.euclidean_distance} / {@code cosine_distance} / {@code
 * dot_product} / {@code l1_distance} over sparse vector columns with a sparse query (a map). {@code dot_product} is native {@code inner_product} negated back, so larger
 * products still sort first under {@code ORDER BY ... DESC}.
 */
public record VectorDistance(
        @JsonProperty("function") String function,
        @JsonProperty("column") String column,
        @JsonProperty("query") float[] query) {
    /** The ordinal of the synthetic column of a pushed distance (it is no column of the table). */
    static final int ORDINAL = -1;

    /** The functions pushed into the scan; each one's native metric is {@link Metrics#of} its name. */
    private static final java.util.Set<String> FUNCTIONS = java.util.Set.of("euclidean_distance", "cosine_distance",
            "dot_product",
            // The catalog's own functions (VectorFunctions).
            "l1_distance", "hamming_distance", "jaccard_distance",
            // vector_search names the native metric itself.
            "l2", "cosine", "inner_product", "l1");

    /** The Trino functions whose calls the scan computes. */
    private static final java.util.Set<String> TRINO_FUNCTIONS = java.util.Set.of("euclidean_distance", "cosine_distance", "dot_product");

    /** The catalog's functions over bit-packed varbinary vectors. */
    private static final java.util.Set<String> BIT_FUNCTIONS = java.util.Set.of("hamming_distance", "jaccard_distance");

    @JsonCreator
    public VectorDistance {
        requireNonNull(function, "function is null");
        requireNonNull(column, "column is null");
        requireNonNull(query, "query is null");
        if (!FUNCTIONS.contains(function)) {
            throw new IllegalArgumentException("not a pushed-down distance function: " + function);
        }
    }

    /** The native metric. */
    public String metric() {
        return Metrics.of(function);
    }

    /** Whether the native distance is the negation of the function's value (dot_product). */
    public boolean negated() {
        return function.equals("dot_product");
    }

    public VectorSearch search(long k) {
        return new VectorSearch(column, query, metric(), k);
    }

    /** The synthetic column the scan fills with this distance. */
    public HyperStreamColumnHandle columnHandle() {
        return new HyperStreamColumnHandle("$" + function + "(" + column + ")", DoubleType.DOUBLE, ORDINAL, true);
    }

    /**
     * The distance {@code expression} computes, when it is one of the functions above applied to a
     * vector column (possibly cast to {@code array(double)}) and a constant array without nulls.
     */
    static Optional<VectorDistance> match(ConnectorExpression expression, Map<String, ColumnHandle> assignments, String catalog) {
        if (!(expression instanceof Call call) || !pushable(call.getFunctionName(), catalog) || call.getArguments().size() != 2) {
            return Optional.empty();
        }
        List<ConnectorExpression> args = call.getArguments();
        boolean bits = BIT_FUNCTIONS.contains(call.getFunctionName().getName());
        for (int side = 0; side < 2; side++) {
            Optional<HyperStreamColumnHandle> sparse = bits ? Optional.empty() : sparseColumn(args.get(side), assignments);
            Optional<HyperStreamColumnHandle> column = bits ? binaryColumn(args.get(side), assignments)
                    : sparse.isPresent() ? sparse : vectorColumn(args.get(side), assignments);
            ConnectorExpression constant = args.get(1 - side);
            Optional<float[]> query = bits ? constantBits(constant) : sparse.isPresent() ? constantSparse(constant) : constantVector(constant);
            if (column.isPresent() && query.isPresent()) {
                return Optional.of(new VectorDistance(call.getFunctionName().getName(), column.get().name(), query.get()));
            }
        }
        return Optional.empty();
    }

    /** Trino's own distances, and this catalog's ({@link VectorFunctions}). */
    private static boolean pushable(FunctionName name, String catalog) {
        return name.getCatalogSchema()
                .map(schema -> schema.equals(new CatalogSchemaName(catalog, VectorFunctions.SCHEMA)) && VectorFunctions.isFunction(name.getName()))
                .orElse(TRINO_FUNCTIONS.contains(name.getName()));
    }

    private static Optional<HyperStreamColumnHandle> sparseColumn(ConnectorExpression e, Map<String, ColumnHandle> assignments) {
        if (e instanceof Variable variable && assignments.get(variable.getName()) instanceof HyperStreamColumnHandle column
                && column.ordinal() >= 0 && column.type().equals(VectorFunctions.SPARSE)) {
            return Optional.of(column);
        }
        return Optional.empty();
    }

    /**
     * A constant sparse query (position → value) as the native side takes it: (position, value)
     * pairs in position order; none when a value is null or a position is out of the native range.
     */
    private static Optional<float[]> constantSparse(ConnectorExpression e) {
        if (!(e instanceof Constant constant) || !constant.getType().equals(VectorFunctions.SPARSE_QUERY)
                || !(constant.getValue() instanceof io.trino.spi.block.SqlMap map)) {
            return Optional.empty();
        }
        VectorFunctions.SparseQuery query;
        try {
            query = VectorFunctions.SparseQuery.of(map);
        } catch (IllegalArgumentException e2) {
            return Optional.empty();
        }
        float[] pairs = new float[2 * query.positions().length];
        for (int i = 0; i < query.positions().length; i++) {
            if (query.positions()[i] < 0 || query.positions()[i] >= 1 << 24) {
                return Optional.empty();
            }
            pairs[2 * i] = query.positions()[i];
            pairs[2 * i + 1] = (float) query.values()[i];
        }
        return Optional.of(pairs);
    }

    private static Optional<HyperStreamColumnHandle> binaryColumn(ConnectorExpression e, Map<String, ColumnHandle> assignments) {
        if (e instanceof Variable variable && assignments.get(variable.getName()) instanceof HyperStreamColumnHandle column
                && column.ordinal() >= 0 && column.type() instanceof VarbinaryType) {
            return Optional.of(column);
        }
        return Optional.empty();
    }

    /** A constant varbinary as the native side takes a bit query (its bytes as numbers 0..255). */
    private static Optional<float[]> constantBits(ConnectorExpression e) {
        if (!(e instanceof Constant constant) || !(constant.getType() instanceof VarbinaryType)
                || !(constant.getValue() instanceof Slice slice) || slice.length() == 0) {
            return Optional.empty();
        }
        return Optional.of(VectorSearch.bitQuery(slice.getBytes()));
    }

    private static Optional<HyperStreamColumnHandle> vectorColumn(ConnectorExpression e, Map<String, ColumnHandle> assignments) {
        if (e instanceof Call cast && cast.getFunctionName().equals(StandardFunctions.CAST_FUNCTION_NAME)
                && cast.getArguments().size() == 1) {
            e = cast.getArguments().get(0);
        }
        if (e instanceof Variable variable && assignments.get(variable.getName()) instanceof HyperStreamColumnHandle column
                && column.ordinal() >= 0 && column.type() instanceof ArrayType array
                && (array.getElementType() instanceof RealType || array.getElementType() instanceof DoubleType)) {
            return Optional.of(column);
        }
        return Optional.empty();
    }

    private static Optional<float[]> constantVector(ConnectorExpression e) {
        if (!(e instanceof Constant constant) || !(constant.getType() instanceof ArrayType array)
                || !(constant.getValue() instanceof Block block)) {
            return Optional.empty();
        }
        Type element = array.getElementType();
        float[] query = new float[block.getPositionCount()];
        for (int i = 0; i < query.length; i++) {
            if (block.isNull(i)) {
                return Optional.empty();
            }
            if (element instanceof DoubleType) {
                query[i] = (float) DoubleType.DOUBLE.getDouble(block, i);
            } else if (element instanceof RealType) {
                query[i] = RealType.REAL.getFloat(block, i);
            } else {
                return Optional.empty();
            }
        }
        return Optional.of(query);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VectorDistance other && function.equals(other.function) && column.equals(other.column)
                && Arrays.equals(query, other.query);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * function.hashCode() + column.hashCode()) + Arrays.hashCode(query);
    }

    @Override
    public String toString() {
        String shown = query.length <= 4 ? Arrays.toString(query) : "[" + query.length + " values]";
        return function + "(" + column + ", " + shown + ")";
    }
}
