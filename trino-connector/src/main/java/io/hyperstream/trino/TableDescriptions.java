package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTableMetadata;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/** What Trino asks about a table: its columns (with the hidden lineage ones), properties and statistics. */
final class TableDescriptions {

    static ConnectorTableMetadata metadata(ConnectorTableHandle table) {
        if (table instanceof HyperStreamArrayHandle array) {
            return new ConnectorTableMetadata(array.toSchemaTableName(),
                    ArrayTables.columns(array).stream().map(HyperStreamColumnHandle::toColumnMetadata).toList());
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        Map<String, Object> properties = new HashMap<>();
        if (handle.isStored()) {
            nativeCall(() -> {
                try (NativeTable stored = handle.openRead()) {
                    List<String> indexed = stored.scalarIndexes();
                    if (!indexed.isEmpty()) {
                        properties.put(TableCreation.INDEXED_COLUMNS, String.join(",", indexed));
                    }
                    if (!stored.partitioning().isEmpty()) {
                        properties.put(TableCreation.PARTITIONING, stored.partitioning());
                    }
                    if (!stored.sortOrder().isEmpty()) {
                        properties.put(TableCreation.SORTED_BY, stored.sortOrder());
                    }
                    if (stored.formatVersion() != 2) {
                        properties.put(TableCreation.FORMAT_VERSION, stored.formatVersion());
                    }
                    return null;
                }
            });
        }
        return new ConnectorTableMetadata(handle.toSchemaTableName(),
                columns(handle, true).stream().map(HyperStreamColumnHandle::toColumnMetadata).toList(), properties);
    }

    /**
     * A stored table's statistics for the cost-based optimizer: its rows (manifests less deleted
     * rows), and per column the estimated distinct values (merged HyperLogLog sketches kept beside the
     * data files) and the fraction of nulls (manifests). Only for the whole table: a filtered, limited
     * or top-k scan reports none, and Trino estimates those itself.
     */
    static io.trino.spi.statistics.TableStatistics statistics(ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.isFiltered() || handle.limit() > 0
                || handle.topK() > 0 || handle.countStar() || handle.snapshotId() < 0) {
            return io.trino.spi.statistics.TableStatistics.empty();
        }
        return nativeCall(() -> {
            try (NativeTable stored = handle.openRead()) {
                long rows = stored.rowCount(handle.version());
                Map<String, NativeTable.ColumnStatistics> byName = new java.util.HashMap<>();
                stored.columnStatistics(handle.version()).forEach(c -> byName.put(c.column(), c));
                io.trino.spi.statistics.TableStatistics.Builder builder = io.trino.spi.statistics.TableStatistics.builder()
                        .setRowCount(io.trino.spi.statistics.Estimate.of(rows));
                for (HyperStreamColumnHandle column : columns(handle)) {
                    NativeTable.ColumnStatistics c = byName.get(column.name());
                    if (c == null) {
                        continue;
                    }
                    io.trino.spi.statistics.ColumnStatistics.Builder stats = io.trino.spi.statistics.ColumnStatistics.builder();
                    if (c.distinctValues() >= 0) {
                        stats.setDistinctValuesCount(io.trino.spi.statistics.Estimate.of(c.distinctValues()));
                    }
                    if (c.nulls() >= 0 && rows > 0) {
                        stats.setNullsFraction(io.trino.spi.statistics.Estimate.of(Math.min(1.0, (double) c.nulls() / rows)));
                    }
                    builder.setColumnStatistics(column, stats.build());
                }
                return builder.build();
            }
        });
    }

    static List<HyperStreamColumnHandle> columns(HyperStreamTableHandle handle) {
        return columns(handle, false);
    }

    /**
     * The table's columns and, with {@code hidden}, in a format version 3 table the hidden row
     * lineage columns after them ({@code SELECT _row_id, _last_updated_sequence_number} names them;
     * {@code SELECT *} leaves them out).
     */
    static List<HyperStreamColumnHandle> columns(HyperStreamTableHandle handle, boolean hidden) {
        return nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-schema")) {
                Schema schema;
                List<String> lineage = List.of();
                if (handle.isStored()) {
                    try (NativeTable table = handle.openRead()) {
                        schema = table.schema(allocator);
                        if (hidden && table.formatVersion() >= 3) {
                            lineage = NativeTable.ROW_LINEAGE;
                        }
                    }
                } else {
                    try (SampleTable table = SampleTable.open(handle.rows(), handle.dimension(), handle.seed())) {
                        schema = table.schema(allocator);
                    }
                }
                List<HyperStreamColumnHandle> columns = new ArrayList<>();
                for (int i = 0; i < schema.getFields().size(); i++) {
                    Field field = schema.getFields().get(i);
                    io.trino.spi.type.Type type = TrinoTypes.toTrinoType(field);
                    String defaultJson = field.getMetadata() == null ? null : field.getMetadata().get(NativeTable.WRITE_DEFAULT);
                    columns.add(new HyperStreamColumnHandle(field.getName(), type, i, field.isNullable(),
                            TrinoDefaults.toSql(defaultJson, type)));
                }
                for (String name : lineage) {
                    columns.add(new HyperStreamColumnHandle(name, io.trino.spi.type.BigintType.BIGINT, columns.size(), true));
                }
                return columns;
            }
        });
    }
}
