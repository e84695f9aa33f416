package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.SchemaTableName;

/**
 * An array of an array store as a table: a schema directory holding an array store is a schema
 * of arrays, each array a table with columns {@code index} (the row's position) and {@code value}.
 */
public record HyperStreamArrayHandle(
        @JsonProperty("schemaName") String schemaName,
        @JsonProperty("tableName") String tableName,
        @JsonProperty("store") String store)
        implements ConnectorTableHandle {
    @JsonCreator
    public HyperStreamArrayHandle {
        requireNonNull(schemaName, "schemaName is null");
        requireNonNull(tableName, "tableName is null");
        requireNonNull(store, "store is null");
    }

    public SchemaTableName toSchemaTableName() {
        return new SchemaTableName(schemaName, tableName);
    }

    @Override
    public String toString() {
        return schemaName + "." + tableName + " (array of " + store + ")";
    }
}
