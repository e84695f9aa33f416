package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.StringJoiner;
import java.util.function.LongPredicate;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Vector top-k and filters pushed into the native scan from Spark SQL and the DataFrame API,
 * checked against the same queries computed in Java.
 */
class SparkVectorTest {
    private static final int DIM = 16;
    private static final int ROWS = 3000;
    private static SparkSession spark;
    private static String path;
    private static final float[][] vectors = new float[ROWS][DIM];
    private static final double[] query = new double[DIM];
    private static String literal;

    @BeforeAll
    static void start() throws Exception {
        spark = LocalSpark.start("hyperstream-vector-test");
        Random random = new Random(5);
        List<Row> rows = new ArrayList<>();
        for (int id = 0; id < ROWS; id++) {
            List<Float> v = new ArrayList<>();
            for (int j = 0; j < DIM; j++) {
                vectors[id][j] = (float) random.nextGaussian();
                v.add(vectors[id][j]);
            }
            rows.add(RowFactory.create((long) id, "c" + (id % 10), v));
        }
        StringJoiner joined = new StringJoiner(", ", "array(", ")");
        for (int j = 0; j < DIM; j++) {
            query[j] = Math.round(random.nextGaussian() * 100) / 100.0;
            joined.add(String.format("%.2f", query[j]));
        }
        literal = joined.toString();
        StructType schema = new StructType().add("id", DataTypes.LongType, false).add("category", DataTypes.StringType)
                .add("embedding", DataTypes.createArrayType(DataTypes.FloatType, false), false);
        path = Files.createTempDirectory("hyperstream-spark-vectors").resolve("docs").toString();
        spark.createDataFrame(rows, schema).repartition(3).write().format("hyperstream")
                .option("vector.embedding.dimension", DIM).mode("append").save(path);
        spark.read().format("hyperstream").load(path).createOrReplaceTempView("docs");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    private record Hit(long id, double value) {}

    private static List<Hit> reference(String function, LongPredicate keep, boolean descending, int k) {
        List<Hit> hits = new ArrayList<>();
        for (int id = 0; id < ROWS; id++) {
            if (keep.test(id)) {
                double[] v = new double[DIM];
                for (int j = 0; j < DIM; j++) {
                    v[j] = vectors[id][j];
                }
                hits.add(new Hit(id, VectorFunctions.distance(function, v, query)));
            }
        }
        Comparator<Hit> order = Comparator.comparingDouble(Hit::value);
        hits.sort(descending ? order.reversed() : order);
        return hits.subList(0, k);
    }

    private static void assertAnswer(Dataset<Row> result, List<Hit> want) {
        List<Row> rows = result.collectAsList();
        assertEquals(want.size(), rows.size());
        for (int i = 0; i < rows.size(); i++) {
            assertEquals(want.get(i).id(), rows.get(i).getLong(0), "rank " + i);
            assertEquals(want.get(i).value(), rows.get(i).getDouble(1), 1e-4, "rank " + i);
        }
    }

    private static String plan(Dataset<Row> df) {
        return df.queryExecution().executedPlan().toString();
    }

    @Test
    void orderByDistanceLimitIsANativeTopKWithNoSortInThePlan() {
        for (String function : List.of("cosine_distance", "l2_distance", "l1_distance")) {
            Dataset<Row> df = spark.sql("SELECT id, hyperstream." + function + "(embedding, " + literal + ") AS d"
                    + " FROM docs ORDER BY d LIMIT 10");
            String plan = plan(df);
            assertTrue(plan.contains("nativeTopK=10 by " + function + "(embedding"), plan);
            assertFalse(plan.contains("Sort") || plan.contains("TakeOrderedAndProject"), plan);
            assertAnswer(df, reference(function, id -> true, false, 10));
        }
        Dataset<Row> dot = spark.sql("SELECT id, hyperstream.inner_product(embedding, " + literal + ") AS d"
                + " FROM docs ORDER BY d DESC LIMIT 7");
        assertTrue(plan(dot).contains("nativeTopK=7 by inner_product"), plan(dot));
        assertAnswer(dot, reference("inner_product", id -> true, true, 7));
    }

    @Test
    void hybridQueriesPushTheFilterAndTheTopK() {
        Dataset<Row> df = spark.sql("SELECT id, hyperstream.cosine_distance(embedding, " + literal + ") AS d FROM docs"
                + " WHERE category IN ('c3', 'c7') AND id >= 500 ORDER BY d LIMIT 25");
        String plan = plan(df);
        assertTrue(plan.contains("nativeTopK=25") && plan.contains("filter="), plan);
        assertFalse(plan.contains("Filter ") || plan.contains("Sort"), plan);
        assertAnswer(df, reference("cosine_distance", id -> (id % 10 == 3 || id % 10 == 7) && id >= 500, false, 25));
    }

    @Test
    void farthestFirstIsNotPushedButStillRight() {
        Dataset<Row> df = spark.sql("SELECT id, hyperstream.l2_distance(embedding, " + literal + ") AS d"
                + " FROM docs ORDER BY d DESC LIMIT 5");
        assertFalse(plan(df).contains("nativeTopK"), plan(df));
        assertAnswer(df, reference("l2_distance", id -> true, true, 5));
    }

    @Test
    void filtersRunInTheNativeScan() {
        Dataset<Row> df = spark.sql("SELECT id FROM docs WHERE category = 'c4' AND id BETWEEN 100 AND 300");
        String plan = plan(df);
        assertTrue(plan.contains("filter="), plan);
        assertFalse(plan.contains("Filter "), plan);
        assertEquals(20, df.count());
        Dataset<Row> prefix = spark.sql("SELECT id FROM docs WHERE category LIKE 'c1%' OR id IS NULL");
        assertTrue(plan(prefix).contains("starts_with"), plan(prefix));
        assertEquals(ROWS / 10, prefix.count());
        // A predicate the native side does not take stays with Spark, and the answer is still right.
        assertEquals(ROWS / 10, spark.sql("SELECT id FROM docs WHERE substring(category, 2) = '4'").count());
    }

    @Test
    void theDataFrameOptionFormSearchesWithoutSql() {
        StringJoiner q = new StringJoiner(",");
        for (double v : query) {
            q.add(Double.toString(v));
        }
        Dataset<Row> df = spark.read().format("hyperstream").option("vector.search.column", "embedding")
                .option("vector.search.query", q.toString()).option("vector.search.metric", "cosine")
                .option("vector.search.k", 5).load(path).where("category <> 'c0'").select("id", "_distance");
        assertAnswer(df, reference("cosine_distance", id -> id % 10 != 0, false, 5));
        Exception bad = assertThrows(Exception.class, () -> spark.read().format("hyperstream")
                .option("vector.search.column", "embedding").option("vector.search.query", "1,x").load(path).count());
        assertTrue(messages(bad).contains("comma-separated numbers"), messages(bad));
    }

    @Test
    void aVectorIndexDeclaredOnWriteServesPushedSearchesAsTheEfOptionSays() throws Exception {
        String indexed = Files.createTempDirectory("hyperstream-spark-index").resolve("docs").toString();
        Dataset<Row> docs = spark.read().format("hyperstream").load(path).select("id", "category", "embedding");
        docs.repartition(3).write().format("hyperstream").option("vector.embedding.dimension", DIM)
                .option("vector.embedding.index", "{\"metric\":\"l2\",\"m\":12}").mode("append").save(indexed);
        try (io.hyperstream.jni.NativeTable table = io.hyperstream.jni.NativeTable.load(indexed, java.util.Map.of())) {
            assertTrue(String.valueOf(table.vectorIndex("embedding")).contains("\"m\":12"), table.vectorIndex("embedding"));
        }
        List<Hit> want = reference("l2_distance", id -> true, false, 10);
        // A short candidate list keeps the graph in use on these small files; exact search ignores it.
        for (long ef : List.of(10L, -1L)) {
            spark.read().format("hyperstream").option("vector.search.ef", ef).load(indexed).createOrReplaceTempView("indexed");
            Dataset<Row> df = spark.sql("SELECT id, hyperstream.l2_distance(embedding, " + literal + ") AS d"
                    + " FROM indexed ORDER BY d LIMIT 10");
            assertTrue(plan(df).contains(ef == -1 ? "l2_distance(embedding, [16 values]) exact" : "ef=10"), plan(df));
            if (ef == -1) {
                assertAnswer(df, want);
                continue;
            }
            List<Row> rows = df.collectAsList();
            assertEquals(10, rows.size());
            long found = 0;
            for (Row row : rows) {
                long id = row.getLong(0);
                assertEquals(reference("l2_distance", i -> i == id, false, 1).get(0).value(), row.getDouble(1), 1e-4);
                found += want.stream().filter(h -> h.id() == id).count();
            }
            assertTrue(found >= 7, "recall@10 " + found / 10.0);
        }
        Exception bad = assertThrows(Exception.class, () -> docs.limit(5).write().format("hyperstream")
                .option("vector.embedding.index", "{\"M\":4}").mode("append").save(indexed));
        assertTrue(messages(bad).contains("unknown vector index field 'M'"), messages(bad));
        bad = assertThrows(Exception.class, () -> docs.limit(5).write().format("hyperstream")
                .option("vector.category.index", "hnsw").mode("append").save(indexed));
        assertTrue(messages(bad).contains("'category' is not a vector column"), messages(bad));
        assertEquals(ROWS, spark.read().format("hyperstream").load(indexed).count(), "refused writes commit nothing");
        docs.limit(0).write().format("hyperstream").option("vector.embedding.index", "none").mode("append").save(indexed);
        try (io.hyperstream.jni.NativeTable table = io.hyperstream.jni.NativeTable.load(indexed, java.util.Map.of())) {
            assertEquals(null, table.vectorIndex("embedding"));
        }
    }

    @Test
    void aQueryOfTheWrongDimensionFailsClearly() {
        Exception e = assertThrows(Exception.class, () -> spark.sql(
                "SELECT id FROM docs ORDER BY hyperstream.cosine_distance(embedding, array(1.0, 2.0)) LIMIT 3").collectAsList());
        assertTrue(messages(e).contains("2 dimensions but the column has 16"), messages(e));
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append(" | ");
        }
        return all.toString();
    }
}
