package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorSplit;

/** Rows {@code [start, end)} of a table, as planned by the native library. */
public record HyperStreamSplit(@JsonProperty("start") long start, @JsonProperty("end") long end)
        implements ConnectorSplit {
    @JsonCreator
    public HyperStreamSplit {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("bad split range " + start + ".." + end);
        }
    }

    @Override
    public long getRetainedSizeInBytes() {
        return 32;
    }
}
