package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.CommitStateUnknownException;
import io.hyperstream.jni.NativeTable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * A replacement staged by {@link HyperStreamCatalog#stageReplace}: the rows Spark writes go into a
 * staging table that has the new definition; {@link #commitStagedChanges} makes definition and rows
 * one snapshot of the replaced table ({@link NativeTable#commitReplace}), {@link #abortStagedChanges}
 * leaves the table as it was. Readers see the old table until the commit.
 */
final class StagedReplace implements StagedTable, SupportsWrite {
    private final String name;
    private final Catalog.TableRef target;
    private final String staging;
    private final PathOptions stagingOptions;
    private final HyperStreamCatalog.Definition definition;
    private final StructType schema;
    private final List<String> files = new ArrayList<>();
    /** Set when a commit's outcome is unknown: it may have landed, so the abort keeps the files. */
    private volatile boolean maybeCommitted;

    StagedReplace(String name, Catalog.TableRef target, String staging, PathOptions stagingOptions,
            HyperStreamCatalog.Definition definition, StructType schema) {
        this.name = name;
        this.target = target;
        this.staging = staging;
        this.stagingOptions = stagingOptions;
        this.definition = definition;
        this.schema = schema;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return Set.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new TruncatableWrite(overwrite -> new HyperStreamWrite(stagingOptions, info.schema(), false, this::take));
    }

    private synchronized void take(String[] written) {
        files.addAll(Arrays.asList(written));
    }

    private synchronized String[] written() {
        return files.toArray(String[]::new);
    }

    @Override
    public void commitStagedChanges() {
        try (BufferAllocator allocator = Allocators.child("spark-replace");
                NativeTable table = NativeTable.load(target.location(), target.options())) {
            try {
                table.commitReplace(allocator, staging, definition.schema(), definition.kept(), written());
            } catch (CommitStateUnknownException unknown) {
                maybeCommitted = true;
                throw unknown;
            }
            definition.vectorIndexes().forEach((column, index) -> HyperStreamWrite.applyVectorIndex(table, column, index));
        }
    }

    @Override
    public void abortStagedChanges() {
        if (maybeCommitted) {
            return;
        }
        try (NativeTable table = NativeTable.load(target.location(), target.options())) {
            table.abortReplace(staging);
        }
    }

    /** CREATE TABLE ... AS SELECT: the table exists from the stage on; an abort drops it. */
    static final class Created implements StagedTable, SupportsWrite {
        private final HyperStreamPathTable table;
        private final Runnable drop;

        Created(HyperStreamPathTable table, Runnable drop) {
            this.table = table;
            this.drop = drop;
        }

        @Override
        public String name() {
            return table.name();
        }

        @Override
        public StructType schema() {
            return table.schema();
        }

        @Override
        public Map<String, String> properties() {
            return table.properties();
        }

        @Override
        public Set<TableCapability> capabilities() {
            return table.capabilities();
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return table.newWriteBuilder(info);
        }

        @Override
        public void commitStagedChanges() {
            // The write committed its rows already.
        }

        @Override
        public void abortStagedChanges() {
            drop.run();
        }
    }
}
