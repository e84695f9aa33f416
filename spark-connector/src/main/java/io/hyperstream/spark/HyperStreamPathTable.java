package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A stored HyperStream table by path: batch reads (one split per data file, column pruning, time
 * travel by option) and appends (tasks write data files natively, the driver commits them as one
 * snapshot). A path with no table yet is created by the first write.
 */
final class HyperStreamPathTable implements SupportsRead, SupportsWrite {
    private final PathOptions options;
    private final StructType schema;

    HyperStreamPathTable(PathOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
    }

    @Override
    public String name() {
        return "hyperstream:" + options.path();
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
        return new Builder();
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new WriteBuilder() {
            @Override
            public org.apache.spark.sql.connector.write.Write build() {
                return new HyperStreamWrite(options, info.schema());
            }
        };
    }

    private final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns, Scan, Batch {
        private StructType readSchema = schema;

        @Override
        public void pruneColumns(StructType requiredSchema) {
            readSchema = requiredSchema;
        }

        @Override
        public Scan build() {
            return this;
        }

        @Override
        public StructType readSchema() {
            return readSchema;
        }

        @Override
        public String description() {
            String at = options.snapshotId() >= 0 ? " snapshot=" + options.snapshotId()
                    : options.asOfMillis() >= 0 ? " as-of=" + options.asOfMillis() : "";
            return "HyperStreamScan " + options.path() + at + " columns=" + Arrays.toString(readSchema.fieldNames());
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
                String[] columns = readSchema.fieldNames();
                return Arrays.stream(table.dataFiles(options.snapshotId(), options.asOfMillis()))
                        .map(file -> new PathInputPartition(options, file, columns))
                        .toArray(InputPartition[]::new);
            }
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return new HyperStreamReaderFactory();
        }
    }
}
