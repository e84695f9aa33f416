package io.hyperstream.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One data file of a stored table (its native description) and the columns to read. */
record PathInputPartition(PathOptions options, String dataFile, String[] columns) implements InputPartition {}
