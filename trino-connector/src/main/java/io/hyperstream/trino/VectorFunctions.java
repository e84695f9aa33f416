package io.hyperstream.trino;

import static io.trino.spi.StandardErrorCode.INVALID_FUNCTION_ARGUMENT;
import static io.trino.spi.function.InvocationConvention.InvocationArgumentConvention.NEVER_NULL;
import static io.trino.spi.function.InvocationConvention.InvocationReturnConvention.FAIL_ON_NULL;
import static io.trino.spi.type.DoubleType.DOUBLE;
import static io.trino.spi.type.IntegerType.INTEGER;
import static io.trino.spi.type.RealType.REAL;
import static io.trino.spi.type.VarbinaryType.VARBINARY;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Distances;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.block.SqlMap;
import io.trino.spi.block.SqlRow;
import io.trino.spi.function.BoundSignature;
import io.trino.spi.function.FunctionDependencies;
import io.trino.spi.function.FunctionId;
import io.trino.spi.function.FunctionMetadata;
import io.trino.spi.function.FunctionProvider;
import io.trino.spi.function.InvocationConvention;
import io.trino.spi.function.ScalarFunctionAdapter;
import io.trino.spi.function.ScalarFunctionImplementation;
import io.trino.spi.function.SchemaFunctionName;
import io.trino.spi.function.Signature;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.MapType;
import io.trino.spi.type.RowType;
import io.trino.spi.type.Type;
import io.trino.spi.type.TypeOperators;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * The distance functions Trino lacks, served by the catalog in its {@code system} schema:
 * {@code l1_distance(array(double), array(double))} (Manhattan distance); {@code
 * hamming_distance(varbinary, varbinary)} (differing bits) and {@code jaccard_distance(varbinary,
 * varbinary)} (1 − shared set bits / bits set in either, 0 when neither has one) over bit-packed
 * vectors; and over a sparse vector column ({@code row(indices array(integer), "values" array(real))}:
 * the positions, from 0 and increasing, of the non-zero elements and their values) and a sparse query
 * written as a map from position to value ({@code MAP(ARRAY[3, 7], ARRAY[0.5, -1.25])}), {@code
 * euclidean_distance}, {@code cosine_distance}, {@code dot_product} and {@code l1_distance}, as Trino's
 * own functions define them over dense vectors. Each returns a double, null when an argument is null.
 * {@code ORDER BY lake.system.l1_distance(embedding, ARRAY[...]) LIMIT k} and the others over a
 * column of their kind are pushed like Trino's own distances ({@link VectorDistance}).
 */
final class VectorFunctions implements FunctionProvider {
    /** The schema the functions live in (beside the {@code vector_search} table function). */
    static final String SCHEMA = "system";

    private static final ArrayType INTEGERS = new ArrayType(INTEGER);
    private static final ArrayType REALS = new ArrayType(REAL);

    /** A sparse vector column's type. */
    static final RowType SPARSE = RowType.from(List.of(RowType.field("indices", INTEGERS), RowType.field("values", REALS)));

    /** A sparse query: position → value. */
    static final MapType SPARSE_QUERY = new MapType(INTEGER, DOUBLE, new TypeOperators());

    private record Function(FunctionMetadata metadata, MethodHandle handle, List<Type> arguments) {}

    private static final List<Function> FUNCTIONS = List.of(
            function("l1_distance", "", "Manhattan distance between two vectors", "dense", "l1", new ArrayType(DOUBLE),
                    new ArrayType(DOUBLE), Block.class, Block.class),
            function("hamming_distance", "", "number of bits that differ between two bit-packed vectors", "bits", "hamming",
                    VARBINARY, VARBINARY, Slice.class, Slice.class),
            function("jaccard_distance", "", "1 - shared set bits / bits set in either, of two bit-packed vectors", "bits",
                    "jaccard", VARBINARY, VARBINARY, Slice.class, Slice.class),
            sparse("euclidean_distance", "Euclidean distance between a sparse vector and a sparse query", "l2"),
            sparse("cosine_distance", "cosine distance between a sparse vector and a sparse query", "cosine"),
            sparse("dot_product", "dot product of a sparse vector and a sparse query", "inner_product"),
            sparse("l1_distance", "Manhattan distance between a sparse vector and a sparse query", "l1"));

    private static Function sparse(String name, String description, String metric) {
        return function(name, ".sparse", description, "sparse", metric, SPARSE, SPARSE_QUERY, SqlRow.class, SqlMap.class);
    }

    /** {@code name}'s overload over {@code a} and {@code b}: {@code method(name, metric, a, b)}. */
    private static Function function(String name, String overload, String description, String method, String metric, Type a,
            Type b, Class<?> aJava, Class<?> bJava) {
        Signature signature = Signature.builder().returnType(DOUBLE).argumentType(a).argumentType(b).build();
        FunctionMetadata metadata = FunctionMetadata.scalarBuilder(name)
                .functionId(new FunctionId("hyperstream." + name + overload))
                .signature(signature)
                .description(description)
                .build();
        try {
            MethodHandle handle = MethodHandles.lookup().findStatic(VectorFunctions.class, method,
                    MethodType.methodType(double.class, String.class, String.class, aJava, bJava));
            return new Function(metadata, MethodHandles.insertArguments(handle, 0, name, metric), List.of(a, b));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every function (for {@code SHOW FUNCTIONS FROM lake.system}). */
    static Collection<FunctionMetadata> list(String schema) {
        return SCHEMA.equals(schema) ? FUNCTIONS.stream().map(Function::metadata).toList() : List.of();
    }

    /** The overloads named {@code name}. */
    static Collection<FunctionMetadata> named(SchemaFunctionName name) {
        return SCHEMA.equals(name.schemaName())
                ? FUNCTIONS.stream().map(Function::metadata).filter(m -> m.getCanonicalName().equals(name.functionName())).toList()
                : List.of();
    }

    static FunctionMetadata metadata(FunctionId id) {
        return find(id).metadata();
    }

    /** Whether {@code name} is one of these functions (by its name without a catalog). */
    static boolean isFunction(String name) {
        return FUNCTIONS.stream().anyMatch(f -> f.metadata().getCanonicalName().equals(name));
    }

    private static Function find(FunctionId id) {
        return FUNCTIONS.stream().filter(f -> f.metadata().getFunctionId().equals(id)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("not a HyperStream function: " + id));
    }

    @Override
    public ScalarFunctionImplementation getScalarFunctionImplementation(FunctionId functionId, BoundSignature boundSignature,
            FunctionDependencies functionDependencies, InvocationConvention invocationConvention) {
        Function function = find(functionId);
        InvocationConvention actual = InvocationConvention.simpleConvention(FAIL_ON_NULL, NEVER_NULL, NEVER_NULL);
        MethodHandle handle = ScalarFunctionAdapter.adapt(function.handle(), DOUBLE, function.arguments(), actual, invocationConvention);
        return ScalarFunctionImplementation.builder().methodHandle(handle).build();
    }

    static double dense(String name, String metric, Block a, Block b) {
        return evaluate(name, () -> Distances.dense(metric, doubles(a, DOUBLE), doubles(b, DOUBLE)));
    }

    static double bits(String name, String metric, Slice a, Slice b) {
        return evaluate(name, () -> Distances.bits(metric, a.getBytes(), b.getBytes()));
    }

    static double sparse(String name, String metric, SqlRow vector, SqlMap query) {
        return evaluate(name, () -> {
            int row = vector.getRawIndex();
            Block indices = vector.getRawFieldBlock(0);
            Block values = vector.getRawFieldBlock(1);
            if (indices.isNull(row) || values.isNull(row)) {
                throw new IllegalArgumentException("sparse vector has null indices or values");
            }
            int[] positions = ints(INTEGERS.getObject(indices, row));
            double[] numbers = doubles(REALS.getObject(values, row), REAL);
            SparseQuery q = SparseQuery.of(query);
            double distance = Distances.sparse(metric, positions, numbers, q.positions(), q.values());
            // dot_product is the dot product itself; the native metric is its negation.
            return name.equals("dot_product") ? -distance : distance;
        });
    }

    /** A sparse query's entries, in position order. */
    record SparseQuery(int[] positions, double[] values) {
        static SparseQuery of(SqlMap map) {
            int size = map.getSize();
            Integer[] order = new Integer[size];
            int[] keys = new int[size];
            double[] values = new double[size];
            for (int i = 0; i < size; i++) {
                order[i] = i;
                keys[i] = INTEGER.getInt(map.getRawKeyBlock(), map.getRawOffset() + i);
                if (map.getRawValueBlock().isNull(map.getRawOffset() + i)) {
                    throw new IllegalArgumentException("sparse query holds a null value at position " + keys[i]);
                }
                values[i] = DOUBLE.getDouble(map.getRawValueBlock(), map.getRawOffset() + i);
            }
            java.util.Arrays.sort(order, java.util.Comparator.comparingInt(i -> keys[i]));
            int[] positions = new int[size];
            double[] sorted = new double[size];
            for (int i = 0; i < size; i++) {
                positions[i] = keys[order[i]];
                sorted[i] = values[order[i]];
            }
            return new SparseQuery(positions, sorted);
        }
    }

    /** Runs a function's body, its bad input a Trino error naming the function. */
    private static double evaluate(String name, java.util.function.DoubleSupplier body) {
        try {
            return body.getAsDouble();
        } catch (IllegalArgumentException e) {
            throw new TrinoException(INVALID_FUNCTION_ARGUMENT, name + ": " + e.getMessage(), e);
        }
    }

    /** A vector's elements ({@code element} being double or real). */
    private static double[] doubles(Block block, Type element) {
        double[] values = new double[block.getPositionCount()];
        for (int i = 0; i < values.length; i++) {
            if (block.isNull(i)) {
                throw new IllegalArgumentException("the vector holds a null at position " + i);
            }
            values[i] = element == REAL ? REAL.getFloat(block, i) : DOUBLE.getDouble(block, i);
        }
        return values;
    }

    private static int[] ints(Block block) {
        int[] values = new int[block.getPositionCount()];
        for (int i = 0; i < values.length; i++) {
            if (block.isNull(i)) {
                throw new IllegalArgumentException("sparse vector indices must be non-negative and strictly increasing, not null");
            }
            values[i] = INTEGER.getInt(block, i);
        }
        return values;
    }

    /** The workers' processors of the table functions that have them ({@code vector_join}). */
    @Override
    public io.trino.spi.function.table.TableFunctionProcessorProvider getTableFunctionProcessorProvider(
            io.trino.spi.function.table.ConnectorTableFunctionHandle handle) {
        if (handle instanceof VectorJoinFunction.Handle) {
            return VectorJoinFunction.processors();
        }
        return FunctionProvider.super.getTableFunctionProcessorProvider(handle);
    }

    static Optional<FunctionProvider> provider() {
        return Optional.of(new VectorFunctions());
    }
}
