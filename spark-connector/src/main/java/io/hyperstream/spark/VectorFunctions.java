package io.hyperstream.spark;

import io.hyperstream.jni.Distances;
import io.hyperstream.jni.Metrics;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;

/**
 * The vector distance functions, as Spark V2 functions: {@code l2_distance}, {@code cosine_distance},
 * {@code l1_distance}, {@code negative_inner_product} (smaller is nearer) and {@code inner_product}
 * (the dot product, larger is nearer), over two numeric arrays of the same length; {@code
 * hamming_distance} (differing bits) and {@code jaccard_distance} (1 − shared set bits / set bits of
 * either, 0 when neither has one) over two bit-packed binary values of the same length. Spark
 * evaluates them itself where they are not pushed (in Java, in double precision: the reference the
 * native top-k is tested against); {@code ORDER BY <function>(float vector column, <constant array>)
 * LIMIT k} over a HyperStream scan becomes a native top-k instead ({@link
 * TableScanBuilder#pushTopN}). The pgvector operators ({@link PgVectorOperators}) are
 * written as calls of these functions.
 */
final class VectorFunctions {
    private VectorFunctions() {}

    /** The catalog's distance functions; each one's native metric is {@link Metrics#of} its name. */
    static final Set<String> FUNCTIONS = Set.of("l2_distance", "cosine_distance", "l1_distance", "inner_product",
            "negative_inner_product", "hamming_distance", "jaccard_distance");

    /** The functions over bit-packed binary values rather than numeric arrays. */
    static boolean overBits(String name) {
        return name.equals("hamming_distance") || name.equals("jaccard_distance");
    }

    /**
     * Whether a value of this type is a sparse vector: a struct of {@code indices} (an int array:
     * the positions of the non-zero elements) and {@code values} (a numeric array of their values).
     */
    static boolean isSparse(DataType type) {
        return type instanceof StructType struct && struct.fields().length == 2
                && struct.fields()[0].name().equals("indices") && struct.fields()[0].dataType() instanceof ArrayType i
                && i.elementType() instanceof IntegerType
                && struct.fields()[1].name().equals("values") && struct.fields()[1].dataType() instanceof ArrayType v
                && isNumeric(v.elementType());
    }

    static boolean isDistance(String name) {
        return FUNCTIONS.contains(name);
    }

    /** Whether nearest-first is descending for this function (inner_product, the native distance negated). */
    static boolean largerIsNearer(String name) {
        return name.equals("inner_product");
    }

    static UnboundFunction unbound(String name) {
        if (!isDistance(name)) {
            throw new IllegalArgumentException("unknown HyperStream function '" + name + "'; known: " + FUNCTIONS);
        }
        return new UnboundFunction() {
            @Override
            public BoundFunction bind(StructType inputType) {
                if (inputType.fields().length != 2) {
                    throw new UnsupportedOperationException(name + " takes two arrays, got " + inputType.fields().length + " arguments");
                }
                DataType[] types = new DataType[2];
                for (int i = 0; i < 2; i++) {
                    types[i] = inputType.fields()[i].dataType();
                    if (overBits(name) && !(types[i] instanceof BinaryType)) {
                        throw new UnsupportedOperationException(name + " takes bit-packed binary values, got " + types[i].simpleString());
                    }
                    if (!overBits(name) && !isSparse(types[i]) && (!(types[i] instanceof ArrayType array) || !isNumeric(array.elementType()))) {
                        throw new UnsupportedOperationException(name + " takes numeric arrays, got " + types[i].simpleString());
                    }
                }
                if (!overBits(name) && isSparse(types[0]) != isSparse(types[1])) {
                    throw new UnsupportedOperationException(name + " compares two sparse vectors or two dense ones, got "
                            + types[0].simpleString() + " and " + types[1].simpleString());
                }
                return new Distance(name, types);
            }

            @Override
            public String description() {
                return overBits(name)
                        ? name + "(binary, binary): the " + Metrics.of(name) + " distance between two bit-packed vectors"
                        : name + "(array, array): the " + Metrics.of(name) + " distance between two vectors";
            }

            @Override
            public String name() {
                return name;
            }
        };
    }

    private static boolean isNumeric(DataType type) {
        return type instanceof FloatType || type instanceof DoubleType || type instanceof DecimalType
                || type instanceof IntegerType || type instanceof LongType;
    }

    /** The elements of a numeric array as doubles. */
    static double[] toDoubles(ArrayData array, DataType elementType) {
        double[] out = new double[array.numElements()];
        for (int i = 0; i < out.length; i++) {
            if (array.isNullAt(i)) {
                throw new IllegalArgumentException("vector holds a null at position " + i);
            }
            if (elementType instanceof FloatType) {
                out[i] = array.getFloat(i);
            } else if (elementType instanceof DoubleType) {
                out[i] = array.getDouble(i);
            } else if (elementType instanceof IntegerType) {
                out[i] = array.getInt(i);
            } else if (elementType instanceof LongType) {
                out[i] = array.getLong(i);
            } else if (elementType instanceof DecimalType d) {
                out[i] = array.getDecimal(i, d.precision(), d.scale()).toDouble();
            } else {
                throw new IllegalArgumentException("not a numeric element type: " + elementType);
            }
        }
        return out;
    }

    /** One bound distance function; null when either vector is null. */
    static final class Distance implements ScalarFunction<Double> {
        private static final long serialVersionUID = 1L;
        private final String name;
        private final DataType[] inputTypes;

        Distance(String name, DataType[] inputTypes) {
            this.name = name;
            this.inputTypes = inputTypes;
        }

        @Override
        public DataType[] inputTypes() {
            return inputTypes;
        }

        @Override
        public DataType resultType() {
            return DataTypes.DoubleType;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String canonicalName() {
            return "hyperstream." + name;
        }

        @Override
        public Double produceResult(InternalRow input) {
            if (input.isNullAt(0) || input.isNullAt(1)) {
                return null;
            }
            try {
                return evaluate(input);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(name + ": " + e.getMessage(), e);
            }
        }

        private double evaluate(InternalRow input) {
            String metric = Metrics.of(name);
            if (overBits(name)) {
                return Distances.bits(metric, input.getBinary(0), input.getBinary(1));
            }
            if (isSparse(inputTypes[0])) {
                InternalRow a = input.getStruct(0, 2);
                InternalRow b = input.getStruct(1, 2);
                return sign() * Distances.sparse(metric, positions(a), values(a, inputTypes[0]), positions(b),
                        values(b, inputTypes[1]));
            }
            return sign() * Distances.dense(metric, toDoubles(input.getArray(0), ((ArrayType) inputTypes[0]).elementType()),
                    toDoubles(input.getArray(1), ((ArrayType) inputTypes[1]).elementType()));
        }

        /** inner_product is the dot product itself; the native metric is its negation. */
        private int sign() {
            return name.equals("inner_product") ? -1 : 1;
        }
    }

    /** The positions of a sparse vector's non-zero elements. */
    private static int[] positions(InternalRow sparse) {
        ArrayData indices = sparse.getArray(0);
        for (int j = 0; j < indices.numElements(); j++) {
            if (indices.isNullAt(j)) {
                throw new IllegalArgumentException("sparse vector indices must be non-negative and strictly increasing, not null");
            }
        }
        return indices.toIntArray();
    }

    /** The values of a sparse vector of struct type {@code type}. */
    private static double[] values(InternalRow sparse, DataType type) {
        return toDoubles(sparse.getArray(1), ((ArrayType) ((StructType) type).fields()[1].dataType()).elementType());
    }

    /** The definition of every function, in double precision (the tests' reference). */
    static double distance(String name, double[] a, double[] b) {
        double native_ = Distances.dense(Metrics.of(name), a, b);
        return name.equals("inner_product") ? -native_ : native_;
    }

}
