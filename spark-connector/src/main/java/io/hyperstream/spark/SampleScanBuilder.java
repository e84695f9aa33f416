package io.hyperstream.spark;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;

/** Builds a scan, keeping only the columns Spark asks for. */
final class SampleScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private final SampleOptions options;
    private final StructType tableSchema;
    private StructType readSchema;

    SampleScanBuilder(SampleOptions options, StructType tableSchema) {
        this.options = options;
        this.tableSchema = tableSchema;
        this.readSchema = tableSchema;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        this.readSchema = requiredSchema;
    }

    @Override
    public Scan build() {
        int[] projection = new int[readSchema.fields().length];
        for (int i = 0; i < projection.length; i++) {
            projection[i] = tableSchema.fieldIndex(readSchema.fields()[i].name());
        }
        return new SampleScan(options, readSchema, projection);
    }
}
