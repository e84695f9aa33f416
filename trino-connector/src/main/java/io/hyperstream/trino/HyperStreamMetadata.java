package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.named;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.CatalogRoot;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.Assignment;
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
import io.trino.spi.connector.SortOrder;
import io.trino.spi.connector.TopNApplicationResult;
import io.trino.spi.expression.Call;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.expression.Variable;
import io.trino.spi.function.BoundSignature;
import io.trino.spi.function.FunctionDependencyDeclaration;
import io.trino.spi.function.FunctionId;
import io.trino.spi.function.FunctionMetadata;
import io.trino.spi.function.SchemaFunctionName;
import io.trino.spi.predicate.Domain;
import io.trino.spi.predicate.TupleDomain;
import io.trino.spi.statistics.ComputedStatistics;
import io.trino.spi.type.DoubleType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Schemas and tables of a catalog: with {@code hyperstream.root} set, every directory under it is
 * a schema and every table directory in a schema a table (read at its current snapshot, or at
 * {@code FOR VERSION AS OF <snapshot id>} / {@code FOR TIMESTAMP AS OF <timestamp>} under that
 * snapshot's own schema); and always the schema {@code sample} with the native
 * library's generated table {@code items}. A schema directory holding an array store is a schema of arrays
 * ({@link ArrayTables}).
 */
final class HyperStreamMetadata implements ConnectorMetadata {
    static final String SAMPLE_SCHEMA = "sample";
    static final String SAMPLE_TABLE = "items";

    private final HyperStreamConfig config;
    /** The catalog's name (its own functions are called by it). */
    private final String catalogName;
    /** Staging stores of the INSERTs in flight, by query. */
    private final java.util.concurrent.ConcurrentHashMap<String, String> staging = new java.util.concurrent.ConcurrentHashMap<>();
    /** Tables a CREATE TABLE AS made and has not committed rows to yet, by query. */
    private final java.util.concurrent.ConcurrentHashMap<String, String> creating = new java.util.concurrent.ConcurrentHashMap<>();

    HyperStreamMetadata(String catalogName, HyperStreamConfig config) {
        this.catalogName = catalogName;
        this.config = config;
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
        List<String> schemas = new ArrayList<>(List.of(SAMPLE_SCHEMA));
        config.root().ifPresent(root -> root.namespaces().stream()
                .filter(name -> !name.equals(SAMPLE_SCHEMA)).forEach(schemas::add));
        return schemas;
    }

    /** A schema name the catalog refuses fails here, before Trino plans anything on it. */
    @Override
    public boolean schemaExists(ConnectorSession session, String schemaName) {
        if (schemaName.equals(SAMPLE_SCHEMA)) {
            return true;
        }
        return config.root().isPresent() && named(() -> config.root().get().namespaceExists(schemaName));
    }

    /** The schema's directory when it holds an array store: its arrays are the schema's tables. */
    private Optional<Path> arrayStore(String schema) {
        return config.schema(schema).filter(ArrayTables::isStore);
    }

    @Override
    public ConnectorTableHandle getTableHandle(ConnectorSession session, SchemaTableName name,
            Optional<ConnectorTableVersion> startVersion, Optional<ConnectorTableVersion> endVersion) {
        Optional<Path> arrays = arrayStore(name.getSchemaName());
        if (arrays.isPresent()) {
            if (startVersion.isPresent() || endVersion.isPresent()) {
                throw new TrinoException(NOT_SUPPORTED, "arrays have no versions");
            }
            return ArrayTables.names(arrays.get()).contains(name.getTableName())
                    ? new HyperStreamArrayHandle(name.getSchemaName(), name.getTableName(), arrays.get().toString()) : null;
        }
        if (!name.getSchemaName().equals(SAMPLE_SCHEMA)) {
            Optional<Path> location = config.storedTable(name);
            if (location.isEmpty()) {
                return null;
            }
            if (startVersion.isPresent()) {
                throw new TrinoException(NOT_SUPPORTED, "HyperStream tables do not support version ranges");
            }
            // FOR VERSION AS OF / FOR TIMESTAMP AS OF arrive as the end version.
            Long requested = endVersion.filter(v -> v.getPointerType() == PointerType.TARGET_ID)
                    .map(HyperStreamMetadata::snapshotId).orElse(null);
            Long asOfMillis = endVersion.filter(v -> v.getPointerType() == PointerType.TEMPORAL)
                    .map(v -> epochMillis(session, v)).orElse(null);
            return nativeCall(() -> {
                // An unknown snapshot, or a time before the first one, fails here with NOT_FOUND.
                try (NativeTable table = NativeTable.loadAt(location.get().toString(), Map.of(), requested, asOfMillis)) {
                    return HyperStreamTableHandle.stored(name, location.get().toString(), table.currentSnapshotId(),
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
        String table = name.getTableName();
        if (!table.endsWith("$snapshots") || name.getSchemaName().equals(SAMPLE_SCHEMA)) {
            return Optional.empty();
        }
        SchemaTableName base = new SchemaTableName(name.getSchemaName(), table.substring(0, table.length() - "$snapshots".length()));
        return config.storedTable(base).map(location -> new SnapshotsTable(base, location.toString()));
    }

    private static long snapshotId(ConnectorTableVersion version) {
        if (!(version.getVersion() instanceof Long id)) {
            throw new TrinoException(NOT_SUPPORTED, "HyperStream tables travel by snapshot id: FOR VERSION AS OF <bigint>");
        }
        return id;
    }

    /** FOR TIMESTAMP AS OF's point in time, in epoch milliseconds (a timestamp without zone is in the session's). */
    private static long epochMillis(ConnectorSession session, ConnectorTableVersion version) {
        Object value = version.getVersion();
        if (version.getVersionType() instanceof io.trino.spi.type.TimestampWithTimeZoneType zoned) {
            return zoned.isShort() ? io.trino.spi.type.DateTimeEncoding.unpackMillisUtc((long) value)
                    : ((io.trino.spi.type.LongTimestampWithTimeZone) value).getEpochMillis();
        }
        if (version.getVersionType() instanceof io.trino.spi.type.TimestampType local) {
            long micros = local.isShort() ? (long) value : ((io.trino.spi.type.LongTimestamp) value).getEpochMicros();
            return java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000), (int) Math.floorMod(micros, 1_000_000) * 1000,
                    java.time.ZoneOffset.UTC).atZone(session.getTimeZoneKey().getZoneId()).toInstant().toEpochMilli();
        }
        throw new TrinoException(NOT_SUPPORTED, "FOR TIMESTAMP AS OF takes a timestamp, got " + version.getVersionType());
    }

    @Override
    public ConnectorTableMetadata getTableMetadata(ConnectorSession session, ConnectorTableHandle table) {
        if (table instanceof HyperStreamArrayHandle array) {
            return new ConnectorTableMetadata(array.toSchemaTableName(),
                    ArrayTables.columns(array).stream().map(HyperStreamColumnHandle::toColumnMetadata).toList());
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        Map<String, Object> properties = new HashMap<>();
        if (handle.isStored()) {
            nativeCall(() -> {
                try (NativeTable stored = handle.openRead()) {
                    List<String> indexed = stored.scalarIndexes();
                    if (!indexed.isEmpty()) {
                        properties.put(TableCreation.INDEXED_COLUMNS, String.join(",", indexed));
                    }
                    if (!stored.partitioning().isEmpty()) {
                        properties.put(TableCreation.PARTITIONING, stored.partitioning());
                    }
                    if (!stored.sortOrder().isEmpty()) {
                        properties.put(TableCreation.SORTED_BY, stored.sortOrder());
                    }
                    if (stored.formatVersion() != 2) {
                        properties.put(TableCreation.FORMAT_VERSION, stored.formatVersion());
                    }
                    return null;
                }
            });
        }
        return new ConnectorTableMetadata(handle.toSchemaTableName(),
                columns(handle, true).stream().map(HyperStreamColumnHandle::toColumnMetadata).toList(), properties);
    }

    @Override
    public List<SchemaTableName> listTables(ConnectorSession session, Optional<String> schemaName) {
        List<SchemaTableName> tables = new ArrayList<>();
        for (String schema : schemaName.map(List::of).orElseGet(() -> listSchemaNames(session))) {
            if (schema.equals(SAMPLE_SCHEMA)) {
                tables.add(new SchemaTableName(SAMPLE_SCHEMA, SAMPLE_TABLE));
                continue;
            }
            Optional<Path> arrays = arrayStore(schema);
            if (arrays.isPresent()) {
                ArrayTables.names(arrays.get()).forEach(array -> tables.add(new SchemaTableName(schema, array)));
                continue;
            }
            config.root().ifPresent(root -> named(() -> root.tables(schema)).stream()
                    .map(table -> new SchemaTableName(schema, table))
                    .forEach(tables::add));
        }
        return tables;
    }

    @Override
    public Map<String, ColumnHandle> getColumnHandles(ConnectorSession session, ConnectorTableHandle table) {
        Map<String, ColumnHandle> handles = new LinkedHashMap<>();
        List<HyperStreamColumnHandle> columns = table instanceof HyperStreamArrayHandle array
                ? ArrayTables.columns(array) : columns((HyperStreamTableHandle) table, true);
        for (HyperStreamColumnHandle column : columns) {
            handles.put(column.name(), column);
        }
        return handles;
    }

    /**
     * Takes every domain, and every conjunct of the expression, that {@link TrinoFilters} translates
     * exactly; the native scan enforces them, so Trino keeps only the rest. Nothing is taken once a
     * top-k was pushed (the filter would then apply after it).
     */
    @Override
    public Optional<ConstraintApplicationResult<ConnectorTableHandle>> applyFilter(ConnectorSession session,
            ConnectorTableHandle table, Constraint constraint) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0) {
            return Optional.empty();
        }
        if (constraint.getSummary().isNone()) {
            if (handle.constraint().isNone()) {
                return Optional.empty();
            }
            return Optional.of(new ConstraintApplicationResult<>(handle.withConstraint(TupleDomain.none(), handle.expressions()),
                    TupleDomain.all(), constraint.getExpression(), false));
        }
        Map<HyperStreamColumnHandle, Domain> taken = new LinkedHashMap<>();
        Map<ColumnHandle, Domain> remaining = new LinkedHashMap<>();
        for (Map.Entry<ColumnHandle, Domain> entry : constraint.getSummary().getDomains().orElseThrow().entrySet()) {
            HyperStreamColumnHandle column = (HyperStreamColumnHandle) entry.getKey();
            if (TrinoFilters.supports(column, entry.getValue())) {
                taken.put(column, entry.getValue());
            } else {
                remaining.put(entry.getKey(), entry.getValue());
            }
        }
        TupleDomain<HyperStreamColumnHandle> combined = handle.constraint().intersect(TupleDomain.withColumnDomains(taken));
        // The expression's conjuncts: the translated ones join the handle's (one it enforces already is dropped).
        List<String> expressions = new ArrayList<>(handle.expressions());
        List<ConnectorExpression> kept = new ArrayList<>();
        for (ConnectorExpression conjunct : TrinoFilters.conjuncts(constraint.getExpression())) {
            String filter = TrinoFilters.toFilter(conjunct, constraint.getAssignments());
            if (filter == null) {
                kept.add(conjunct);
            } else if (!expressions.contains(filter)) {
                expressions.add(filter);
            }
        }
        if (combined.equals(handle.constraint()) && expressions.equals(handle.expressions())) {
            return Optional.empty();
        }
        HyperStreamTableHandle filtered = handle.withConstraint(combined, expressions);
        return Optional.of(new ConstraintApplicationResult<>(filtered.withPruning(pruning(filtered)),
                TupleDomain.withColumnDomains(remaining), TrinoFilters.and(kept), false));
    }

    /**
     * What each pruning level leaves out of a filtered read of a stored table (file bounds, row-group
     * statistics, scalar indexes, deletes), from the native explain: footers and indexes are read, no
     * data page.
     */
    private static String pruning(HyperStreamTableHandle handle) {
        String filter = handle.filter();
        if (filter == null) {
            return null;
        }
        return nativeCall(() -> {
            try (NativeTable table = handle.openRead()) {
                return table.explain(table.dataFiles(handle.snapshotId(), -1), filter).toString();
            }
        });
    }

    /**
     * Replaces a distance between a vector column and a constant vector ({@link VectorDistance})
     * with a column the native scan computes, so that a TopN over it can be pushed next.
     */
    @Override
    public Optional<ProjectionApplicationResult<ConnectorTableHandle>> applyProjection(ConnectorSession session,
            ConnectorTableHandle table, List<ConnectorExpression> projections, Map<String, ColumnHandle> assignments) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0) {
            return Optional.empty();
        }
        VectorDistance[] chosen = {handle.distance()};
        boolean[] replaced = {false};
        List<ConnectorExpression> rewritten = new ArrayList<>();
        for (ConnectorExpression projection : projections) {
            rewritten.add(replaceDistances(projection, assignments, catalogName, chosen, replaced));
        }
        if (!replaced[0]) {
            return Optional.empty();
        }
        HyperStreamColumnHandle distanceColumn = chosen[0].columnHandle();
        Map<String, Assignment> used = new LinkedHashMap<>();
        for (ConnectorExpression expression : rewritten) {
            collectVariables(expression, variable -> {
                ColumnHandle column = variable.getName().equals(distanceColumn.name())
                        ? distanceColumn : assignments.get(variable.getName());
                used.putIfAbsent(variable.getName(), new Assignment(variable.getName(), column, variable.getType()));
            });
        }
        return Optional.of(new ProjectionApplicationResult<>(handle.withDistance(chosen[0]), rewritten,
                List.copyOf(used.values()), false));
    }

    /** {@code expression} with every call computing the (one) pushed distance replaced by its column. */
    private static ConnectorExpression replaceDistances(ConnectorExpression expression, Map<String, ColumnHandle> assignments,
            String catalog, VectorDistance[] chosen, boolean[] replaced) {
        Optional<VectorDistance> distance = VectorDistance.match(expression, assignments, catalog);
        if (distance.isPresent() && (chosen[0] == null || chosen[0].equals(distance.get()))) {
            chosen[0] = distance.get();
            replaced[0] = true;
            return new Variable(distance.get().columnHandle().name(), DoubleType.DOUBLE);
        }
        if (expression instanceof Call call) {
            List<ConnectorExpression> args = new ArrayList<>();
            for (ConnectorExpression arg : call.getArguments()) {
                args.add(replaceDistances(arg, assignments, catalog, chosen, replaced));
            }
            return new Call(call.getType(), call.getFunctionName(), args);
        }
        return expression;
    }

    private static void collectVariables(ConnectorExpression expression, java.util.function.Consumer<Variable> out) {
        if (expression instanceof Variable variable) {
            out.accept(variable);
        }
        for (ConnectorExpression child : expression.getChildren()) {
            collectVariables(child, out);
        }
    }

    /**
     * Pushes {@code ORDER BY <distance> LIMIT k} as a native top-k: nearest first is ascending for
     * the distances and descending for {@code dot_product}, nulls last. The scan then returns exactly
     * the top k, in one split, so Trino drops its TopN.
     */
    @Override
    public Optional<TopNApplicationResult<ConnectorTableHandle>> applyTopN(ConnectorSession session,
            ConnectorTableHandle table, long topNCount, List<SortItem> sortItems, Map<String, ColumnHandle> assignments) {
        if (!(table instanceof HyperStreamTableHandle handle)) {
            return Optional.empty();
        }
        VectorDistance distance = handle.distance();
        if (distance == null || sortItems.size() != 1 || topNCount <= 0 || topNCount > io.hyperstream.jni.Limits.maxTopK()) {
            return Optional.empty();
        }
        SortItem item = sortItems.get(0);
        // Rows without a vector have a null distance: the native search puts them first or last, as the order says.
        SortOrder order = item.getSortOrder();
        if (!distance.columnHandle().equals(assignments.get(item.getName())) || order.isAscending() == distance.negated()) {
            return Optional.empty();
        }
        if (handle.topK() > 0 && handle.topK() <= topNCount) {
            return Optional.empty();
        }
        return Optional.of(new TopNApplicationResult<>(handle.withTopK(topNCount, order.isNullsFirst()), true, false));
    }

    /**
     * INSERT appends to stored tables (each writer one data file, committed as one snapshot) and to
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
                    stored.schemaName(), stored.tableName()), stored.location(), types);
        }
        HyperStreamArrayHandle array = (HyperStreamArrayHandle) table;
        HyperStreamArrayInsertHandle insert = ArrayTables.beginInsert(array, columns);
        staging.put(session.getQueryId(), insert.staging());
        return insert;
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
        String created = creating.remove(session.getQueryId());
        if (created != null) {
            deleteTree(Path.of(created));
        }
    }

    private Path schemaDirectory(String schema) {
        return config.schema(schema).orElseThrow(() -> new TrinoException(NOT_SUPPORTED,
                "this catalog has no hyperstream.root: it holds only the sample schema"));
    }

    @Override
    public void createSchema(ConnectorSession session, String schemaName, Map<String, Object> properties,
            io.trino.spi.security.TrinoPrincipal owner) {
        Path dir = schemaDirectory(schemaName);
        if (schemaName.equals(SAMPLE_SCHEMA) || Files.exists(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_ALREADY_EXISTS, "schema " + schemaName + " already exists");
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new TrinoException(HyperStreamErrorCode.HYPERSTREAM_IO_ERROR, "creating schema directory " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Without CASCADE, a schema directory that holds anything at all (a file too) is not dropped. */
    @Override
    public void dropSchema(ConnectorSession session, String schemaName, boolean cascade) {
        schemaDirectory(schemaName); // a catalog without a root has only the sample schema
        Path dir = named(() -> config.root().orElseThrow().existingNamespace(schemaName))
                .filter(d -> !schemaName.equals(SAMPLE_SCHEMA))
                .orElseThrow(() -> new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND,
                        "schema " + schemaName + " does not exist"));
        if (!cascade && !CatalogRoot.isEmpty(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_EMPTY, "schema " + schemaName + " is not empty");
        }
        deleteTree(dir);
    }

    @Override
    public void createTable(ConnectorSession session, ConnectorTableMetadata tableMetadata, io.trino.spi.connector.SaveMode saveMode) {
        String location = newTableLocation(tableMetadata.getTable());
        if (saveMode == io.trino.spi.connector.SaveMode.REPLACE && Files.isDirectory(Path.of(location, "metadata"))) {
            TableCreation.replace(location, tableMetadata);
            return;
        }
        TableCreation.create(location, tableMetadata, saveMode == io.trino.spi.connector.SaveMode.IGNORE);
    }

    @Override
    public io.trino.spi.connector.ConnectorOutputTableHandle beginCreateTable(ConnectorSession session,
            ConnectorTableMetadata tableMetadata, Optional<io.trino.spi.connector.ConnectorTableLayout> layout,
            RetryMode retryMode, boolean replace) {
        if (replace) {
            // Its rows would be committed after the replacement, not with it: refused rather than
            // leave the table emptied when the query fails.
            throw new TrinoException(NOT_SUPPORTED, "CREATE OR REPLACE TABLE ... AS SELECT is not supported yet: "
                    + "CREATE OR REPLACE TABLE, then INSERT");
        }
        String location = newTableLocation(tableMetadata.getTable());
        TableCreation.create(location, tableMetadata, false);
        creating.put(session.getQueryId(), location);
        List<io.trino.spi.type.Type> types = tableMetadata.getColumns().stream().filter(c -> !c.isHidden())
                .map(ColumnMetadata::getType).toList();
        SchemaTableName name = tableMetadata.getTable();
        return new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                name.getSchemaName(), name.getTableName()), location, types);
    }

    @Override
    public Optional<ConnectorOutputMetadata> finishCreateTable(ConnectorSession session,
            io.trino.spi.connector.ConnectorOutputTableHandle output, Collection<Slice> fragments,
            Collection<ComputedStatistics> statistics) {
        try {
            commitDataFiles(((HyperStreamTableInsertHandle) output).location(), fragments);
        } catch (TrinoException e) {
            if (e.getErrorCode().equals(HyperStreamErrorCode.HYPERSTREAM_COMMIT_STATE_UNKNOWN.toErrorCode())) {
                // The rows may be committed: the cleanup must not remove the new table with them.
                creating.remove(session.getQueryId());
            }
            throw e;
        }
        creating.remove(session.getQueryId());
        return Optional.empty();
    }

    /** Where a new table goes: its schema's directory, which must exist. */
    private String newTableLocation(SchemaTableName name) {
        Path dir = schemaDirectory(name.getSchemaName());
        if (name.getSchemaName().equals(SAMPLE_SCHEMA) || !Files.isDirectory(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND, "schema " + name.getSchemaName() + " does not exist");
        }
        if (ArrayTables.isStore(dir)) {
            throw new TrinoException(NOT_SUPPORTED, "schema " + name.getSchemaName() + " is an array store: its tables are its arrays");
        }
        return named(() -> config.root().orElseThrow().table(name.getSchemaName(), name.getTableName())).toString();
    }

    /** ALTER TABLE ADD COLUMN: a nullable column, last; rows written before read it as null. */
    @Override
    public void addColumn(ConnectorSession session, ConnectorTableHandle table, ColumnMetadata column,
            io.trino.spi.connector.ColumnPosition position) {
        if (!(position instanceof io.trino.spi.connector.ColumnPosition.Last)) {
            throw new TrinoException(NOT_SUPPORTED, "new columns of HyperStream tables go last");
        }
        org.apache.arrow.vector.types.pojo.Field field = TableCreation.field(column);
        alter(table, stored -> {
            try (BufferAllocator allocator = Allocators.child("trino-add-column")) {
                stored.addColumn(allocator, field);
            }
        });
    }

    /** ALTER TABLE DROP COLUMN: no data file is rewritten; the column's values are no longer read. */
    @Override
    public void dropColumn(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
        alter(table, stored -> stored.dropColumn(((HyperStreamColumnHandle) column).name()));
    }

    /** ALTER TABLE RENAME COLUMN: data files answer for columns by field id, so none is rewritten. */
    @Override
    public void renameColumn(ConnectorSession session, ConnectorTableHandle table, ColumnHandle source, String target) {
        alter(table, stored -> stored.renameColumn(((HyperStreamColumnHandle) source).name(), target));
    }

    /**
     * ALTER TABLE SET PROPERTIES indexed_columns = 'a,b': builds the scalar indexes the table lacks
     * (for the files already there, without rewriting them) and drops the ones no longer named.
     */
    @Override
    public void setTableProperties(ConnectorSession session, ConnectorTableHandle table, Map<String, Optional<Object>> properties) {
        for (String name : properties.keySet()) {
            if (!name.equals(TableCreation.INDEXED_COLUMNS)) {
                throw new TrinoException(NOT_SUPPORTED, "HyperStream tables can change only the table property "
                        + TableCreation.INDEXED_COLUMNS + ", not " + name);
            }
        }
        List<String> wanted = TableCreation.indexedColumns((String) properties.get(TableCreation.INDEXED_COLUMNS).orElse(null));
        alter(table, stored -> stored.setScalarIndexes(wanted));
    }

    private static void alter(ConnectorTableHandle table, java.util.function.Consumer<NativeTable> change) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "only stored HyperStream tables can be altered");
        }
        nativeCall(() -> {
            try (NativeTable stored = NativeTable.load(handle.location(), Map.of())) {
                change.accept(stored);
                return null;
            }
        });
    }

    /** The row id column a DELETE plan asks for; a delete that runs always runs natively (see below). */
    private static final HyperStreamColumnHandle MERGE_ROW_ID = new HyperStreamColumnHandle("$merge_row_id", io.trino.spi.type.BigintType.BIGINT, -2, false);

    @Override
    public io.trino.spi.connector.RowChangeParadigm getRowChangeParadigm(ConnectorSession session, ConnectorTableHandle table) {
        return io.trino.spi.connector.RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW;
    }

    @Override
    public ColumnHandle getMergeRowIdColumnHandle(ConnectorSession session, ConnectorTableHandle table) {
        return MERGE_ROW_ID;
    }

    /**
     * Reached by UPDATE and MERGE, and by a DELETE whose condition was not wholly pushed into the
     * scan: HyperStream deletes rows natively, by the pushed filter, and nothing else.
     */
    @Override
    public io.trino.spi.connector.ConnectorMergeTableHandle beginMerge(ConnectorSession session, ConnectorTableHandle table,
            Map<Integer, Collection<ColumnHandle>> updateCaseColumns, RetryMode retryMode) {
        throw new TrinoException(NOT_SUPPORTED, "HyperStream tables take DELETE only, and only with a WHERE clause the "
                + "connector evaluates natively: comparisons, ranges, IN and IS [NOT] NULL over bigint, integer, double, "
                + "real, varchar and boolean columns, combined with AND and OR (UPDATE and MERGE are not supported)");
    }

    /** DELETE with its whole condition pushed into the scan ({@link #applyFilter}) runs natively. */
    @Override
    public Optional<ConnectorTableHandle> applyDelete(ConnectorSession session, ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.distance() != null
                || handle.topK() > 0 || handle.limit() > 0) {
            return Optional.empty();
        }
        return Optional.of(handle);
    }

    /**
     * Deletes the rows the pushed filter passes as one snapshot of Iceberg position deletes (no
     * data rewritten; a data file left without rows leaves the table); returns how many.
     */
    @Override
    public java.util.OptionalLong executeDelete(ConnectorSession session, ConnectorTableHandle table) {
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        String filter = handle.filter();
        return java.util.OptionalLong.of(nativeCall(() -> {
            try (NativeTable stored = NativeTable.load(handle.location(), Map.of())) {
                return stored.deleteWhere(filter).deletedRows();
            }
        }));
    }

    /** TRUNCATE TABLE: a snapshot without rows; older snapshots keep theirs. */
    @Override
    public void truncateTable(ConnectorSession session, ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "TRUNCATE TABLE works on stored tables only");
        }
        nativeCall(() -> {
            try (NativeTable stored = NativeTable.load(handle.location(), Map.of())) {
                return stored.commitOverwrite(new String[0]);
            }
        });
    }

    /** Drops a stored table with its files, or an array of an array store. */
    @Override
    public void dropTable(ConnectorSession session, ConnectorTableHandle table) {
        if (table instanceof HyperStreamArrayHandle array) {
            nativeCall(() -> {
                try (ArrayStore store = ArrayStore.open(array.store(), false, false)) {
                    store.dropArray(array.tableName());
                    return null;
                }
            });
            return;
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        if (!handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "the sample table is generated: it cannot be dropped");
        }
        deleteTree(Path.of(handle.location()));
    }

    private static void deleteTree(Path dir) {
        nativeCall(() -> {
            io.hyperstream.jni.LocalFiles.deleteTree(dir);
            return null;
        });
    }


    private static void commitDataFiles(String location, Collection<Slice> fragments) {
        String[] files = fragments.stream().map(Slice::toStringUtf8).toArray(String[]::new);
        if (files.length > 0) {
            nativeCall(() -> {
                try (NativeTable table = NativeTable.load(location, Map.of())) {
                    return table.commitAppend(files);
                }
            });
        }
    }

    @Override
    public Optional<ConnectorOutputMetadata> finishInsert(ConnectorSession session, ConnectorInsertTableHandle insert,
            List<ConnectorTableHandle> sourceTables, Collection<Slice> fragments, Collection<ComputedStatistics> statistics) {
        if (insert instanceof HyperStreamTableInsertHandle stored) {
            commitDataFiles(stored.location(), fragments);
            return Optional.empty();
        }
        ArrayTables.finishInsert((HyperStreamArrayInsertHandle) insert, fragments);
        return Optional.empty();
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
     * A stored table's statistics for the cost-based optimizer: its rows (manifests less deleted
     * rows), and per column the estimated distinct values (merged HyperLogLog sketches kept beside the
     * data files) and the fraction of nulls (manifests). Only for the whole table: a filtered, limited
     * or top-k scan reports none, and Trino estimates those itself.
     */
    @Override
    public io.trino.spi.statistics.TableStatistics getTableStatistics(ConnectorSession session, ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.isFiltered() || handle.limit() > 0
                || handle.topK() > 0 || handle.countStar() || handle.snapshotId() < 0) {
            return io.trino.spi.statistics.TableStatistics.empty();
        }
        return nativeCall(() -> {
            try (NativeTable stored = handle.openRead()) {
                long rows = stored.rowCount(handle.snapshotId(), -1);
                Map<String, NativeTable.ColumnStatistics> byName = new java.util.HashMap<>();
                stored.columnStatistics(handle.snapshotId(), -1).forEach(c -> byName.put(c.column(), c));
                io.trino.spi.statistics.TableStatistics.Builder builder = io.trino.spi.statistics.TableStatistics.builder()
                        .setRowCount(io.trino.spi.statistics.Estimate.of(rows));
                for (HyperStreamColumnHandle column : columns(handle)) {
                    NativeTable.ColumnStatistics c = byName.get(column.name());
                    if (c == null) {
                        continue;
                    }
                    io.trino.spi.statistics.ColumnStatistics.Builder stats = io.trino.spi.statistics.ColumnStatistics.builder();
                    if (c.distinctValues() >= 0) {
                        stats.setDistinctValuesCount(io.trino.spi.statistics.Estimate.of(c.distinctValues()));
                    }
                    if (c.nulls() >= 0 && rows > 0) {
                        stats.setNullsFraction(io.trino.spi.statistics.Estimate.of(Math.min(1.0, (double) c.nulls() / rows)));
                    }
                    builder.setColumnStatistics(column, stats.build());
                }
                return builder.build();
            }
        });
    }

    /** The column a pushed COUNT(*) scan returns. */
    static final HyperStreamColumnHandle COUNT_STAR = new HyperStreamColumnHandle("_count", io.trino.spi.type.BigintType.BIGINT, -3, false);

    /**
     * A lone {@code COUNT(*)} over a stored table without a pushed filter is answered from metadata:
     * the manifests less the rows the delete files delete, no data file read.
     */
    @Override
    public Optional<io.trino.spi.connector.AggregationApplicationResult<ConnectorTableHandle>> applyAggregation(
            ConnectorSession session, ConnectorTableHandle table, List<io.trino.spi.connector.AggregateFunction> aggregates,
            Map<String, ColumnHandle> assignments, List<List<ColumnHandle>> groupingSets) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.isFiltered()
                || handle.topK() > 0 || handle.distance() != null || handle.limit() > 0 || handle.countStar()
                || !groupingSets.equals(List.of(List.of())) || aggregates.size() != 1) {
            return Optional.empty();
        }
        io.trino.spi.connector.AggregateFunction count = aggregates.get(0);
        if (!count.getFunctionName().equals("count") || !count.getArguments().isEmpty() || count.isDistinct()
                || count.getFilter().isPresent() || !count.getSortItems().isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new io.trino.spi.connector.AggregationApplicationResult<>(handle.withCountStar(),
                List.of(new Variable(COUNT_STAR.name(), COUNT_STAR.type())),
                List.of(new io.trino.spi.connector.Assignment(COUNT_STAR.name(), COUNT_STAR, COUNT_STAR.type())), Map.of(), false));
    }

    /**
     * Pushes LIMIT into stored-table scans: each split stops after the limit, and without a filter
     * only the files holding the first rows are planned. Trino keeps its own limit over the splits.
     */
    @Override
    public Optional<io.trino.spi.connector.LimitApplicationResult<ConnectorTableHandle>> applyLimit(ConnectorSession session,
            ConnectorTableHandle table, long limit) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0
                || (handle.limit() > 0 && handle.limit() <= limit) || limit > Integer.MAX_VALUE) {
            return Optional.empty();
        }
        return Optional.of(new io.trino.spi.connector.LimitApplicationResult<>(handle.withLimit(limit), false, false));
    }

    @Override
    public ColumnMetadata getColumnMetadata(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
        return ((HyperStreamColumnHandle) column).toColumnMetadata();
    }

    static List<HyperStreamColumnHandle> columns(HyperStreamTableHandle handle) {
        return columns(handle, false);
    }

    /**
     * The table's columns and, with {@code hidden}, in a format version 3 table the hidden row
     * lineage columns after them ({@code SELECT _row_id, _last_updated_sequence_number} names them;
     * {@code SELECT *} leaves them out).
     */
    static List<HyperStreamColumnHandle> columns(HyperStreamTableHandle handle, boolean hidden) {
        return nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-schema")) {
                Schema schema;
                List<String> lineage = List.of();
                if (handle.isStored()) {
                    try (NativeTable table = handle.openRead()) {
                        schema = table.schema(allocator);
                        if (hidden && table.formatVersion() >= 3) {
                            lineage = NativeTable.ROW_LINEAGE;
                        }
                    }
                } else {
                    try (SampleTable table = SampleTable.open(handle.rows(), handle.dimension(), handle.seed())) {
                        schema = table.schema(allocator);
                    }
                }
                List<HyperStreamColumnHandle> columns = new ArrayList<>();
                for (int i = 0; i < schema.getFields().size(); i++) {
                    Field field = schema.getFields().get(i);
                    columns.add(new HyperStreamColumnHandle(field.getName(), TrinoTypes.toTrinoType(field), i,
                            field.isNullable()));
                }
                for (String name : lineage) {
                    columns.add(new HyperStreamColumnHandle(name, io.trino.spi.type.BigintType.BIGINT, columns.size(), true));
                }
                return columns;
            }
        });
    }
}
