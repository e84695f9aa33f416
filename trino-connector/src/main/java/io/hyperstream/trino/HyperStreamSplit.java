package io.hyperstream.trino;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.trino.spi.connector.ConnectorSplit;
import java.util.List;

/**
 * A split planned by the native library: data files of a stored table (their native descriptions;
 * one file per split, or every file for a pushed top-k, which the native side searches in parallel
 * and merges), or rows {@code [start, end)} of the sample table.
 */
public record HyperStreamSplit(@JsonProperty("start") long start, @JsonProperty("end") long end,
        @JsonProperty("dataFiles") List<String> dataFiles)
        implements ConnectorSplit {
    @JsonCreator
    public HyperStreamSplit {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("bad split range " + start + ".." + end);
        }
        dataFiles = dataFiles == null ? List.of() : List.copyOf(dataFiles);
    }

    @Override
    public long getRetainedSizeInBytes() {
        return 64L + dataFiles.stream().mapToLong(f -> 40L + 2L * f.length()).sum();
    }
}
