package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorTableExecuteHandle;
import java.util.Map;

/**
 * A table procedure ({@code ALTER TABLE ... EXECUTE}, {@link TableExecute}) of one table with its
 * arguments. It names the table, never where it is or how it is opened: those stay in the catalog,
 * resolved on the coordinator when the procedure runs.
 */
public record HyperStreamTableExecuteHandle(
        @JsonProperty("procedure") String procedure,
        @JsonProperty("schemaName") String schemaName,
        @JsonProperty("tableName") String tableName,
        @JsonProperty("arguments") Map<String, Object> arguments)
        implements ConnectorTableExecuteHandle {
    @JsonCreator
    public HyperStreamTableExecuteHandle {
        arguments = arguments == null ? Map.of() : Map.copyOf(arguments);
    }
}
