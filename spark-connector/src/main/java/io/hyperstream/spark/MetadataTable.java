package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import java.util.EnumSet;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code lake.db.t.<name>}: a metadata table of a stored table ({@link NativeTable#METADATA_TABLES}:
 * Iceberg's {@code snapshots}, {@code history}, {@code files}, {@code manifests}, {@code partitions},
 * {@code refs}, {@code properties}, and {@code indexes}, each data file's index files). The driver
 * reads it natively from the current snapshot's metadata; one split hands Spark its rows.
 */
final class MetadataTable implements SupportsRead {
    private final PathOptions options;
    private final String name;
    private final StructType schema;

    MetadataTable(PathOptions options, String name) {
        this.options = options;
        this.name = name;
        try (BufferAllocator allocator = Allocators.child("spark-metadata-table")) {
            this.schema = SparkTypes.toStructType(NativeTable.metadataTableSchema(allocator, name));
        }
    }

    @Override
    public String name() {
        return "hyperstream:" + options.path() + "$" + name;
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scan) {
        return () -> new Scan() {
            @Override
            public StructType readSchema() {
                return schema;
            }

            @Override
            public String description() {
                return "HyperStreamMetadataTable " + name + " of " + options.path();
            }

            @Override
            public Batch toBatch() {
                return new Batch() {
                    @Override
                    public InputPartition[] planInputPartitions() {
                        try (BufferAllocator allocator = Allocators.child("spark-metadata-table");
                                NativeTable table = NativeTable.load(options.path(), options.storage())) {
                            return new InputPartition[] {DriverRows.read(table.metadataTable(allocator, name))};
                        }
                    }

                    @Override
                    public PartitionReaderFactory createReaderFactory() {
                        return new DriverRows.Factory();
                    }
                };
            }
        };
    }
}
