package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.SchemaTableName;

/**
 * A table of the catalog: a stored table ({@code location} and the snapshot read, -1 for an empty
 * table) or, when {@code location} is null, the generated sample table and its parameters.
 */
public record HyperStreamTableHandle(
        @JsonProperty("schemaName") String schemaName,
        @JsonProperty("tableName") String tableName,
        @JsonProperty("rows") long rows,
        @JsonProperty("dimension") int dimension,
        @JsonProperty("seed") long seed,
        @JsonProperty("location") String location,
        @JsonProperty("snapshotId") long snapshotId)
        implements ConnectorTableHandle {
    @JsonCreator
    public HyperStreamTableHandle {
        requireNonNull(schemaName, "schemaName is null");
        requireNonNull(tableName, "tableName is null");
    }

    static HyperStreamTableHandle stored(SchemaTableName name, String location, long snapshotId) {
        return new HyperStreamTableHandle(name.getSchemaName(), name.getTableName(), 0, 0, 0, location, snapshotId);
    }

    public boolean isStored() {
        return location != null;
    }

    public SchemaTableName toSchemaTableName() {
        return new SchemaTableName(schemaName, tableName);
    }
}
