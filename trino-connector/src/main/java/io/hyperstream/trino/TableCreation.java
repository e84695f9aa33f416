package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarcharType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * CREATE TABLE from Trino: the table's Trino columns as the native schema, and the table made at
 * {@code <root>/<schema>/<table>}. A vector column is an {@code array(real)} with a dimension, given
 * as the column property {@code dimension} ({@code embedding array(real) WITH (dimension = 128)}) or,
 * for CREATE TABLE AS, the table property {@code vectors = 'embedding:128'}.
 */
final class TableCreation {
    static final String DIMENSION = "dimension";
    static final String VECTORS = "vectors";
    /** The table property naming the columns with a scalar index. */
    static final String INDEXED_COLUMNS = "indexed_columns";
    /** The table property naming the columns whose Parquet row groups get a bloom filter (as Trino's Iceberg connector names it). */
    static final String BLOOM_FILTER_COLUMNS = "parquet_bloom_filter_columns";
    /** The table properties of the partitioning and sort order (Trino's Iceberg connector's names). */
    static final String PARTITIONING = "partitioning";
    static final String SORTED_BY = "sorted_by";
    /** The table property of the Iceberg format version: 2, or 3 with row lineage (Trino's Iceberg connector's name). */
    static final String FORMAT_VERSION = "format_version";

    private TableCreation() {}

    /** Creates the table; {@code false} when it exists and {@code ignoreExisting}. */
    /** CREATE TABLE at {@code target}, where its catalog puts a new table. */
    static void create(Catalog.TableRef target, ConnectorTableMetadata metadata) {
        Schema schema = arrowSchema(metadata);
        nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-create");
                    NativeTable table = NativeTable.create(target.location(), schema, nativeProperties(metadata), target.options(),
                            allocator)) {
                return table.location();
            }
        });
    }

    /**
     * CREATE OR REPLACE TABLE of {@code table}: redefined as {@code metadata} says (columns,
     * partitioning, sort order, indexes), without rows, in one snapshot; the snapshots before stay
     * for time travel, each under its own schema.
     */
    static void replace(Catalog.TableRef table, ConnectorTableMetadata metadata) {
        Schema schema = arrowSchema(metadata);
        Map<String, String> properties = nativeProperties(metadata);
        nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-replace");
                    NativeTable stored = table.open()) {
                return stored.replace(allocator, schema, properties);
            }
        });
    }

    /**
     * CREATE OR REPLACE TABLE ... AS of {@code table}, staged: nothing of the table changes, and the
     * staging table returned (with the definition {@code metadata} gives, field ids included, and
     * the storage options that open it) takes the query's rows; {@link #commitReplace} makes definition and rows one snapshot.
     */
    static Catalog.TableRef stageReplace(Catalog.TableRef table, ConnectorTableMetadata metadata) {
        Schema schema = arrowSchema(metadata);
        Map<String, String> properties = nativeProperties(metadata);
        return nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-replace");
                    NativeTable stored = table.open()) {
                return new Catalog.TableRef(stored.stageReplace(allocator, schema, properties), stored.storageOptions());
            }
        });
    }

    /** Commits a replacement {@link #stageReplace} staged at {@code staging} with the data files written into it. */
    static void commitReplace(Catalog.TableRef table, String staging, ConnectorTableMetadata metadata, String[] files) {
        Schema schema = arrowSchema(metadata);
        Map<String, String> properties = nativeProperties(metadata);
        nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-replace");
                    NativeTable stored = table.open()) {
                return stored.commitReplace(allocator, staging, schema, properties, files);
            }
        });
    }

    /** Abandons a replacement staged at {@code staging}: the table stays as it was. */
    static void abortReplace(Catalog.TableRef table, String staging) {
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                stored.abortReplace(staging);
                return null;
            }
        });
    }

    /** The native table properties the Trino ones stand for. */
    private static Map<String, String> nativeProperties(ConnectorTableMetadata metadata) {
        Map<String, String> properties = new java.util.HashMap<>();
        String indexed = (String) metadata.getProperties().get(INDEXED_COLUMNS);
        if (indexed != null && !indexed.isBlank()) {
            properties.put(NativeTable.INDEX_COLUMNS, indexed);
        }
        Object blooms = metadata.getProperties().get(BLOOM_FILTER_COLUMNS);
        if (blooms instanceof List<?> columns) {
            java.util.Set<String> names = metadata.getColumns().stream().map(ColumnMetadata::getName).collect(java.util.stream.Collectors.toSet());
            for (Object column : columns) {
                if (!names.contains(column)) {
                    throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT,
                            "table property '" + BLOOM_FILTER_COLUMNS + "' names a column the table does not have: '" + column + "'");
                }
                // Iceberg's own property, which its writers honour too.
                properties.put("write.parquet.bloom-filter-enabled.column." + column, "true");
            }
        }
        if (metadata.getProperties().get(FORMAT_VERSION) instanceof Integer version) {
            properties.put(NativeTable.FORMAT_VERSION, version.toString());
        }
        for (String[] layout : new String[][] {{PARTITIONING, NativeTable.PARTITIONING}, {SORTED_BY, NativeTable.SORTED_BY}}) {
            if (metadata.getProperties().get(layout[0]) instanceof List<?> fields && !fields.isEmpty()) {
                properties.put(layout[1], String.join(", ", fields.stream().map(String::valueOf).toList()));
            }
        }
        return properties;
    }

    /** The columns {@code value} (of {@link #INDEXED_COLUMNS}) names. */
    static List<String> indexedColumns(String value) {
        return NativeTable.indexColumns(value);
    }

    private static Schema arrowSchema(ConnectorTableMetadata metadata) {
        Map<String, Integer> vectors = vectorProperty(metadata);
        List<Field> fields = new ArrayList<>();
        for (ColumnMetadata column : metadata.getColumns()) {
            if (column.isHidden()) {
                continue;
            }
            if (column.getDefaultValue().isPresent()) {
                throw new TrinoException(io.trino.spi.StandardErrorCode.NOT_SUPPORTED, "column '" + column.getName() + "' has a DEFAULT: a new "
                        + "table takes column defaults by ALTER TABLE ... ADD COLUMN ... DEFAULT (format version 3), not yet in CREATE TABLE");
            }
            Integer dimension = (Integer) column.getProperties().get(DIMENSION);
            if (dimension == null) {
                dimension = vectors.remove(column.getName());
            } else {
                vectors.remove(column.getName());
            }
            fields.add(field(column, dimension));
        }
        if (!vectors.isEmpty()) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "table property 'vectors' names columns the table does not have: "
                    + vectors.keySet());
        }
        return new Schema(fields);
    }

    private static Map<String, Integer> vectorProperty(ConnectorTableMetadata metadata) {
        Map<String, Integer> vectors = new HashMap<>();
        String value = (String) metadata.getProperties().get(VECTORS);
        if (value == null || value.isBlank()) {
            return vectors;
        }
        for (String entry : value.split(",")) {
            String[] parts = entry.trim().split(":");
            try {
                vectors.put(parts[0].trim(), Integer.parseInt(parts[1].trim()));
            } catch (RuntimeException e) {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "table property 'vectors' takes 'column:dimension,...', got '"
                        + value + "'", e);
            }
        }
        return vectors;
    }

    /** The Arrow field of a column added to a table (ALTER TABLE ADD COLUMN, {@code dimension} for vectors). */
    static Field field(ColumnMetadata column) {
        return field(column, (Integer) column.getProperties().get(DIMENSION));
    }

    private static Field field(ColumnMetadata column, Integer dimension) {
        Type type = column.getType();
        boolean nullable = column.isNullable();
        if (dimension != null) {
            if (!(type instanceof ArrayType array) || !(array.getElementType() instanceof RealType)) {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "vector column '" + column.getName()
                        + "' must be array(real), not " + type);
            }
            return nativeCall(() -> NativeTable.vectorField(column.getName(), nullable, dimension));
        }
        return arrowField(column.getName(), type, nullable);
    }

    /** The Arrow field of a column, array element or row field: arrays are lists, rows structs. */
    private static Field arrowField(String name, Type type, boolean nullable) {
        if (type instanceof ArrayType array) {
            return new Field(name, new FieldType(nullable, ArrowType.List.INSTANCE, null),
                    List.of(arrowField("element", array.getElementType(), true)));
        }
        if (type instanceof io.trino.spi.type.RowType row) {
            List<Field> children = new ArrayList<>();
            for (int i = 0; i < row.getFields().size(); i++) {
                io.trino.spi.type.RowType.Field field = row.getFields().get(i);
                children.add(arrowField(field.getName().orElse("field" + i), field.getType(), true));
            }
            return new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null), children);
        }
        return new Field(name, new FieldType(nullable, arrowType(name, type), null), null);
    }

    private static ArrowType arrowType(String name, Type type) {
        if (type instanceof BigintType) {
            return new ArrowType.Int(64, true);
        }
        if (type instanceof IntegerType || type instanceof SmallintType || type instanceof TinyintType) {
            return new ArrowType.Int(32, true);
        }
        if (type instanceof DoubleType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        }
        if (type instanceof RealType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        }
        if (type instanceof BooleanType) {
            return ArrowType.Bool.INSTANCE;
        }
        if (type instanceof VarcharType) {
            return ArrowType.Utf8.INSTANCE;
        }
        if (type instanceof io.trino.spi.type.DecimalType decimal) {
            return new ArrowType.Decimal(decimal.getPrecision(), decimal.getScale(), 128);
        }
        if (type instanceof io.trino.spi.type.DateType) {
            return new ArrowType.Date(org.apache.arrow.vector.types.DateUnit.DAY);
        }
        if (type instanceof io.trino.spi.type.TimestampType timestamp && timestamp.getPrecision() <= 6) {
            return new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, null);
        }
        if (type instanceof io.trino.spi.type.TimestampWithTimeZoneType zoned && zoned.getPrecision() <= 6) {
            return new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, "UTC");
        }
        if (type instanceof io.trino.spi.type.VarbinaryType) {
            return ArrowType.Binary.INSTANCE;
        }
        throw new TrinoException(NOT_SUPPORTED, "column '" + name + "' has type " + type
                + ", which HyperStream tables cannot store yet");
    }
}
