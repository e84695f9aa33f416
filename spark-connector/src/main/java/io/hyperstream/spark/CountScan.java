package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@code COUNT(*)} of a stored table answered from metadata: the driver asks the native library for
 * the snapshot's row count (manifests less the rows its delete files delete; no data file is read)
 * and the scan's one split hands Spark that one row.
 */
final class CountScan implements Scan, Batch {
    private final PathOptions options;

    CountScan(PathOptions options) {
        this.options = options;
    }

    @Override
    public StructType readSchema() {
        return new StructType().add("count(*)", DataTypes.LongType, false);
    }

    @Override
    public String description() {
        return "HyperStreamScan " + options.path() + " count(*) from metadata";
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
            return new InputPartition[] {new Count(table.rowCount(options.snapshotId(), options.asOfMillis()))};
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new Factory();
    }

    /** The split: the count itself. */
    record Count(long rows) implements InputPartition {}

    private static final class Factory implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            long rows = ((Count) partition).rows();
            return new PartitionReader<>() {
                private boolean read;

                @Override
                public boolean next() {
                    boolean first = !read;
                    read = true;
                    return first;
                }

                @Override
                public InternalRow get() {
                    return new GenericInternalRow(new Object[] {rows});
                }

                @Override
                public void close() {}
            };
        }
    }
}
