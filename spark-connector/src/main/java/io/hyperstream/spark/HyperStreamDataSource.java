package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.NotFoundException;
import io.hyperstream.jni.SampleTable;
import io.hyperstream.jni.VectorSearch;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("hyperstream")}: the DataSource V2 entry point.
 *
 * <p>Stored tables by path ({@code .load(path)}, {@code .save(path)}, options in {@link
 * PathOptions}) and the native library's generated sample table ({@code sample.rows}, options in
 * {@link SampleOptions}), and arrays of an array store ({@code .option("array", name).load(storeDirectory)},
 * options in {@link ArrayOptions}).
 */
public final class HyperStreamDataSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "hyperstream";
    }

    @Override
    public boolean supportsExternalMetadata() {
        // A write to a path with no table yet brings the schema the table is created with.
        return true;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        if (ArrayOptions.isArray(options)) {
            ArrayOptions array = ArrayOptions.from(options);
            return HyperStreamArrayTable.storedSchema(array).orElseThrow(() -> new NotFoundException(
                    "array '" + array.array() + "' in array store " + array.path()));
        }
        if (PathOptions.isPathRead(options)) {
            PathOptions path = PathOptions.from(options);
            try (BufferAllocator allocator = Allocators.child("spark-schema");
                    NativeTable table = path.openRead()) {
                return withDistance(path, SparkTypes.toStructType(table.schema(allocator)));
            }
        }
        SampleOptions sample = SampleOptions.from(options);
        try (BufferAllocator allocator = Allocators.child("spark-schema");
                SampleTable table = sample.open()) {
            return SparkTypes.toStructType(table.schema(allocator));
        }
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        if (ArrayOptions.isArray(properties)) {
            return new HyperStreamArrayTable(ArrayOptions.from(properties), schema);
        }
        if (PathOptions.isPathRead(properties)) {
            if (partitioning.length > 0) {
                throw new IllegalArgumentException("partitioned HyperStream tables are not supported yet");
            }
            PathOptions path = PathOptions.from(properties);
            return new HyperStreamPathTable(path, tableSchema(path, schema));
        }
        return new HyperStreamSampleTable(SampleOptions.from(new CaseInsensitiveStringMap(properties)), schema);
    }

    /** The stored table's schema, or the one a write would create it with. */
    private static StructType tableSchema(PathOptions path, StructType given) {
        try (BufferAllocator allocator = Allocators.child("spark-schema");
                NativeTable table = path.openRead()) {
            return withDistance(path, SparkTypes.toStructType(table.schema(allocator)));
        } catch (NotFoundException missing) {
            return SparkTypes.toStructType(SparkTypes.toArrowSchema(given, path.write().vectors()));
        }
    }

    /** A read with the {@code vector.search.*} options also returns each row's {@code _distance}. */
    private static StructType withDistance(PathOptions path, StructType schema) {
        return path.read().search() == null ? schema : schema.add(VectorSearch.DISTANCE_COLUMN, DataTypes.DoubleType, true);
    }
}
