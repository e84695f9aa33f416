package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_NOT_FOUND;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.type.BigintType.BIGINT;
import static io.trino.spi.type.DoubleType.DOUBLE;
import static io.trino.spi.type.VarcharType.VARCHAR;
import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.Metrics;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorAccessControl;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.function.table.AbstractConnectorTableFunction;
import io.trino.spi.function.table.Argument;
import io.trino.spi.function.table.ConnectorTableFunctionHandle;
import io.trino.spi.function.table.Descriptor;
import io.trino.spi.function.table.ReturnTypeSpecification;
import io.trino.spi.function.table.ScalarArgument;
import io.trino.spi.function.table.ScalarArgumentSpecification;
import io.trino.spi.function.table.TableFunctionAnalysis;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code SELECT * FROM TABLE(<catalog>.system.vector_search('db', 'items', 'embedding', ARRAY[...], 10, 'l1'))}:
 * the k rows of a stored table nearest a query vector by any native metric ({@code l2}, {@code cosine},
 * {@code inner_product}, {@code l1}, including those Trino has no function for), nearest first, with
 * every column of the table and a last {@code _distance} (the native distance: for {@code inner_product}
 * the negated dot product). It reads as a table with a pushed native top-k (one split, every data file
 * searched natively, through the column's HNSW index where it has one).
 */
final class VectorSearchFunction extends AbstractConnectorTableFunction {
    private final HyperStreamConfig config;

    VectorSearchFunction(HyperStreamConfig config) {
        super("system", "vector_search", List.of(
                ScalarArgumentSpecification.builder().name("SCHEMA_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("TABLE_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("COLUMN_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("QUERY").type(new ArrayType(DOUBLE)).build(),
                ScalarArgumentSpecification.builder().name("K").type(BIGINT).defaultValue(10L).build(),
                ScalarArgumentSpecification.builder().name("METRIC").type(VARCHAR).defaultValue(Slices.utf8Slice("l2")).build()),
                ReturnTypeSpecification.GenericTable.GENERIC_TABLE);
        this.config = config;
    }

    /** What {@code applyTableFunction} turns into a table scan: the table with its top-k, and the columns it returns. */
    public record Handle(@JsonProperty("table") HyperStreamTableHandle table,
            @JsonProperty("columns") List<HyperStreamColumnHandle> columns) implements ConnectorTableFunctionHandle {
        @JsonCreator
        public Handle {
            requireNonNull(table, "table is null");
            columns = List.copyOf(columns);
        }
    }

    @Override
    public TableFunctionAnalysis analyze(ConnectorSession session, ConnectorTransactionHandle transaction,
            Map<String, Argument> arguments, ConnectorAccessControl accessControl) {
        SchemaTableName name = new SchemaTableName(text(arguments, "SCHEMA_NAME"), text(arguments, "TABLE_NAME"));
        String column = text(arguments, "COLUMN_NAME");
        long k = (Long) value(arguments, "K");
        HyperStreamErrorCode.nativeCall(() -> io.hyperstream.jni.Limits.topK("k", k));
        String metric = nativeCall(() -> Metrics.overFloats(text(arguments, "METRIC")));
        float[] query = query((Block) value(arguments, "QUERY"));
        HyperStreamTableHandle table = searchedTable(config, accessControl, name, column);
        List<HyperStreamColumnHandle> columns = new ArrayList<>(TableDescriptions.columns(table));
        VectorDistance distance = new VectorDistance(metric, column, query);
        columns.add(distance.columnHandle());
        List<String> names = new ArrayList<>(columns.stream().map(HyperStreamColumnHandle::name).toList());
        names.set(names.size() - 1, io.hyperstream.jni.VectorSearch.DISTANCE_COLUMN);
        List<Type> types = columns.stream().map(HyperStreamColumnHandle::type).toList();
        return TableFunctionAnalysis.builder()
                .returnedType(Descriptor.descriptor(names, types))
                .handle(new Handle(table.withDistance(distance).withTopK(k, false), columns))
                .build();
    }

    /**
     * The stored table {@code name} at its current snapshot, when it has a float vector column
     * {@code column} and the user may read every column of it; what a table function searching it
     * reads (every column). Trino's access control decides, as for a SELECT of those columns; a
     * table with a row filter or column mask for the user is refused by name, since the search would
     * not apply it.
     */
    static HyperStreamTableHandle searchedTable(HyperStreamConfig config, ConnectorAccessControl accessControl,
            SchemaTableName name, String column) {
        Catalog.TableRef location = config.storedTable(name)
                .orElseThrow(() -> new TrinoException(HYPERSTREAM_NOT_FOUND, "table " + name + " does not exist"));
        long snapshot = nativeCall(() -> {
            try (NativeTable table = location.open()) {
                return table.currentSnapshotId();
            }
        });
        HyperStreamTableHandle table = HyperStreamTableHandle.stored(name, location, snapshot, false);
        List<HyperStreamColumnHandle> columns = TableDescriptions.columns(table);
        accessControl.checkCanSelectFromColumns(null, name,
                columns.stream().map(HyperStreamColumnHandle::name).collect(java.util.stream.Collectors.toSet()));
        List<io.trino.spi.connector.ColumnSchema> schemas = columns.stream()
                .map(c -> io.trino.spi.connector.ColumnSchema.builder().setName(c.name()).setType(c.type()).build()).toList();
        boolean filteredOrMasked;
        try {
            filteredOrMasked = !accessControl.getRowFilters(null, name).isEmpty() || !accessControl.getColumnMasks(null, name, schemas).isEmpty();
        } catch (TrinoException e) {
            filteredOrMasked = true; // Trino's answer when a filter or mask exists that the caller cannot apply
        }
        if (filteredOrMasked) {
            io.trino.spi.security.AccessDeniedException.denySelectTable(name.toString(),
                    "it has a row filter or column mask for this user, which a table function does not apply");
        }
        HyperStreamColumnHandle vector = columns.stream().filter(c -> c.name().equals(column)).findFirst()
                .orElseThrow(() -> new TrinoException(HYPERSTREAM_NOT_FOUND, "column '" + column + "' is not in table " + name));
        if (!(vector.type() instanceof ArrayType array) || !(array.getElementType() instanceof io.trino.spi.type.RealType)) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "column '" + column + "' of " + name + " is not a vector column");
        }
        return table;
    }

    /** The value of scalar argument {@code name}, which must be given. */
    static Object value(Map<String, Argument> arguments, String name) {
        Object value = ((ScalarArgument) arguments.get(name)).getValue();
        if (value == null) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, name.toLowerCase(java.util.Locale.ROOT) + " is required");
        }
        return value;
    }

    /** The text of varchar argument {@code name}, which must be given. */
    static String text(Map<String, Argument> arguments, String name) {
        return ((Slice) value(arguments, name)).toStringUtf8();
    }

    private static float[] query(Block block) {
        float[] query = new float[block.getPositionCount()];
        for (int i = 0; i < query.length; i++) {
            double value = block.isNull(i) ? Double.NaN : DOUBLE.getDouble(block, i);
            if (!Double.isFinite(value)) {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "the query vector holds " + (block.isNull(i) ? "a null" : value)
                        + " at position " + (i + 1) + ": every element must be a finite number");
            }
            query[i] = (float) value;
        }
        return query;
    }
}
