package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_NOT_FOUND;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.type.VarcharType.VARCHAR;

import io.hyperstream.jni.NativeTable;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ConnectorAccessControl;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.procedure.Procedure;
import io.trino.spi.procedure.Procedure.Argument;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;
import java.util.Set;

/**
 * Table maintenance as catalog procedures:
 * {@code CALL <catalog>.system.create_vector_index('schema', 'table', 'column', '{"metric":"cosine","m":16}')}
 * builds an HNSW index for the table's files without rewriting them (the definition is optional
 * JSON; defaults l2, m 16, ef_construction 200), and
 * {@code CALL <catalog>.system.drop_vector_index('schema', 'table', 'column')} drops it, and
 * {@code CALL <catalog>.system.remove_orphan_files('schema', 'table', 72)} removes the files no
 * version of the table references (what killed or aborted writers left) that are older than the
 * given hours (default 72, at least 24: a writer still writing keeps its files until it commits), and
 * {@code CALL <catalog>.system.expire_snapshots('schema', 'table', 168, 1)} expires the snapshots
 * older than the given hours (default 168) but the last {@code retain_last} (default 1), deleting
 * the files only they referenced, and
 * {@code CALL <catalog>.system.rewrite_data_files('schema', 'table', 1048576)} compacts the small
 * files and the files with deleted rows into files of up to that many rows (one "replace"
 * snapshot), and {@code CALL <catalog>.system.rollback_to_snapshot('schema', 'table', id)} makes an
 * earlier snapshot current again.
 */
final class TableProcedures {
    private final HyperStreamConfig config;

    TableProcedures(HyperStreamConfig config) {
        this.config = config;
    }

    Set<Procedure> procedures() {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            MethodHandle create = lookup.findVirtual(TableProcedures.class, "createVectorIndex",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, String.class, String.class)).bindTo(this);
            MethodHandle drop = lookup.findVirtual(TableProcedures.class, "dropVectorIndex",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, String.class)).bindTo(this);
            List<Argument> table = List.of(new Argument("SCHEMA_NAME", VARCHAR), new Argument("TABLE_NAME", VARCHAR),
                    new Argument("COLUMN_NAME", VARCHAR));
            List<Argument> withDefinition = new java.util.ArrayList<>(table);
            withDefinition.add(new Argument("DEFINITION", VARCHAR, false, null));
            MethodHandle orphans = lookup.findVirtual(TableProcedures.class, "removeOrphanFiles",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, Double.class)).bindTo(this);
            List<Argument> orphanArguments = List.of(new Argument("SCHEMA_NAME", VARCHAR), new Argument("TABLE_NAME", VARCHAR),
                    new Argument("OLDER_THAN_HOURS", io.trino.spi.type.DoubleType.DOUBLE, false, 72.0));
            MethodHandle expire = lookup.findVirtual(TableProcedures.class, "expireSnapshots",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, Double.class, Long.class)).bindTo(this);
            List<Argument> expireArguments = List.of(new Argument("SCHEMA_NAME", VARCHAR), new Argument("TABLE_NAME", VARCHAR),
                    new Argument("OLDER_THAN_HOURS", io.trino.spi.type.DoubleType.DOUBLE, false, 168.0),
                    new Argument("RETAIN_LAST", io.trino.spi.type.BigintType.BIGINT, false, 1L));
            MethodHandle rewrite = lookup.findVirtual(TableProcedures.class, "rewriteDataFiles",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, Long.class)).bindTo(this);
            List<Argument> rewriteArguments = List.of(new Argument("SCHEMA_NAME", VARCHAR), new Argument("TABLE_NAME", VARCHAR),
                    new Argument("TARGET_ROWS", io.trino.spi.type.BigintType.BIGINT, false, 1_048_576L));
            MethodHandle rollback = lookup.findVirtual(TableProcedures.class, "rollbackToSnapshot",
                    MethodType.methodType(void.class, ConnectorAccessControl.class, String.class, String.class, Long.class)).bindTo(this);
            List<Argument> rollbackArguments = List.of(new Argument("SCHEMA_NAME", VARCHAR), new Argument("TABLE_NAME", VARCHAR),
                    new Argument("SNAPSHOT_ID", io.trino.spi.type.BigintType.BIGINT));
            return Set.of(new Procedure("system", "expire_snapshots", expireArguments, expire),
                    new Procedure("system", "rewrite_data_files", rewriteArguments, rewrite),
                    new Procedure("system", "rollback_to_snapshot", rollbackArguments, rollback),
                    new Procedure("system", "create_vector_index", withDefinition, create),
                    new Procedure("system", "drop_vector_index", table, drop),
                    new Procedure("system", "remove_orphan_files", orphanArguments, orphans));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    public void createVectorIndex(ConnectorAccessControl accessControl, String schema, String table, String column, String definition) {
        createVectorIndex(location(accessControl, schema, table, column), column, definition);
    }

    public void dropVectorIndex(ConnectorAccessControl accessControl, String schema, String table, String column) {
        dropVectorIndex(location(accessControl, schema, table, column), column);
    }

    public void removeOrphanFiles(ConnectorAccessControl accessControl, String schema, String table, Double olderThanHours) {
        removeOrphanFiles(location(accessControl, schema, table), olderThanHours);
    }

    public void expireSnapshots(ConnectorAccessControl accessControl, String schema, String table, Double olderThanHours, Long retainLast) {
        expireSnapshots(location(accessControl, schema, table), olderThanHours, retainLast);
    }

    public void rewriteDataFiles(ConnectorAccessControl accessControl, String schema, String table, Long targetRows) {
        rewriteDataFiles(location(accessControl, schema, table), targetRows);
    }

    public void rollbackToSnapshot(ConnectorAccessControl accessControl, String schema, String table, Long snapshotId) {
        if (snapshotId == null) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "snapshot_id is required");
        }
        Catalog.TableRef location = location(accessControl, schema, table);
        nativeCall(() -> {
            try (NativeTable stored = location.open()) {
                stored.rollbackTo(snapshotId);
                return null;
            }
        });
    }

    // The maintenance itself, of a table the caller may change: the CALL procedures above and the
    // ALTER TABLE ... EXECUTE table procedures of TableExecute both run it.

    static void createVectorIndex(Catalog.TableRef table, String column, String definition) {
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                return stored.createVectorIndex(column, definition == null ? "{}" : definition);
            }
        });
    }

    static void dropVectorIndex(Catalog.TableRef table, String column) {
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                return stored.dropVectorIndex(column);
            }
        });
    }

    static void removeOrphanFiles(Catalog.TableRef table, Double olderThanHours) {
        if (olderThanHours == null || !(olderThanHours >= 0)) {
            // NaN too; the library refuses cutoffs younger than a day (a writer may be about to commit).
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "older_than_hours must be a number of hours, at least 24, got "
                    + olderThanHours);
        }
        long cutoff = System.currentTimeMillis() - (long) (olderThanHours * 3_600_000);
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                return stored.removeOrphanFiles(cutoff);
            }
        });
    }

    static void expireSnapshots(Catalog.TableRef table, Double olderThanHours, Long retainLast) {
        if (olderThanHours == null || !(olderThanHours >= 0) || retainLast == null || retainLast < 1) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "older_than_hours must be zero or more and retain_last "
                    + "at least 1, got " + olderThanHours + " and " + retainLast);
        }
        long cutoff = System.currentTimeMillis() - (long) (olderThanHours * 3_600_000);
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                return stored.expireSnapshots(cutoff, Math.toIntExact(retainLast));
            }
        });
    }

    static void rewriteDataFiles(Catalog.TableRef table, Long targetRows) {
        if (targetRows == null || targetRows < 1) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "target_rows must be positive, got " + targetRows);
        }
        nativeCall(() -> {
            try (NativeTable stored = table.open()) {
                return stored.rewriteDataFiles(targetRows);
            }
        });
    }

    private Catalog.TableRef location(ConnectorAccessControl accessControl, String schema, String table, String column) {
        if (column == null) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "column_name is required");
        }
        return location(accessControl, schema, table);
    }

    /**
     * The stored table a procedure changes, once Trino's access control lets the user both insert
     * into it and delete from it: every procedure here changes what the table holds or keeps
     * (rollback, expiry and orphan removal drop rows or history for every reader), as Trino's own
     * connectors check their maintenance procedures.
     */
    private Catalog.TableRef location(ConnectorAccessControl accessControl, String schema, String table) {
        if (schema == null || table == null) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "schema_name and table_name are required");
        }
        SchemaTableName name = new SchemaTableName(schema, table);
        Catalog.TableRef location = config.storedTable(name).orElseThrow(() -> new TrinoException(HYPERSTREAM_NOT_FOUND,
                "table " + name + " does not exist"));
        accessControl.checkCanInsertIntoTable(null, name);
        accessControl.checkCanDeleteFromTable(null, name);
        return location;
    }
}
