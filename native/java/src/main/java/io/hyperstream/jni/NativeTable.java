package io.hyperstream.jni;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A HyperStream table: a genuine Iceberg V2 table (Parquet data files with field ids, Avro
 * manifests, {@code metadata/vN.metadata.json}) at a location (a local path or an object-store
 * URL). Vector columns are Arrow fixed-size float lists, stored as Iceberg {@code list<float>}.
 */
public final class NativeTable extends NativeHandle {
    /** One snapshot of the table's history. */
    public record SnapshotInfo(long snapshotId, long parentId, long timestampMillis, long sequenceNumber) {}

    private final String location;

    private NativeTable(long handle, String location) {
        super("table " + location, handle);
        this.location = location;
    }

    /** Creates an empty table with {@code schema}'s columns; fails if a table exists there. */
    public static NativeTable create(String location, Schema schema, Map<String, String> properties,
            Map<String, String> storageOptions, BufferAllocator allocator) {
        NativeLibrary.load();
        try (ArrowSchema ffi = ArrowSchema.allocateNew(allocator)) {
            Data.exportSchema(allocator, schema, null, ffi);
            return new NativeTable(createNative(location, ffi.memoryAddress(), flatten(properties),
                    flatten(CatalogSecrets.withSecrets(storageOptions))), location);
        }
    }

    /**
     * CREATE OR REPLACE TABLE: redefines the table as {@code schema}'s columns (fresh field ids) with
     * the partitioning, sort order, indexes and write properties {@code properties} declare (as
     * {@link #create} takes them), without rows, in one snapshot, which it returns. Earlier snapshots
     * stay for time travel, each read under its own schema.
     */
    public long replace(BufferAllocator allocator, Schema schema, Map<String, String> properties) {
        return call(h -> {
            try (ArrowSchema ffi = ArrowSchema.allocateNew(allocator)) {
                Data.exportSchema(allocator, schema, null, ffi);
                return replaceNative(h, ffi.memoryAddress(), flatten(properties));
            }
        });
    }

    /**
     * Stages a replacement (CREATE OR REPLACE TABLE ... AS SELECT as Spark's staging catalogs run
     * it): nothing of this table changes, and a staging table under this table's location gets the
     * definition the replacement will have, so that data files written into it (at the location
     * returned, by any writer, opened with {@link #storageOptions}) belong to the replaced table.
     * {@link #commitReplace} commits definition and files as one snapshot (through the table's
     * catalog, for a catalog's table); {@link #abortReplace} leaves the table as it was.
     */
    public String stageReplace(BufferAllocator allocator, Schema schema, Map<String, String> properties) {
        return call(h -> {
            try (ArrowSchema ffi = ArrowSchema.allocateNew(allocator)) {
                Data.exportSchema(allocator, schema, null, ffi);
                return stageReplaceNative(h, ffi.memoryAddress(), flatten(properties));
            }
        });
    }

    /**
     * Commits a replacement staged at {@code staging} (the same schema and properties) with the data
     * files written into it, as one snapshot, which it returns. A table whose schema or partitioning
     * changed since the stage fails with {@link CommitConflictException}, committing nothing.
     */
    public long commitReplace(BufferAllocator allocator, String staging, Schema schema, Map<String, String> properties,
            String[] dataFiles) {
        return call(h -> {
            try (ArrowSchema ffi = ArrowSchema.allocateNew(allocator)) {
                Data.exportSchema(allocator, schema, null, ffi);
                return commitReplaceNative(h, staging, ffi.memoryAddress(), flatten(properties), dataFiles);
            }
        });
    }

    /** Abandons a replacement staged at {@code staging}: the staging table goes with every file written into it. */
    public void abortReplace(String staging) {
        call(h -> {
            abortReplaceNative(h, staging);
            return null;
        });
    }

    /**
     * Deletes the files this table's metadata reaches (DROP TABLE ... PURGE): data and delete files
     * with the index files beside them, manifests, manifest lists, statistics and metadata versions;
     * nothing found by listing a folder, so another table's files are never touched. Returns how
     * many files it deleted.
     */
    public long purgeFiles() {
        return call(NativeTable::purgeFilesNative);
    }

    /** Opens the latest version of the table at {@code location}. */
    public static NativeTable load(String location, Map<String, String> storageOptions) {
        return loadAt(location, storageOptions, TableVersion.CURRENT);
    }

    /**
     * Opens the table as {@code version} sees it (time travel; {@link TableVersion#CURRENT}: the
     * latest version). Reads see that snapshot
     * as current under the schema it was written with (a column added since is absent, one dropped
     * since is there, a renamed one has its old name); writes through it are refused. An unknown
     * snapshot (a negative id too) or a time before the first snapshot (before 1970 too) fails with
     * {@link NotFoundException}.
     */
    public static NativeTable loadAt(String location, Map<String, String> storageOptions, TableVersion version) {
        NativeLibrary.load();
        return new NativeTable(loadNative(location, flatten(CatalogSecrets.withSecrets(storageOptions)), version.snapshotId() != null,
                version.snapshotIdOrZero(), version.asOfMillis() != null, version.asOfMillisOrZero()), location);
    }

    public String location() {
        return location;
    }

    /**
     * Field metadata of {@link #schema}: a column's {@code initial-default} (the value of rows
     * written before it existed) and {@code write-default} (of rows written without it), as JSON.
     */
    public static final String INITIAL_DEFAULT = "iceberg.initial-default";
    public static final String WRITE_DEFAULT = "iceberg.write-default";

    /**
     * The current schema (fields carry their Iceberg ids as {@code PARQUET:field_id}, and their
     * defaults under {@link #INITIAL_DEFAULT} and {@link #WRITE_DEFAULT}).
     */
    public Schema schema(BufferAllocator allocator) {
        return call(h -> ArrowStreams.importSchema(allocator, address -> exportSchema(h, address)));
    }

    /**
     * Appends the rows of {@code reader} as one commit and returns the new snapshot's id. The
     * reader is handed to native code and closed by it.
     */
    public long append(BufferAllocator allocator, ArrowReader reader) {
        return call(h -> {
            long[] snapshot = new long[1];
            ArrowStreams.exportStream(allocator, reader, address -> snapshot[0] = appendNative(h, address));
            return snapshot[0];
        });
    }

    /**
     * Writes the rows of {@code reader} as data files without committing them (an engine task's part
     * of a distributed write): one file, or in a partitioned table one per partition the rows fall
     * in, each sorted by the table's sort order when it has one. Returns their descriptions, which
     * {@link #commitAppend} / {@link #commitOverwrite} commit and {@link #deleteFiles} removes.
     */
    public String[] writeDataFiles(BufferAllocator allocator, ArrowReader reader) {
        return call(h -> {
            String[][] files = new String[1][];
            ArrowStreams.exportStream(allocator, reader, address -> files[0] = writeDataFilesNative(h, address));
            return files[0];
        });
    }

    /**
     * Whether {@code key} is one of Iceberg's write properties a table takes ({@code write.parquet.*},
     * {@code write.target-file-size-bytes}): what a CREATE passes through and an ALTER may change
     * ({@link #setWriteProperties}).
     */
    public static boolean isWriteProperty(String key) {
        NativeLibrary.load();
        return isWritePropertyNative(key);
    }

    /**
     * A writer of the table's rows for an engine task, fed one batch at a time with a bounded
     * buffer (see {@link TableWriter}); close it when the task ends.
     */
    public TableWriter openWriter() {
        return new TableWriter(call(h -> openWriterNative(h, false)), location);
    }

    /**
     * As {@link #openWriter}, for the new rows of a row-level change in a format version 3 table:
     * a batch may carry a column {@code _row_id} (nullable bigint), the id of the row an updated
     * row replaces, which it keeps (row lineage); a new row's is null (it takes a new one).
     */
    public TableWriter openLineageWriter() {
        return new TableWriter(call(h -> openWriterNative(h, true)), location);
    }

    /** The column a {@link #openLineageWriter} batch carries an updated row's id in. */
    public static final String ROW_ID = "_row_id";

    /** The schema of {@link #openLineageWriter}'s batches: the table's {@code columns} and {@link #ROW_ID} (nullable bigint) last. */
    public static Schema withRowId(Schema columns) {
        List<Field> fields = new java.util.ArrayList<>(columns.getFields());
        fields.add(Field.nullable(ROW_ID, new org.apache.arrow.vector.types.pojo.ArrowType.Int(64, true)));
        return new Schema(fields);
    }

    /** Commits data files written by {@link #writeDataFiles} as one append; returns the snapshot id. */
    public long commitAppend(String[] dataFiles) {
        return call(h -> commitAppendNative(h, dataFiles, false));
    }

    /**
     * Commits data files written by {@link #writeDataFiles} as one snapshot that replaces every row
     * of the table (none: the table is emptied); older snapshots keep their rows. Returns its id.
     */
    public long commitOverwrite(String[] dataFiles) {
        return call(h -> commitAppendNative(h, dataFiles, true));
    }

    /**
     * Adds a nullable column last (schema evolution): rows written before read it as null, no data
     * file is rewritten. A fixed-size list of floats is a vector column of that dimension.
     */
    public void addColumn(BufferAllocator allocator, Field column) {
        addColumn(allocator, column, null);
    }

    /**
     * As {@link #addColumn(BufferAllocator, Field)}, with a default {@code defaultJson} (Iceberg's
     * JSON single value: {@code 5}, {@code "text"}, {@code "2024-01-31"}; null for none): rows
     * written before read it ({@code initial-default}), and so do rows written without the column
     * ({@code write-default}). Defaults need format version 3; a column with one may be NOT NULL.
     */
    public void addColumn(BufferAllocator allocator, Field column, String defaultJson) {
        run(h -> {
            try (ArrowSchema ffi = ArrowSchema.allocateNew(allocator)) {
                Data.exportSchema(allocator, new Schema(List.of(column)), null, ffi);
                addColumnNative(h, ffi.memoryAddress(), defaultJson);
            }
        });
    }

    /** Drops a column (schema evolution): its values stay in the files written so far, unread. */
    public void dropColumn(String column) {
        run(h -> renameColumnNative(h, column, null));
    }

    /** Renames a column (schema evolution); files are read by field id, so none is rewritten. */
    public void renameColumn(String column, String newName) {
        if (newName == null) {
            throw new InvalidArgumentException("the new name of column '" + column + "' is null");
        }
        run(h -> renameColumnNative(h, column, newName));
    }

    /** What a {@link #rewriteDataFiles} committed: its snapshot (-1 when no file needed it) and files. */
    public record Rewrite(long snapshotId, long filesRewritten, long filesWritten) {}

    /**
     * Compaction: rewrites the live rows of the files with deleted rows, and of the small files
     * (fewer than {@code targetRows} rows, two or more of them), into files of up to
     * {@code targetRows} rows, as one "replace" snapshot: every read answers as before.
     */
    public Rewrite rewriteDataFiles(long targetRows) {
        return call(h -> Records.one(address -> rewriteDataFilesNative(h, targetRows, address), Rewrite.class));
    }

    /** Makes an earlier snapshot (an ancestor of the current one) current again; later ones stay for time travel. */
    public void rollbackTo(long snapshotId) {
        run(h -> rollbackToNative(h, snapshotId));
    }

    /** What a {@link #deleteWhere} committed: its snapshot (-1 when no row matched) and rows deleted. */
    public record DeleteResult(long snapshotId, long deletedRows) {}

    /**
     * Deletes the rows of the current snapshot that {@code filter} passes (a {@link Filters}
     * predicate; null deletes every row) as one "delete" snapshot, without rewriting data: a data
     * file none of whose rows are left leaves the table, the others get Iceberg position delete
     * files. Older snapshots keep the rows. Nothing is committed when no row passes.
     */
    public DeleteResult deleteWhere(String filter) {
        return call(h -> Records.one(address -> deleteWhereNative(h, filter, address), DeleteResult.class));
    }

    /** The metadata column of the data file a row is in; with {@link #ROW_POSITION}, a row's id in a row-level change. */
    public static final String FILE_PATH = "_file";
    /** The metadata column of a row's position in its data file. */
    public static final String ROW_POSITION = "_pos";

    /**
     * The text fragment in which a writer task of a row-level change reports the rows at
     * {@code positions} of data file {@code dataFile} that it deletes (see {@link RowDeletes}).
     */
    public static String rowDeletes(String dataFile, long[] positions) {
        NativeLibrary.load();
        return rowDeletesNative(dataFile, positions);
    }

    /**
     * Commits a row-level change (UPDATE, MERGE, a DELETE by row) as one snapshot: the rows the
     * {@link #rowDeletes} fragments name are deleted (position deletes or deletion vectors) and
     * {@code added} (data files of {@link #writeDataFiles} or a {@link TableWriter}) join the
     * table. The change's scan read snapshot {@code readSnapshot} (-1: the table had none) with the
     * native filter {@code scanFilter} (null: every row); {@code operation} ({@code delete},
     * {@code update} or {@code merge}) names the table property {@code write.<operation>.isolation-level}
     * that applies (Iceberg's {@code serializable}, the default, or {@code snapshot}). A
     * {@link CommitConflictException} when another writer deleted rows of a file it deletes rows of
     * since or, under serializable isolation, added rows its scan would have read. When it is
     * refused so (or a fragment is bad), nothing is committed and the {@code added} files are
     * removed. Returns the snapshot id, -1 when nothing changed.
     */
    public long commitRowChanges(long readSnapshot, String operation, String scanFilter, String[] deletes, String[] added) {
        try {
            return call(h -> commitRowChangesNative(h, readSnapshot, operation, scanFilter, deletes, added));
        } catch (CommitConflictException | InvalidArgumentException refused) {
            deleteFiles(added);
            throw refused;
        }
    }

    /** Deletes data files written by {@link #writeDataFiles} and never committed (an aborted write's). */
    public void deleteFiles(String[] dataFiles) {
        run(h -> deleteFilesNative(h, dataFiles));
    }

    /**
     * The live data files of a snapshot (as {@link #scan} picks it), one engine split each, in the
     * form {@link #scanFiles} takes.
     */
    public String[] dataFiles(TableVersion version) {
        return dataFiles(version, null);
    }

    /**
     * As {@link #dataFiles(TableVersion)}, without the files whose column statistics (bounds, null
     * counts) show that no row passes {@code filter} (a {@link Filters} predicate; null keeps all).
     */
    public String[] dataFiles(TableVersion version, String filter) {
        return call(h -> dataFilesNative(h, version.snapshotId() != null, version.snapshotIdOrZero(),
                version.asOfMillis() != null, version.asOfMillisOrZero(), filter));
    }

    /**
     * The exact number of rows of a snapshot, from its manifests and
     * delete files alone: no data file is read. What COUNT(*) without a filter is answered from.
     */
    public long rowCount(TableVersion version) {
        return call(h -> rowCountNative(h, version.snapshotId() != null, version.snapshotIdOrZero(),
                version.asOfMillis() != null, version.asOfMillisOrZero()));
    }

    /**
     * Sets (a value) or removes (null) table properties as one commit (ALTER TABLE SET / UNSET
     * TBLPROPERTIES): Iceberg's write properties ({@link #isWriteProperty}: e.g. {@code
     * write.parquet.bloom-filter-enabled.column.<col>}, {@code write.target-file-size-bytes}) apply to
     * the data files written after; any other key is kept as given. Reserved keys, an unknown {@code
     * hyperstream.*} key and those that change through their own calls are refused by name.
     */
    public void setProperties(Map<String, String> changes) {
        String[] keys = changes.keySet().toArray(String[]::new);
        String[] values = java.util.Arrays.stream(keys).map(changes::get).toArray(String[]::new);
        run(h -> setPropertiesNative(h, keys, values));
    }

    /**
     * What the tasks of a distributed query (Spark executors) open this table with: a catalog's
     * table at this version's metadata file, with the storage options the catalog vended for it and
     * never the catalog's URI or credential, so a task neither calls the catalog nor holds its secret;
     * a table of a directory catalog with its storage options. Opened with {@link #loadAt}, such a
     * table reads and writes data files; its changes commit through the catalog.
     */
    public Map<String, String> taskOptions() {
        return unflatten(call(h -> optionsNative(h, true)), new java.util.HashMap<>());
    }

    /**
     * The options its storage was opened with: a catalog's table, those the catalog vended for it
     * (never the catalog's URI or credential); a table of a directory catalog, all it was given.
     * What opens a staging table of {@link #stageReplace}.
     */
    public Map<String, String> storageOptions() {
        return unflatten(call(h -> optionsNative(h, false)), new java.util.HashMap<>());
    }

    /** The table's properties, as its metadata keeps them. */
    public Map<String, String> properties() {
        return unflatten(call(NativeTable::propertiesNative), new java.util.TreeMap<>());
    }

    /**
     * A column's statistics over a snapshot: its estimated number of distinct values (merged
     * HyperLogLog sketches kept beside the data files) and its null count (from the manifests), each
     * -1 where unknown.
     */
    public record ColumnStatistics(String column, long distinctValues, long nulls) {}

    /** Every column's {@link ColumnStatistics} over a snapshot, in table order. */
    public List<ColumnStatistics> columnStatistics(TableVersion version) {
        return call(h -> Records.read(address -> columnStatisticsNative(h, version.snapshotId() != null,
                version.snapshotIdOrZero(), version.asOfMillis() != null, version.asOfMillisOrZero(), address),
                ColumnStatistics.class));
    }

    /**
     * Aggregates over a snapshot from its manifests alone:
     * {@code kinds[i]} ({@code count_star}, {@code count}, {@code min} or {@code max}) of
     * {@code columns[i]} (empty for {@code count_star}). A reader of one one-row batch, a column per
     * aggregate, when the metadata answers them all exactly; of no batch when it cannot (a row
     * deleted, statistics missing, float or truncated bounds): then the rows must be aggregated.
     */
    public ArrowReader aggregateFromMetadata(BufferAllocator allocator, TableVersion version, String[] kinds,
            String[] columns) {
        return call(h -> ArrowStreams.importStream(allocator, address -> aggregateNative(h, version.snapshotId() != null,
                version.snapshotIdOrZero(), version.asOfMillis() != null, version.asOfMillisOrZero(), kinds, columns, address)));
    }

    /**
     * The metadata tables of every table, Iceberg's and HyperStream's own {@code indexes} (the
     * index files beside each data file, with their sizes).
     */
    public static final List<String> METADATA_TABLES =
            List.of("snapshots", "history", "files", "manifests", "partitions", "refs", "properties", "indexes");

    /** Metadata table {@code name} ({@link #METADATA_TABLES}) of the current snapshot, as one batch. */
    public ArrowReader metadataTable(BufferAllocator allocator, String name) {
        return call(h -> ArrowStreams.importStream(allocator, address -> metadataTableNative(h, name, address)));
    }

    /** The columns of metadata table {@code name}. */
    public static Schema metadataTableSchema(BufferAllocator allocator, String name) {
        NativeLibrary.load();
        return ArrowStreams.importSchema(allocator, address -> metadataTableSchemaNative(name, address));
    }

    /** Streams the given data files with {@code columns} (all when null). */
    public ArrowReader scanFiles(BufferAllocator allocator, String[] dataFiles, String[] columns, int batchRows) {
        return scanFiles(allocator, dataFiles, columns, null, batchRows);
    }

    /**
     * Streams the rows of the given data files that {@code filter} passes (a predicate in the
     * native model's JSON form, see {@link Filters}; null for every row), with {@code columns}
     * (all when null).
     */
    public ArrowReader scanFiles(BufferAllocator allocator, String[] dataFiles, String[] columns, String filter,
            int batchRows) {
        return call(h -> ArrowStreams.importStream(allocator,
                address -> scanFilesNative(h, dataFiles, columns, filter, batchRows, address)));
    }

    /**
     * As {@link #scanFiles(BufferAllocator, String[], String[], String, int)}, with a last
     * {@code _distance} column (double, null where the row has no vector): each row's distance from
     * {@code search}'s query ({@code search.k()} is not used).
     */
    public ArrowReader scanWithDistances(BufferAllocator allocator, String[] dataFiles, String[] columns,
            String filter, VectorSearch search, int batchRows) {
        return call(h -> ArrowStreams.importStream(allocator, address -> distancesNative(h, dataFiles, columns,
                filter, search.column(), search.query(), search.metric(), batchRows, address)));
    }

    /**
     * The {@code search.k()} rows of the given data files nearest {@code search}'s query among those
     * {@code filter} passes (null for every row), nearest first, with {@code columns} (all when null)
     * and a last {@code _distance} column (double). Rows without a vector come last, with a null
     * distance, when fewer than k rows have one. The files are searched in parallel natively and
     * their answers merged, so one call over every file of a snapshot is the global top-k. Files
     * with an HNSW graph of the column (see {@link #createVectorIndex}) are searched through it as
     * {@code search.efSearch()} says.
     */
    public ArrowReader search(BufferAllocator allocator, String[] dataFiles, String[] columns, String filter,
            VectorSearch search, int batchRows) {
        return call(h -> ArrowStreams.importStream(allocator, address -> searchNative(h, dataFiles, columns,
                filter, search.column(), search.query(), search.metric(), search.k(), search.efSearch(),
                search.backend(), search.nullsFirst(), batchRows, address)));
    }

    /**
     * Many searches at once (a similarity join's batch): for each of {@code searches}, the rows
     * {@link #search} returns for it, after a first {@code _query} column (int) holding the search's
     * position in {@code searches}; the rows of each search together, in their order, nearest first.
     * The searches differ only in their queries (one column, metric, k, index use, backend and
     * null order; a search that differs otherwise is refused). Each data file's filter and deletes
     * are read once for all of them and its vectors compared with every query in one pass.
     */
    public ArrowReader searchMany(BufferAllocator allocator, String[] dataFiles, String[] columns, String filter,
            List<VectorSearch> searches, int batchRows) {
        if (searches.isEmpty()) {
            throw new InvalidArgumentException("a batched vector search needs at least one query");
        }
        VectorSearch first = searches.get(0);
        int dimension = first.query().length;
        float[] queries = new float[Math.multiplyExact(dimension, searches.size())];
        for (int i = 0; i < searches.size(); i++) {
            VectorSearch s = searches.get(i);
            if (!s.withQuery(first.query()).equals(first)) {
                throw new InvalidArgumentException("search " + i + " of a batch differs from the first in more than its query: "
                        + s + " vs " + first);
            }
            float[] query = s.query();
            if (query.length != dimension) {
                throw new InvalidArgumentException("query " + i + " of a batch has " + query.length + " values, the first "
                        + dimension);
            }
            System.arraycopy(query, 0, queries, i * dimension, dimension);
        }
        return call(h -> ArrowStreams.importStream(allocator, address -> searchManyNative(h, dataFiles, columns, filter,
                first.column(), queries, searches.size(), first.metric(), first.k(), first.efSearch(), first.backend(),
                first.nullsFirst(), batchRows, address)));
    }

    /**
     * The values of the bigint column {@code keyColumn} of the {@code search.k()} rows nearest the
     * query, nearest first: {@link #search} for callers that want only the rows' keys (and no Arrow).
     */
    public long[] searchKeys(String[] dataFiles, String keyColumn, String filter, VectorSearch search) {
        try (BufferAllocator allocator = Allocators.child("search-keys");
                ArrowReader reader = search(allocator, dataFiles, new String[] {keyColumn}, filter, search, 1024)) {
            List<Long> keys = new ArrayList<>();
            while (reader.loadNextBatch()) {
                org.apache.arrow.vector.BigIntVector column = (org.apache.arrow.vector.BigIntVector) reader.getVectorSchemaRoot().getVector(0);
                for (int i = 0; i < column.getValueCount(); i++) {
                    keys.add(column.isNull(i) ? null : column.get(i));
                }
            }
            return keys.stream().mapToLong(k -> {
                if (k == null) {
                    throw new InvalidArgumentException("key column '" + keyColumn + "' holds a null among the nearest rows");
                }
                return k;
            }).toArray();
        } catch (java.io.IOException e) {
            throw new HyperStreamIOException("reading the nearest rows' keys: " + e.getMessage(), e);
        } catch (ClassCastException e) {
            throw new InvalidArgumentException("key column '" + keyColumn + "' is not a bigint column");
        }
    }

    /**
     * Declares an HNSW index on a float vector column and builds it for every live data file from
     * the vectors kept beside it, without rewriting data; files written later are indexed as they
     * are written. {@code definition} is JSON, every field optional:
     * {@code {"type":"hnsw","metric":"l2","m":16,"ef_construction":200}}. Progress goes to stderr,
     * one line per file. Returns the number of files indexed.
     */
    public long createVectorIndex(String column, String definition) {
        return call(h -> createVectorIndexNative(h, column, definition));
    }

    /**
     * Checks a vector index definition (as {@link #createVectorIndex} takes it) and returns it with
     * every default filled in, the form {@link #vectorIndex} reports; a bad one raises
     * {@link InvalidArgumentException} naming what is wrong.
     */
    public static String normalizeVectorIndex(String definition) {
        NativeLibrary.load();
        return normalizeVectorIndexNative(definition);
    }

    /** Drops a column's vector index (searches are exact again); returns the files it covered. */
    public long dropVectorIndex(String column) {
        return call(h -> dropVectorIndexNative(h, column));
    }

    /**
     * The HNSW graphs built through this handle so far: data files indexed as they were written or
     * when an index was declared ({@link #createVectorIndex}), the vectors in them, and the time spent.
     */
    public record IndexBuilds(long files, long vectors, long nanos) {
        public long millis() {
            return nanos / 1_000_000;
        }
    }

    /** The HNSW graphs built through this handle so far (engines report them as index build progress). */
    public IndexBuilds indexBuilds() {
        return call(h -> Records.one(address -> indexBuildsNative(h, address), IndexBuilds.class));
    }

    /** The JSON definition of a column's vector index, or null when it has none. */
    public String vectorIndex(String column) {
        return call(h -> vectorIndexNative(h, column));
    }

    /**
     * Declares a scalar index on a column (booleans, integers, floats, strings, binary, dates,
     * timestamps, decimals) and builds it for every live data file from the column's values,
     * without rewriting data; files written later (appends, compaction) are indexed as they are
     * written. Filtered scans then read only the rows the index leaves, exactly as without it.
     * Returns the number of files indexed.
     */
    public long createScalarIndex(String column) {
        return call(h -> createScalarIndexNative(h, column));
    }

    /** Drops a column's scalar index; returns the files it covered. */
    public long dropScalarIndex(String column) {
        return call(h -> dropScalarIndexNative(h, column));
    }

    /**
     * Makes {@code columns} exactly the columns with a scalar index: builds the missing ones (for the
     * files already there, without rewriting them) and drops the others.
     */
    public void setScalarIndexes(List<String> columns) {
        List<String> present = scalarIndexes();
        for (String column : columns) {
            if (!present.contains(column)) {
                createScalarIndex(column);
            }
        }
        for (String column : present) {
            if (!columns.contains(column)) {
                dropScalarIndex(column);
            }
        }
    }

    /**
     * The Arrow field of a float vector column of {@code dimension} elements, as tables store it
     * (a fixed-size list of non-null floats); the dimension checked as {@link Limits#dimension} does.
     */
    public static Field vectorField(String name, boolean nullable, long dimension) {
        int checked = Limits.dimension("vector column '" + name + "'", dimension);
        Field item = new Field("item", FieldType.notNullable(
                new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
                        org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE)), null);
        return new Field(name, new FieldType(nullable,
                new org.apache.arrow.vector.types.pojo.ArrowType.FixedSizeList(checked), null), List.of(item));
    }

    /** Table property naming the columns with a scalar index: {@code "user_id, category"}. */
    public static final String INDEX_COLUMNS = "hyperstream.index.columns";

    /** The columns an {@link #INDEX_COLUMNS} value names (none for null). */
    public static List<String> indexColumns(String value) {
        return value == null ? List.of()
                : Arrays.stream(value.split(",")).map(String::trim).filter(c -> !c.isEmpty()).toList();
    }

    /** Table property, given at creation, that partitions the table: {@code "category, bucket(id, 16), day(ts)"}. */
    public static final String PARTITIONING = "hyperstream.partitioning";
    /** Table property, given at creation, that sorts every data file: {@code "id, ts DESC NULLS LAST"}. */
    public static final String SORTED_BY = "hyperstream.sorted-by";

    /** The table's partition fields ({@code bucket(id, 16)}, {@code day(ts)}, {@code category}); empty when unpartitioned. */
    public List<String> partitioning() {
        return List.of(call(NativeTable::partitioningNative));
    }

    /** The table's sort order, a field each ({@code ts DESC NULLS LAST}); empty when unsorted. */
    public List<String> sortOrder() {
        return List.of(call(NativeTable::sortOrderNative));
    }

    /**
     * The row lineage columns of a format version 3 table, which a read names to get them (they are
     * not among the schema's columns): each row's id and the sequence number of the snapshot that
     * last wrote it. Both are longs.
     */
    public static final List<String> ROW_LINEAGE = List.of("_row_id", "_last_updated_sequence_number");

    /** The creation property of the table's Iceberg format version: 2 (the default) or 3 (row lineage). */
    public static final String FORMAT_VERSION = "format-version";

    /** The table's Iceberg format version: 2, or 3 with row lineage ({@link #ROW_LINEAGE}) and deletion vectors. */
    public int formatVersion() {
        return call(h -> formatVersionNative(h));
    }

    /** The columns with a scalar index, in table order. */
    public List<String> scalarIndexes() {
        return List.of(call(h -> scalarIndexesNative(h)));
    }

    /**
     * What a scan of {@code dataFiles} filtered by {@code filter} (JSON, or null) reads and what each
     * pruning level leaves out: data files by their bounds, row groups by footer statistics, by bloom
     * filters and by scalar indexes, rows by scalar indexes and delete files. Reads no data page.
     */
    public record ScanExplain(long files, long filesPruned, long rowGroups, long rowGroupsPrunedByStats,
            long rowGroupsPrunedByBloom, long rowGroupsPrunedByIndex, long rows, long rowsDeleted, long rowsPrunedByIndex,
            long rowsRead, long pages, long pagesRead, long bytesRead, long filesByGraph, long filesExact) {
        /** One line, as engines' plans print it. */
        @Override
        public String toString() {
            return "files " + (files - filesPruned) + "/" + files
                    + ", row groups " + (rowGroups - rowGroupsPrunedByStats - rowGroupsPrunedByBloom - rowGroupsPrunedByIndex)
                    + "/" + rowGroups + " (stats pruned " + rowGroupsPrunedByStats + ", bloom pruned " + rowGroupsPrunedByBloom
                    + ", index pruned " + rowGroupsPrunedByIndex + ")"
                    + ", pages read " + pagesRead + "/" + pages
                    + ", rows read " + rowsRead + "/" + rows
                    + " (index pruned " + rowsPrunedByIndex + ", deleted " + rowsDeleted + ")"
                    + ", bytes read " + bytesRead;
        }

        /**
         * How a vector search ({@link #explainSearch}) goes through its files, as engines' plans print
         * it: how many it walks the HNSW graph of and how many it compares exactly.
         */
        public String searchChoice() {
            return "index=[graph " + filesByGraph + " files, exact " + filesExact + " files]";
        }
    }

    /**
     * Scans {@code dataFiles} natively (the rows {@code filter} passes, JSON or null, with {@code
     * columns}, null for all) and returns how many rows it read, without handing any to Java: the
     * library's own scan speed.
     */
    public long scanRowCount(String[] dataFiles, String[] columns, String filter) {
        return call(h -> scanRowCountNative(h, dataFiles, columns, filter));
    }

    /**
     * {@code dataFiles} (from {@link #dataFiles}) as scan splits: a file of several row groups and
     * more than {@code splitRows} rows becomes runs of whole row groups of about {@code splitRows}
     * rows each (each description counts its own rows), read once between them; the others stay
     * whole. For plain scans: a vector search takes whole files.
     */
    public String[] splitFiles(String[] dataFiles, long splitRows) {
        return call(h -> splitFilesNative(h, dataFiles, splitRows));
    }

    /**
     * How a scan of {@code dataFiles} (from {@link #dataFiles}) is divided among engine tasks, each
     * the files of one split: a split per file, a big one a split per run of its row groups of about
     * {@code splitRows} rows ({@link #splitFiles}), and under a LIMIT without a filter only as many
     * files as surely hold the limit's rows. A vector top-k is divided by {@link SearchPlan#splits}.
     * What Spark's and Trino's planners share.
     */
    public String[][] planSplits(String[] dataFiles, long limit, boolean filtered, long splitRows) {
        List<String[]> splits = new ArrayList<>();
        long planned = 0;
        for (String file : splitFiles(dataFiles, splitRows)) {
            if (limit > 0 && !filtered && planned >= limit) {
                break; // without a filter, the files so far hold the limit's rows (deleted rows not counted)
            }
            splits.add(new String[] {file});
            planned += DataFiles.undeletedRows(file);
        }
        return splits.toArray(String[][]::new);
    }

    /** See {@link ScanExplain}. */
    public ScanExplain explain(String[] dataFiles, String filter) {
        return explainFiles(dataFiles, filter).explain();
    }

    /**
     * The {@link ScanExplain} of {@code search} over {@code dataFiles} among the rows {@code filter}
     * (JSON, or null) passes, with how many files the search walks the HNSW graph of and how many it
     * compares exactly ({@link ScanExplain#filesByGraph}, {@link ScanExplain#filesExact}): the choice
     * the search makes per file, each file's passing rows estimated by what pruning leaves. A file
     * counted for its graph may still be compared exactly as the search runs (it counts the passing
     * rows exactly). Without a filter no data file is opened.
     */
    public ScanExplain explainSearch(String[] dataFiles, String filter, VectorSearch search) {
        return explained(h -> address -> explainSearchNative(h, dataFiles, filter, search.column(), search.query(),
                search.metric(), search.k(), search.efSearch(), address)).explain();
    }

    /**
     * A filtered read's {@link ScanExplain} and the data files that hold a row to read: the files a
     * scan has to open, those whose every row bounds, statistics, indexes or deletes rule out left out.
     */
    public record ExplainedFiles(ScanExplain explain, String[] files) {
        /**
         * The native explain's one row: a column per {@link ScanExplain} component (its name in
         * snake case) and {@code reading}, the descriptions. A count without a component, or a
         * component without a count, fails instead of reading as zero.
         */
        static ExplainedFiles of(org.apache.arrow.vector.VectorSchemaRoot row) {
            ScanExplain explain = Records.bind(row, 0, ScanExplain.class, java.util.Set.of(READING));
            org.apache.arrow.vector.complex.ListVector reading =
                    (org.apache.arrow.vector.complex.ListVector) row.getVector(READING);
            return new ExplainedFiles(explain, reading.getObject(0).stream().map(String::valueOf).toArray(String[]::new));
        }

        /** The column of the descriptions of the files that hold a row to read. */
        static final String READING = "reading";
    }

    /** See {@link ExplainedFiles}. */
    public ExplainedFiles explainFiles(String[] dataFiles, String filter) {
        return explained(h -> address -> explainNative(h, dataFiles, filter, address));
    }

    /** The one row a native explain ({@code export}, given the handle) streams, bound. */
    private ExplainedFiles explained(java.util.function.LongFunction<java.util.function.LongConsumer> export) {
        try (BufferAllocator allocator = Allocators.child("explain");
                ArrowReader reader = call(h -> ArrowStreams.importStream(allocator, export.apply(h)))) {
            if (!reader.loadNextBatch()) {
                throw new InternalException("the native explain returned no row");
            }
            return ExplainedFiles.of(reader.getVectorSchemaRoot());
        } catch (java.io.IOException e) {
            throw new HyperStreamIOException("reading the native explain: " + e.getMessage(), e);
        }
    }

    /**
     * Removes the files under the table's {@code data/} and {@code metadata/} that no version of
     * the table references (what killed or aborted writers left) and that last changed before
     * {@code olderThanMillis} (epoch milliseconds; give a margin, since a writer still writing keeps
     * its files until it commits). Returns their paths, relative to the table.
     */
    public List<String> removeOrphanFiles(long olderThanMillis) {
        return List.of(call(h -> removeOrphanFilesNative(h, olderThanMillis)));
    }

    /**
     * Expires snapshots as Iceberg's {@code ExpireSnapshots} does and deletes the files only they
     * referenced; time travel to them fails afterwards. Each branch keeps its newest {@code
     * retainLast} ancestors and those younger than {@code olderThanMillis} (a branch's own retention
     * first; a null argument takes the table's {@code history.expire.*} properties, as Iceberg's
     * procedure does); a tag keeps its snapshot. Returns the expired snapshots' ids.
     */
    public long[] expireSnapshots(Long olderThanMillis, Integer retainLast) {
        return call(h -> expireSnapshotsNative(h, olderThanMillis != null, olderThanMillis == null ? 0 : olderThanMillis,
                retainLast != null, retainLast == null ? 0 : retainLast));
    }

    /** Moves this handle to the latest committed version and returns that version number. */
    public long refresh() {
        return call(NativeTable::refreshNative);
    }

    /** The current snapshot's id, or -1 for a table without data. */
    public long currentSnapshotId() {
        return call(NativeTable::currentSnapshotNative);
    }

    /** Every snapshot, oldest first. */
    public List<SnapshotInfo> snapshots() {
        return call(h -> Records.read(address -> snapshotsNative(h, address), SnapshotInfo.class));
    }

    /**
     * Streams the table as {@code version} sees it with {@code columns} (all when null).
     */
    public ArrowReader scan(BufferAllocator allocator, TableVersion version, String[] columns, int batchRows) {
        return call(h -> ArrowStreams.importStream(allocator, address -> scanNative(h, version.snapshotId() != null,
                version.snapshotIdOrZero(), version.asOfMillis() != null, version.asOfMillisOrZero(), columns, batchRows,
                address)));
    }

    /** {@code into} with the pairs of {@code flat} (key, value, key, value, ...), as the native side answers maps. */
    static Map<String, String> unflatten(String[] flat, Map<String, String> into) {
        for (int i = 0; i + 1 < flat.length; i += 2) {
            into.put(flat[i], flat[i + 1]);
        }
        return into;
    }

    static String[] flatten(Map<String, String> map) {
        if (map == null) {
            return new String[0];
        }
        String[] flat = new String[map.size() * 2];
        int i = 0;
        for (Map.Entry<String, String> e : map.entrySet()) {
            flat[i++] = e.getKey();
            flat[i++] = e.getValue();
        }
        return flat;
    }

    private static native long createNative(String location, long schemaAddress, String[] properties, String[] options);

    private static native long loadNative(String location, String[] options, boolean atSnapshot, long snapshotId,
            boolean asOf, long asOfMillis);

    private static native void exportSchema(long handle, long schemaAddress);

    private static native long appendNative(long handle, long streamAddress);

    private static native long refreshNative(long handle);

    private static native long currentSnapshotNative(long handle);

    private static native void snapshotsNative(long handle, long streamAddress);

    private static native String[] writeDataFilesNative(long handle, long streamAddress);

    private static native long openWriterNative(long handle, boolean lineage);

    private static native boolean isWritePropertyNative(String key);

    private static native String[] partitioningNative(long handle);

    private static native String[] sortOrderNative(long handle);

    private static native int formatVersionNative(long handle);

    private static native long replaceNative(long handle, long schemaAddress, String[] properties);

    private static native String stageReplaceNative(long handle, long schemaAddress, String[] properties);

    private static native long commitReplaceNative(long handle, String staging, long schemaAddress, String[] properties,
            String[] dataFiles);

    private static native void abortReplaceNative(long handle, String staging);

    private static native long commitAppendNative(long handle, String[] dataFiles, boolean overwrite);

    private static native void deleteFilesNative(long handle, String[] dataFiles);

    private static native String rowDeletesNative(String dataFile, long[] positions);

    private static native void metadataTableNative(long handle, String name, long streamAddress);

    private static native void metadataTableSchemaNative(String name, long schemaAddress);

    private static native long commitRowChangesNative(long handle, long readSnapshot, String operation, String scanFilter,
            String[] deletes, String[] added);

    private static native void deleteWhereNative(long handle, String filter, long streamAddress);

    private static native long rowCountNative(long handle, boolean atSnapshot, long snapshotId, boolean asOf,
            long asOfMillis);

    private static native void setPropertiesNative(long handle, String[] keys, String[] values);

    private static native String[] propertiesNative(long handle);

    private static native String[] optionsNative(long handle, boolean forTasks);

    private static native long purgeFilesNative(long handle);

    private static native void columnStatisticsNative(long handle, boolean atSnapshot, long snapshotId, boolean asOf,
            long asOfMillis, long streamAddress);

    private static native void aggregateNative(long handle, boolean atSnapshot, long snapshotId, boolean asOf,
            long asOfMillis, String[] kinds, String[] columns,
            long streamAddress);

    private static native void rewriteDataFilesNative(long handle, long targetRows, long streamAddress);

    private static native void rollbackToNative(long handle, long snapshotId);

    private static native void addColumnNative(long handle, long schemaAddress, String defaultJson);

    /** Renames {@code column}, or drops it when {@code newName} is null. */
    private static native void renameColumnNative(long handle, String column, String newName);

    private static native String[] dataFilesNative(long handle, boolean atSnapshot, long snapshotId, boolean asOf,
            long asOfMillis, String filter);

    private static native void scanFilesNative(long handle, String[] dataFiles, String[] columns, String filter,
            int batchRows, long streamAddress);

    private static native void distancesNative(long handle, String[] dataFiles, String[] columns, String filter,
            String vectorColumn, float[] query, String metric, int batchRows, long streamAddress);

    private static native void searchNative(long handle, String[] dataFiles, String[] columns, String filter,
            String vectorColumn, float[] query, String metric, long k, long efSearch, String backend,
            boolean nullsFirst, int batchRows, long streamAddress);

    private static native void searchManyNative(long handle, String[] dataFiles, String[] columns, String filter,
            String vectorColumn, float[] queries, int queryCount, String metric, long k, long efSearch, String backend,
            boolean nullsFirst, int batchRows, long streamAddress);

    private static native long createVectorIndexNative(long handle, String column, String definition);

    private static native long dropVectorIndexNative(long handle, String column);

    private static native String normalizeVectorIndexNative(String definition);

    private static native String vectorIndexNative(long handle, String column);

    private static native void indexBuildsNative(long handle, long streamAddress);

    private static native long createScalarIndexNative(long handle, String column);

    private static native long dropScalarIndexNative(long handle, String column);

    private static native String[] scalarIndexesNative(long handle);

    private static native void explainNative(long handle, String[] dataFiles, String filter, long streamAddress);

    private static native void explainSearchNative(long handle, String[] dataFiles, String filter, String column,
            float[] query, String metric, long k, long efSearch, long streamAddress);

    private static native String[] splitFilesNative(long handle, String[] dataFiles, long splitRows);

    private static native long scanRowCountNative(long handle, String[] dataFiles, String[] columns, String filter);

    private static native void scanNative(long handle, boolean atSnapshot, long snapshotId, boolean asOf, long asOfMillis,
            String[] columns,
            int batchRows, long streamAddress);

    private static native String[] removeOrphanFilesNative(long handle, long olderThanMillis);

    private static native long[] expireSnapshotsNative(long handle, boolean hasOlderThan, long olderThanMillis,
            boolean hasRetainLast, int retainLast);
}
