package io.hyperstream.spark;

import io.hyperstream.jni.Limits;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SearchPlan;
import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.VectorSearch;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Options of a stored table read or written by path ({@code .load(path)}, {@code .save(path)}), parsed
 * once (an unknown option fails by name) into what both take (path, storage, batch rows), what a read
 * takes ({@link ReadOptions}) and what a write takes ({@link WriteOptions}).
 *
 * <table>
 *   <caption>Options</caption>
 *   <tr><th>option</th><th>meaning</th></tr>
 *   <tr><td>path</td><td>the table location: a local path or an object-store URL</td></tr>
 *   <tr><td>snapshot-id</td><td>read the table as of this snapshot (time travel)</td></tr>
 *   <tr><td>as-of-timestamp</td><td>read the snapshot current at this time, in epoch milliseconds</td></tr>
 *   <tr><td>vector.&lt;column&gt;.dimension</td><td>on create: store {@code array<float>} column as a vector of this length</td></tr>
 *   <tr><td>format-version, write.parquet.*, write.target-file-size-bytes</td><td>on create: the table's Iceberg format
 *       version (2 or 3) and write properties (e.g. {@code write.parquet.compression-codec}), as table properties</td></tr>
 *   <tr><td>batch.rows</td><td>rows per columnar batch, read and write (8192)</td></tr>
 *   <tr><td>split.rows</td><td>a data file of more rows (and row groups) than this is read by several tasks, each a
 *       run of its row groups of about this many rows (1048576)</td></tr>
 *   <tr><td>storage.&lt;key&gt;</td><td>object-store settings passed to the native library (e.g. storage.aws_endpoint)</td></tr>
 *   <tr><td>vector.search.column</td><td>read only the rows nearest a query vector in this vector column, nearest first, with their {@code _distance}</td></tr>
 *   <tr><td>vector.search.query</td><td>the query vector, comma-separated numbers</td></tr>
 *   <tr><td>vector.search.k</td><td>how many rows (10)</td></tr>
 *   <tr><td>vector.search.metric</td><td>l2 (default), cosine, inner_product (negated dot product) or l1</td></tr>
 *   <tr><td>vector.search.ef</td><td>how a vector search (this option form or a pushed ORDER BY distance LIMIT k) uses
 *       the column's HNSW index: its candidate list length (larger: better recall, slower), -1 for exact search,
 *       0 (default) for the library's choice</td></tr>
 *   <tr><td>vector.search.backend</td><td>where a vector search's exact comparison of a file's vectors runs: auto
 *       (default: a GPU when the library has one compiled in, one answers and the work pays for copying the vectors
 *       over; the CPU otherwise), cpu, cuda or wgpu (the search fails, naming it, when that backend is missing)</td></tr>
 *   <tr><td>vector.search.plan</td><td>how a pushed ORDER BY distance LIMIT k is divided among tasks: auto (default:
 *       a task per run of files of at least 1048576 rows when there are two such runs, else one task), single (one
 *       task searches every file on its executor's cores) or distributed (a task per file; Spark keeps the top k of
 *       their answers); every plan returns the same rows. The option form of a search ({@code vector.search.column})
 *       is always one task</td></tr>
 *   <tr><td colspan="2">The three above also come from a read's options on a catalog table
 *       ({@code spark.read().option(...).table(...)}) and, where a read does not set them, from the session
 *       configuration {@code spark.hyperstream.vector.search.ef}, {@code .backend}, {@code .plan}
 *       ({@code SET} in SQL).</td></tr>
 *   <tr><td>vector.&lt;column&gt;.index</td><td>on write: declare an HNSW index on the vector column, as JSON
 *       ({@code {"metric":"l2","m":16,"ef_construction":200}}, every field optional) or {@code hnsw} for the defaults,
 *       built for the files already there without rewriting them; {@code none} drops it. A column that has an index
 *       keeps it (drop it first to change it)</td></tr>
 * </table>
 */
record PathOptions(String path, HashMap<String, String> storage, int batchRows, ReadOptions read, WriteOptions write)
        implements Serializable {
    /**
     * What a read takes: the snapshot it sees (the current one, or the one {@code snapshot-id} or
     * {@code as-of-timestamp} names), the vector search of the option form and the search tuning,
     * how a pushed top-k is divided among tasks, and the rows a split reads.
     */
    record ReadOptions(TableVersion version, VectorOption search, long efSearch, String backend, SearchPlan searchPlan,
            long splitRows)
            implements Serializable {}

    /**
     * What a write takes: the dimensions of vector columns and the Iceberg table properties a
     * create declares, and the vector indexes (column to definition) a write declares.
     */
    record WriteOptions(Map<String, Integer> vectors, HashMap<String, String> creation, HashMap<String, String> indexes)
            implements Serializable {}

    /** The {@code vector.search.backend} values. */
    static final List<String> BACKENDS = List.of("auto", "cpu", "cuda", "wgpu");
    static final String EF = "vector.search.ef";
    static final String BACKEND = "vector.search.backend";
    static final String PLAN = "vector.search.plan";
    /** Session configuration prefix of the search tuning a query's read options do not set. */
    static final String SESSION_PREFIX = "spark.hyperstream.";

    /**
     * These options with the search tuning ({@code vector.search.ef}, {@code vector.search.backend}) a
     * read sets: from its options ({@code scan}) first, then the session's {@code
     * spark.hyperstream.vector.search.*} configuration ({@code conf}: key → value or null), then what
     * these options already hold. Catalog tables get their read options only here.
     */
    PathOptions tuned(Map<String, String> scan, java.util.function.UnaryOperator<String> conf) {
        String efText = firstOf(get(scan, EF), conf.apply(SESSION_PREFIX + EF));
        String backendText = firstOf(get(scan, BACKEND), conf.apply(SESSION_PREFIX + BACKEND));
        String where = get(scan, EF) != null ? "option '" + EF + "'" : SESSION_PREFIX + EF;
        long ef = efText == null ? read.efSearch() : ef(where, efText);
        where = get(scan, BACKEND) != null ? "option '" + BACKEND + "'" : SESSION_PREFIX + BACKEND;
        String on = backendText == null ? read.backend() : backend(where, backendText);
        String planText = firstOf(get(scan, PLAN), conf.apply(SESSION_PREFIX + PLAN));
        where = get(scan, PLAN) != null ? "option '" + PLAN + "'" : SESSION_PREFIX + PLAN;
        SearchPlan plan = planText == null ? read.searchPlan() : SearchPlan.of(where, planText);
        VectorOption search = read.search();
        VectorOption tunedSearch = search == null ? null
                : new VectorOption(search.function(), search.column(), search.query(), search.metric(), search.k(), ef, on,
                        search.nullsFirst());
        ReadOptions tunedRead = new ReadOptions(read.version(), tunedSearch, ef, on, plan, read.splitRows());
        return new PathOptions(path, storage, batchRows, tunedRead, write);
    }

    private static String firstOf(String a, String b) {
        return a != null ? a : b;
    }

    /** A {@code vector.search.ef} value ({@code where} names its source in errors). */
    private static long ef(String where, String value) {
        long ef;
        try {
            ef = Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(where + " must be an integer, got '" + value + "'", e);
        }
        return Limits.efSearch(where, ef);
    }

    /** A {@code vector.search.backend} value ({@code where} names its source in errors). */
    private static String backend(String where, String value) {
        String backend = value.trim().toLowerCase(Locale.ROOT);
        if (!BACKENDS.contains(backend)) {
            throw new IllegalArgumentException(where + " must be one of " + BACKENDS + ", got '" + value + "'");
        }
        return backend;
    }

    /** A {@code vector.<column>.index} value that drops the column's index. */
    static final String NO_INDEX = "none";

    /** A {@code vector.<column>.index} value as written: {@code hnsw} for the defaults, {@code none}, or JSON. */
    static String indexDefinition(String value) {
        String definition = value.trim();
        return definition.equalsIgnoreCase("hnsw") ? "{\"type\":\"hnsw\"}" : definition;
    }

    /** The column a {@code vector.<column>.index} property or option names, or null for another key. */
    static String indexedColumn(String key) {
        return key.startsWith("vector.") && key.endsWith(".index") && key.length() > "vector..index".length()
                ? key.substring("vector.".length(), key.length() - ".index".length())
                : null;
    }

    /**
     * The table as a read with these options sees it: at the snapshot (or time) they name, with that
     * snapshot's schema, else its latest version. Writes go through {@link NativeTable#load}.
     */
    NativeTable openRead() {
        return NativeTable.loadAt(path, storage, read.version());
    }

    /**
     * The path and the names of the storage options, never their values: plans print the records
     * that hold these options (a row-level change's write in EXPLAIN), and a value may be a secret.
     */
    @Override
    public String toString() {
        return "PathOptions[path=" + path + ", storage options=" + new java.util.TreeSet<>(storage.keySet()) + "]";
    }

    /**
     * These options as the tasks of a query get them ({@link NativeTable#taskOptions}): a catalog's
     * table at the metadata file of {@code table}'s version, with only the storage options the
     * catalog vended for it, never the catalog's URI or secret.
     */
    PathOptions forTasks(NativeTable table) {
        return new PathOptions(path, new HashMap<>(table.taskOptions()), batchRows, read, write);
    }

    /** As {@link #forTasks(NativeTable)}, of the table these options open now. */
    PathOptions forTasks() {
        try (NativeTable table = NativeTable.load(path, storage)) {
            return forTasks(table);
        }
    }

    /** These options reading snapshot {@code snapshotId} (the one a row-level change reads and builds on). */
    PathOptions at(long snapshotId) {
        ReadOptions pinned = new ReadOptions(TableVersion.snapshot(snapshotId), read.search(), read.efSearch(), read.backend(),
                read.searchPlan(), read.splitRows());
        return new PathOptions(path, storage, batchRows, pinned, write);
    }

    /** Whether the read travels: a snapshot or a time was given (any value: an unknown one fails by name). */
    boolean travels() {
        return !read.version().isCurrent();
    }


    static boolean isPathRead(Map<String, String> options) {
        return get(options, "path") != null && get(options, SampleOptions.ROWS) == null;
    }

    static PathOptions from(Map<String, String> options) {
        String path = get(options, "path");
        if (path == null || path.isBlank()) {
            throw new IllegalArgumentException("a HyperStream table needs a path: .load(path) or .save(path)");
        }
        HashMap<String, Integer> vectors = new HashMap<>();
        HashMap<String, String> storage = new HashMap<>();
        Long snapshotId = null;
        Long asOf = null;
        int batchRows = 8192;
        long splitRows = 1 << 20;
        String searchColumn = null;
        String searchQuery = null;
        String searchMetric = "l2";
        long searchK = 10;
        long efSearch = 0;
        String backend = VectorSearch.AUTO;
        SearchPlan plan = SearchPlan.AUTO;
        HashMap<String, String> indexes = new HashMap<>();
        HashMap<String, String> creation = new HashMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            String key = e.getKey().toLowerCase(Locale.ROOT);
            String value = e.getValue();
            if (key.equals("path")) {
                continue;
            } else if (key.equals("snapshot-id")) {
                snapshotId = parse(key, value);
            } else if (key.equals("as-of-timestamp")) {
                asOf = parse(key, value);
            } else if (key.equals(SampleOptions.BATCH_ROWS)) {
                batchRows = Limits.batchRows("option '" + key + "'", parse(key, value));
            } else if (key.equals(SampleOptions.SPLIT_ROWS)) {
                splitRows = parse(key, value);
                if (splitRows <= 0) {
                    throw new IllegalArgumentException("option '" + SampleOptions.SPLIT_ROWS + "' must be positive, got " + splitRows);
                }
            } else if (key.equals("vector.search.column")) {
                searchColumn = value;
            } else if (key.equals("vector.search.query")) {
                searchQuery = value;
            } else if (key.equals("vector.search.metric")) {
                searchMetric = value;
            } else if (key.equals("vector.search.k")) {
                searchK = parse(key, value);
            } else if (key.equals(EF)) {
                efSearch = ef("option '" + EF + "'", value);
            } else if (key.equals(BACKEND)) {
                backend = backend("option '" + BACKEND + "'", value);
            } else if (key.equals(PLAN)) {
                plan = SearchPlan.of("option '" + PLAN + "'", value);
            } else if (key.startsWith("vector.") && key.endsWith(".index")) {
                String column = e.getKey().substring("vector.".length(), e.getKey().length() - ".index".length());
                indexes.put(column, indexDefinition(value));
            } else if (key.startsWith("vector.") && key.endsWith(".dimension")) {
                // Column names keep their case: take them from the original key.
                String column = e.getKey().substring("vector.".length(), e.getKey().length() - ".dimension".length());
                vectors.put(column, Limits.dimension("option '" + e.getKey() + "'", parse(key, value)));
            } else if (key.startsWith("storage.")) {
                storage.put(e.getKey().substring("storage.".length()), value);
            } else if (key.equals(NativeTable.FORMAT_VERSION) || NativeTable.isWriteProperty(e.getKey())) {
                creation.put(e.getKey(), value);
            } else {
                throw new IllegalArgumentException("unknown HyperStream table option '" + e.getKey()
                        + "'; known: path, snapshot-id, as-of-timestamp, batch.rows, vector.<column>.dimension, storage.<key>, "
                        + "vector.search.column, vector.search.query, vector.search.k, vector.search.metric, "
                        + "vector.search.ef, vector.search.backend, vector.search.plan, vector.<column>.index, format-version, write.parquet.*, write.target-file-size-bytes, split.rows");
            }
        }
        if (snapshotId != null && asOf != null) {
            throw new IllegalArgumentException("give snapshot-id or as-of-timestamp, not both");
        }
        if ((searchColumn == null) != (searchQuery == null)) {
            throw new IllegalArgumentException("a vector search needs both vector.search.column and vector.search.query");
        }
        VectorOption search = searchColumn == null ? null
                : new VectorOption(searchMetric, searchColumn, parseVector(searchQuery), searchMetric, searchK, efSearch, backend, false);
        ReadOptions read = new ReadOptions(new TableVersion(snapshotId, asOf), search, efSearch, backend, plan, splitRows);
        return new PathOptions(path, storage, batchRows, read,
                new WriteOptions(vectors, creation, indexes));
    }

    private static float[] parseVector(String value) {
        String[] parts = value.replace("[", "").replace("]", "").split(",");
        float[] vector = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                vector[i] = Float.parseFloat(parts[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option 'vector.search.query' must be comma-separated numbers, got '"
                        + parts[i].trim() + "' at position " + i, e);
            }
        }
        return vector;
    }

    private static String get(Map<String, String> options, String key) {
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().equalsIgnoreCase(key)) {
                return e.getValue();
            }
        }
        return null;
    }

    private static long parse(String key, String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option '" + key + "' must be an integer, got '" + value + "'", e);
        }
    }
}
