package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.CatalogRoot;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.LocalFiles;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.NotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
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
 * TABLE} work in SQL (local directories for now). Every namespace and table name is checked by
 * {@link CatalogRoot} before it becomes a path; a refused one fails as Spark's own error for a bad
 * name and changes nothing.
 */
public final class HyperStreamCatalog implements FunctionCatalog, TableCatalog, SupportsNamespaces {
    private String name = "hyperstream";
    private CatalogRoot root;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        String dir = options.get("root");
        this.root = dir == null || dir.isBlank() ? null : new CatalogRoot(Path.of(dir));
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

    // ---- namespaces: the directories under the root

    private CatalogRoot root() {
        if (root == null) {
            throw new UnsupportedOperationException("catalog " + name + " has no tables: set spark.sql.catalog." + name
                    + ".root to a directory to keep HyperStream tables in it");
        }
        return root;
    }

    /**
     * Runs {@code resolve}, a name turned into a path by {@link CatalogRoot}; a refused name fails as
     * Spark's own error for a bad table or namespace name, the reason attached.
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

    private Path namespaceDir(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1 || root == null) {
            throw new NoSuchNamespaceException(namespace);
        }
        Optional<Path> dir = checked(namespace[0], () -> root.existingNamespace(namespace[0]));
        if (dir.isEmpty()) {
            throw new NoSuchNamespaceException(namespace);
        }
        return dir.get();
    }

    @Override
    public String[][] listNamespaces() {
        return root == null ? new String[0][] : root.namespaces().stream().map(n -> new String[] {n}).toArray(String[][]::new);
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return listNamespaces();
        }
        namespaceDir(namespace);
        return new String[0][];
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        return Map.of("location", namespaceDir(namespace).toString());
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
        if (namespace.length != 1) {
            throw new IllegalArgumentException("HyperStream namespaces are one level deep (a directory under the root), got "
                    + String.join(".", namespace));
        }
        Path dir = checked(namespace[0], () -> root().namespace(namespace[0]));
        if (Files.exists(dir)) {
            throw new NamespaceAlreadyExistsException(namespace);
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("creating namespace directory " + dir, e);
        }
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) {
        throw new UnsupportedOperationException("HyperStream namespaces have no properties to alter");
    }

    /** Without CASCADE, a namespace directory that holds anything at all (a file too) is not dropped. */
    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade) throws NoSuchNamespaceException, NonEmptyNamespaceException {
        Path dir = namespaceDir(namespace);
        if (!cascade && !CatalogRoot.isEmpty(dir)) {
            throw new NonEmptyNamespaceException(namespace);
        }
        LocalFiles.deleteTree(dir);
        return true;
    }

    // ---- tables: the table directories of a namespace

    /** The table's directory, checked, or null when the identifier cannot name a table of this catalog. */
    private Path tableDir(Identifier ident) {
        if (root == null || ident.namespace().length != 1) {
            return null;
        }
        return checked(ident.namespace()[0] + "." + ident.name(), () -> root.table(ident.namespace()[0], ident.name()));
    }

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        namespaceDir(namespace);
        return root.tables(namespace[0]).stream().map(t -> Identifier.of(namespace, t)).toArray(Identifier[]::new);
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
        Path dir = tableDir(ident);
        if (dir == null || !CatalogRoot.isTable(dir)) {
            throw new NoSuchTableException(ident);
        }
        Map<String, String> options = new HashMap<>(travel);
        options.put("path", dir.toString());
        PathOptions path = PathOptions.from(options);
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

    @Override
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        namespaceDir(ident.namespace());
        Path dir = tableDir(ident);
        if (Files.exists(dir)) {
            throw new TableAlreadyExistsException(ident);
        }
        Map<String, Integer> vectors = new HashMap<>();
        Map<String, String> kept = new HashMap<>();
        Map<String, String> vectorIndexes = new HashMap<>();
        for (Map.Entry<String, String> p : properties.entrySet()) {
            String key = p.getKey();
            if (PathOptions.indexedColumn(key) != null) {
                vectorIndexes.put(PathOptions.indexedColumn(key), HyperStreamWrite.checkedIndex("table property '" + key + "'", p.getValue()));
            }
            if (key.startsWith("hyperstream.") || NativeTable.isWriteProperty(key) || key.equals(NativeTable.FORMAT_VERSION)) {
                // The table's own settings (hyperstream.write.row-group-rows), Iceberg's write
                // settings (write.parquet.bloom-filter-enabled.column.<name>, write.target-file-size-bytes)
                // and format version.
                kept.put(key, p.getValue());
            }
            if (key.startsWith("vector.") && key.endsWith(".dimension")) {
                String column = key.substring("vector.".length(), key.length() - ".dimension".length());
                try {
                    vectors.put(column, Limits.dimension("table property '" + key + "'", Long.parseLong(p.getValue().trim())));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("table property '" + key + "' must be an integer, got '" + p.getValue() + "'", e);
                }
            }
        }
        if (partitions.length > 0) {
            if (kept.containsKey(NativeTable.PARTITIONING)) {
                throw new IllegalArgumentException("give the partitioning of " + ident + " once: PARTITIONED BY or "
                        + NativeTable.PARTITIONING + ", not both");
            }
            kept.put(NativeTable.PARTITIONING, HyperStreamPathTable.partitioning(partitions));
        }
        try (BufferAllocator allocator = Allocators.child("spark-create");
                NativeTable table = NativeTable.create(dir.toString(), SparkTypes.toArrowSchema(schema, vectors), kept,
                        Map.of(), allocator)) {
            vectorIndexes.forEach((column, definition) -> HyperStreamWrite.applyVectorIndex(table, column, definition));
            return new HyperStreamPathTable(PathOptions.from(Map.of("path", dir.toString())),
                    SparkTypes.toStructType(table.schema(allocator)));
        }
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        Path dir = tableDir(ident);
        if (dir == null || !CatalogRoot.isTable(dir)) {
            throw new NoSuchTableException(ident);
        }
        // Every change is checked before the first is committed (each commits on its own).
        List<java.util.function.Consumer<NativeTable>> steps = new ArrayList<>();
        try (BufferAllocator allocator = Allocators.child("spark-alter")) {
            for (TableChange change : changes) {
                steps.add(step(ident, change, allocator));
            }
            try (NativeTable table = NativeTable.load(dir.toString(), Map.of())) {
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
            return table -> table.addColumn(allocator, field);
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
        if (change instanceof TableChange.SetProperty set && NativeTable.isWriteProperty(set.property())) {
            return table -> table.setWriteProperties(Map.of(set.property(), set.value()));
        }
        if (change instanceof TableChange.RemoveProperty remove && NativeTable.isWriteProperty(remove.property())) {
            Map<String, String> removal = new HashMap<>();
            removal.put(remove.property(), null);
            return table -> table.setWriteProperties(removal);
        }
        throw new UnsupportedOperationException("ALTER TABLE " + ident + ": HyperStream tables take ADD COLUMNS, DROP COLUMN, "
                + "RENAME COLUMN and SET / UNSET TBLPROPERTIES ('" + INDEX_COLUMNS + "', 'vector.<column>.index', 'write.parquet.*', 'write.target-file-size-bytes'), not "
                + change.getClass().getSimpleName());
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

    @Override
    public boolean dropTable(Identifier ident) {
        Path dir = tableDir(ident);
        if (dir == null || !CatalogRoot.isTable(dir)) {
            return false;
        }
        LocalFiles.deleteTree(dir);
        return true;
    }

    @Override
    public void renameTable(Identifier from, Identifier to) {
        throw new UnsupportedOperationException("renaming HyperStream tables is not supported yet");
    }


    @Override
    public String toString() {
        return "HyperStreamCatalog(" + name + (root == null ? "" : ", root " + root) + ", functions "
                + Arrays.toString(listFunctions(new String[0])) + ")";
    }
}
