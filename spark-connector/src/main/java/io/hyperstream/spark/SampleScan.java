package io.hyperstream.spark;

import java.util.Arrays;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/** A planned scan: the native library divides the rows into splits, Spark schedules one task each. */
final class SampleScan implements Scan, Batch {
    private final SampleOptions options;
    private final StructType readSchema;
    private final int[] projection;

    SampleScan(SampleOptions options, StructType readSchema, int[] projection) {
        this.options = options;
        this.readSchema = readSchema;
        this.projection = projection;
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        return "HyperStreamScan " + options.describe() + " columns=" + Arrays.toString(readSchema.fieldNames());
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        try (var table = options.open()) {
            return Arrays.stream(table.planSplits(options.splitRows()))
                    .map(split -> new SampleInputPartition(options, split[0], split[1], projection))
                    .toArray(InputPartition[]::new);
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new HyperStreamReaderFactory();
    }
}
