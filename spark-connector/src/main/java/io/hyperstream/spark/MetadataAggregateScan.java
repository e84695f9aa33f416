package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@code COUNT(*)}, {@code COUNT(column)}, {@code MIN} and {@code MAX} over a whole stored table,
 * without grouping or filter, answered from metadata: the driver asks the native library, which
 * reads the snapshot's manifests (record, value and null counts, bounds) and delete files, no data
 * file. Where that answer would not be exact (a deleted row might hold a bound, a float might be
 * NaN, statistics are missing or truncated) the native library says so and Spark aggregates the rows
 * itself. The scan's one split hands Spark the one answered row.
 */
final class MetadataAggregateScan implements Scan, Batch {
    private final PathOptions options;
    private final StructType schema;
    private final InternalRow row;
    private final String description;

    private MetadataAggregateScan(PathOptions options, StructType schema, InternalRow row, String description) {
        this.options = options;
        this.schema = schema;
        this.row = row;
        this.description = description;
    }

    /**
     * The scan answering {@code aggregation} over the table's {@code columns} from metadata, or empty
     * when its shape is not one metadata answers (checked before any native call: {@code answer}
     * false) or when the metadata cannot answer it exactly.
     */
    static Optional<MetadataAggregateScan> of(PathOptions options, StructType columns, Aggregation aggregation, boolean answer) {
        if (aggregation.groupByExpressions().length != 0 || aggregation.aggregateExpressions().length == 0) {
            return Optional.empty();
        }
        List<String> kinds = new ArrayList<>();
        List<String> names = new ArrayList<>();
        StructType schema = new StructType();
        for (AggregateFunc function : aggregation.aggregateExpressions()) {
            String kind;
            Optional<String> column;
            if (function instanceof CountStar) {
                kind = "count_star";
                column = Optional.of("");
            } else if (function instanceof Count count && !count.isDistinct()) {
                kind = "count";
                column = topLevelColumn(count.column(), columns);
            } else if (function instanceof Min min) {
                kind = "min";
                column = topLevelColumn(min.column(), columns);
            } else if (function instanceof Max max) {
                kind = "max";
                column = topLevelColumn(max.column(), columns);
            } else {
                return Optional.empty();
            }
            if (column.isEmpty()) {
                return Optional.empty();
            }
            kinds.add(kind);
            names.add(column.get());
            DataType type = kind.startsWith("count") ? DataTypes.LongType : columns.apply(column.get()).dataType();
            String label = kind.equals("count_star") ? "count(*)" : kind + "(" + column.get() + ")";
            schema = schema.add(label, type, true);
        }
        if (!answer) {
            return Optional.of(new MetadataAggregateScan(options, schema, null, null));
        }
        Optional<InternalRow> row = answered(options, kinds.toArray(String[]::new), names.toArray(String[]::new));
        StructType answeredSchema = schema;
        return row.map(r -> new MetadataAggregateScan(options, answeredSchema, r,
                "HyperStreamScan " + options.path() + " " + String.join(", ", answeredSchema.fieldNames()) + " from metadata"));
    }

    /** A plain column of the table, by name. */
    private static Optional<String> topLevelColumn(Expression expression, StructType columns) {
        if (expression instanceof NamedReference ref && ref.fieldNames().length == 1
                && List.of(columns.fieldNames()).contains(ref.fieldNames()[0])) {
            return Optional.of(ref.fieldNames()[0]);
        }
        return Optional.empty();
    }

    /** The native library's one-row answer as Spark's row, or empty when it has none. */
    private static Optional<InternalRow> answered(PathOptions options, String[] kinds, String[] columns) {
        try (BufferAllocator allocator = Allocators.child("spark-metadata-aggregate");
                NativeTable table = options.openRead()) {
            InternalRow[] rows = DriverRows.read(table.aggregateFromMetadata(allocator, options.read().version(), kinds, columns)).rows();
            return rows.length == 0 ? Optional.empty() : Optional.of(rows[0]);
        }
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        return new InputPartition[] {new DriverRows(new InternalRow[] {row})};
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new DriverRows.Factory();
    }
}
