package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.CommitStateUnknownException;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.NotFoundException;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * An append (or an overwrite): tasks write data files natively; {@link #commit} makes them one
 * snapshot, which for an overwrite replaces every row the table had.
 */
final class HyperStreamWrite implements Write, BatchWrite {
    private final PathOptions options;
    private final StructType schema;
    private final boolean overwrite;

    /** Column to normalized index definition, or to {@link PathOptions#NO_INDEX}. */
    private final Map<String, String> indexes = new java.util.HashMap<>();
    /** Set once the rows are committed, or may be: from then on an abort must not delete their files. */
    private volatile boolean committed;
    /** The HNSW graphs the commit built for the files already there (a declared index). */
    private volatile NativeTable.IndexBuilds declared = new NativeTable.IndexBuilds(0, 0, 0);

    /** Where a staged write hands its files instead of committing them (null: {@link #commit} commits). */
    private final java.util.function.Consumer<String[]> staged;

    HyperStreamWrite(PathOptions options, StructType schema, boolean overwrite) {
        this(options, schema, overwrite, null);
    }

    /** A write whose files {@code staged} takes at the commit, to commit them later itself (a staged replacement). */
    HyperStreamWrite(PathOptions options, StructType schema, boolean overwrite, java.util.function.Consumer<String[]> staged) {
        this.options = options;
        this.schema = schema;
        this.overwrite = overwrite;
        this.staged = staged;
        // Index options are checked before any task runs, so that a bad one fails the write
        // before anything is committed.
        for (Map.Entry<String, String> index : options.write().indexes().entrySet()) {
            String column = index.getKey();
            if (index.getValue().equalsIgnoreCase(PathOptions.NO_INDEX)) {
                indexes.put(column, PathOptions.NO_INDEX);
                continue;
            }
            boolean vector = Arrays.stream(schema.fields()).anyMatch(f -> f.name().equals(column)
                    && f.dataType() instanceof org.apache.spark.sql.types.ArrayType array
                    && array.elementType() instanceof org.apache.spark.sql.types.FloatType);
            if (!vector) {
                throw new IllegalArgumentException("option 'vector." + column + ".index': '" + column
                        + "' is not a vector column (array<float>) of the written data");
            }
            indexes.put(column, checkedIndex("option 'vector." + column + ".index'", index.getValue()));
        }
        ensureTable(options, schema).close();
    }

    /** Opens the table at the path, creating it with {@code schema}'s columns if there is none. */
    static NativeTable ensureTable(PathOptions options, StructType schema) {
        try {
            return NativeTable.load(options.path(), options.storage());
        } catch (NotFoundException missing) {
            try (BufferAllocator allocator = Allocators.child("spark-create")) {
                return NativeTable.create(options.path(), SparkTypes.toArrowSchema(schema, options.write().vectors()),
                        options.write().creation(), options.storage(), allocator);
            } catch (InvalidArgumentException raced) {
                // Another writer created it first.
                return NativeTable.load(options.path(), options.storage());
            }
        }
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new HyperStreamDataWriter.Factory(options.forTasks(), schema);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        String[] files = dataFiles(messages);
        if (staged != null) {
            staged.accept(files);
            committed = true; // the stage owns them now: its abort removes them
            return;
        }
        if (files.length == 0 && indexes.isEmpty() && !overwrite) {
            return;
        }
        try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
            try {
                if (overwrite) {
                    table.commitOverwrite(files);
                } else if (files.length > 0) {
                    table.commitAppend(files);
                }
            } catch (CommitStateUnknownException unknown) {
                // The commit may have taken effect: the abort Spark calls next must keep the files.
                committed = true;
                throw unknown;
            }
            committed = true;
            declareIndexes(table);
            // This handle built nothing but the declared indexes' graphs.
            declared = table.indexBuilds();
        }
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return WriteMetrics.supported();
    }

    /** Spark 4 posts these after the commit; Spark 3.5's writes take no driver metrics. */
    public CustomTaskMetric[] reportDriverMetrics() {
        return WriteMetrics.driver(declared);
    }

    /**
     * Applies the {@code vector.<column>.index} options after the data is committed: a new index is
     * built from the vectors already stored (progress in the driver's log), one with other
     * parameters than the column's index rebuilds it, {@code none} drops it.
     */
    private void declareIndexes(NativeTable table) {
        for (Map.Entry<String, String> index : indexes.entrySet()) {
            applyVectorIndex(table, index.getKey(), index.getValue());
        }
    }

    /**
     * Gives {@code column} the vector index {@code definition} (normalized, or {@link
     * PathOptions#NO_INDEX}): nothing when it has that one, else the old one is dropped and the new
     * one built from the stored vectors.
     */
    static void applyVectorIndex(NativeTable table, String column, String definition) {
        String existing = table.vectorIndex(column);
        if (definition.equals(existing) || existing == null && definition.equals(PathOptions.NO_INDEX)) {
            return;
        }
        if (existing != null) {
            table.dropVectorIndex(column);
        }
        if (!definition.equals(PathOptions.NO_INDEX)) {
            table.createVectorIndex(column, definition);
        }
    }

    /** A {@code vector.<column>.index} value checked and normalized; the message names {@code where} it came from. */
    static String checkedIndex(String where, String value) {
        String definition = PathOptions.indexDefinition(value);
        if (definition.equalsIgnoreCase(PathOptions.NO_INDEX)) {
            return PathOptions.NO_INDEX;
        }
        try {
            return NativeTable.normalizeVectorIndex(definition);
        } catch (InvalidArgumentException e) {
            throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        String[] files = dataFiles(messages);
        if (files.length > 0 && !committed) {
            try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
                table.deleteFiles(files);
            }
        }
    }

    private static String[] dataFiles(WriterCommitMessage[] messages) {
        return Arrays.stream(messages)
                .filter(Objects::nonNull)
                .flatMap(m -> Arrays.stream(((HyperStreamDataWriter.Written) m).dataFiles()))
                .toArray(String[]::new);
    }

    @Override
    public String description() {
        return (overwrite ? "HyperStreamOverwrite " : "HyperStreamAppend ") + options.path() + " " + schema.simpleString();
    }
}
