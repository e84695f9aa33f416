package io.hyperstream.trino;

import io.hyperstream.jni.VectorSearch;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorOutputTableHandle;
import io.trino.spi.connector.ConnectorPageSink;
import io.trino.spi.connector.ConnectorPageSinkId;
import io.trino.spi.connector.ConnectorPageSinkProvider;
import io.trino.spi.connector.ConnectorPageSourceProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplitManager;
import io.trino.spi.connector.ConnectorTableCredentials;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.procedure.Procedure;
import io.trino.spi.session.PropertyMetadata;
import io.trino.spi.transaction.IsolationLevel;
import io.trino.spi.type.Type;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** A HyperStream catalog. */
final class HyperStreamConnector implements Connector {
    /**
     * Session property: how a pushed top-k uses the column's HNSW index (its candidate list
     * length; -1: exact search; 0, the default: the library's choice).
     */
    static final String VECTOR_SEARCH_EF = "vector_search_ef";
    /**
     * Session property: where a vector top-k's exact comparison of a file's vectors runs (see {@link
     * VectorSearch#backend()}): auto, cpu, cuda or wgpu.
     */
    static final String VECTOR_SEARCH_BACKEND = "vector_search_backend";
    private static final List<String> BACKENDS = List.of("auto", "cpu", "cuda", "wgpu");
    /**
     * Session property: how a pushed top-k is divided among splits ({@link io.hyperstream.jni.SearchPlan}):
     * auto, single or distributed.
     */
    static final String VECTOR_SEARCH_PLAN = "vector_search_plan";
    /**
     * Session property: how long a scan's split planning waits for a join's dynamic filter (ms; 0:
     * plan at once, the filter then narrows only the rows read).
     */
    static final String DYNAMIC_FILTERING_WAIT_TIMEOUT = "dynamic_filtering_wait_timeout_ms";

    private final Set<Procedure> procedures;
    private final HyperStreamMetadata metadata;
    private final HyperStreamSplitManager splitManager;
    private final HyperStreamPageSourceProvider pageSourceProvider;

    private final Set<io.trino.spi.function.table.ConnectorTableFunction> tableFunctions;

    HyperStreamConnector(String catalogName, HyperStreamConfig config) {
        this.metadata = new HyperStreamMetadata(catalogName, config);
        this.splitManager = new HyperStreamSplitManager(config);
        this.pageSourceProvider = new HyperStreamPageSourceProvider(config);
        this.procedures = new TableProcedures(config).procedures();
        this.tableFunctions = Set.of(new VectorSearchFunction(config), new VectorJoinFunction(config));
    }

    @Override
    public Set<Procedure> getProcedures() {
        return procedures;
    }

    /** {@code ALTER TABLE ... EXECUTE}: the maintenance procedures Trino authorizes per table ({@link TableExecute}). */
    @Override
    public Set<io.trino.spi.connector.TableProcedureMetadata> getTableProcedures() {
        return TableExecute.procedures();
    }

    @Override
    public java.util.Optional<io.trino.spi.function.FunctionProvider> getFunctionProvider() {
        return VectorFunctions.provider();
    }

    @Override
    public Set<io.trino.spi.function.table.ConnectorTableFunction> getTableFunctions() {
        return tableFunctions;
    }

    @Override
    public List<PropertyMetadata<?>> getSessionProperties() {
        return List.of(PropertyMetadata.longProperty(VECTOR_SEARCH_EF,
                "HNSW candidate list length for vector top-k (-1: exact search, 0: default)", VectorSearch.EF_DEFAULT, ef -> {
                    HyperStreamErrorCode.nativeCall(() -> io.hyperstream.jni.Limits.efSearch(VECTOR_SEARCH_EF, ef));
                }, false),
                PropertyMetadata.stringProperty(VECTOR_SEARCH_BACKEND,
                        "Where vector top-k compares a file's vectors exactly: auto (a GPU when one is built in, answers and pays "
                                + "for the copy; else the CPU), cpu, cuda or wgpu", VectorSearch.AUTO, name -> {
                            if (!BACKENDS.contains(name.toLowerCase(java.util.Locale.ROOT))) {
                                throw new io.trino.spi.TrinoException(HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT,
                                        VECTOR_SEARCH_BACKEND + " must be one of " + BACKENDS + ", got '" + name + "'");
                            }
                        }, false),
                PropertyMetadata.stringProperty(VECTOR_SEARCH_PLAN,
                        "How a vector top-k is divided among splits: auto (a split per run of files of at least "
                                + io.hyperstream.jni.SearchPlan.AUTO_SPLIT_ROWS + " rows when there are two such runs, else one), "
                                + "single (one split searches every file) or distributed (a split per file)",
                        io.hyperstream.jni.SearchPlan.AUTO.value(), HyperStreamConnector::searchPlan, false),
                PropertyMetadata.longProperty(DYNAMIC_FILTERING_WAIT_TIMEOUT,
                        "How long split planning waits for a join's dynamic filter, in milliseconds", 1000L, ms -> {
                            if (ms < 0 || ms > 600_000) {
                                throw new io.trino.spi.TrinoException(HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT,
                                        DYNAMIC_FILTERING_WAIT_TIMEOUT + " must be between 0 and 600000, got " + ms);
                            }
                        }, false));
    }

    /** The {@link #VECTOR_SEARCH_PLAN} a value names; an unknown one fails as a bad argument. */
    static io.hyperstream.jni.SearchPlan searchPlan(String value) {
        try {
            return io.hyperstream.jni.SearchPlan.of(VECTOR_SEARCH_PLAN, value);
        } catch (IllegalArgumentException e) {
            throw new io.trino.spi.TrinoException(HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT, e.getMessage(), e);
        }
    }

    /** The session's {@link #VECTOR_SEARCH_PLAN}. */
    static io.hyperstream.jni.SearchPlan searchPlan(io.trino.spi.connector.ConnectorSession session) {
        return searchPlan(session.getProperty(VECTOR_SEARCH_PLAN, String.class));
    }

    @Override
    public Set<io.trino.spi.connector.ConnectorCapabilities> getCapabilities() {
        // Columns keep NOT NULL (Iceberg's required fields) and DEFAULT (format version 3 defaults).
        return Set.of(io.trino.spi.connector.ConnectorCapabilities.NOT_NULL_COLUMN_CONSTRAINT,
                io.trino.spi.connector.ConnectorCapabilities.DEFAULT_COLUMN_VALUE);
    }

    @Override
    public List<PropertyMetadata<?>> getColumnProperties() {
        return List.of(PropertyMetadata.integerProperty(TableCreation.DIMENSION,
                "CREATE TABLE: store this array(real) column as a vector of this many values", null, false));
    }

    @Override
    public List<PropertyMetadata<?>> getTableProperties() {
        return List.of(PropertyMetadata.stringProperty(TableCreation.VECTORS,
                "CREATE TABLE (AS): vector columns and their dimensions, as 'column:dimension,...'", null, false),
                PropertyMetadata.stringProperty(TableCreation.INDEXED_COLUMNS,
                        "Columns with a scalar index, as 'column,...' (CREATE TABLE, ALTER TABLE SET PROPERTIES)", null, false),
                listProperty(TableCreation.BLOOM_FILTER_COLUMNS, "CREATE TABLE: columns whose Parquet row groups get a bloom filter"),
                listProperty(TableCreation.PARTITIONING,
                        "CREATE TABLE: partition fields, as in ARRAY['category', 'bucket(id, 16)', 'day(ts)'] (also truncate, year, month, hour)"),
                listProperty(TableCreation.SORTED_BY,
                        "CREATE TABLE: the order rows are written in, as in ARRAY['id', 'ts DESC NULLS LAST']"),
                PropertyMetadata.integerProperty(TableCreation.FORMAT_VERSION,
                        "CREATE TABLE: the Iceberg format version, 2 or 3 (row lineage: hidden columns _row_id and "
                                + "_last_updated_sequence_number; deletes as deletion vectors); 2 when not given", null, false));
    }

    /** A table property holding a list of strings, as Trino's Iceberg connector declares them. */
    private static PropertyMetadata<List> listProperty(String name, String description) {
        return new PropertyMetadata<>(name, description, new io.trino.spi.type.ArrayType(io.trino.spi.type.VarcharType.VARCHAR),
                List.class, List.of(), false, value -> ((List<?>) value).stream().map(String.class::cast).toList(), value -> value);
    }

    @Override
    public ConnectorTransactionHandle beginTransaction(IsolationLevel isolationLevel, boolean readOnly, boolean autoCommit) {
        return HyperStreamTransactionHandle.INSTANCE;
    }

    @Override
    public ConnectorMetadata getMetadata(ConnectorSession session, ConnectorTransactionHandle transaction) {
        return metadata;
    }

    @Override
    public ConnectorSplitManager getSplitManager() {
        return splitManager;
    }

    @Override
    public ConnectorPageSourceProvider getPageSourceProvider() {
        return pageSourceProvider;
    }

    @Override
    public ConnectorPageSinkProvider getPageSinkProvider() {
        return new ConnectorPageSinkProvider() {
            @Override
            public ConnectorPageSink createPageSink(ConnectorTransactionHandle transaction, ConnectorSession session,
                    ConnectorOutputTableHandle output, Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
                return new TablePageSink((HyperStreamTableInsertHandle) output);
            }

            @Override
            public ConnectorPageSink createPageSink(ConnectorTransactionHandle transaction, ConnectorSession session,
                    ConnectorInsertTableHandle insert, Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
                if (insert instanceof HyperStreamTableInsertHandle table) {
                    return new TablePageSink(table);
                }
                HyperStreamArrayInsertHandle handle = (HyperStreamArrayInsertHandle) insert;
                Type type = ArrayTables.columns(handle.array()).stream().filter(c -> c.name().equals("value"))
                        .findFirst().orElseThrow().type();
                return new ArrayPageSink(handle, type, id.getId());
            }

            @Override
            public io.trino.spi.connector.ConnectorMergeSink createMergeSink(ConnectorTransactionHandle transaction,
                    ConnectorSession session, io.trino.spi.connector.ConnectorMergeTableHandle merge,
                    Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
                return new TableMerge.Sink((HyperStreamMergeTableHandle) merge);
            }
        };
    }

    @Override
    public void shutdown() {}
}
