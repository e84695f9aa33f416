package io.hyperstream.spark;

import io.hyperstream.jni.Filters;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.Metrics;
import io.hyperstream.jni.SearchPlan;
import io.hyperstream.jni.VectorSearch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.UserDefinedScalarFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownTopN;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Builds the scan of a stored table: column pruning; every predicate {@link SparkFilters} translates
 * runs in the native scan (reported as fully handled, so Spark keeps no Filter for it); and {@code
 * ORDER BY <distance>(vector column, constant array) LIMIT k} over the fully filtered scan becomes a
 * native top-k: in one split, which returns exactly the k nearest, so Spark keeps no Sort either; or,
 * where {@link SearchPlan} divides it, a split per run of files, each returning its k nearest, over
 * which Spark keeps its own top-k (a TakeOrderedAndProject of k x splits rows). A LIMIT over the fully filtered scan
 * stops each split after that many rows and, without a filter, plans only the files that hold them;
 * Spark keeps its own Limit over the splits. {@code COUNT}, {@code MIN} and {@code MAX} without a filter
 * or grouping are answered from the manifests and delete files alone where that is exact
 * ({@link MetadataAggregateScan}), so Spark aggregates nothing.
 */
final class TableScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns,
        SupportsPushDownV2Filters, SupportsPushDownTopN, SupportsPushDownLimit, SupportsPushDownAggregates {
    private final PathOptions options;
    private final StructType schema;
    private StructType readSchema;
    private final List<Predicate> pushed = new ArrayList<>();
    private final List<String> filters = new ArrayList<>();
    private VectorOption topK;
    /** How the pushed top-k is divided: {@link SearchPlan#SINGLE}, or the plan that divides it. */
    private SearchPlan searchPlan = SearchPlan.SINGLE;
    /** The data files a pushed top-k searches, once planned to choose its plan (the scan reads them). */
    private String[] searchedFiles;
    private int limit;
    private MetadataAggregateScan aggregated;

    TableScanBuilder(PathOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
        this.readSchema = schema;
        this.topK = options.read().search();
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        List<Predicate> rest = new ArrayList<>();
        for (Predicate predicate : predicates) {
            Optional<String> filter = SparkFilters.translate(predicate, tableColumns());
            if (filter.isPresent()) {
                pushed.add(predicate);
                filters.add(filter.get());
            } else {
                rest.add(predicate);
            }
        }
        return rest.toArray(Predicate[]::new);
    }

    @Override
    public Predicate[] pushedPredicates() {
        return pushed.toArray(Predicate[]::new);
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        // Columns are read whole: a struct Spark pruned to some of its fields (nested schema
        // pruning) is read with all of them, as declared, and Spark projects the fields it asked for
        // from what readSchema() says the batches hold. Only a column's own type matches its vector.
        java.util.Map<String, StructField> declared = new java.util.HashMap<>();
        for (StructField field : schema.fields()) {
            declared.put(field.name(), field);
        }
        readSchema = new StructType(Arrays.stream(requiredSchema.fields())
                .map(f -> declared.getOrDefault(f.name(), f)).toArray(StructField[]::new));
    }

    /** The table's own columns (without the {@code _distance} a search option adds). */
    private StructType tableColumns() {
        return options.read().search() == null ? schema
                : new StructType(Arrays.stream(schema.fields())
                        .filter(f -> !f.name().equals(VectorSearch.DISTANCE_COLUMN)).toArray(StructField[]::new));
    }

    @Override
    public boolean pushTopN(SortOrder[] orders, int limit) {
        if (topK != null || orders.length != 1 || limit <= 0 || limit > Limits.maxTopK()) {
            return false;
        }
        Optional<VectorOption> search = distanceOrder(orders[0], limit);
        search.ifPresent(s -> {
            topK = s;
            SearchPlan asked = options.read().searchPlan();
            if (asked != SearchPlan.SINGLE) {
                searchedFiles = searchedFiles();
                searchPlan = asked.splits(searchedFiles).length > 1 ? asked : SearchPlan.SINGLE;
            }
        });
        return search.isPresent();
    }

    /** The data files a pushed top-k searches: those whose statistics do not rule the filters out. */
    private String[] searchedFiles() {
        try (io.hyperstream.jni.NativeTable table = options.openRead()) {
            return table.dataFiles(options.read().version(), filters.isEmpty() ? null : Filters.and(filters));
        }
    }

    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        return filters.isEmpty() && topK == null && MetadataAggregateScan.of(options, tableColumns(), aggregation, false).isPresent();
    }

    /** Aggregates over the whole table that its metadata answers exactly (see {@link MetadataAggregateScan}). */
    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        if (!filters.isEmpty() || topK != null) {
            return false;
        }
        aggregated = MetadataAggregateScan.of(options, tableColumns(), aggregation, true).orElse(null);
        return aggregated != null;
    }

    @Override
    public boolean pushLimit(int limit) {
        if (topK != null || limit <= 0) {
            return false;
        }
        this.limit = limit;
        return true;
    }

    /**
     * A top-k in one split is pushed whole (the split returns exactly its rows); a divided one, and a
     * limit, only cap each split.
     */
    @Override
    public boolean isPartiallyPushed() {
        return topK == null || searchPlan != SearchPlan.SINGLE;
    }

    /**
     * The native search {@code order} asks for: nearest first, and rows without a vector (null
     * distance) last, which is also what NULLS FIRST means when the column holds no nulls (Spark's
     * default for ascending order).
     */
    private Optional<VectorOption> distanceOrder(SortOrder order, int limit) {
        if (!(order.expression() instanceof UserDefinedScalarFunc call) || !VectorFunctions.isDistance(call.name())
                || call.children().length != 2) {
            return Optional.empty();
        }
        SortDirection nearestFirst = VectorFunctions.largerIsNearer(call.name()) ? SortDirection.DESCENDING : SortDirection.ASCENDING;
        if (order.direction() != nearestFirst) {
            return Optional.empty();
        }
        boolean bits = VectorFunctions.overBits(call.name());
        for (int side = 0; side < 2; side++) {
            Optional<String> sparse = bits ? Optional.empty() : sparseColumn(call.children()[side]);
            Optional<String> column = bits ? binaryColumn(call.children()[side])
                    : sparse.isPresent() ? sparse : vectorColumn(call.children()[side]);
            Expression constant = call.children()[1 - side];
            Optional<float[]> query = bits ? constantBits(constant) : sparse.isPresent() ? constantSparse(constant) : constantVector(constant);
            // Rows without a vector have a null distance: the native search puts them where the order does.
            boolean nullsFirst = order.nullOrdering() == NullOrdering.NULLS_FIRST
                    && column.isPresent() && tableColumns().apply(column.get()).nullable();
            if (column.isPresent() && query.isPresent()) {
                return Optional.of(new VectorOption(call.name(), column.get(), query.get(),
                        Metrics.of(call.name()), limit, options.read().efSearch(), options.read().backend(), nullsFirst));
            }
        }
        return Optional.empty();
    }

    /** The table column {@code e} names, when its type is of the {@code kind} a search needs. */
    private Optional<String> column(Expression e, java.util.function.Predicate<DataType> kind) {
        if (!(e instanceof NamedReference ref) || ref.fieldNames().length != 1) {
            return Optional.empty();
        }
        for (StructField field : tableColumns().fields()) {
            if (field.name().equals(ref.fieldNames()[0]) && kind.test(field.dataType())) {
                return Optional.of(field.name());
            }
        }
        return Optional.empty();
    }

    private Optional<String> vectorColumn(Expression e) {
        return column(e, type -> type instanceof ArrayType array && array.elementType() instanceof FloatType);
    }

    private Optional<String> binaryColumn(Expression e) {
        return column(e, type -> type instanceof BinaryType);
    }

    private Optional<String> sparseColumn(Expression e) {
        return column(e, VectorFunctions::isSparse);
    }

    /** A constant sparse vector as the native side takes a sparse query: (position, value) pairs. */
    private static Optional<float[]> constantSparse(Expression e) {
        if (!(e instanceof Literal<?> literal) || !(literal.value() instanceof InternalRow row) || !VectorFunctions.isSparse(literal.dataType())
                || row.isNullAt(0) || row.isNullAt(1)) {
            return Optional.empty();
        }
        StructType type = (StructType) literal.dataType();
        ArrayData indices = row.getArray(0);
        try {
            double[] values = VectorFunctions.toDoubles(row.getArray(1), ((ArrayType) type.fields()[1].dataType()).elementType());
            if (indices.numElements() != values.length) {
                return Optional.empty();
            }
            float[] pairs = new float[2 * values.length];
            for (int i = 0; i < values.length; i++) {
                if (indices.isNullAt(i) || indices.getInt(i) < 0 || indices.getInt(i) >= 1 << 24) {
                    return Optional.empty();
                }
                pairs[2 * i] = indices.getInt(i);
                pairs[2 * i + 1] = (float) values[i];
            }
            return Optional.of(pairs);
        } catch (IllegalArgumentException nullValue) {
            return Optional.empty();
        }
    }

    /** A constant binary value as the native side takes a bit query: its bytes as numbers 0..255. */
    private static Optional<float[]> constantBits(Expression e) {
        if (!(e instanceof Literal<?> literal) || !(literal.value() instanceof byte[] bytes) || bytes.length == 0) {
            return Optional.empty();
        }
        return Optional.of(VectorSearch.bitQuery(bytes));
    }

    private static Optional<float[]> constantVector(Expression e) {
        if (!(e instanceof Literal<?> literal) || !(literal.value() instanceof ArrayData array)
                || !(literal.dataType() instanceof ArrayType type)) {
            return Optional.empty();
        }
        try {
            double[] values = VectorFunctions.toDoubles(array, type.elementType());
            float[] query = new float[values.length];
            for (int i = 0; i < values.length; i++) {
                query[i] = (float) values[i];
            }
            return Optional.of(query);
        } catch (IllegalArgumentException nullOrNonNumeric) {
            return Optional.empty();
        }
    }

    /** The native filter of every predicate pushed so far; null for none. */
    String pushedFilter() {
        return filters.isEmpty() ? null : Filters.and(filters);
    }

    @Override
    public Scan build() {
        if (aggregated != null) {
            return aggregated;
        }
        String filter = pushedFilter();
        return new TableScan(options, tableColumns(), readSchema, filter, topK, searchPlan, limit, searchedFiles);
    }
}
