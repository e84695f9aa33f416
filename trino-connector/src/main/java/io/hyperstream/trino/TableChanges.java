package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.named;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import io.airlift.slice.Slice;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.SchemaTableName;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * DDL and commits of stored tables (and arrays, where DROP TABLE takes one): CREATE TABLE [AS], ALTER
 * TABLE, DELETE, TRUNCATE, DROP, and the appends INSERTs and CREATE TABLE AS commit.
 */
final class TableChanges {
    private final Schemas schemas;
    private final HyperStreamConfig config;
    /** Tables a CREATE TABLE AS made and has not committed rows to yet, by query. */
    private final java.util.concurrent.ConcurrentHashMap<String, SchemaTableName> creating = new java.util.concurrent.ConcurrentHashMap<>();
    /** Replacements a CREATE OR REPLACE TABLE AS staged and has not committed yet, by query. */
    private final java.util.concurrent.ConcurrentHashMap<String, Staged> replacing = new java.util.concurrent.ConcurrentHashMap<>();

    /** A staged replacement: the table, where its rows are written, and the definition it commits. */
    private record Staged(Catalog.TableRef table, String staging, ConnectorTableMetadata metadata) {}

    TableChanges(Schemas schemas, HyperStreamConfig config) {
        this.schemas = schemas;
        this.config = config;
    }

    void create(ConnectorTableMetadata tableMetadata, io.trino.spi.connector.SaveMode saveMode) {
        SchemaTableName name = tableMetadata.getTable();
        Optional<Catalog.TableRef> existing = config.storedTable(name);
        if (existing.isPresent()) {
            switch (saveMode) {
                case REPLACE -> TableCreation.replace(existing.get(), tableMetadata);
                case IGNORE -> { }
                default -> throw new TrinoException(io.trino.spi.StandardErrorCode.TABLE_ALREADY_EXISTS,
                        "table " + name + " already exists at " + existing.get().location());
            }
            return;
        }
        TableCreation.create(schemas.newTable(name), tableMetadata);
    }

    io.trino.spi.connector.ConnectorOutputTableHandle beginCreate(ConnectorSession session,
            ConnectorTableMetadata tableMetadata, boolean replace) {
        SchemaTableName name = tableMetadata.getTable();
        List<io.trino.spi.type.Type> columnTypes = tableMetadata.getColumns().stream().filter(c -> !c.isHidden())
                .map(ColumnMetadata::getType).toList();
        Optional<Catalog.TableRef> existing = replace ? config.storedTable(name) : Optional.empty();
        if (existing.isPresent()) {
            // Atomic, in a directory catalog and a REST catalog alike: the rows go into a staging table
            // with the new definition (opened with the table's storage options alone: no catalog knows
            // it), and the commit makes definition and rows one snapshot; until then, and after a
            // failure, the table is as it was.
            Catalog.TableRef staging = TableCreation.stageReplace(existing.get(), tableMetadata);
            replacing.put(session.getQueryId(), new Staged(existing.get(), staging.location(), tableMetadata));
            return new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                    name.getSchemaName(), name.getTableName()), staging.location(), staging.options(), columnTypes);
        }
        if (config.storedTable(name).isPresent()) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.TABLE_ALREADY_EXISTS, "table " + name + " already exists");
        }
        TableCreation.create(schemas.newTable(name), tableMetadata);
        creating.put(session.getQueryId(), name);
        // Where the catalog put it (a REST catalog chooses).
        Catalog.TableRef created = config.storedTable(name).orElseThrow(() -> new TrinoException(HyperStreamErrorCode.HYPERSTREAM_NOT_FOUND,
                "table " + name + " was dropped while it was created"));
        return new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                name.getSchemaName(), name.getTableName()), created.location(), created.options(), columnTypes);
    }

    void finishCreate(ConnectorSession session, io.trino.spi.connector.ConnectorOutputTableHandle output,
            Collection<Slice> fragments) {
        Staged staged = replacing.get(session.getQueryId());
        if (staged != null) {
            String[] files = fragments.stream().map(Slice::toStringUtf8).toArray(String[]::new);
            try {
                TableCreation.commitReplace(staged.table(), staged.staging(), staged.metadata(), files);
            } catch (TrinoException e) {
                if (e.getErrorCode().equals(HyperStreamErrorCode.HYPERSTREAM_COMMIT_STATE_UNKNOWN.toErrorCode())) {
                    replacing.remove(session.getQueryId()); // it may have landed: the cleanup keeps its files
                }
                throw e;
            }
            replacing.remove(session.getQueryId());
            return;
        }
        try {
            commitDataFiles(((HyperStreamTableInsertHandle) output).target(), fragments);
        } catch (TrinoException e) {
            if (e.getErrorCode().equals(HyperStreamErrorCode.HYPERSTREAM_COMMIT_STATE_UNKNOWN.toErrorCode())) {
                // The rows may be committed: the cleanup must not remove the new table with them.
                creating.remove(session.getQueryId());
            }
            throw e;
        }
        creating.remove(session.getQueryId());
    }

    /** Removes the table a CREATE TABLE AS made if its query failed before committing its rows. */
    void cleanup(ConnectorSession session) {
        SchemaTableName created = creating.remove(session.getQueryId());
        if (created != null) {
            dropStored(created);
        }
        Staged staged = replacing.remove(session.getQueryId());
        if (staged != null) {
            TableCreation.abortReplace(staged.table(), staged.staging());
        }
    }

    /**
     * ALTER TABLE ADD COLUMN, last: rows written before read null, or the column's DEFAULT (format
     * version 3: its initial and write default, which Trino fills into an INSERT that omits it).
     */
    static void addColumn(ConnectorTableHandle table, ColumnMetadata column, io.trino.spi.connector.ColumnPosition position) {
        if (!(position instanceof io.trino.spi.connector.ColumnPosition.Last)) {
            throw new TrinoException(NOT_SUPPORTED, "new columns of HyperStream tables go last");
        }
        org.apache.arrow.vector.types.pojo.Field field = TableCreation.field(column);
        String defaultJson = column.getDefaultValue().map(sql -> TrinoDefaults.toJson(column.getName(), sql, column.getType())).orElse(null);
        alter(table, stored -> {
            try (BufferAllocator allocator = Allocators.child("trino-add-column")) {
                stored.addColumn(allocator, field, defaultJson);
            }
        });
    }

    /** ALTER TABLE DROP COLUMN: no data file is rewritten; the column's values are no longer read. */
    static void dropColumn(ConnectorTableHandle table, ColumnHandle column) {
        alter(table, stored -> stored.dropColumn(((HyperStreamColumnHandle) column).name()));
    }

    /** ALTER TABLE RENAME COLUMN: data files answer for columns by field id, so none is rewritten. */
    static void renameColumn(ConnectorTableHandle table, ColumnHandle source, String target) {
        alter(table, stored -> stored.renameColumn(((HyperStreamColumnHandle) source).name(), target));
    }

    /**
     * ALTER TABLE SET PROPERTIES indexed_columns = 'a,b': builds the scalar indexes the table lacks
     * (for the files already there, without rewriting them) and drops the ones no longer named.
     */
    static void setProperties(ConnectorTableHandle table, Map<String, Optional<Object>> properties) {
        for (String name : properties.keySet()) {
            if (!name.equals(TableCreation.INDEXED_COLUMNS)) {
                throw new TrinoException(NOT_SUPPORTED, "HyperStream tables can change only the table property "
                        + TableCreation.INDEXED_COLUMNS + ", not " + name);
            }
        }
        List<String> wanted = TableCreation.indexedColumns((String) properties.get(TableCreation.INDEXED_COLUMNS).orElse(null));
        alter(table, stored -> stored.setScalarIndexes(wanted));
    }

    private static void alter(ConnectorTableHandle table, java.util.function.Consumer<NativeTable> change) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "only stored HyperStream tables can be altered");
        }
        nativeCall(() -> {
            try (NativeTable stored = handle.table().open()) {
                change.accept(stored);
                return null;
            }
        });
    }

    /**
     * Deletes the rows the pushed filter passes as one snapshot of Iceberg position deletes (no
     * data rewritten; a data file left without rows leaves the table); returns how many.
     */
    static java.util.OptionalLong delete(ConnectorTableHandle table) {
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        String filter = handle.filter();
        return java.util.OptionalLong.of(nativeCall(() -> {
            try (NativeTable stored = handle.table().open()) {
                return stored.deleteWhere(filter).deletedRows();
            }
        }));
    }

    /** TRUNCATE TABLE: a snapshot without rows; older snapshots keep theirs. */
    static void truncate(ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "TRUNCATE TABLE works on stored tables only");
        }
        nativeCall(() -> {
            try (NativeTable stored = handle.table().open()) {
                return stored.commitOverwrite(new String[0]);
            }
        });
    }

    /** Drops a stored table with its files, or an array of an array store. */
    void drop(ConnectorTableHandle table) {
        if (table instanceof HyperStreamArrayHandle array) {
            nativeCall(() -> {
                try (ArrayStore store = ArrayStore.open(array.store(), false, false)) {
                    store.dropArray(array.tableName());
                    return null;
                }
            });
            return;
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        if (!handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "the sample table is generated: it cannot be dropped");
        }
        dropStored(handle.toSchemaTableName());
    }

    /** Renames a stored table within its catalog. */
    void rename(ConnectorTableHandle table, SchemaTableName to) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "only stored HyperStream tables can be renamed");
        }
        if (config.storedTable(to).isPresent()) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.TABLE_ALREADY_EXISTS, "table " + to + " already exists");
        }
        try {
            named(() -> {
                config.tables().orElseThrow().renameTable(handle.schemaName(), handle.tableName(), to.getSchemaName(),
                        to.getTableName());
                return null;
            });
        } catch (UnsupportedOperationException e) {
            throw new TrinoException(NOT_SUPPORTED, e.getMessage(), e);
        }
    }

    /** Drops stored table {@code name} with its files through its catalog. */
    private void dropStored(SchemaTableName name) {
        nativeCall(() -> config.tables().orElseThrow().dropTable(name.getSchemaName(), name.getTableName()));
    }

    static void commitDataFiles(Catalog.TableRef target, Collection<Slice> fragments) {
        String[] files = fragments.stream().map(Slice::toStringUtf8).toArray(String[]::new);
        if (files.length > 0) {
            nativeCall(() -> {
                try (NativeTable table = target.open()) {
                    return table.commitAppend(files);
                }
            });
        }
    }
}
