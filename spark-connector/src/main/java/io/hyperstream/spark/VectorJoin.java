package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.VectorSearch;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.Function1;
import scala.runtime.AbstractFunction1;

/**
 * Similarity joins: for every row of a query Dataset, the {@code k} rows of a HyperStream table
 * nearest its vector. The table side is a read of a HyperStream table ({@code spark.table(...)} or
 * {@code spark.read().format("hyperstream").load(path)}), narrowed by {@code select} (the columns
 * returned) and {@code where} (every predicate must run in the native scan, as any pushed filter
 * does; one that cannot is refused). The join runs as one Spark task per partition of the
 * queries: each task answers its queries in batches of {@link #BATCH} through one native batched
 * search per batch ({@link NativeTable#searchMany}: a data file's filter and deletes read once
 * for the batch, its vectors compared with every query in one pass, its HNSW graph, where the
 * column has one, walked per query as the session's {@code spark.hyperstream.vector.search.ef}
 * says), over the table's files as the driver planned them (one snapshot for every task).
 *
 * <p>The answer: the query's columns, then the table's, then {@code _distance} (double), each
 * query's rows nearest first. A query whose vector is null has no rows; a column name on both
 * sides is refused (rename one). Rows without a vector complete an answer of fewer than k, with a
 * null distance, as a pushed top-k does.
 */
public final class VectorJoin {
    /** Queries per native batched search. */
    static final int BATCH = 512;

    private VectorJoin() {}

    /**
     * For every row of {@code queries}, the {@code k} rows of {@code table} whose {@code
     * vectorColumn} is nearest its {@code queryColumn} (an array of numbers) by {@code metric}
     * ({@code l2}, {@code cosine}, {@code inner_product}, {@code l1} or their aliases).
     */
    public static Dataset<Row> nearest(Dataset<Row> queries, String queryColumn, Dataset<Row> table, String vectorColumn,
            int k, String metric) {
        Limits.topK("k", k);
        int queryIndex = queryIndex(queries.schema(), queryColumn);
        TableScan scan = hyperStreamScan(table);
        StructType returned = table.schema();
        StructType out = outputSchema(queries.schema(), returned);
        PathOptions options = scan.options();
        if (!Arrays.asList(scan.tableColumns().fieldNames()).contains(vectorColumn)) {
            throw new IllegalArgumentException("vector column '" + vectorColumn + "' is not a column of the table; its columns: "
                    + Arrays.toString(scan.tableColumns().fieldNames()));
        }
        VectorSearch search = new VectorSearch(vectorColumn, new float[0], metric, k, options.read().efSearch(),
                options.read().backend(), false);
        Task task = new Task(options, scan.plannedFiles(), returned.fieldNames(), scan.pushedFilter(), search, queryIndex);
        return queries.mapPartitions(task, Encoders.row(out));
    }

    /** The position of the query column, which must hold arrays of numbers. */
    private static int queryIndex(StructType schema, String column) {
        for (int i = 0; i < schema.fields().length; i++) {
            StructField field = schema.fields()[i];
            if (field.name().equals(column)) {
                if (!(field.dataType() instanceof ArrayType array) || !(array.elementType() instanceof NumericType)) {
                    throw new IllegalArgumentException("query column '" + column + "' is " + field.dataType().simpleString()
                            + ", not an array of numbers");
                }
                return i;
            }
        }
        throw new IllegalArgumentException("query column '" + column + "' is not a column of the queries; their columns: "
                + Arrays.toString(schema.fieldNames()));
    }

    /** The queries' columns, the table's, then {@code _distance}; a name on both sides is refused. */
    private static StructType outputSchema(StructType queries, StructType table) {
        List<StructField> fields = new ArrayList<>(Arrays.asList(queries.fields()));
        for (StructField field : table.fields()) {
            if (Arrays.asList(queries.fieldNames()).contains(field.name()) || field.name().equals(VectorSearch.DISTANCE_COLUMN)) {
                throw new IllegalArgumentException("column '" + field.name() + "' is on both sides of the similarity join; "
                        + "rename one (withColumnRenamed)");
            }
            fields.add(field);
        }
        fields.add(DataTypes.createStructField(VectorSearch.DISTANCE_COLUMN, DataTypes.DoubleType, true));
        return new StructType(fields.toArray(StructField[]::new));
    }

    /**
     * The HyperStream scan {@code table} reads: its optimized plan must be that scan under at most
     * a projection of its columns, every filter pushed into it.
     */
    private static TableScan hyperStreamScan(Dataset<Row> table) {
        LogicalPlan plan = table.queryExecution().optimizedPlan();
        scala.Option<LogicalPlan> other = plan.find(matching(p -> !(p instanceof Project) && !(p instanceof DataSourceV2ScanRelation)));
        if (other.isDefined()) {
            throw new IllegalArgumentException("the table side of a similarity join is a read of a HyperStream table with "
                    + "select and where only, every predicate one the native scan runs; this one keeps "
                    + other.get().nodeName() + " in its plan:\n" + plan);
        }
        scala.Option<LogicalPlan> relation = plan.find(matching(p -> p instanceof DataSourceV2ScanRelation));
        if (relation.isEmpty() || !(((DataSourceV2ScanRelation) relation.get()).scan() instanceof TableScan scan)) {
            throw new IllegalArgumentException("the table side of a similarity join must read a HyperStream table:\n" + plan);
        }
        if (scan.isSearch()) {
            throw new IllegalArgumentException("the table side of a similarity join must not be a vector search itself");
        }
        return scan;
    }

    private static Function1<LogicalPlan, Object> matching(java.util.function.Predicate<LogicalPlan> test) {
        return new AbstractFunction1<>() {
            @Override
            public Object apply(LogicalPlan p) {
                return test.test(p);
            }
        };
    }

    /** What each task runs: its queries, batch by batch, through native batched searches. */
    private record Task(PathOptions options, String[] files, String[] columns, String filter, VectorSearch search,
            int queryIndex) implements MapPartitionsFunction<Row, Row>, Serializable {
        @Override
        public Iterator<Row> call(Iterator<Row> queries) {
            return new Joined(this, queries);
        }
    }

    /** The joined rows of one task's queries, a batch of queries searched at a time. */
    private static final class Joined implements Iterator<Row> {
        private final Task task;
        private final Iterator<Row> queries;
        private final List<Row> ready = new ArrayList<>();
        private int next;
        /** The searched table, opened at the first batch and closed after the last (or with the task). */
        private NativeTable table;

        Joined(Task task, Iterator<Row> queries) {
            this.task = task;
            this.queries = queries;
        }

        @Override
        public boolean hasNext() {
            while (next == ready.size() && queries.hasNext()) {
                ready.clear();
                next = 0;
                searchBatch();
            }
            if (next == ready.size()) {
                close();
            }
            return next < ready.size();
        }

        private NativeTable table() {
            if (table == null) {
                table = task.options().openRead();
                org.apache.spark.TaskContext context = org.apache.spark.TaskContext.get();
                if (context != null) { // a task that stops early or fails closes it too
                    context.addTaskCompletionListener(new org.apache.spark.util.TaskCompletionListener() {
                        @Override
                        public void onTaskCompletion(org.apache.spark.TaskContext done) {
                            close();
                        }
                    });
                }
            }
            return table;
        }

        private void close() {
            if (table != null) {
                table.close();
                table = null;
            }
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return ready.get(next++);
        }

        /** Takes up to {@link #BATCH} queries with a vector and joins each to its nearest rows. */
        private void searchBatch() {
            List<Row> batch = new ArrayList<>();
            List<VectorSearch> searches = new ArrayList<>();
            while (batch.size() < BATCH && queries.hasNext()) {
                Row query = queries.next();
                if (query.isNullAt(task.queryIndex())) {
                    continue; // no vector, no neighbours
                }
                batch.add(query);
                searches.add(task.search().withQuery(vector(query.getList(task.queryIndex()))));
            }
            if (batch.isEmpty() || task.files().length == 0) {
                return;
            }
            try (BufferAllocator allocator = Allocators.child("spark-vector-join");
                    ArrowReader reader = table().searchMany(allocator, task.files(), task.columns(), task.filter(), searches,
                            task.options().batchRows())) {
                while (reader.loadNextBatch()) {
                    join(batch, reader.getVectorSchemaRoot());
                }
            } catch (java.io.IOException e) {
                throw new io.hyperstream.jni.HyperStreamIOException("reading a similarity join's rows: " + e.getMessage(), e);
            }
        }

        /** Appends each row of {@code found} after the columns of the query it answers. */
        private void join(List<Row> batch, VectorSchemaRoot found) {
            int columns = task.columns().length;
            ColumnVector[] vectors = new ColumnVector[columns];
            for (int c = 0; c < columns; c++) {
                vectors[c] = HyperStreamColumnVector.of(found.getVector(c + 1));
            }
            StructType tableSchema = new StructType(Arrays.stream(vectors)
                    .map(v -> DataTypes.createStructField("c", v.dataType(), true)).toArray(StructField[]::new));
            Function1<Object, Object> toRow =
                    org.apache.spark.sql.catalyst.CatalystTypeConverters.createToScalaConverter(tableSchema);
            ColumnarBatch rows = new ColumnarBatch(vectors, found.getRowCount());
            IntVector query = (IntVector) found.getVector(0);
            Float8Vector distance = (Float8Vector) found.getVector(columns + 1);
            for (int r = 0; r < found.getRowCount(); r++) {
                Row left = batch.get(query.get(r));
                Row right = (Row) toRow.apply(rows.getRow(r));
                Object[] values = new Object[left.length() + columns + 1];
                for (int c = 0; c < left.length(); c++) {
                    values[c] = left.get(c);
                }
                for (int c = 0; c < columns; c++) {
                    values[left.length() + c] = right.get(c);
                }
                values[values.length - 1] = distance.isNull(r) ? null : distance.get(r);
                ready.add(RowFactory.create(values));
            }
        }

        private static float[] vector(List<Object> values) {
            float[] vector = new float[values.size()];
            for (int i = 0; i < vector.length; i++) {
                if (!(values.get(i) instanceof Number n)) {
                    throw new IllegalArgumentException("a query vector holds a null at position " + i);
                }
                vector[i] = n.floatValue();
            }
            return vector;
        }
    }
}
