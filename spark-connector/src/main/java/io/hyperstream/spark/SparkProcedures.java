package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Table maintenance as Spark 4 procedures, {@code CALL lake.system.<name>(...)}, with Iceberg's
 * argument names where Iceberg has the procedure:
 * {@code rewrite_data_files(table, options)} (option {@code target-rows}, default 1,048,576),
 * {@code expire_snapshots(table, older_than, retain_last)} (defaults: the table's {@code history.expire.*} properties,
 * else older than 5 days, keep 1, as Iceberg's),
 * {@code remove_orphan_files(table, older_than)} (default: older than 3 days),
 * {@code rollback_to_snapshot(table, snapshot_id)},
 * {@code create_vector_index(table, column, definition)} and {@code drop_vector_index(table, column)}.
 * {@code table} names a table of the catalog ({@code 'db.t'}). Each returns rows saying what it did.
 * Spark 3.5 has no CALL: the same maintenance runs there through the Java API or Trino.
 */
final class SparkProcedures {
    private SparkProcedures() {}

    /** Opens a table of the catalog by its {@code 'db.t'} name. */
    interface Tables {
        NativeTable open(String table);
    }

    /** A procedure: its parameters, its result columns and what it does with the bound values. */
    private record Definition(String name, String description, List<ProcedureParameter> parameters, StructType result,
            Function<Object[], List<Object[]>> body) {}

    static final List<String> NAMES = List.of("rewrite_data_files", "expire_snapshots", "remove_orphan_files",
            "rollback_to_snapshot", "create_vector_index", "drop_vector_index");

    static UnboundProcedure load(Identifier ident, Tables tables) {
        if (ident.namespace().length != 1 || !ident.namespace()[0].equalsIgnoreCase("system") || !NAMES.contains(ident.name())) {
            throw new IllegalArgumentException("no procedure " + String.join(".", ident.namespace()) + "." + ident.name()
                    + "; the catalog's procedures are system." + String.join(", system.", NAMES));
        }
        Definition definition = define(ident.name(), tables);
        return new Procedure(definition);
    }

    private static ProcedureParameter required(String name, DataType type) {
        return ProcedureParameter.in(name, type).build();
    }

    private static ProcedureParameter optional(String name, DataType type) {
        return ProcedureParameter.in(name, type).defaultValue("NULL").build();
    }

    private static StructType columns(Object... nameAndType) {
        StructType schema = new StructType();
        for (int i = 0; i < nameAndType.length; i += 2) {
            schema = schema.add((String) nameAndType[i], (DataType) nameAndType[i + 1], false);
        }
        return schema;
    }

    private static Definition define(String name, Tables tables) {
        ProcedureParameter table = required("table", DataTypes.StringType);
        long now = System.currentTimeMillis();
        return switch (name) {
            case "rewrite_data_files" -> new Definition(name, "compacts small files and files with deleted rows",
                    List.of(table, optional("options", DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType))),
                    columns("rewritten_data_files_count", DataTypes.LongType, "added_data_files_count", DataTypes.LongType),
                    args -> {
                        long targetRows = 1_048_576;
                        if (args[1] != null) {
                            for (Map.Entry<String, String> option : options((MapData) args[1]).entrySet()) {
                                if (!option.getKey().equals("target-rows")) {
                                    throw new IllegalArgumentException("rewrite_data_files takes the option target-rows, not " + option.getKey());
                                }
                                targetRows = Long.parseLong(option.getValue());
                            }
                        }
                        long rows = targetRows;
                        NativeTable.Rewrite done = with(tables, args[0], t -> t.rewriteDataFiles(rows));
                        return List.<Object[]>of(new Object[] {done.filesRewritten(), done.filesWritten()});
                    });
            case "expire_snapshots" -> new Definition(name, "expires old snapshots and deletes the files only they referenced",
                    List.of(table, optional("older_than", DataTypes.TimestampType), optional("retain_last", DataTypes.IntegerType)),
                    columns("expired_snapshot_id", DataTypes.LongType),
                    args -> {
                        // Absent arguments take the table's history.expire.* properties, as Iceberg's do.
                        Long cutoff = args[1] == null ? null : Math.floorDiv((Long) args[1], 1000);
                        Integer retain = (Integer) args[2];
                        long[] expired = with(tables, args[0], t -> t.expireSnapshots(cutoff, retain));
                        return java.util.Arrays.stream(expired).mapToObj(id -> new Object[] {id}).toList();
                    });
            case "remove_orphan_files" -> new Definition(name, "removes files no version of the table references",
                    List.of(table, optional("older_than", DataTypes.TimestampType)),
                    columns("orphan_file_location", DataTypes.StringType),
                    args -> {
                        long cutoff = args[1] == null ? now - 3L * 24 * 3_600_000 : Math.floorDiv((Long) args[1], 1000);
                        List<String> removed = with(tables, args[0], t -> t.removeOrphanFiles(cutoff));
                        return removed.stream().map(path -> new Object[] {UTF8String.fromString(path)}).toList();
                    });
            case "rollback_to_snapshot" -> new Definition(name, "makes an earlier snapshot current again",
                    List.of(table, required("snapshot_id", DataTypes.LongType)),
                    columns("previous_snapshot_id", DataTypes.LongType, "current_snapshot_id", DataTypes.LongType),
                    args -> with(tables, args[0], t -> {
                        long previous = t.currentSnapshotId();
                        t.rollbackTo((Long) args[1]);
                        return List.<Object[]>of(new Object[] {previous, t.currentSnapshotId()});
                    }));
            case "create_vector_index" -> new Definition(name, "builds an HNSW index of a vector column's files",
                    List.of(table, required("column", DataTypes.StringType), optional("definition", DataTypes.StringType)),
                    columns("indexed_files_count", DataTypes.LongType),
                    args -> with(tables, args[0], t -> List.<Object[]>of(new Object[] {
                            t.createVectorIndex(args[1].toString(), args[2] == null ? "{}" : args[2].toString())})));
            default -> new Definition(name, "drops a vector column's HNSW index",
                    List.of(table, required("column", DataTypes.StringType)),
                    columns("dropped_files_count", DataTypes.LongType),
                    args -> with(tables, args[0], t -> List.<Object[]>of(new Object[] {t.dropVectorIndex(args[1].toString())})));
        };
    }

    private static <T> T with(Tables tables, Object table, Function<NativeTable, T> work) {
        if (table == null) {
            throw new IllegalArgumentException("the table argument is required ('db.t')");
        }
        try (NativeTable opened = tables.open(table.toString())) {
            return work.apply(opened);
        }
    }

    private static Map<String, String> options(MapData map) {
        Map<String, String> options = new java.util.LinkedHashMap<>();
        for (int i = 0; i < map.numElements(); i++) {
            options.put(map.keyArray().getUTF8String(i).toString(),
                    map.valueArray().isNullAt(i) ? null : map.valueArray().getUTF8String(i).toString());
        }
        return options;
    }

    /** One procedure, unbound and bound (its parameters do not depend on how it is called). */
    private record Procedure(Definition definition) implements UnboundProcedure, BoundProcedure {
        @Override
        public String name() {
            return definition.name();
        }

        @Override
        public String description() {
            return definition.description();
        }

        @Override
        public BoundProcedure bind(StructType inputType) {
            return this;
        }

        @Override
        public ProcedureParameter[] parameters() {
            return definition.parameters().toArray(ProcedureParameter[]::new);
        }

        @Override
        public boolean isDeterministic() {
            return false;
        }

        @Override
        public Iterator<Scan> call(InternalRow input) {
            List<ProcedureParameter> parameters = definition.parameters();
            Object[] args = new Object[parameters.size()];
            for (int i = 0; i < args.length; i++) {
                args[i] = input.isNullAt(i) ? null : input.get(i, parameters.get(i).dataType());
            }
            List<InternalRow> rows = new ArrayList<>();
            for (Object[] row : definition.body().apply(args)) {
                rows.add(new GenericInternalRow(row));
            }
            StructType result = definition.result();
            Scan scan = new LocalScan() {
                @Override
                public InternalRow[] rows() {
                    return rows.toArray(InternalRow[]::new);
                }

                @Override
                public StructType readSchema() {
                    return result;
                }
            };
            return List.of(scan).iterator();
        }
    }
}
