package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorMergeTableHandle;
import io.trino.spi.connector.ConnectorTableHandle;

import static java.util.Objects.requireNonNull;

/**
 * An UPDATE, MERGE or DELETE of a stored table that Trino runs row by row: its scan read
 * {@code table} (at its snapshot), every merge sink writes the new rows as {@code insert} does
 * and names the rows it deletes by their row id; {@code finishMerge} commits both as one snapshot.
 * {@code lineage}: a format version 3 table, where an update's new row keeps the old one's {@code _row_id}.
 */
public record HyperStreamMergeTableHandle(
        @JsonProperty("table") HyperStreamTableHandle table,
        @JsonProperty("insert") HyperStreamTableInsertHandle insert,
        @JsonProperty("lineage") boolean lineage)
        implements ConnectorMergeTableHandle {
    @JsonCreator
    public HyperStreamMergeTableHandle {
        requireNonNull(table, "table is null");
        requireNonNull(insert, "insert is null");
    }

    @Override
    public ConnectorTableHandle getTableHandle() {
        return table;
    }
}
