package io.hyperstream.trino;

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
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.FilterText;
import io.hyperstream.jni.Metrics;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.VectorSearch;
import io.trino.spi.Page;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.block.BlockBuilder;
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
import io.trino.spi.function.table.TableArgument;
import io.trino.spi.function.table.TableArgumentSpecification;
import io.trino.spi.function.table.TableFunctionAnalysis;
import io.trino.spi.function.table.TableFunctionDataProcessor;
import io.trino.spi.function.table.TableFunctionProcessorProvider;
import io.trino.spi.function.table.TableFunctionProcessorState;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.RowType;
import io.trino.spi.type.Type;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * A similarity join: for every row of a query table, the k rows of a stored table nearest its vector.
 *
 * <pre>
 * SELECT * FROM TABLE(lake.system.vector_join(
 *     input => TABLE(SELECT qid, qvec FROM queries),
 *     query_column => 'qvec',
 *     schema_name => 'db', table_name => 'items', column_name => 'embedding',
 *     k => 10, metric => 'l2', filter => 'category IN (''c3'', ''c7'')'))
 * </pre>
 *
 * The answer is every column of the searched table, then {@code _distance} (the native distance),
 * then the query's columns (passed through), each query's rows nearest first; a query whose vector
 * is null has none. {@code filter} is a WHERE clause over the searched table ({@link FilterText}).
 * The input has row semantics, so Trino spreads the queries over its workers' tasks; each page of
 * queries is answered by one native batched search ({@link NativeTable#searchMany}) over the files
 * of the snapshot planned on the coordinator, through HNSW graphs as {@code vector_search_ef} says.
 */
final class VectorJoinFunction extends AbstractConnectorTableFunction {
    private final HyperStreamConfig config;

    VectorJoinFunction(HyperStreamConfig config) {
        super("system", "vector_join", List.of(
                TableArgumentSpecification.builder().name("INPUT").rowSemantics().passThroughColumns().build(),
                ScalarArgumentSpecification.builder().name("QUERY_COLUMN").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("SCHEMA_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("TABLE_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("COLUMN_NAME").type(VARCHAR).build(),
                ScalarArgumentSpecification.builder().name("K").type(BIGINT).defaultValue(10L).build(),
                ScalarArgumentSpecification.builder().name("METRIC").type(VARCHAR).defaultValue(Slices.utf8Slice("l2")).build(),
                ScalarArgumentSpecification.builder().name("FILTER").type(VARCHAR).defaultValue(null).build()),
                ReturnTypeSpecification.GenericTable.GENERIC_TABLE);
        this.config = config;
    }

    /**
     * What each worker's processor needs: the searched table at its snapshot (none: no rows), the
     * files the filter leaves, the columns returned, the search but for its queries, and whether
     * the queries are array(real) (else array(double)).
     */
    public record Handle(@JsonProperty("table") HyperStreamTableHandle table, @JsonProperty("files") List<String> files,
            @JsonProperty("columns") List<String> columns, @JsonProperty("filter") String filter,
            @JsonProperty("column") String column, @JsonProperty("metric") String metric, @JsonProperty("k") long k,
            @JsonProperty("realQuery") boolean realQuery)
            implements ConnectorTableFunctionHandle {
        @JsonCreator
        public Handle {
            requireNonNull(table, "table is null");
            files = List.copyOf(files);
            columns = List.copyOf(columns);
        }
    }

    @Override
    public TableFunctionAnalysis analyze(ConnectorSession session, ConnectorTransactionHandle transaction,
            Map<String, Argument> arguments, ConnectorAccessControl accessControl) {
        SchemaTableName name = new SchemaTableName(VectorSearchFunction.text(arguments, "SCHEMA_NAME"), VectorSearchFunction.text(arguments, "TABLE_NAME"));
        String column = VectorSearchFunction.text(arguments, "COLUMN_NAME");
        long k = (Long) VectorSearchFunction.value(arguments, "K");
        nativeCall(() -> io.hyperstream.jni.Limits.topK("k", k));
        String metric = nativeCall(() -> Metrics.overFloats(VectorSearchFunction.text(arguments, "METRIC")));
        Object filterText = ((ScalarArgument) arguments.get("FILTER")).getValue();
        String filter = filterText == null ? null : nativeCall(() -> FilterText.parse(((Slice) filterText).toStringUtf8()));
        TableArgument input = (TableArgument) arguments.get("INPUT");
        int queryColumn = queryColumn(input, VectorSearchFunction.text(arguments, "QUERY_COLUMN"));
        boolean realQuery = ((ArrayType) input.getRowType().getFields().get(queryColumn).getType()).getElementType()
                instanceof io.trino.spi.type.RealType;

        HyperStreamTableHandle table = VectorSearchFunction.searchedTable(config, accessControl, name, column);
        List<HyperStreamColumnHandle> columns = TableDescriptions.columns(table);
        List<String> files = table.snapshotId() < 0 ? List.of() : List.of(nativeCall(() -> {
            try (NativeTable stored = table.table().open()) {
                return filter == null ? stored.dataFiles(table.version()) : stored.explainFiles(stored.dataFiles(table.version()), filter).files();
            }
        }));
        List<String> names = new ArrayList<>(columns.stream().map(HyperStreamColumnHandle::name).toList());
        List<Type> types = new ArrayList<>(columns.stream().map(HyperStreamColumnHandle::type).toList());
        names.add(VectorSearch.DISTANCE_COLUMN);
        types.add(DOUBLE);
        return TableFunctionAnalysis.builder()
                .returnedType(Descriptor.descriptor(names, types))
                .requiredColumns("INPUT", List.of(queryColumn))
                .handle(new Handle(table, files, columns.stream().map(HyperStreamColumnHandle::name).toList(), filter, column,
                        metric, k, realQuery))
                .build();
    }

    /** The position of the input's query column, which must hold arrays of numbers. */
    private static int queryColumn(TableArgument input, String name) {
        List<RowType.Field> fields = input.getRowType().getFields();
        for (int i = 0; i < fields.size(); i++) {
            if (fields.get(i).getName().filter(name::equalsIgnoreCase).isPresent()) {
                if (!(fields.get(i).getType() instanceof ArrayType array) || !(array.getElementType() instanceof io.trino.spi.type.RealType
                        || array.getElementType() == DOUBLE)) {
                    throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "query column '" + name + "' is "
                            + fields.get(i).getType() + ", not array(real) or array(double)");
                }
                return i;
            }
        }
        throw new TrinoException(HYPERSTREAM_NOT_FOUND, "query column '" + name + "' is not a column of the input; its columns: "
                + fields.stream().map(f -> f.getName().orElse("?")).toList());
    }

    /** The processors of {@code vector_join} on the workers. */
    static TableFunctionProcessorProvider processors() {
        return new TableFunctionProcessorProvider() {
            @Override
            public TableFunctionDataProcessor getDataProcessor(ConnectorSession session, ConnectorTableFunctionHandle handle) {
                long ef = session.getProperty(HyperStreamConnector.VECTOR_SEARCH_EF, Long.class);
                String backend = session.getProperty(HyperStreamConnector.VECTOR_SEARCH_BACKEND, String.class);
                return new Processor((Handle) handle, ef, backend);
            }
        };
    }

    /**
     * Answers the queries of each input page with one native batched search; an answer of several
     * native batches goes out as several pages, the input page held until the last.
     */
    private static final class Processor implements TableFunctionDataProcessor {
        private final Handle handle;
        private final VectorSearch search;
        /** Input rows before the current page: the pass-through index counts from the first. */
        private long seen;
        /** Pages of the current input page's answer not yet returned. */
        private final java.util.ArrayDeque<Page> pending = new java.util.ArrayDeque<>();
        /**
         * The searched table, opened at the first page and closed after the last (a processor Trino
         * abandons has it freed by the handle's cleaner).
         */
        private NativeTable table;

        Processor(Handle handle, long ef, String backend) {
            this.handle = handle;
            this.search = new VectorSearch(handle.column(), new float[0], handle.metric(), handle.k(), ef, backend, false);
        }

        @Override
        public TableFunctionProcessorState process(List<Optional<Page>> input) {
            if (input == null) {
                if (table != null) {
                    table.close();
                    table = null;
                }
                return TableFunctionProcessorState.Finished.FINISHED;
            }
            if (pending.isEmpty()) {
                Page page = input.get(0).orElseThrow();
                long first = seen;
                seen += page.getPositionCount();
                List<VectorSearch> searches = new ArrayList<>();
                List<Integer> rows = new ArrayList<>();
                Block queries = page.getBlock(0);
                for (int position = 0; position < page.getPositionCount(); position++) {
                    if (!queries.isNull(position)) {
                        searches.add(search.withQuery(vector(QUERY_TYPE.getObject(queries, position), handle.realQuery())));
                        rows.add(position);
                    }
                }
                if (searches.isEmpty() || handle.files().isEmpty()) {
                    return TableFunctionProcessorState.Processed.usedInput();
                }
                pending.addAll(nativeCall(() -> search(searches, rows, first)));
                if (pending.isEmpty()) {
                    return TableFunctionProcessorState.Processed.usedInput();
                }
            }
            Page next = pending.poll();
            return pending.isEmpty() ? TableFunctionProcessorState.Processed.usedInputAndProduced(next)
                    : TableFunctionProcessorState.Processed.produced(next);
        }

        private List<Page> search(List<VectorSearch> searches, List<Integer> rows, long first) {
            if (table == null) {
                table = handle.table().openRead();
            }
            try (BufferAllocator allocator = Allocators.child("trino-vector-join");
                    ArrowReader reader = table.searchMany(allocator, handle.files().toArray(String[]::new),
                            handle.columns().toArray(String[]::new), handle.filter(), searches, BATCH_ROWS)) {
                List<Page> pages = new ArrayList<>();
                while (reader.loadNextBatch()) {
                    pages.add(page(reader.getVectorSchemaRoot(), rows, first));
                }
                return pages;
            } catch (IOException e) {
                throw new TrinoException(HyperStreamErrorCode.HYPERSTREAM_IO_ERROR, "reading a similarity join's rows: " + e.getMessage(), e);
            }
        }

        /** One native batch: the table's columns and {@code _distance}, then the index of the input row each row answers. */
        private static Page page(VectorSchemaRoot found, List<Integer> rows, long first) {
            List<FieldVector> vectors = found.getFieldVectors();
            int count = found.getRowCount();
            Block[] blocks = new Block[vectors.size()];
            for (int c = 1; c < vectors.size(); c++) {
                blocks[c - 1] = ArrowBlocks.toBlock(vectors.get(c));
            }
            IntVector query = (IntVector) vectors.get(0);
            BlockBuilder index = BIGINT.createBlockBuilder(null, count);
            for (int r = 0; r < count; r++) {
                BIGINT.writeLong(index, first + rows.get(query.get(r)));
            }
            blocks[vectors.size() - 1] = index.build();
            return new Page(count, blocks);
        }

        /** A query: the elements of an array(real) or array(double) value, each a finite number. */
        private static float[] vector(Block elements, boolean real) {
            float[] vector = new float[elements.getPositionCount()];
            for (int i = 0; i < vector.length; i++) {
                double value = elements.isNull(i) ? Double.NaN
                        : real ? io.trino.spi.type.RealType.REAL.getFloat(elements, i) : DOUBLE.getDouble(elements, i);
                if (!Double.isFinite(value)) {
                    throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "a query vector holds " + (elements.isNull(i) ? "a null" : value)
                            + " at position " + (i + 1) + ": every element must be a finite number");
                }
                vector[i] = (float) value;
            }
            return vector;
        }
    }

    /** The query column's type as the processor takes its arrays apart (the elements are read as {@code realQuery} says). */
    private static final ArrayType QUERY_TYPE = new ArrayType(DOUBLE);

    /** Rows per page of the answer. */
    private static final int BATCH_ROWS = 8192;
}
