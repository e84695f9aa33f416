package io.hyperstream.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One split: rows {@code [start, end)} of the table and the columns to read. */
record SampleInputPartition(SampleOptions options, long start, long end, int[] projection)
        implements InputPartition {}
