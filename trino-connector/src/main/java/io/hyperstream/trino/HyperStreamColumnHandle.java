package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.type.Type;

/** A column, by name, Trino type and its position in the native schema. */
public record HyperStreamColumnHandle(
        @JsonProperty("name") String name,
        @JsonProperty("type") Type type,
        @JsonProperty("ordinal") int ordinal,
        @JsonProperty("nullable") boolean nullable,
        @JsonProperty("defaultValue") String defaultValue)
        implements ColumnHandle {
    @JsonCreator
    public HyperStreamColumnHandle {
        requireNonNull(name, "name is null");
        requireNonNull(type, "type is null");
    }

    /** A column without a default. */
    public HyperStreamColumnHandle(String name, Type type, int ordinal, boolean nullable) {
        this(name, type, ordinal, nullable, null);
    }

    /**
     * A row lineage column of a format version 3 table is hidden: only a query that names it reads
     * it. A column's default ({@code defaultValue}, SQL) is what Trino fills into an INSERT that omits it.
     */
    public ColumnMetadata toColumnMetadata() {
        return ColumnMetadata.builder().setName(name).setType(type).setNullable(nullable)
                .setDefaultValue(java.util.Optional.ofNullable(defaultValue))
                .setHidden(ordinal >= 0 && io.hyperstream.jni.NativeTable.ROW_LINEAGE.contains(name)).build();
    }
}
