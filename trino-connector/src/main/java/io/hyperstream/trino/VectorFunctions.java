package io.hyperstream.trino;

import static io.trino.spi.StandardErrorCode.INVALID_FUNCTION_ARGUMENT;
import static io.trino.spi.function.InvocationConvention.InvocationArgumentConvention.NEVER_NULL;
import static io.trino.spi.function.InvocationConvention.InvocationReturnConvention.FAIL_ON_NULL;
import static io.trino.spi.type.DoubleType.DOUBLE;
import static io.trino.spi.type.VarbinaryType.VARBINARY;

import io.airlift.slice.Slice;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
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
import io.trino.spi.type.Type;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The distance functions Trino lacks, served by the catalog in its {@code system} schema:
 * {@code l1_distance(array(double), array(double))} (Manhattan distance), and {@code
 * hamming_distance(varbinary, varbinary)} (differing bits) and {@code jaccard_distance(varbinary,
 * varbinary)} (1 − shared set bits / bits set in either, 0 when neither has one) over bit-packed
 * vectors; each returns a double, null when an argument is null. {@code ORDER BY
 * lake.system.l1_distance(embedding, ARRAY[...]) LIMIT k} over a vector column is pushed like Trino's
 * own distances ({@link VectorDistance}).
 */
final class VectorFunctions implements FunctionProvider {
    /** The schema the functions live in (beside the {@code vector_search} table function). */
    static final String SCHEMA = "system";

    private record Function(FunctionMetadata metadata, MethodHandle handle, List<Type> arguments) {}

    private static final Map<String, Function> FUNCTIONS = Map.of(
            "l1_distance", function("l1_distance", "Manhattan distance between two vectors", "l1",
                    new ArrayType(DOUBLE), Block.class),
            "hamming_distance", function("hamming_distance", "number of bits that differ between two bit-packed vectors",
                    "hamming", VARBINARY, Slice.class),
            "jaccard_distance", function("jaccard_distance", "1 - shared set bits / bits set in either, of two bit-packed vectors",
                    "jaccard", VARBINARY, Slice.class));

    private static Function function(String name, String description, String method, Type argument, Class<?> javaType) {
        Signature signature = Signature.builder().returnType(DOUBLE).argumentType(argument).argumentType(argument).build();
        FunctionMetadata metadata = FunctionMetadata.scalarBuilder(name)
                .functionId(new FunctionId("hyperstream." + name))
                .signature(signature)
                .description(description)
                .build();
        try {
            MethodHandle handle = MethodHandles.lookup().findStatic(VectorFunctions.class, method,
                    MethodType.methodType(double.class, javaType, javaType));
            return new Function(metadata, handle, List.of(argument, argument));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every function (for {@code SHOW FUNCTIONS FROM lake.system}). */
    static Collection<FunctionMetadata> list(String schema) {
        return SCHEMA.equals(schema) ? FUNCTIONS.values().stream().map(Function::metadata).toList() : List.of();
    }

    /** The functions named {@code name}: one or none. */
    static Collection<FunctionMetadata> named(SchemaFunctionName name) {
        Function function = SCHEMA.equals(name.schemaName()) ? FUNCTIONS.get(name.functionName()) : null;
        return function == null ? List.of() : List.of(function.metadata());
    }

    static FunctionMetadata metadata(FunctionId id) {
        return find(id).metadata();
    }

    /** Whether {@code name} is one of these functions (by its name without a catalog). */
    static boolean isFunction(String name) {
        return FUNCTIONS.containsKey(name);
    }

    private static Function find(FunctionId id) {
        return FUNCTIONS.values().stream().filter(f -> f.metadata().getFunctionId().equals(id)).findFirst()
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

    static double l1(Block a, Block b) {
        double[] x = doubles(a);
        double[] y = doubles(b);
        if (x.length != y.length) {
            throw new TrinoException(INVALID_FUNCTION_ARGUMENT, "l1_distance: vectors of " + x.length + " and " + y.length + " dimensions");
        }
        double sum = 0;
        for (int i = 0; i < x.length; i++) {
            sum += Math.abs(x[i] - y[i]);
        }
        return sum;
    }

    private static double[] doubles(Block block) {
        double[] values = new double[block.getPositionCount()];
        for (int i = 0; i < values.length; i++) {
            if (block.isNull(i)) {
                throw new TrinoException(INVALID_FUNCTION_ARGUMENT, "l1_distance: the vector holds a null at position " + i);
            }
            values[i] = DOUBLE.getDouble(block, i);
        }
        return values;
    }

    static double hamming(Slice a, Slice b) {
        return bits("hamming_distance", a, b)[0];
    }

    static double jaccard(Slice a, Slice b) {
        int[] counts = bits("jaccard_distance", a, b);
        return counts[2] == 0 ? 0.0 : 1.0 - (double) counts[1] / counts[2];
    }

    /** Bits that differ, bits set in both, bits set in either. */
    private static int[] bits(String name, Slice a, Slice b) {
        if (a.length() != b.length()) {
            throw new TrinoException(INVALID_FUNCTION_ARGUMENT, name + ": bit vectors of " + a.length() + " and " + b.length() + " bytes");
        }
        int[] counts = new int[3];
        for (int i = 0; i < a.length(); i++) {
            int x = a.getByte(i) & 0xff;
            int y = b.getByte(i) & 0xff;
            counts[0] += Integer.bitCount(x ^ y);
            counts[1] += Integer.bitCount(x & y);
            counts[2] += Integer.bitCount(x | y);
        }
        return counts;
    }

    static Optional<FunctionProvider> provider() {
        return Optional.of(new VectorFunctions());
    }
}
