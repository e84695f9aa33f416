package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.NotFoundException;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * An array of an array store as a DataFrame: one row per array row, its position in {@code index}
 * and its elements in {@code value} (the element itself for a 1-d array, otherwise an array of the
 * row's elements in row-major order). Reads split the rows into ranges, one task each; writes
 * append ({@code mode("append")}) or replace the array ({@code mode("overwrite")}): tasks stage
 * their rows beside the store and the driver commits every task's rows as one change.
 */
final class HyperStreamArrayTable implements SupportsRead, SupportsWrite {
    private final ArrayOptions options;
    private final StructType schema;

    HyperStreamArrayTable(ArrayOptions options, StructType given) {
        this.options = options;
        this.schema = storedSchema(options).orElse(given);
    }

    /** The schema of the array as it is stored, if there is one. */
    static java.util.Optional<StructType> storedSchema(ArrayOptions options) {
        try (ArrayStore store = ArrayStore.open(options.path(), false, true);
                BufferAllocator allocator = Allocators.child("spark-array-schema");
                ArrowReader empty = store.scan(allocator, options.array(), 0, 0, 1, true)) {
            return java.util.Optional.of(SparkTypes.toStructType(empty.getVectorSchemaRoot().getSchema()));
        } catch (NotFoundException missing) {
            return java.util.Optional.empty();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public String name() {
        return "hyperstream-array:" + options.path() + "#" + options.array();
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        // Written rows need only a value column: the array decides how they are stored.
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE,
                TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
        return () -> new ArrayScan(options, schema);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new TruncatableWrite(overwrite -> new HyperStreamArrayWrite(options, info.schema(), overwrite));
    }

    /** Row ranges of the array as counted when the scan is planned. */
    private record ArrayScan(ArrayOptions options, StructType schema) implements Scan, Batch {
        @Override
        public StructType readSchema() {
            return schema;
        }

        @Override
        public String description() {
            return "HyperStreamArrayScan " + options.path() + " array=" + options.array();
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            long rows;
            try (ArrayStore store = ArrayStore.open(options.path(), false, true)) {
                rows = store.info(options.array()).rows();
            }
            return Arrays.stream(Limits.rowRanges(rows, options.splitRows()))
                    .map(range -> new ArrayInputPartition(options, range[0], range[1]))
                    .toArray(InputPartition[]::new);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return new HyperStreamReaderFactory();
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof ArrayScan scan && scan.options.path().equals(options.path())
                    && scan.options.array().equals(options.array()) && scan.schema.equals(schema);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(new Object[] {options.path(), options.array(), schema});
        }
    }

    /** Rows {@code start} to {@code end} of an array. */
    record ArrayInputPartition(ArrayOptions options, long start, long end) implements InputPartition {}
}
