package io.hyperstream.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * Data files of a stored table (their native descriptions) and how to read them: the columns, the
 * pushed filter (null for none) and, when {@code search} is set, a native vector search over every
 * file (its k rows nearest first, with {@code _distance} last when {@code distanceColumn}); a positive
 * {@code limit} stops the split after that many rows (a pushed LIMIT, which Spark applies again over
 * the splits).
 */
record TableInputPartition(PathOptions options, String[] dataFiles, String[] columns, String filter,
        VectorOption search, boolean distanceColumn, long limit) implements InputPartition {}
