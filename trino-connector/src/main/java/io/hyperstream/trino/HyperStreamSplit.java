package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorSplit;

/**
 * A split planned by the native library: one data file of a stored table (its native description),
 * or rows {@code [start, end)} of the sample table.
 */
public record HyperStreamSplit(@JsonProperty("start") long start, @JsonProperty("end") long end,
        @JsonProperty("dataFile") String dataFile)
        implements ConnectorSplit {
    @JsonCreator
    public HyperStreamSplit {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("bad split range " + start + ".." + end);
        }
    }

    @Override
    public long getRetainedSizeInBytes() {
        return 48L + (dataFile == null ? 0 : 2L * dataFile.length());
    }
}
