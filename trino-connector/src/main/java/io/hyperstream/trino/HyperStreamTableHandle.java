package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.SchemaTableName;

/** A table of the catalog: for now the generated sample table and its parameters. */
public record HyperStreamTableHandle(
        @JsonProperty("schemaName") String schemaName,
        @JsonProperty("tableName") String tableName,
        @JsonProperty("rows") long rows,
        @JsonProperty("dimension") int dimension,
        @JsonProperty("seed") long seed)
        implements ConnectorTableHandle {
    @JsonCreator
    public HyperStreamTableHandle {
        requireNonNull(schemaName, "schemaName is null");
        requireNonNull(tableName, "tableName is null");
    }

    public SchemaTableName toSchemaTableName() {
        return new SchemaTableName(schemaName, tableName);
    }
}
