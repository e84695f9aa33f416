package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.named;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;

import io.airlift.slice.Slice;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.TableVersion;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorOutputMetadata;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.ConnectorTableVersion;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.ConstraintApplicationResult;
import io.trino.spi.connector.PointerType;
import io.trino.spi.connector.ProjectionApplicationResult;
import io.trino.spi.connector.RetryMode;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.SortItem;
import io.trino.spi.connector.TopNApplicationResult;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.function.BoundSignature;
import io.trino.spi.function.FunctionDependencyDeclaration;
import io.trino.spi.function.FunctionId;
import io.trino.spi.function.FunctionMetadata;
import io.trino.spi.function.SchemaFunctionName;
import io.trino.spi.statistics.ComputedStatistics;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Schemas and tables of a catalog: with {@code hyperstream.root} set, every directory under it is
 * a schema and every table directory in a schema a table (read at its current snapshot, or at
 * {@code FOR VERSION AS OF <snapshot id>} / {@code FOR TIMESTAMP AS OF <timestamp>} under that
 * snapshot's own schema); and always the schema {@code sample} with the native
 * library's generated table {@code items}. A schema directory holding an array store is a schema of arrays
 * ({@link ArrayTables}). Each concern has a class of its own, which the methods here call: {@link
 * Schemas}, {@link TimeTravel}, {@link TableDescriptions}, {@link Pushdowns}, {@link TableChanges}.
 */
final class HyperStreamMetadata implements ConnectorMetadata {
    static final String SAMPLE_SCHEMA = "sample";
    static final String SAMPLE_TABLE = "items";

    private final HyperStreamConfig config;
    private final Schemas schemas;
    private final Pushdowns pushdowns;
    private final TableChanges changes;
    /** Staging stores of the array INSERTs in flight, by query. */
    private final java.util.concurrent.ConcurrentHashMap<String, String> staging = new java.util.concurrent.ConcurrentHashMap<>();

    HyperStreamMetadata(String catalogName, HyperStreamConfig config) {
        this.config = config;
        this.schemas = new Schemas(config);
        this.pushdowns = new Pushdowns(catalogName);
        this.changes = new TableChanges(schemas, config);
    }

    @Override
    public Collection<FunctionMetadata> listFunctions(ConnectorSession session, String schemaName) {
        return VectorFunctions.list(schemaName);
    }

    @Override
    public Collection<FunctionMetadata> getFunctions(ConnectorSession session, SchemaFunctionName name) {
        return VectorFunctions.named(name);
    }

    @Override
    public FunctionMetadata getFunctionMetadata(ConnectorSession session, FunctionId functionId) {
        return VectorFunctions.metadata(functionId);
    }

    @Override
    public FunctionDependencyDeclaration getFunctionDependencies(ConnectorSession session, FunctionId functionId,
            BoundSignature boundSignature) {
        return FunctionDependencyDeclaration.NO_DEPENDENCIES;
    }

    @Override
    public List<String> listSchemaNames(ConnectorSession session) {
        return schemas.names();
    }

    /** A schema name the catalog refuses fails here, before Trino plans anything on it. */
    @Override
    public boolean schemaExists(ConnectorSession session, String schemaName) {
        return schemas.exists(schemaName);
    }

    @Override
    public List<SchemaTableName> listTables(ConnectorSession session, Optional<String> schemaName) {
        return schemas.tables(schemaName);
    }

    @Override
    public void createSchema(ConnectorSession session, String schemaName, Map<String, Object> properties,
            io.trino.spi.security.TrinoPrincipal owner) {
        schemas.create(schemaName);
    }

    /** Without CASCADE, a schema directory that holds anything at all (a file too) is not dropped. */
    @Override
    public void dropSchema(ConnectorSession session, String schemaName, boolean cascade) {
        schemas.drop(schemaName, cascade);
    }

    @Override
    public ConnectorTableHandle getTableHandle(ConnectorSession session, SchemaTableName name,
            Optional<ConnectorTableVersion> startVersion, Optional<ConnectorTableVersion> endVersion) {
        Optional<Path> arrays = schemas.arrayStore(name.getSchemaName());
        if (arrays.isPresent()) {
            if (startVersion.isPresent() || endVersion.isPresent()) {
                throw new TrinoException(NOT_SUPPORTED, "arrays have no versions");
            }
            return ArrayTables.names(arrays.get()).contains(name.getTableName())
                    ? new HyperStreamArrayHandle(name.getSchemaName(), name.getTableName(), arrays.get().toString()) : null;
        }
        if (!name.getSchemaName().equals(SAMPLE_SCHEMA)) {
            Optional<Catalog.TableRef> location = config.storedTable(name);
            if (location.isEmpty()) {
                return null;
            }
            if (startVersion.isPresent()) {
                throw new TrinoException(NOT_SUPPORTED, "HyperStream tables do not support version ranges");
            }
            // FOR VERSION AS OF / FOR TIMESTAMP AS OF arrive as the end version.
            Long requested = endVersion.filter(v -> v.getPointerType() == PointerType.TARGET_ID)
                    .map(TimeTravel::snapshotId).orElse(null);
            Long asOfMillis = endVersion.filter(v -> v.getPointerType() == PointerType.TEMPORAL)
                    .map(v -> TimeTravel.epochMillis(session, v)).orElse(null);
            return nativeCall(() -> {
                // An unknown snapshot, or a time before the first one, fails here with NOT_FOUND.
                try (NativeTable table = location.get().open(new TableVersion(requested, asOfMillis))) {
                    return HyperStreamTableHandle.stored(name, location.get(), table.currentSnapshotId(),
                            endVersion.isPresent());
                }
            });
        }
        if (startVersion.isPresent() || endVersion.isPresent()) {
            throw new TrinoException(NOT_SUPPORTED, "the HyperStream sample table has no versions");
        }
        if (!name.getTableName().equals(SAMPLE_TABLE)) {
            return null;
        }
        return HyperStreamTableHandle.sample(SAMPLE_SCHEMA, SAMPLE_TABLE, config.sampleRows(),
                config.sampleDimension(), config.sampleSeed());
    }

    @Override
    public Optional<io.trino.spi.connector.SystemTable> getSystemTable(ConnectorSession session, SchemaTableName name) {
        if (name.getSchemaName().equals(SAMPLE_SCHEMA)) {
            return Optional.empty();
        }
        return MetadataTable.of(name, config::storedTable);
    }

    @Override
    public ConnectorTableMetadata getTableMetadata(ConnectorSession session, ConnectorTableHandle table) {
        return TableDescriptions.metadata(table);
    }

    @Override
    public Map<String, ColumnHandle> getColumnHandles(ConnectorSession session, ConnectorTableHandle table) {
        Map<String, ColumnHandle> handles = new LinkedHashMap<>();
        List<HyperStreamColumnHandle> columns = table instanceof HyperStreamArrayHandle array
                ? ArrayTables.columns(array) : TableDescriptions.columns((HyperStreamTableHandle) table, true);
        for (HyperStreamColumnHandle column : columns) {
            handles.put(column.name(), column);
        }
        return handles;
    }

    @Override
    public ColumnMetadata getColumnMetadata(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
        return ((HyperStreamColumnHandle) column).toColumnMetadata();
    }

    @Override
    public io.trino.spi.statistics.TableStatistics getTableStatistics(ConnectorSession session, ConnectorTableHandle table) {
        return TableDescriptions.statistics(table);
    }

    @Override
    public Optional<ConstraintApplicationResult<ConnectorTableHandle>> applyFilter(ConnectorSession session,
            ConnectorTableHandle table, Constraint constraint) {
        return pushdowns.filter(table, constraint);
    }

    @Override
    public Optional<ProjectionApplicationResult<ConnectorTableHandle>> applyProjection(ConnectorSession session,
            ConnectorTableHandle table, List<ConnectorExpression> projections, Map<String, ColumnHandle> assignments) {
        return pushdowns.projection(table, projections, assignments);
    }

    @Override
    public Optional<TopNApplicationResult<ConnectorTableHandle>> applyTopN(ConnectorSession session,
            ConnectorTableHandle table, long topNCount, List<SortItem> sortItems, Map<String, ColumnHandle> assignments) {
        return Pushdowns.topN(table, topNCount, sortItems, assignments, HyperStreamConnector.searchPlan(session),
                session.getProperty(HyperStreamConnector.VECTOR_SEARCH_EF, Long.class));
    }

    @Override
    public Optional<io.trino.spi.connector.AggregationApplicationResult<ConnectorTableHandle>> applyAggregation(
            ConnectorSession session, ConnectorTableHandle table, List<io.trino.spi.connector.AggregateFunction> aggregates,
            Map<String, ColumnHandle> assignments, List<List<ColumnHandle>> groupingSets) {
        return Pushdowns.aggregation(table, aggregates, groupingSets);
    }

    @Override
    public Optional<io.trino.spi.connector.LimitApplicationResult<ConnectorTableHandle>> applyLimit(ConnectorSession session,
            ConnectorTableHandle table, long limit) {
        return Pushdowns.limit(table, limit);
    }

    /** {@code vector_search} reads as its table with the search pushed into the scan. */
    @Override
    public Optional<io.trino.spi.connector.TableFunctionApplicationResult<ConnectorTableHandle>> applyTableFunction(
            ConnectorSession session, io.trino.spi.function.table.ConnectorTableFunctionHandle handle) {
        if (!(handle instanceof VectorSearchFunction.Handle search)) {
            return Optional.empty();
        }
        return Optional.of(new io.trino.spi.connector.TableFunctionApplicationResult<>(search.table(), List.copyOf(search.columns())));
    }

    /**
     * INSERT appends to stored tables (each writer its data files, committed as one snapshot) and to
     * arrays (see {@link ArrayTables}).
     */
    @Override
    public ConnectorInsertTableHandle beginInsert(ConnectorSession session, ConnectorTableHandle table,
            List<ColumnHandle> columns, RetryMode retryMode) {
        if (table instanceof HyperStreamTableHandle stored) {
            if (!stored.isStored()) {
                throw new TrinoException(NOT_SUPPORTED, "the sample table is generated: it takes no INSERT");
            }
            List<io.trino.spi.type.Type> types = columns.stream().map(c -> ((HyperStreamColumnHandle) c).type()).toList();
            return new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                    stored.schemaName(), stored.tableName()), stored.location(), stored.storage(), types);
        }
        HyperStreamArrayHandle array = (HyperStreamArrayHandle) table;
        HyperStreamArrayInsertHandle insert = ArrayTables.beginInsert(array, columns);
        staging.put(session.getQueryId(), insert.staging());
        return insert;
    }

    @Override
    public Optional<ConnectorOutputMetadata> finishInsert(ConnectorSession session, ConnectorInsertTableHandle insert,
            List<ConnectorTableHandle> sourceTables, Collection<Slice> fragments, Collection<ComputedStatistics> statistics) {
        if (insert instanceof HyperStreamTableInsertHandle stored) {
            TableChanges.commitDataFiles(stored.target(), fragments);
            return Optional.empty();
        }
        ArrayTables.finishInsert((HyperStreamArrayInsertHandle) insert, fragments);
        return Optional.empty();
    }

    /**
     * Removes what a query's INSERT staged, whether it committed or failed, and the table a CREATE
     * TABLE AS made if the query failed before committing its rows.
     */
    @Override
    public void cleanupQuery(ConnectorSession session) {
        String staged = staging.remove(session.getQueryId());
        if (staged != null) {
            ArrayStore.discardStaging(staged);
        }
        changes.cleanup(session);
    }

    @Override
    public void createTable(ConnectorSession session, ConnectorTableMetadata tableMetadata, io.trino.spi.connector.SaveMode saveMode) {
        changes.create(tableMetadata, saveMode);
    }

    @Override
    public io.trino.spi.connector.ConnectorOutputTableHandle beginCreateTable(ConnectorSession session,
            ConnectorTableMetadata tableMetadata, Optional<io.trino.spi.connector.ConnectorTableLayout> layout,
            RetryMode retryMode, boolean replace) {
        return changes.beginCreate(session, tableMetadata, replace);
    }

    @Override
    public Optional<ConnectorOutputMetadata> finishCreateTable(ConnectorSession session,
            io.trino.spi.connector.ConnectorOutputTableHandle output, Collection<Slice> fragments,
            Collection<ComputedStatistics> statistics) {
        changes.finishCreate(session, output, fragments);
        return Optional.empty();
    }

    @Override
    public void addColumn(ConnectorSession session, ConnectorTableHandle table, ColumnMetadata column,
            io.trino.spi.connector.ColumnPosition position) {
        TableChanges.addColumn(table, column, position);
    }

    @Override
    public void dropColumn(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
        TableChanges.dropColumn(table, column);
    }

    @Override
    public void renameColumn(ConnectorSession session, ConnectorTableHandle table, ColumnHandle source, String target) {
        TableChanges.renameColumn(table, source, target);
    }

    @Override
    public void setTableProperties(ConnectorSession session, ConnectorTableHandle table, Map<String, Optional<Object>> properties) {
        TableChanges.setProperties(table, properties);
    }

    /** {@code ALTER TABLE ... EXECUTE}, which Trino has authorized for the table before this is called. */
    @Override
    public Optional<io.trino.spi.connector.ConnectorTableExecuteHandle> getTableHandleForExecute(ConnectorSession session,
            io.trino.spi.connector.ConnectorAccessControl accessControl, ConnectorTableHandle table, String procedureName,
            Map<String, Object> executeProperties, RetryMode retryMode) {
        if (!(table instanceof HyperStreamTableHandle stored)) {
            throw new TrinoException(NOT_SUPPORTED, "arrays take no table procedure");
        }
        return Optional.of(TableExecute.handle(stored, procedureName, executeProperties));
    }

    @Override
    public Map<String, Long> executeTableExecute(ConnectorSession session, io.trino.spi.connector.ConnectorTableExecuteHandle handle) {
        TableExecute.execute(config, (HyperStreamTableExecuteHandle) handle);
        return Map.of();
    }

    @Override
    public io.trino.spi.connector.RowChangeParadigm getRowChangeParadigm(ConnectorSession session, ConnectorTableHandle table) {
        return io.trino.spi.connector.RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW;
    }

    /** A row's data file and position in it: what a MERGE names the rows it deletes by (see {@link TableMerge}). */
    @Override
    public ColumnHandle getMergeRowIdColumnHandle(ConnectorSession session, ConnectorTableHandle table) {
        return keepsLineage(session, table) ? TableMerge.LINEAGE_ROW_ID : TableMerge.ROW_ID;
    }

    /** Whether the table keeps row lineage (format version 3: it has the hidden {@code _row_id}). */
    private boolean keepsLineage(ConnectorSession session, ConnectorTableHandle table) {
        return table instanceof HyperStreamTableHandle && getColumnHandles(session, table).containsKey(io.hyperstream.jni.NativeTable.ROW_ID);
    }

    /**
     * UPDATE, MERGE, and a DELETE whose condition the scan cannot answer alone (a DELETE whose
     * WHERE the connector evaluates natively runs as {@link #executeDelete} instead).
     */
    @Override
    public io.trino.spi.connector.ConnectorMergeTableHandle beginMerge(ConnectorSession session, ConnectorTableHandle table,
            Map<Integer, Collection<ColumnHandle>> updateCaseColumns, RetryMode retryMode) {
        if (!(table instanceof HyperStreamTableHandle stored)) {
            throw new TrinoException(NOT_SUPPORTED, "arrays take INSERT only");
        }
        List<io.trino.spi.type.Type> types = getColumnHandles(session, table).values().stream()
                .map(HyperStreamColumnHandle.class::cast).filter(c -> !c.toColumnMetadata().isHidden())
                .sorted(java.util.Comparator.comparingInt(HyperStreamColumnHandle::ordinal))
                .map(HyperStreamColumnHandle::type).toList();
        return TableMerge.begin(stored, types, keepsLineage(session, table));
    }

    @Override
    public void finishMerge(ConnectorSession session, io.trino.spi.connector.ConnectorMergeTableHandle merge,
            List<ConnectorTableHandle> sourceTables, Collection<Slice> fragments, Collection<ComputedStatistics> statistics) {
        TableMerge.finish((HyperStreamMergeTableHandle) merge, fragments);
    }

    @Override
    public Optional<ConnectorTableHandle> applyDelete(ConnectorSession session, ConnectorTableHandle table) {
        return Pushdowns.delete(table);
    }

    @Override
    public java.util.OptionalLong executeDelete(ConnectorSession session, ConnectorTableHandle table) {
        return TableChanges.delete(table);
    }

    @Override
    public void truncateTable(ConnectorSession session, ConnectorTableHandle table) {
        TableChanges.truncate(table);
    }

    @Override
    public void dropTable(ConnectorSession session, ConnectorTableHandle table) {
        changes.drop(table);
    }

    /** ALTER TABLE RENAME TO: through a REST catalog; a directory catalog refuses it (paths are absolute in metadata). */
    @Override
    public void renameTable(ConnectorSession session, ConnectorTableHandle table, SchemaTableName newName) {
        changes.rename(table, newName);
    }
}
