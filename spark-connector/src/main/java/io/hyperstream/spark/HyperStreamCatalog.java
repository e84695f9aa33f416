package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.CatalogRoot;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.NotFoundException;
import io.hyperstream.jni.RestCatalog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The HyperStream catalog. It always holds the vector distance functions ({@link VectorFunctions}):
 * with {@code spark.sql.catalog.hyperstream=io.hyperstream.spark.HyperStreamCatalog}, SQL calls
 * {@code hyperstream.cosine_distance(embedding, array(...))} and DataFrames {@code
 * call_function("hyperstream.cosine_distance", ...)}; being V2 functions, they reach a HyperStream
 * scan as expressions it can push down ({@code ORDER BY ... LIMIT k} as a native top-k).
 *
 * <p>With {@code spark.sql.catalog.<name>.root=<directory>} it is also a catalog of stored tables:
 * each directory under the root is a namespace and each table directory in it a table, so that
 * {@code CREATE NAMESPACE}, {@code CREATE TABLE ... USING hyperstream} (vector columns by the table
 * property {@code vector.<column>.dimension}), CTAS, {@code INSERT INTO}, {@code SELECT ... VERSION AS
 * OF <snapshot id>} / {@code TIMESTAMP AS OF}, {@code DESCRIBE}, {@code SHOW TABLES} and {@code DROP
 * TABLE} work in SQL. Every namespace and table name is checked by {@link CatalogRoot} before it
 * becomes a path; a refused one fails as Spark's own error for a bad name and changes nothing.
 *
 * <p>With {@code type=rest} and {@code uri} (and {@code warehouse}, {@code credential} or {@code token},
 * {@code prefix}: the names Iceberg's own Spark catalog takes, so a catalog definition switches over by
 * its class), namespaces and tables are an Iceberg REST catalog's ({@link RestCatalog}): tables are
 * created, committed, renamed and dropped through it, at the locations it gives.
 */
public final class HyperStreamCatalog implements FunctionCatalog, StagingTableCatalog, SupportsNamespaces,
        org.apache.spark.sql.connector.catalog.ProcedureCatalog {
    private String name = "hyperstream";
    /** Where the tables are: a directory ({@code root}) or a REST catalog ({@code type=rest}); null: functions only. */
    private Catalog tables;

    /**
     * {@code root=<directory>}: the directory catalog; {@code type=rest} with {@code uri}, {@code warehouse},
     * {@code credential} or {@code token}, {@code prefix}, {@code oauth2-server-uri}, {@code scope} (the names
     * Iceberg's own Spark catalog takes): an Iceberg REST catalog; {@code storage.<key>}: object-store options
     * for its tables beside the ones the catalog gives.
     */
    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        String type = options.getOrDefault("type", "").trim().toLowerCase(Locale.ROOT);
        String dir = options.get("root");
        if (type.equals("rest")) {
            Map<String, String> settings = new HashMap<>();
            Map<String, String> storage = new HashMap<>();
            options.asCaseSensitiveMap().forEach((key, value) -> {
                String k = key.toLowerCase(Locale.ROOT);
                if (RestCatalog.SETTINGS.contains(k)) {
                    settings.put(k, value);
                } else if (k.startsWith("storage.")) {
                    storage.put(key.substring("storage.".length()), value);
                }
            });
            this.tables = new RestCatalog(name, settings, storage);
        } else if (type.isEmpty() || type.equals("hadoop") || type.equals("filesystem")) {
            this.tables = dir == null || dir.isBlank() ? null : new CatalogRoot(Path.of(dir));
        } else {
            throw new IllegalArgumentException("catalog " + name + ": type must be 'rest' (an Iceberg REST catalog) or "
                    + "left out (a directory catalog under root), got '" + options.get("type") + "'");
        }
    }

    /** Column defaults: ALTER TABLE ... ADD COLUMN ... DEFAULT, and Spark fills them into INSERT, UPDATE and MERGE. */
    @Override
    public java.util.Set<org.apache.spark.sql.connector.catalog.TableCatalogCapability> capabilities() {
        return java.util.Set.of(org.apache.spark.sql.connector.catalog.TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        return VectorFunctions.FUNCTIONS.stream().sorted()
                .map(f -> Identifier.of(namespace, f)).toArray(Identifier[]::new);
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        String function = ident.name().toLowerCase(Locale.ROOT);
        if (!VectorFunctions.isDistance(function)) {
            throw new NoSuchFunctionException(ident);
        }
        return VectorFunctions.unbound(function);
    }

    // ---- namespaces

    private Catalog tables() {
        if (tables == null) {
            throw new UnsupportedOperationException("catalog " + name + " has no tables: set spark.sql.catalog." + name
                    + ".root to a directory, or spark.sql.catalog." + name + ".type=rest and .uri to an Iceberg REST catalog");
        }
        return tables;
    }

    /**
     * Runs {@code resolve} on a name the catalog checks (a directory catalog turns names into paths);
     * a refused name fails as Spark's own error for a bad table or namespace name, the reason attached.
     */
    private static <T> T checked(String name, Supplier<T> resolve) {
        try {
            return resolve.get();
        } catch (InvalidArgumentException refused) {
            Throwable error;
            try {
                error = QueryCompilationErrors.invalidNameForTableOrDatabaseError(name);
            } catch (Exception unparsable) { // an AnalysisException, which Scala throws unchecked
                // Spark 4 reads the name as a dotted identifier for its message; quoted, ".." is one part.
                error = QueryCompilationErrors.invalidNameForTableOrDatabaseError("`" + name.replace("`", "``") + "`");
            }
            error.addSuppressed(refused);
            throw HyperStreamCatalog.<RuntimeException>rethrow(error);
        }
    }

    /** Throws {@code error} as it is: Spark's AnalysisException is checked in Java, as Scala code never declares it. */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E rethrow(Throwable error) throws E {
        throw (E) error;
    }

    /** The namespace's one part, when it exists. */
    private String existingNamespace(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1 || tables == null || !checked(namespace[0], () -> tables.namespaceExists(namespace[0]))) {
            throw new NoSuchNamespaceException(namespace);
        }
        return namespace[0];
    }

    @Override
    public String[][] listNamespaces() {
        return tables == null ? new String[0][] : tables.namespaces().stream().map(n -> new String[] {n}).toArray(String[][]::new);
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return listNamespaces();
        }
        existingNamespace(namespace);
        return new String[0][];
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        return tables.namespaceProperties(existingNamespace(namespace));
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
        if (namespace.length != 1) {
            throw new IllegalArgumentException("HyperStream namespaces are one level deep, got " + String.join(".", namespace));
        }
        if (!checked(namespace[0], () -> tables().createNamespace(namespace[0], metadata))) {
            throw new NamespaceAlreadyExistsException(namespace);
        }
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) {
        throw new UnsupportedOperationException("HyperStream namespaces have no properties to alter");
    }

    /** Without CASCADE, a namespace that holds anything at all (a file of a directory catalog too) is not dropped. */
    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade) throws NoSuchNamespaceException, NonEmptyNamespaceException {
        String found = existingNamespace(namespace);
        // A REST catalog's namespace goes only when it is empty, as Iceberg's catalogs drop them
        // (CASCADE would purge tables the catalog owns).
        if ((!cascade || tables instanceof RestCatalog) && !tables.namespaceIsEmpty(found)) {
            throw new NonEmptyNamespaceException(namespace);
        }
        return tables.dropNamespace(found);
    }

    // ---- tables

    /** The table when the identifier names one of this catalog's. */
    private Optional<Catalog.TableRef> table(Identifier ident) {
        if (tables == null || ident.namespace().length != 1) {
            return Optional.empty();
        }
        return checked(ident.namespace()[0] + "." + ident.name(), () -> tables.tableRef(ident.namespace()[0], ident.name()));
    }

    /**
     * {@code CALL lake.system.<name>(...)} (Spark 4): table maintenance, see {@link SparkProcedures}.
     * Spark 3.5 never calls it (it has no CALL).
     */
    @Override
    public org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure loadProcedure(Identifier ident) {
        return SparkProcedures.load(ident, this::openTable);
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        return SparkProcedures.NAMES.stream().map(name -> Identifier.of(new String[] {"system"}, name)).toArray(Identifier[]::new);
    }

    /** A table of the catalog by its {@code 'db.t'} name, opened. */
    private NativeTable openTable(String name) {
        String[] parts = name.split("\\.");
        if (parts.length != 2) {
            throw new IllegalArgumentException("a table is named 'db.t', not '" + name + "'");
        }
        Catalog.TableRef ref = table(Identifier.of(new String[] {parts[0]}, parts[1]))
                .orElseThrow(() -> new IllegalArgumentException("table " + name + " does not exist in catalog " + name()));
        return NativeTable.load(ref.location(), ref.options());
    }

    /** {@code db.t.files}: the metadata table {@code files} of table {@code db.t}, when there is one. */
    private Optional<Table> metadataTable(Identifier ident) {
        String[] namespace = ident.namespace();
        if (namespace.length != 2 || !NativeTable.METADATA_TABLES.contains(ident.name())) {
            return Optional.empty();
        }
        return table(Identifier.of(new String[] {namespace[0]}, namespace[1]))
                .map(ref -> new MetadataTable(pathOptions(ref, Map.of()), ident.name()));
    }

    /** The path options of a table the catalog gave. */
    private static PathOptions pathOptions(Catalog.TableRef ref, Map<String, String> travel) {
        Map<String, String> options = new HashMap<>(travel);
        options.put("path", ref.location());
        ref.options().forEach((key, value) -> options.put("storage." + key, value));
        return PathOptions.from(options);
    }

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        String found = existingNamespace(namespace);
        return tables.tables(found).stream().map(t -> Identifier.of(namespace, t)).toArray(Identifier[]::new);
    }

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        return load(ident, Map.of());
    }

    /** {@code VERSION AS OF <snapshot id>}. */
    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        return load(ident, Map.of("snapshot-id", version));
    }

    /** {@code TIMESTAMP AS OF}: Spark gives microseconds since the epoch. */
    @Override
    public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
        return load(ident, Map.of("as-of-timestamp", Long.toString(Math.floorDiv(timestampMicros, 1000))));
    }

    private Table load(Identifier ident, Map<String, String> travel) throws NoSuchTableException {
        Optional<Table> metadata = metadataTable(ident);
        if (metadata.isPresent() && travel.isEmpty()) {
            return metadata.get();
        }
        Catalog.TableRef ref = table(ident).orElseThrow(() -> new NoSuchTableException(ident));
        PathOptions path = pathOptions(ref, travel);
        try (NativeTable latest = NativeTable.load(path.path(), path.storage())) {
            // The table exists; a version of it that does not fails below, by name.
        } catch (NotFoundException missing) {
            throw new NoSuchTableException(ident);
        }
        // A time-travel read has the schema of the snapshot it reads.
        try (BufferAllocator allocator = Allocators.child("spark-catalog"); NativeTable table = path.openRead()) {
            return new HyperStreamPathTable(path, SparkTypes.toStructType(table.schema(allocator)));
        }
    }

    /**
     * What CREATE TABLE (and a replacement) declares, as the library takes it: the Arrow schema with
     * its vector columns ({@code vector.<column>.dimension}), the properties the table keeps (its own
     * {@code hyperstream.*} settings, Iceberg's write settings, the format version, the partitioning),
     * and the vector indexes to build once it holds rows.
     */
    record Definition(org.apache.arrow.vector.types.pojo.Schema schema, Map<String, String> kept, Map<String, String> vectorIndexes) {}

    /** The properties Spark passes that describe the statement rather than the table. */
    private static final java.util.Set<String> SPARK_RESERVED = java.util.Set.of(TableCatalog.PROP_PROVIDER,
            TableCatalog.PROP_LOCATION, TableCatalog.PROP_EXTERNAL, TableCatalog.PROP_IS_MANAGED_LOCATION);

    static Definition definition(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
        for (StructField field : schema.fields()) {
            if (field.metadata().contains(SparkTypes.CURRENT_DEFAULT)) {
                throw new UnsupportedOperationException("column '" + field.name() + "' of " + ident + " has a DEFAULT: a new table takes "
                        + "column defaults by ALTER TABLE ... ADD COLUMN ... DEFAULT (format version 3), not yet in CREATE TABLE");
            }
        }
        Map<String, Integer> vectors = new HashMap<>();
        Map<String, String> kept = new HashMap<>();
        Map<String, String> vectorIndexes = new HashMap<>();
        for (Map.Entry<String, String> p : properties.entrySet()) {
            String key = p.getKey();
            if (SPARK_RESERVED.contains(key) || key.startsWith(TableCatalog.OPTION_PREFIX)) {
                continue; // Spark's own (the provider, LOCATION, OPTIONS), not the table's
            }
            if (PathOptions.indexedColumn(key) != null) {
                vectorIndexes.put(PathOptions.indexedColumn(key), HyperStreamWrite.checkedIndex("table property '" + key + "'", p.getValue()));
                continue;
            }
            if (!(key.startsWith("vector.") && key.endsWith(".dimension"))) {
                // Every other property is the table's, as Iceberg keeps them: its own settings
                // (hyperstream.write.row-group-rows), Iceberg's (write.parquet.*, format-version,
                // write.merge.isolation-level, ...) and the user's; the library refuses reserved ones.
                kept.put(key, p.getValue());
                continue;
            }
            String column = key.substring("vector.".length(), key.length() - ".dimension".length());
            try {
                vectors.put(column, Limits.dimension("table property '" + key + "'", Long.parseLong(p.getValue().trim())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("table property '" + key + "' must be an integer, got '" + p.getValue() + "'", e);
            }
        }
        if (partitions.length > 0) {
            if (kept.containsKey(NativeTable.PARTITIONING)) {
                throw new IllegalArgumentException("give the partitioning of " + ident + " once: PARTITIONED BY or "
                        + NativeTable.PARTITIONING + ", not both");
            }
            kept.put(NativeTable.PARTITIONING, HyperStreamPathTable.partitioning(partitions));
        }
        return new Definition(SparkTypes.toArrowSchema(schema, vectors), kept, vectorIndexes);
    }

    @Override
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        String namespace = existingNamespace(ident.namespace());
        Catalog.TableRef target = checked(namespace + "." + ident.name(), () -> tables.newTable(namespace, ident.name()))
                .orElseThrow(() -> new TableAlreadyExistsException(ident));
        Definition definition = definition(ident, schema, partitions, properties);
        checkLocation(ident, target, properties.get(TableCatalog.PROP_LOCATION));
        try (BufferAllocator allocator = Allocators.child("spark-create");
                NativeTable table = NativeTable.create(target.location(), definition.schema(), definition.kept(),
                        target.options(), allocator)) {
            definition.vectorIndexes().forEach((column, index) -> HyperStreamWrite.applyVectorIndex(table, column, index));
            Catalog.TableRef created = tables.tableRef(namespace, ident.name()).orElseThrow(() -> new NoSuchTableException(ident));
            return new HyperStreamPathTable(pathOptions(created, Map.of()), SparkTypes.toStructType(table.schema(allocator)));
        } catch (NoSuchTableException dropped) {
            throw new IllegalStateException("table " + ident + " was dropped while it was created", dropped);
        }
    }

    /**
     * A directory catalog keeps each table at {@code <root>/<namespace>/<table>}: a LOCATION is
     * honoured when it names that place and refused by name otherwise (a table elsewhere could not be
     * found by its name). A REST catalog takes the location it is given.
     */
    private void checkLocation(Identifier ident, Catalog.TableRef target, String location) {
        if (location == null || !(tables instanceof CatalogRoot)) {
            return;
        }
        String asked = location.replaceFirst("^file:(//)?", "").replaceAll("/+$", "");
        if (!Path.of(asked).toAbsolutePath().normalize().equals(Path.of(target.location()).toAbsolutePath().normalize())) {
            throw new IllegalArgumentException("LOCATION '" + location + "' of " + ident + ": this catalog keeps the table at "
                    + target.location() + "; give no LOCATION, or that one");
        }
    }

    /**
     * CREATE TABLE ... AS SELECT: the table is created at once and dropped again when the write
     * fails (nothing is left).
     */
    @Override
    public StagedTable stageCreate(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        HyperStreamPathTable created = (HyperStreamPathTable) createTable(ident, schema, partitions, properties);
        return new StagedReplace.Created(created, () -> purgeTable(ident));
    }

    /**
     * REPLACE TABLE [AS SELECT]: atomic, in a directory catalog and a REST catalog alike. Nothing of
     * the table changes until the write commits; its rows are written into a staging table with the
     * new definition, then definition and rows become one new snapshot of the same table (its
     * history kept; a REST catalog's through one commit of the catalog). A failed write leaves the
     * table as it was.
     */
    @Override
    public StagedTable stageReplace(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws NoSuchNamespaceException, NoSuchTableException {
        Catalog.TableRef ref = table(ident).orElseThrow(() -> new NoSuchTableException(ident));
        return stagedReplace(ident, ref, schema, partitions, properties);
    }

    /** CREATE OR REPLACE TABLE [AS SELECT]: {@link #stageReplace} for a table there is, else {@link #stageCreate}. */
    @Override
    public StagedTable stageCreateOrReplace(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws NoSuchNamespaceException {
        Optional<Catalog.TableRef> ref = table(ident);
        if (ref.isPresent()) {
            return stagedReplace(ident, ref.get(), schema, partitions, properties);
        }
        try {
            return stageCreate(ident, schema, partitions, properties);
        } catch (TableAlreadyExistsException raced) {
            return stagedReplace(ident, table(ident).orElseThrow(() -> new IllegalStateException(
                    "table " + ident + " was created and dropped while it was replaced")), schema, partitions, properties);
        }
    }

    private StagedTable stagedReplace(Identifier ident, Catalog.TableRef ref, StructType schema, Transform[] partitions,
            Map<String, String> properties) throws NoSuchNamespaceException {
        Definition definition = definition(ident, schema, partitions, properties);
        try (BufferAllocator allocator = Allocators.child("spark-stage");
                NativeTable table = NativeTable.load(ref.location(), ref.options())) {
            String staging = table.stageReplace(allocator, definition.schema(), definition.kept());
            // The staging table is opened with the table's storage options alone: no catalog knows it.
            Map<String, String> storage = table.storageOptions();
            Map<String, String> options = new HashMap<>();
            options.put("path", staging);
            storage.forEach((key, value) -> options.put("storage." + key, value));
            try (NativeTable staged = NativeTable.load(staging, storage)) {
                return new StagedReplace(ident.toString(), ref, staging, PathOptions.from(options), definition,
                        SparkTypes.toStructType(staged.schema(allocator)));
            }
        }
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        Catalog.TableRef ref = table(ident).orElseThrow(() -> new NoSuchTableException(ident));
        // Every change is checked before the first is committed (each commits on its own).
        List<java.util.function.Consumer<NativeTable>> steps = new ArrayList<>();
        try (BufferAllocator allocator = Allocators.child("spark-alter")) {
            for (TableChange change : changes) {
                steps.add(step(ident, change, allocator));
            }
            try (NativeTable table = NativeTable.load(ref.location(), ref.options())) {
                for (java.util.function.Consumer<NativeTable> step : steps) {
                    step.accept(table);
                }
            }
        }
        return loadTable(ident);
    }

    /** One ALTER TABLE change as a native schema change: ADD COLUMNS, DROP COLUMN, RENAME COLUMN. */
    private static java.util.function.Consumer<NativeTable> step(Identifier ident, TableChange change, BufferAllocator allocator) {
        if (change instanceof TableChange.AddColumn add) {
            String name = topLevel(ident, add.fieldNames());
            if (add.position() != null) {
                throw new UnsupportedOperationException("new columns of " + ident + " go last: drop FIRST / AFTER");
            }
            StructType column = new StructType(new StructField[] {new StructField(name, add.dataType(), add.isNullable(), Metadata.empty())});
            org.apache.arrow.vector.types.pojo.Field field = SparkTypes.toArrowSchema(column, Map.of()).getFields().get(0);
            // ADD COLUMN ... DEFAULT: the value Spark evaluated, as the column's initial and write default.
            String defaultJson = add.defaultValue() == null ? null
                    : SparkTypes.defaultJson(name, add.defaultValue().getValue().value(), add.dataType());
            return table -> table.addColumn(allocator, field, defaultJson);
        }
        if (change instanceof TableChange.DeleteColumn drop) {
            String name = topLevel(ident, drop.fieldNames());
            return table -> table.dropColumn(name);
        }
        if (change instanceof TableChange.RenameColumn rename) {
            String name = topLevel(ident, rename.fieldNames());
            return table -> table.renameColumn(name, rename.newName());
        }
        if (change instanceof TableChange.SetProperty set && set.property().equals(INDEX_COLUMNS)) {
            List<String> wanted = NativeTable.indexColumns(set.value());
            return table -> table.setScalarIndexes(wanted);
        }
        if (change instanceof TableChange.RemoveProperty remove && remove.property().equals(INDEX_COLUMNS)) {
            return table -> table.setScalarIndexes(List.of());
        }
        if (change instanceof TableChange.SetProperty set && PathOptions.indexedColumn(set.property()) != null) {
            String column = PathOptions.indexedColumn(set.property());
            String definition = HyperStreamWrite.checkedIndex("table property '" + set.property() + "'", set.value());
            return table -> HyperStreamWrite.applyVectorIndex(table, column, definition);
        }
        if (change instanceof TableChange.RemoveProperty remove && PathOptions.indexedColumn(remove.property()) != null) {
            String column = PathOptions.indexedColumn(remove.property());
            return table -> HyperStreamWrite.applyVectorIndex(table, column, PathOptions.NO_INDEX);
        }
        if (change instanceof TableChange.SetProperty set) {
            return table -> table.setProperties(Map.of(set.property(), set.value()));
        }
        if (change instanceof TableChange.RemoveProperty remove) {
            Map<String, String> removal = new HashMap<>();
            removal.put(remove.property(), null);
            return table -> table.setProperties(removal);
        }
        throw new UnsupportedOperationException("ALTER TABLE " + ident + ": HyperStream tables take ADD COLUMNS, DROP COLUMN, "
                + "RENAME COLUMN and SET / UNSET TBLPROPERTIES, not " + change.getClass().getSimpleName());
    }

    /** The table property naming the columns with a scalar index (comma-separated). */
    static final String INDEX_COLUMNS = NativeTable.INDEX_COLUMNS;

    private static String topLevel(Identifier ident, String[] fieldNames) {
        if (fieldNames.length != 1) {
            throw new UnsupportedOperationException("ALTER TABLE " + ident + ": nested column " + String.join(".", fieldNames)
                    + " cannot be changed, only top-level columns");
        }
        return fieldNames[0];
    }

    /** DROP TABLE: a REST catalog's table leaves the catalog and keeps its files, as with Iceberg's catalog. */
    @Override
    public boolean dropTable(Identifier ident) {
        return table(ident).isPresent() && tables.dropTable(ident.namespace()[0], ident.name(), false);
    }

    /** DROP TABLE ... PURGE: the files the table's metadata reaches go too. */
    @Override
    public boolean purgeTable(Identifier ident) {
        return table(ident).isPresent() && tables.dropTable(ident.namespace()[0], ident.name(), true);
    }

    @Override
    public void renameTable(Identifier from, Identifier to) throws NoSuchTableException, TableAlreadyExistsException {
        if (table(from).isEmpty()) {
            throw new NoSuchTableException(from);
        }
        if (to.namespace().length == 2 && to.namespace()[0].equals(name)) {
            // RENAME TO <catalog>.<namespace>.<table>: Spark passes the new name as written.
            to = Identifier.of(new String[] {to.namespace()[1]}, to.name());
        }
        if (to.namespace().length != 1) {
            throw new IllegalArgumentException("HyperStream namespaces are one level deep, got " + String.join(".", to.namespace()));
        }
        if (table(to).isPresent()) {
            throw new TableAlreadyExistsException(to);
        }
        tables.renameTable(from.namespace()[0], from.name(), to.namespace()[0], to.name());
    }


    @Override
    public String toString() {
        return "HyperStreamCatalog(" + name + (tables == null ? "" : ", " + tables) + ", functions "
                + Arrays.toString(listFunctions(new String[0])) + ")";
    }
}
