package io.hyperstream.spark;

import io.hyperstream.jni.Filters;
import io.hyperstream.jni.NativeTable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A stored HyperStream table by path: batch reads (one split per data file, column pruning, time
 * travel by option) and appends or overwrites (tasks write data files natively, the driver commits
 * them as one snapshot; an overwrite's snapshot replaces every row, older snapshots keep theirs). A path with no table yet is created by the first write.
 * {@code DELETE FROM} runs natively when every predicate of its condition translates
 * ({@link SparkFilters}): one "delete" snapshot with Iceberg position deletes, no data rewritten;
 * any other DELETE, UPDATE and MERGE INTO run as row-level operations ({@link RowChanges}).
 */
final class HyperStreamPathTable implements SupportsRead, SupportsWrite, SupportsDeleteV2, SupportsMetadataColumns,
        org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations {
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

    /** Where the table is and how it is opened. */
    PathOptions options() {
        return options;
    }

    @Override
    public StructType schema() {
        return schema;
    }

    /** The table's partition spec as Spark transforms (DESCRIBE's "# Partitioning"). */
    @Override
    public Transform[] partitioning() {
        try (NativeTable table = options.openRead()) {
            return table.partitioning().stream().map(HyperStreamPathTable::transform).toArray(Transform[]::new);
        }
    }

    /** The table's Iceberg format version, and the sort order new data files are written in, when it has one. */
    @Override
    public Map<String, String> properties() {
        try (NativeTable table = options.openRead()) {
            Map<String, String> properties = new java.util.HashMap<>(table.properties());
            properties.put(NativeTable.FORMAT_VERSION, Integer.toString(table.formatVersion()));
            List<String> order = table.sortOrder();
            if (!order.isEmpty()) {
                properties.put(NativeTable.SORTED_BY, String.join(", ", order));
            }
            for (StructField field : schema.fields()) {
                if (!(field.dataType() instanceof ArrayType)) {
                    continue;
                }
                try {
                    String index = table.vectorIndex(field.name());
                    if (index != null) {
                        properties.put("vector." + field.name() + ".index", index);
                    }
                } catch (io.hyperstream.jni.InvalidArgumentException notAVectorColumn) {
                    // A list of floats without a declared dimension: no index to show.
                }
            }
            return properties;
        }
    }

    /**
     * Where each row is, {@code _file} and {@code _pos} (a row-level operation's row id), and in a
     * format version 3 table the row lineage columns {@code _row_id} and
     * {@code _last_updated_sequence_number}: each read only when a query names it.
     */
    @Override
    public MetadataColumn[] metadataColumns() {
        boolean lineage;
        try (NativeTable table = options.openRead()) {
            lineage = table.formatVersion() >= 3;
        } catch (io.hyperstream.jni.NotFoundException noTableYet) {
            lineage = false;
        }
        List<MetadataColumn> columns = new ArrayList<>();
        columns.add(metadataColumn(NativeTable.FILE_PATH, org.apache.spark.sql.types.DataTypes.StringType, "the data file the row is in"));
        columns.add(metadataColumn(NativeTable.ROW_POSITION, org.apache.spark.sql.types.DataTypes.LongType, "the row's position in its data file"));
        if (lineage) {
            columns.add(metadataColumn("_row_id", org.apache.spark.sql.types.DataTypes.LongType, "the row's id (row lineage)"));
            columns.add(metadataColumn("_last_updated_sequence_number", org.apache.spark.sql.types.DataTypes.LongType,
                    "the sequence number of the snapshot that last wrote the row"));
        }
        return columns.toArray(MetadataColumn[]::new);
    }

    private static MetadataColumn metadataColumn(String name, org.apache.spark.sql.types.DataType type, String comment) {
        return new MetadataColumn() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public org.apache.spark.sql.types.DataType dataType() {
                return type;
            }

            @Override
            public String comment() {
                return comment;
            }

            /** Every row has a place; lineage columns are null where a row has none. */
            @Override
            public boolean isNullable() {
                return !(name.equals(NativeTable.FILE_PATH) || name.equals(NativeTable.ROW_POSITION));
            }
        };
    }

    @Override
    public org.apache.spark.sql.connector.write.RowLevelOperationBuilder newRowLevelOperationBuilder(
            org.apache.spark.sql.connector.write.RowLevelOperationInfo info) {
        return () -> new RowChanges(options, schema, info.command());
    }

    /** A native partition field ({@code bucket(id, 16)}, {@code day(ts)}, {@code category}) as a Spark transform. */
    private static Transform transform(String field) {
        int open = field.indexOf('(');
        if (open < 0) {
            return Expressions.identity(field);
        }
        String name = field.substring(0, open);
        String[] args = field.substring(open + 1, field.length() - 1).split(",\\s*");
        return switch (name) {
            case "bucket" -> Expressions.bucket(Integer.parseInt(args[1]), args[0]);
            case "year" -> Expressions.years(args[0]);
            case "month" -> Expressions.months(args[0]);
            case "day" -> Expressions.days(args[0]);
            case "hour" -> Expressions.hours(args[0]);
            default -> Expressions.apply(name, Expressions.column(args[0]), Expressions.literal(Integer.parseInt(args[1])));
        };
    }

    /**
     * Spark's PARTITIONED BY transforms in the words the native table takes: {@code category},
     * {@code bucket(16, id)}, {@code days(ts)}, {@code hours(ts)}, {@code months(ts)}, {@code years(ts)},
     * {@code truncate(s, 4)}.
     */
    static String partitioning(Transform[] partitions) {
        List<String> fields = new ArrayList<>();
        for (Transform t : partitions) {
            List<String> args = new ArrayList<>();
            for (org.apache.spark.sql.connector.expressions.Expression e : t.arguments()) {
                if (e instanceof NamedReference ref) {
                    args.add(String.join(".", ref.fieldNames()));
                } else if (e instanceof Literal<?> literal) {
                    args.add(String.valueOf(literal.value()));
                } else {
                    throw new IllegalArgumentException("partition transform " + t.describe() + " is not supported");
                }
            }
            fields.add(t.name().equals("identity") && args.size() == 1 ? args.get(0) : t.name() + "(" + String.join(", ", args) + ")");
        }
        return String.join(", ", fields);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scan) {
        var conf = org.apache.spark.sql.SparkSession.active().conf();
        return new TableScanBuilder(options.tuned(scan, key -> conf.get(key, null)), schema);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        if (options.read().search() != null) {
            throw new IllegalArgumentException("the vector.search.* options are for reads; drop them to write");
        }
        if (options.travels()) {
            throw new IllegalArgumentException("snapshot-id and as-of-timestamp are for reads (time travel); "
                    + "writes go to the current version of " + options.path());
        }
        return new TruncatableWrite(overwrite -> new HyperStreamWrite(options, info.schema(), overwrite));
    }

    @Override
    public boolean canDeleteWhere(Predicate[] predicates) {
        return !options.travels() && filter(predicates).isPresent();
    }

    @Override
    public void deleteWhere(Predicate[] predicates) {
        if (options.travels()) {
            throw new IllegalArgumentException("cannot delete from " + name() + " as of an earlier snapshot");
        }
        String filter = filter(predicates).orElseThrow(() -> new IllegalArgumentException(
                "cannot delete from " + name() + ": a predicate of the condition cannot be evaluated natively"));
        try (NativeTable table = NativeTable.load(options.path(), options.storage())) {
            table.deleteWhere(filter);
        }
    }

    /** The conjunction of {@code predicates} as one native filter, or empty when one does not translate. */
    private Optional<String> filter(Predicate[] predicates) {
        List<String> parts = new ArrayList<>();
        for (Predicate predicate : predicates) {
            Optional<String> part = SparkFilters.translate(predicate, schema);
            if (part.isEmpty()) {
                return Optional.empty();
            }
            parts.add(part.get());
        }
        return Optional.of(parts.isEmpty() ? Filters.alwaysTrue() : Filters.and(parts));
    }
}
