package io.hyperstream.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A stored HyperStream table by path: batch reads (one split per data file, column pruning, time
 * travel by option) and appends or overwrites (tasks write data files natively, the driver commits
 * them as one snapshot; an overwrite's snapshot replaces every row, older snapshots keep theirs). A path with no table yet is created by the first write.
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
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
        return new HyperStreamPathScanBuilder(options, schema);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        if (options.search() != null) {
            throw new IllegalArgumentException("the vector.search.* options are for reads; drop them to write");
        }
        return new TruncatableWrite(overwrite -> new HyperStreamWrite(options, info.schema(), overwrite));
    }
}
