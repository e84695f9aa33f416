package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorOutputTableHandle;
import io.trino.spi.type.Type;
import java.util.List;

/**
 * An INSERT into a stored table (or the rows of a CREATE TABLE AS): every page sink writes one data file of the table (natively, in
 * its schema) and hands its description on; {@code finishInsert} commits them all as one snapshot.
 * {@code types} are the Trino types of the page's channels, one per table column in order.
 */
public record HyperStreamTableInsertHandle(
        @JsonProperty("table") SchemaTableNameRecord table,
        @JsonProperty("location") String location,
        @JsonProperty("storage") java.util.Map<String, String> storage,
        @JsonProperty("types") List<Type> types)
        implements ConnectorInsertTableHandle, ConnectorOutputTableHandle {
    @JsonCreator
    public HyperStreamTableInsertHandle {
        types = List.copyOf(types);
        storage = storage == null ? java.util.Map.of() : java.util.Map.copyOf(storage);
    }

    /** The stored table the rows go to. */
    io.hyperstream.jni.Catalog.TableRef target() {
        return new io.hyperstream.jni.Catalog.TableRef(location, storage);
    }

    /** A schema and table name that Jackson can carry. */
    public record SchemaTableNameRecord(@JsonProperty("schema") String schema, @JsonProperty("name") String name) {}
}
