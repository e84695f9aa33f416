package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.RowDeletes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * UPDATE, MERGE INTO and the DELETEs the native filter cannot answer alone, merge-on-read: Spark
 * scans the table at one snapshot with each row's id ({@code _file}, {@code _pos}), decides what
 * happens to each row (a target row matched twice is Spark's error) and hands the tasks the rows to
 * delete and the rows to insert (an updated row is both). Tasks write new data files natively (with
 * their indexes) and gather deleted positions per data file; the driver commits both as one
 * snapshot of position deletes (deletion vectors in format version 3) and data files, which fails
 * cleanly when another writer changed rows of a file the scan read.
 */
final class RowChanges implements SupportsDelta {
    private final PathOptions options;
    private final StructType schema;
    private final Command command;
    /** The snapshot the operation's scan reads and its commit builds on (-1: the table was empty). */
    private final long snapshot;
    /** Whether the table keeps row lineage (format version 3): an updated row keeps its {@code _row_id}. */
    private final boolean lineage;
    /** The operation's scan, once Spark built it: its pushed filter is what the commit checks new rows against. */
    private final java.util.concurrent.atomic.AtomicReference<TableScanBuilder> scan = new java.util.concurrent.atomic.AtomicReference<>();

    RowChanges(PathOptions options, StructType schema, Command command) {
        if (options.travels()) {
            throw new IllegalArgumentException("cannot change " + options.path() + " as of an earlier snapshot");
        }
        this.schema = schema;
        this.command = command;
        try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
            this.snapshot = table.currentSnapshotId();
            this.lineage = table.formatVersion() >= 3;
        }
        this.options = snapshot < 0 ? options : options.at(snapshot);
    }

    @Override
    public Command command() {
        return command;
    }

    @Override
    public String description() {
        return "HyperStream " + command + " of " + options.path() + " at snapshot " + snapshot;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
        TableScanBuilder builder = new TableScanBuilder(options, schema);
        scan.set(builder);
        return builder;
    }

    @Override
    public NamedReference[] rowId() {
        return new NamedReference[] {Expressions.column(NativeTable.FILE_PATH), Expressions.column(NativeTable.ROW_POSITION)};
    }

    /** In a format version 3 table, the row id an updated row keeps. */
    @Override
    public NamedReference[] requiredMetadataAttributes() {
        return lineage ? new NamedReference[] {Expressions.column(NativeTable.ROW_ID)} : new NamedReference[0];
    }

    /** An update is a delete and an insert, but in a format version 3 table, where the new row keeps the old one's id. */
    @Override
    public boolean representUpdateAsDeleteAndInsert() {
        return !lineage;
    }

    @Override
    public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Write write = new Write(options, info.schema(), snapshot, command, scan, lineage, new java.util.concurrent.atomic.AtomicBoolean());
        return new DeltaWriteBuilder() {
            @Override
            public DeltaWrite build() {
                return write;
            }
        };
    }

    /** What a task sends the driver: the data files it wrote and its deleted rows' fragments. */
    record Changed(String[] dataFiles, String[] deletes) implements WriterCommitMessage {}

    /**
     * The write of a row-level operation: tasks of {@link Writer}, one commit, checked against the
     * commits since {@code snapshot} under the table's {@code write.<command>.isolation-level} with
     * the filter the operation's {@code scan} pushed. {@code maybeCommitted} is set when the
     * commit's outcome is unknown: it may have landed (its deletes are then live), so the abort
     * Spark calls next must keep the new rows' files.
     */
    private record Write(PathOptions options, StructType schema, long snapshot, Command command,
            java.util.concurrent.atomic.AtomicReference<TableScanBuilder> scan, boolean lineage,
            java.util.concurrent.atomic.AtomicBoolean maybeCommitted) implements DeltaWrite, DeltaBatchWrite {
        @Override
        public DeltaBatchWrite toBatch() {
            return this;
        }

        @Override
        public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
            HyperStreamDataWriter.Factory inserts = new HyperStreamDataWriter.Factory(options.forTasks(), schema, lineage);
            return (DeltaWriterFactory) (partition, task) -> new Writer(inserts.createWriter(partition, task));
        }

        @Override
        public void commit(WriterCommitMessage[] messages) {
            String[] files = dataFiles(messages);
            String[] deletes = Arrays.stream(messages).filter(Objects::nonNull)
                    .flatMap(m -> Arrays.stream(((Changed) m).deletes())).toArray(String[]::new);
            try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
                TableScanBuilder read = scan.get();
                String operation = command.name().toLowerCase(java.util.Locale.ROOT);
                table.commitRowChanges(snapshot, operation, read == null ? null : read.pushedFilter(), deletes, files);
            } catch (io.hyperstream.jni.CommitStateUnknownException unknown) {
                maybeCommitted.set(true);
                throw unknown;
            }
        }

        @Override
        public void abort(WriterCommitMessage[] messages) {
            String[] files = dataFiles(messages);
            if (files.length > 0 && !maybeCommitted.get()) {
                try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
                    table.deleteFiles(files);
                }
            }
        }

        private static String[] dataFiles(WriterCommitMessage[] messages) {
            return Arrays.stream(messages).filter(Objects::nonNull)
                    .flatMap(m -> Arrays.stream(((Changed) m).dataFiles())).toArray(String[]::new);
        }

        @Override
        public String description() {
            return "HyperStreamRowChanges " + options.path() + " at snapshot " + snapshot;
        }
    }

    /** One task: inserted rows to a native writer, deleted rows gathered by data file. */
    private static final class Writer implements DeltaWriter<InternalRow> {
        private final HyperStreamDataWriter inserts;
        private final RowDeletes deletes = new RowDeletes();

        Writer(HyperStreamDataWriter inserts) {
            this.inserts = inserts;
        }

        @Override
        public void delete(InternalRow metadata, InternalRow id) {
            if (id.isNullAt(0) || id.isNullAt(1)) {
                throw new IllegalStateException("a row to delete came without its _file and _pos");
            }
            deletes.add(id.getUTF8String(0).toString(), id.getLong(1));
        }

        /** The row replaces the one at {@code id}; in a format version 3 table it keeps that row's id ({@code metadata}). */
        @Override
        public void update(InternalRow metadata, InternalRow id, InternalRow row) throws IOException {
            delete(metadata, id);
            boolean lineage = metadata != null && metadata.numFields() > 0 && !metadata.isNullAt(0);
            inserts.writeWithRowId(row, lineage ? metadata.getLong(0) : null);
        }

        @Override
        public void insert(InternalRow row) throws IOException {
            inserts.write(row);
        }

        @Override
        public WriterCommitMessage commit() throws IOException {
            HyperStreamDataWriter.Written written = (HyperStreamDataWriter.Written) inserts.commit();
            List<String> fragments = new ArrayList<>(deletes.fragments());
            return new Changed(written.dataFiles(), fragments.toArray(String[]::new));
        }

        @Override
        public void abort() throws IOException {
            inserts.abort();
        }

        @Override
        public void close() throws IOException {
            inserts.close();
        }
    }
}
