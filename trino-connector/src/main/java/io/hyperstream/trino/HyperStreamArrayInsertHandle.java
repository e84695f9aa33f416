package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import java.util.List;

/**
 * An INSERT into an array: every page sink stages its rows as a part in {@code staging}, and
 * {@code finishInsert} appends all parts as one change. {@code valueChannel} is the page channel
 * holding the rows; {@code dtype} and {@code rowShape} are the array's, which the native library
 * converts the written values to (refusing any that do not fit).
 */
public record HyperStreamArrayInsertHandle(
        @JsonProperty("array") HyperStreamArrayHandle array,
        @JsonProperty("staging") String staging,
        @JsonProperty("valueChannel") int valueChannel,
        @JsonProperty("dtype") String dtype,
        @JsonProperty("rowShape") List<Long> rowShape)
        implements ConnectorInsertTableHandle {
    @JsonCreator
    public HyperStreamArrayInsertHandle {
        rowShape = List.copyOf(rowShape);
    }

    /** Elements of one row's list (complex numbers count two). */
    int rowElements() {
        return io.hyperstream.jni.ArrayStore.listSize(dtype, rowShape.stream().mapToLong(Long::longValue).toArray());
    }
}
