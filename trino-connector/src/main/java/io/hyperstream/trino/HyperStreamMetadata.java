package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.SampleTable;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.ConnectorTableVersion;
import io.trino.spi.connector.SchemaTableName;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Schemas and tables of a catalog. So far one schema, {@code sample}, with one table, {@code
 * items}: the native library's generated sample table, its columns as the native schema declares.
 */
final class HyperStreamMetadata implements ConnectorMetadata {
    static final String SAMPLE_SCHEMA = "sample";
    static final String SAMPLE_TABLE = "items";

    private final HyperStreamConfig config;

    HyperStreamMetadata(HyperStreamConfig config) {
        this.config = config;
    }

    @Override
    public List<String> listSchemaNames(ConnectorSession session) {
        return List.of(SAMPLE_SCHEMA);
    }

    @Override
    public ConnectorTableHandle getTableHandle(ConnectorSession session, SchemaTableName name,
            Optional<ConnectorTableVersion> startVersion, Optional<ConnectorTableVersion> endVersion) {
        if (startVersion.isPresent() || endVersion.isPresent()) {
            throw new TrinoException(NOT_SUPPORTED, "the HyperStream sample table has no versions");
        }
        if (!name.getSchemaName().equals(SAMPLE_SCHEMA) || !name.getTableName().equals(SAMPLE_TABLE)) {
            return null;
        }
        return new HyperStreamTableHandle(SAMPLE_SCHEMA, SAMPLE_TABLE, config.sampleRows(),
                config.sampleDimension(), config.sampleSeed());
    }

    @Override
    public ConnectorTableMetadata getTableMetadata(ConnectorSession session, ConnectorTableHandle table) {
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        return new ConnectorTableMetadata(handle.toSchemaTableName(),
                columns(handle).stream().map(HyperStreamColumnHandle::toColumnMetadata).toList());
    }

    @Override
    public List<SchemaTableName> listTables(ConnectorSession session, Optional<String> schemaName) {
        if (schemaName.isPresent() && !schemaName.get().equals(SAMPLE_SCHEMA)) {
            return List.of();
        }
        return List.of(new SchemaTableName(SAMPLE_SCHEMA, SAMPLE_TABLE));
    }

    @Override
    public Map<String, ColumnHandle> getColumnHandles(ConnectorSession session, ConnectorTableHandle table) {
        Map<String, ColumnHandle> handles = new LinkedHashMap<>();
        for (HyperStreamColumnHandle column : columns((HyperStreamTableHandle) table)) {
            handles.put(column.name(), column);
        }
        return handles;
    }

    @Override
    public ColumnMetadata getColumnMetadata(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
        return ((HyperStreamColumnHandle) column).toColumnMetadata();
    }

    private static List<HyperStreamColumnHandle> columns(HyperStreamTableHandle handle) {
        return nativeCall(() -> {
            try (BufferAllocator allocator = Allocators.child("trino-schema");
                    SampleTable table = SampleTable.open(handle.rows(), handle.dimension(), handle.seed())) {
                Schema schema = table.schema(allocator);
                List<HyperStreamColumnHandle> columns = new ArrayList<>();
                for (int i = 0; i < schema.getFields().size(); i++) {
                    Field field = schema.getFields().get(i);
                    columns.add(new HyperStreamColumnHandle(field.getName(), TrinoTypes.toTrinoType(field), i,
                            field.isNullable()));
                }
                return columns;
            }
        });
    }
}
