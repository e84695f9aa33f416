package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.NotFoundException;
import java.util.Arrays;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/** An append: tasks write data files natively; {@link #commit} makes them one snapshot. */
final class HyperStreamWrite implements Write, BatchWrite {
    private final PathOptions options;
    private final StructType schema;

    HyperStreamWrite(PathOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
        ensureTable(options, schema).close();
    }

    /** Opens the table at the path, creating it with {@code schema}'s columns if there is none. */
    static NativeTable ensureTable(PathOptions options, StructType schema) {
        try {
            return NativeTable.load(options.path(), options.storage());
        } catch (NotFoundException missing) {
            try (BufferAllocator allocator = Allocators.child("spark-create")) {
                return NativeTable.create(options.path(), SparkTypes.toArrowSchema(schema, options.vectors()),
                        java.util.Map.of(), options.storage(), allocator);
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
        return new HyperStreamDataWriter.Factory(options);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        String[] files = dataFiles(messages);
        if (files.length == 0) {
            return;
        }
        try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
            table.commitAppend(files);
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        String[] files = dataFiles(messages);
        if (files.length > 0) {
            try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
                table.deleteFiles(files);
            }
        }
    }

    private static String[] dataFiles(WriterCommitMessage[] messages) {
        return Arrays.stream(messages)
                .filter(Objects::nonNull)
                .map(m -> ((HyperStreamDataWriter.Written) m).dataFile())
                .filter(Objects::nonNull)
                .toArray(String[]::new);
    }

    @Override
    public String description() {
        return "HyperStreamAppend " + options.path() + " " + schema.simpleString();
    }
}
