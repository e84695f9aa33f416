package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_NOT_FOUND;

import io.hyperstream.jni.Catalog;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.TableProcedureExecutionMode;
import io.trino.spi.connector.TableProcedureMetadata;
import io.trino.spi.session.PropertyMetadata;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Table maintenance as Trino's table procedures, which Trino authorizes per table
 * ({@code checkCanExecuteTableProcedure}) before the connector sees them, as with Trino's Iceberg
 * connector: {@code ALTER TABLE t EXECUTE optimize(target_rows => 1048576)},
 * {@code expire_snapshots(older_than_hours => 168, retain_last => 1)},
 * {@code remove_orphan_files(older_than_hours => 72)},
 * {@code create_vector_index(column_name => 'v', definition => '{"metric":"cosine"}')} and
 * {@code drop_vector_index(column_name => 'v')}. Each runs on the coordinator, as the
 * {@link TableProcedures} of the same meaning do (one way to do each: both call the same code).
 */
final class TableExecute {
    private TableExecute() {}

    // Trino looks table procedures up by their names in upper case.
    static final String OPTIMIZE = "OPTIMIZE";
    static final String EXPIRE_SNAPSHOTS = "EXPIRE_SNAPSHOTS";
    static final String REMOVE_ORPHAN_FILES = "REMOVE_ORPHAN_FILES";
    static final String CREATE_VECTOR_INDEX = "CREATE_VECTOR_INDEX";
    static final String DROP_VECTOR_INDEX = "DROP_VECTOR_INDEX";

    /** What {@code ALTER TABLE ... EXECUTE} names, with the arguments each takes and their defaults. */
    static Set<TableProcedureMetadata> procedures() {
        TableProcedureExecutionMode coordinator = TableProcedureExecutionMode.coordinatorOnly();
        PropertyMetadata<String> column = PropertyMetadata.stringProperty("column_name", "the vector column", null, false);
        return Set.of(
                new TableProcedureMetadata(OPTIMIZE, coordinator, List.of(PropertyMetadata.longProperty("target_rows",
                        "compacts small files and files with deleted rows into files of up to this many rows", 1_048_576L, false))),
                new TableProcedureMetadata(EXPIRE_SNAPSHOTS, coordinator, List.of(
                        PropertyMetadata.doubleProperty("older_than_hours", "expires snapshots older than this", 168.0, false),
                        PropertyMetadata.longProperty("retain_last", "but keeps this many of the newest", 1L, false))),
                new TableProcedureMetadata(REMOVE_ORPHAN_FILES, coordinator, List.of(PropertyMetadata.doubleProperty(
                        "older_than_hours", "removes files no version references that are older than this (at least 24)", 72.0, false))),
                new TableProcedureMetadata(CREATE_VECTOR_INDEX, coordinator, List.of(column,
                        PropertyMetadata.stringProperty("definition", "the index as JSON (metric, m, ef_construction)", null, false))),
                new TableProcedureMetadata(DROP_VECTOR_INDEX, coordinator, List.of(column)));
    }

    static HyperStreamTableExecuteHandle handle(HyperStreamTableHandle table, String procedure, Map<String, Object> arguments) {
        if (!table.isStored()) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.NOT_SUPPORTED, "the sample table is generated: it takes no "
                    + procedure.toLowerCase(java.util.Locale.ROOT));
        }
        if (table.travel()) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.NOT_SUPPORTED, "a table read FOR VERSION AS OF takes no "
                    + procedure.toLowerCase(java.util.Locale.ROOT));
        }
        Map<String, Object> given = new HashMap<>();
        arguments.forEach((key, value) -> {
            if (value != null) {
                given.put(key, value);
            }
        });
        return new HyperStreamTableExecuteHandle(procedure, table.schemaName(), table.tableName(), given);
    }

    /** Runs the procedure of {@code handle} on its table. */
    static void execute(HyperStreamConfig config, HyperStreamTableExecuteHandle handle) {
        SchemaTableName name = new SchemaTableName(handle.schemaName(), handle.tableName());
        Catalog.TableRef table = config.storedTable(name).orElseThrow(() -> new TrinoException(HYPERSTREAM_NOT_FOUND,
                "table " + name + " does not exist"));
        Map<String, Object> a = handle.arguments();
        switch (handle.procedure()) {
            case OPTIMIZE -> TableProcedures.rewriteDataFiles(table, number(a, "target_rows", 1_048_576L).longValue());
            case EXPIRE_SNAPSHOTS -> TableProcedures.expireSnapshots(table, number(a, "older_than_hours", 168.0).doubleValue(),
                    number(a, "retain_last", 1L).longValue());
            case REMOVE_ORPHAN_FILES -> TableProcedures.removeOrphanFiles(table, number(a, "older_than_hours", 72.0).doubleValue());
            case CREATE_VECTOR_INDEX -> TableProcedures.createVectorIndex(table, column(a), (String) a.get("definition"));
            case DROP_VECTOR_INDEX -> TableProcedures.dropVectorIndex(table, column(a));
            default -> throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "no table procedure " + handle.procedure());
        }
    }

    private static Number number(Map<String, Object> arguments, String name, Number otherwise) {
        Object value = arguments.get(name);
        return value == null ? otherwise : (Number) value;
    }

    private static String column(Map<String, Object> arguments) {
        Object column = arguments.get("column_name");
        if (column == null) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "column_name is required");
        }
        return (String) column;
    }
}
