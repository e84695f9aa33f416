package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.SampleTable;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("hyperstream")}: the DataSource V2 entry point.
 *
 * <p>Reads the native library's generated sample table (options in {@link SampleOptions}); stored
 * tables by path arrive with the table engine.
 */
public final class HyperStreamDataSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "hyperstream";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        SampleOptions sample = SampleOptions.from(options);
        try (BufferAllocator allocator = Allocators.child("spark-schema");
                SampleTable table = sample.open()) {
            return SparkTypes.toStructType(table.schema(allocator));
        }
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new HyperStreamSampleTable(SampleOptions.from(new CaseInsensitiveStringMap(properties)), schema);
    }
}
