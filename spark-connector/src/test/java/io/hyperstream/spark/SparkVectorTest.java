package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
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

    /** The metrics of the node of a write's executed plan that shows vector index builds. */
    private static Map<String, Long> writeMetrics(Runnable write) throws Exception {
        var seen = new java.util.concurrent.atomic.AtomicReference<org.apache.spark.sql.execution.QueryExecution>();
        var listener = new org.apache.spark.sql.util.QueryExecutionListener() {
            @Override
            public void onSuccess(String function, org.apache.spark.sql.execution.QueryExecution qe, long nanos) {
                seen.set(qe);
            }

            @Override
            public void onFailure(String function, org.apache.spark.sql.execution.QueryExecution qe, Exception e) {}
        };
        spark.listenerManager().register(listener);
        try {
            write.run();
            spark.sparkContext().listenerBus().waitUntilEmpty();
        } finally {
            spark.listenerManager().unregister(listener);
        }
        var node = seen.get().executedPlan().find(p -> p.metrics().contains("vectorIndexFiles"));
        assertTrue(node.isDefined(), seen.get().executedPlan().toString());
        Map<String, Long> values = new java.util.TreeMap<>();
        for (String name : List.of("vectorIndexFiles", "vectorIndexVectors", "vectorIndexBuildMs", "declaredIndexFiles",
                "declaredIndexVectors", "declaredIndexBuildMs")) {
            values.put(name, node.get().metrics().get(name).get().value());
        }
        return values;
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
    void pgvectorOperatorsArePushedAsTheirFunctions() {
        String text = literal.replace("array(", "'[").replace(")", "]'");
        String[][] operators = {{"<=>", "cosine_distance", literal}, {"<->", "l2_distance", text}, {"<+>", "l1_distance", literal}};
        for (String[] op : operators) {
            Dataset<Row> df = spark.sql("SELECT id, embedding " + op[0] + " " + op[2] + " AS d FROM docs ORDER BY d LIMIT 10");
            String plan = plan(df);
            assertTrue(plan.contains("nativeTopK=10 by " + op[1] + "(embedding"), plan);
            assertFalse(plan.contains("Sort") || plan.contains("TakeOrderedAndProject"), plan);
            assertAnswer(df, reference(op[1], id -> true, false, 10));
        }
        // <#> is the inner product negated: nearest (largest product) first in ascending order.
        Dataset<Row> dot = spark.sql("SELECT id, embedding <#> " + text + " AS d FROM docs WHERE category = 'c3'"
                + " ORDER BY embedding <#> " + text + " LIMIT 5");
        assertTrue(plan(dot).contains("nativeTopK=5 by negative_inner_product(embedding"), plan(dot));
        assertAnswer(dot, reference("negative_inner_product", id -> id % 10 == 3, false, 5));
        // The DataFrame API's expressions read them too.
        Dataset<Row> viaExpr = spark.table("docs").selectExpr("id", "embedding <-> " + literal + " AS d").orderBy("d").limit(3);
        assertTrue(plan(viaExpr).contains("nativeTopK=3 by l2_distance"), plan(viaExpr));
        assertAnswer(viaExpr, reference("l2_distance", id -> true, false, 3));
    }

    @Test
    void nullSafeEqualityKeepsItsMeaningBesideTheOperators() {
        Row row = spark.sql("SELECT NULL <=> NULL, 1 <=> 2, 'c3' <=> category FROM docs WHERE id = 3").first();
        assertEquals(List.of(true, false, true), List.of(row.getBoolean(0), row.getBoolean(1), row.getBoolean(2)));
        assertEquals(ROWS / 10, spark.sql("SELECT id FROM docs WHERE category <=> 'c4'").count());
    }

    @Test
    void bitDistancesAndTheirOperators() {
        // 0x0F and 0xF1 differ in 7 bits, share 1 and set 8 between them.
        Row row = spark.sql("SELECT X'0F' <~> X'F1', X'0F' <%> X'F1', hyperstream.hamming_distance(X'0000', X'0000'),"
                + " hyperstream.jaccard_distance(X'0000', X'0000'), X'0F' <~> CAST(NULL AS BINARY)").first();
        assertEquals(7.0, row.getDouble(0));
        assertEquals(0.875, row.getDouble(1), 1e-12);
        assertEquals(0.0, row.getDouble(2));
        assertEquals(0.0, row.getDouble(3));
        assertTrue(row.isNullAt(4));
        Random random = new Random(11);
        List<Row> rows = new ArrayList<>();
        byte[] probe = new byte[8];
        random.nextBytes(probe);
        List<Hit> want = new ArrayList<>();
        for (int id = 0; id < 200; id++) {
            byte[] bits = new byte[8];
            random.nextBytes(bits);
            rows.add(RowFactory.create((long) id, bits));
            int differ = 0;
            for (int j = 0; j < 8; j++) {
                differ += Integer.bitCount((bits[j] ^ probe[j]) & 0xff);
            }
            want.add(new Hit(id, differ));
        }
        want.sort(Comparator.comparingDouble(Hit::value).thenComparingLong(Hit::id));
        StructType schema = new StructType().add("id", DataTypes.LongType, false).add("bits", DataTypes.BinaryType);
        spark.createDataFrame(rows, schema).createOrReplaceTempView("fingerprints");
        StringBuilder hex = new StringBuilder("X'");
        for (byte b : probe) {
            hex.append(String.format("%02X", b));
        }
        hex.append("'");
        assertAnswer(spark.sql("SELECT id, bits <~> " + hex + " AS d FROM fingerprints ORDER BY d, id LIMIT 20"), want.subList(0, 20));
        // pgvector's bit string form: first bit the high bit of the first byte.
        StringBuilder bitString = new StringBuilder("B'");
        for (byte b : probe) {
            bitString.append(String.format("%8s", Integer.toBinaryString(b & 0xff)).replace(' ', '0'));
        }
        bitString.append("'");
        assertAnswer(spark.sql("SELECT id, bits <~> " + bitString + " AS d FROM fingerprints ORDER BY d, id LIMIT 20"),
                want.subList(0, 20));
        // Stored in a HyperStream table, the same ORDER BY ... LIMIT is a native top-k over the binary column.
        String stored = path + "-bits";
        spark.createDataFrame(rows, schema).repartition(2).write().format("hyperstream").mode("append").save(stored);
        spark.read().format("hyperstream").load(stored).createOrReplaceTempView("stored_bits");
        for (String op : List.of("<~>", "<%>")) {
            String function = op.equals("<~>") ? "hamming_distance" : "jaccard_distance";
            Dataset<Row> pushed = spark.sql("SELECT id, bits " + op + " " + hex + " AS d FROM stored_bits WHERE id >= 30 ORDER BY d NULLS LAST LIMIT 15");
            assertTrue(plan(pushed).contains("nativeTopK=15 by " + function + "(bits"), plan(pushed));
            assertFalse(plan(pushed).contains("Sort"), plan(pushed));
            // Ties fall to either row: the distances are the answer's, and each row has its own.
            List<Row> got = pushed.collectAsList();
            List<Row> all = spark.sql("SELECT id, bits " + op + " " + hex + " AS d FROM fingerprints WHERE id >= 30 ORDER BY d").collectAsList();
            assertEquals(15, got.size());
            for (int i = 0; i < got.size(); i++) {
                assertEquals(all.get(i).getDouble(1), got.get(i).getDouble(1), 1e-6, op + " rank " + i);
                long id = got.get(i).getLong(0);
                assertEquals(all.stream().filter(r -> r.getLong(0) == id).findFirst().orElseThrow().getDouble(1), got.get(i).getDouble(1), 1e-6);
            }
        }
        Exception wrongType = assertThrows(Exception.class, () -> spark.sql("SELECT hyperstream.hamming_distance(array(1.0), array(1.0))").collect());
        assertTrue(LocalSpark.messages(wrongType).contains("hamming_distance takes bit-packed binary values, got array<decimal(2,1)>"), LocalSpark.messages(wrongType));
        Exception lengths = assertThrows(Exception.class, () -> spark.sql("SELECT X'00' <%> X'0000'").collect());
        assertTrue(LocalSpark.messages(lengths).contains("jaccard_distance: bit vectors of 1 and 2 bytes"), LocalSpark.messages(lengths));
    }

    @Test
    void sparseVectorColumnsAreSearchedNatively() {
        Random random = new Random(17);
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 300; id++) {
            List<Integer> indices = new ArrayList<>();
            List<Float> values = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                if (random.nextInt(5) == 0) {
                    indices.add(i);
                    values.add((float) random.nextGaussian());
                }
            }
            rows.add(RowFactory.create(id, RowFactory.create(indices, values)));
        }
        StructType sparse = new StructType().add("indices", DataTypes.createArrayType(DataTypes.IntegerType))
                .add("values", DataTypes.createArrayType(DataTypes.FloatType));
        StructType schema = new StructType().add("id", DataTypes.LongType, false).add("terms", sparse, false);
        String stored = path + "-sparse";
        spark.createDataFrame(rows, schema).repartition(2).write().format("hyperstream").mode("append").save(stored);
        spark.read().format("hyperstream").load(stored).createOrReplaceTempView("stored_terms");
        spark.createDataFrame(rows, schema).createOrReplaceTempView("memory_terms");
        String query = "named_struct('indices', array(3, 7, 40), 'values', array(0.5, -1.25, 2.0))";
        for (String function : List.of("l2_distance", "cosine_distance", "l1_distance", "negative_inner_product")) {
            String sql = "SELECT id, hyperstream." + function + "(terms, " + query + ") AS d FROM %s WHERE id >= 30 ORDER BY d LIMIT 8";
            Dataset<Row> pushed = spark.sql(String.format(sql, "stored_terms"));
            assertTrue(plan(pushed).contains("nativeTopK=8 by " + function + "(terms"), plan(pushed));
            List<Row> got = pushed.collectAsList();
            List<Row> want = spark.sql(String.format(sql, "memory_terms")).collectAsList();
            assertEquals(8, got.size());
            for (int i = 0; i < 8; i++) {
                assertEquals(want.get(i).getDouble(1), got.get(i).getDouble(1), 1e-5, function + " rank " + i);
            }
        }
        // pgvector's sparse vector text (positions from 1) is the same query.
        Dataset<Row> text = spark.sql("SELECT id, terms <-> '{4:0.5,8:-1.25,41:2.0}/50' AS d FROM stored_terms WHERE id >= 30 "
                + "ORDER BY d LIMIT 8");
        assertTrue(plan(text).contains("nativeTopK=8 by l2_distance(terms"), plan(text));
        List<Row> textWant = spark.sql("SELECT id, hyperstream.l2_distance(terms, " + query + ") AS d FROM memory_terms "
                + "WHERE id >= 30 ORDER BY d LIMIT 8").collectAsList();
        List<Row> textGot = text.collectAsList();
        for (int i = 0; i < 8; i++) {
            assertEquals(textWant.get(i).getDouble(1), textGot.get(i).getDouble(1), 1e-5, "text form rank " + i);
        }
        Exception badText = assertThrows(Exception.class, () -> spark.sql("SELECT terms <-> '{0:1}/50' FROM memory_terms").collect());
        assertTrue(LocalSpark.messages(badText).contains("entry '0:1' is not position:value"), LocalSpark.messages(badText));
        Exception mixed = assertThrows(Exception.class, () -> spark.sql("SELECT hyperstream.l2_distance(terms, array(1.0)) FROM memory_terms").collect());
        assertTrue(LocalSpark.messages(mixed).contains("compares two sparse vectors or two dense ones"), LocalSpark.messages(mixed));
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
        assertTrue(LocalSpark.messages(bad).contains("comma-separated numbers"), LocalSpark.messages(bad));
    }

    @Test
    void aVectorIndexDeclaredOnWriteServesPushedSearchesAsTheEfOptionSays() throws Exception {
        String indexed = Files.createTempDirectory("hyperstream-spark-index").resolve("docs").toString();
        Dataset<Row> docs = spark.read().format("hyperstream").load(path).select("id", "category", "embedding");
        Map<String, Long> declaring = writeMetrics(() -> docs.repartition(3).write().format("hyperstream")
                .option("vector.embedding.dimension", DIM).option("vector.embedding.index", "{\"metric\":\"l2\",\"m\":12}")
                .mode("append").save(indexed));
        // The tasks wrote before the index existed; the commit built it for their files (Spark 4
        // shows what the driver did; Spark 3.5's writes take no driver metrics).
        assertEquals(0L, declaring.get("vectorIndexFiles"), declaring.toString());
        if (!spark.version().startsWith("3.")) {
            assertEquals(3L, declaring.get("declaredIndexFiles"), declaring.toString());
            assertEquals((long) ROWS, declaring.get("declaredIndexVectors"), declaring.toString());
        }
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
        assertTrue(LocalSpark.messages(bad).contains("unknown vector index field 'M'"), LocalSpark.messages(bad));
        bad = assertThrows(Exception.class, () -> docs.limit(5).write().format("hyperstream")
                .option("vector.category.index", "hnsw").mode("append").save(indexed));
        assertTrue(LocalSpark.messages(bad).contains("'category' is not a vector column"), LocalSpark.messages(bad));
        assertEquals(ROWS, spark.read().format("hyperstream").load(indexed).count(), "refused writes commit nothing");
        // An append to the indexed column: each task builds the graphs of the files it writes (Spark
        // 3.5 reads a task's metrics before its files are written, so shows none).
        Map<String, Long> appending = writeMetrics(() -> docs.limit(100).coalesce(1).write().format("hyperstream")
                .mode("append").save(indexed));
        boolean spark4 = !spark.version().startsWith("3.");
        assertEquals(spark4 ? 1L : 0L, appending.get("vectorIndexFiles"), appending.toString());
        assertEquals(spark4 ? 100L : 0L, appending.get("vectorIndexVectors"), appending.toString());
        assertEquals(0L, appending.get("declaredIndexFiles"), appending.toString());
        docs.limit(0).write().format("hyperstream").option("vector.embedding.index", "none").mode("append").save(indexed);
        try (io.hyperstream.jni.NativeTable table = io.hyperstream.jni.NativeTable.load(indexed, java.util.Map.of())) {
            assertEquals(null, table.vectorIndex("embedding"));
        }
    }

    /**
     * A top-k divided among tasks (a split per file, Spark's top-k over their answers) returns the
     * single task's rows, for every metric, with and without a filter, over HNSW graphs and exact
     * files, with deleted rows; EXPLAIN says which plan ran.
     */
    @Test
    void aDistributedTopKReturnsTheSingleTaskAnswer() throws Exception {
        String spread = Files.createTempDirectory("hyperstream-spark-spread").resolve("docs").toString();
        Dataset<Row> docs = spark.read().format("hyperstream").load(path).select("id", "category", "embedding");
        docs.repartition(6).write().format("hyperstream").option("vector.embedding.dimension", DIM)
                .option("vector.embedding.index", "{\"metric\":\"l2\",\"m\":8}").mode("append").save(spread);
        try (io.hyperstream.jni.NativeTable table = io.hyperstream.jni.NativeTable.load(spread, Map.of())) {
            table.deleteWhere(io.hyperstream.jni.Filters.eq("category", "c5"));
        }
        spark.read().format("hyperstream").load(spread).createOrReplaceTempView("spread");
        String[][] queries = {
            {"cosine_distance", ""}, {"l2_distance", ""}, {"l1_distance", ""}, {"inner_product", " DESC"},
        };
        try {
            for (String ef : List.of("0", "10")) {
                spark.conf().set("spark.hyperstream.vector.search.ef", ef);
                for (String[] q : queries) {
                    for (String where : List.of("", " WHERE category IN ('c3', 'c5', 'c7') AND id >= 300")) {
                        String sql = "SELECT id, hyperstream." + q[0] + "(embedding, " + literal + ") AS d FROM spread" + where
                                + " ORDER BY d" + q[1] + " LIMIT 20";
                        spark.conf().set("spark.hyperstream.vector.search.plan", "single");
                        Dataset<Row> single = spark.sql(sql);
                        assertTrue(plan(single).contains("plan=single"), plan(single));
                        assertFalse(plan(single).contains("TakeOrderedAndProject"), plan(single));
                        List<Row> want = single.collectAsList();
                        spark.conf().set("spark.hyperstream.vector.search.plan", "distributed");
                        Dataset<Row> distributed = spark.sql(sql);
                        assertTrue(plan(distributed).contains("plan=distributed splits=6"), plan(distributed));
                        assertTrue(plan(distributed).contains("TakeOrderedAndProject"), plan(distributed));
                        assertEquals(want, distributed.collectAsList(), sql + " ef " + ef);
                        assertEquals(20, want.size());
                        assertTrue(want.stream().noneMatch(r -> r.getLong(0) % 10 == 5), "deleted rows stay deleted");
                        if (ef.equals("0")) {
                            LongPredicate keep = where.isEmpty() ? id -> id % 10 != 5 : id -> (id % 10 == 3 || id % 10 == 7) && id >= 300;
                            assertAnswer(distributed, reference(q[0], keep, !q[1].isEmpty(), 20));
                        }
                    }
                }
            }
            // EXPLAIN says how the search goes through each file: its graph where enough rows pass for
            // a walk (64 x ef: 320 at ef 5; ~450 of a file's rows are left, ~100 under the filter), else exactly.
            spark.conf().set("spark.hyperstream.vector.search.ef", "5");
            String top3 = "SELECT id FROM spread%s ORDER BY hyperstream.l2_distance(embedding, " + literal + ") LIMIT 3";
            Dataset<Row> graphs = spark.sql(String.format(top3, ""));
            assertTrue(plan(graphs).contains("index=[graph 6 files, exact 0 files]"), plan(graphs));
            Dataset<Row> exact = spark.sql(String.format(top3, " WHERE category IN ('c3', 'c7')"));
            assertTrue(plan(exact).contains("index=[graph 0 files, exact 6 files]"), plan(exact));
            spark.conf().set("spark.hyperstream.vector.search.plan", "auto");
            Dataset<Row> auto = spark.sql("SELECT id FROM spread ORDER BY hyperstream.l2_distance(embedding, " + literal + ") LIMIT 3");
            assertTrue(plan(auto).contains("plan=single"), "a small table is searched by one task: " + plan(auto));
            spark.conf().set("spark.hyperstream.vector.search.plan", "everywhere");
            Exception bad = assertThrows(Exception.class, () -> spark.sql("SELECT id FROM spread ORDER BY "
                    + "hyperstream.l2_distance(embedding, " + literal + ") LIMIT 3").collectAsList());
            assertTrue(LocalSpark.messages(bad).contains(
                    "spark.hyperstream.vector.search.plan must be one of [auto, single, distributed], got 'everywhere'"),
                    LocalSpark.messages(bad));
        } finally {
            spark.conf().unset("spark.hyperstream.vector.search.plan");
            spark.conf().unset("spark.hyperstream.vector.search.ef");
        }
    }

    /**
     * A similarity join of 1,000 queries returns, for each, exactly the k nearest rows the filter
     * passes (by a Java reference), over several tasks; through an HNSW index it keeps its recall.
     */
    @Test
    void aSimilarityJoinAnswersEveryQueryWithItsNearestRows() throws Exception {
        Random random = new Random(17);
        List<Row> queryRows = new ArrayList<>();
        double[][] queries = new double[1000][DIM];
        for (int q = 0; q < queries.length; q++) {
            List<Float> v = new ArrayList<>();
            for (int j = 0; j < DIM; j++) {
                queries[q][j] = (float) random.nextGaussian();
                v.add((float) queries[q][j]);
            }
            queryRows.add(RowFactory.create(q, v));
        }
        queryRows.add(RowFactory.create(-1, null)); // a query without a vector has no neighbours
        StructType querySchema = new StructType().add("qid", DataTypes.IntegerType, false)
                .add("qvec", DataTypes.createArrayType(DataTypes.FloatType, false), true);
        Dataset<Row> querySet = spark.createDataFrame(queryRows, querySchema).repartition(4);
        Dataset<Row> table = spark.read().format("hyperstream").load(path).where("category IN ('c3', 'c7')")
                .select("id", "category");
        Dataset<Row> joined = VectorJoin.nearest(querySet, "qvec", table, "embedding", 5, "l2");
        assertEquals(List.of("qid", "qvec", "id", "category", "_distance"), Arrays.asList(joined.schema().fieldNames()));
        assertEquals(4, joined.rdd().getNumPartitions(), "a task per partition of the queries");
        java.util.Map<Integer, List<Row>> byQuery = new java.util.TreeMap<>();
        for (Row row : joined.collectAsList()) {
            byQuery.computeIfAbsent(row.getInt(0), q -> new ArrayList<>()).add(row);
        }
        assertEquals(1000, byQuery.size(), "every query with a vector, and only those");
        for (int q = 0; q < queries.length; q++) {
            double[] query = queries[q];
            List<Hit> want = new ArrayList<>();
            for (int id = 0; id < ROWS; id++) {
                if (id % 10 == 3 || id % 10 == 7) {
                    double sum = 0;
                    for (int j = 0; j < DIM; j++) {
                        sum += Math.pow(vectors[id][j] - query[j], 2);
                    }
                    want.add(new Hit(id, Math.sqrt(sum)));
                }
            }
            want.sort(Comparator.comparingDouble(Hit::value));
            List<Row> got = byQuery.get(q);
            assertEquals(5, got.size(), "query " + q);
            for (int i = 0; i < 5; i++) {
                assertEquals(want.get(i).id(), got.get(i).getLong(2), "query " + q + " rank " + i);
                assertEquals("c" + (want.get(i).id() % 10), got.get(i).getString(3));
                assertEquals(want.get(i).value(), got.get(i).getDouble(4), 1e-4);
            }
        }
        // Through HNSW graphs (a short candidate list keeps them in use on these small files).
        String indexed = Files.createTempDirectory("hyperstream-spark-join").resolve("docs").toString();
        spark.read().format("hyperstream").load(path).select("id", "category", "embedding").repartition(2).write()
                .format("hyperstream").option("vector.embedding.dimension", DIM)
                .option("vector.embedding.index", "{\"metric\":\"l2\",\"m\":12}").mode("append").save(indexed);
        spark.conf().set("spark.hyperstream.vector.search.ef", "16");
        try {
            Dataset<Row> graph = VectorJoin.nearest(querySet, "qvec", spark.read().format("hyperstream").load(indexed).select("id"),
                    "embedding", 10, "l2");
            Dataset<Row> exact = VectorJoin.nearest(querySet, "qvec", spark.read().format("hyperstream")
                    .option("vector.search.ef", "-1").load(indexed).select("id"), "embedding", 10, "l2");
            java.util.Set<String> truth = new java.util.HashSet<>();
            exact.collectAsList().forEach(r -> truth.add(r.getInt(0) + ":" + r.getLong(2)));
            List<Row> approximate = graph.collectAsList();
            assertEquals(10_000, approximate.size());
            long found = approximate.stream().filter(r -> truth.contains(r.getInt(0) + ":" + r.getLong(2))).count();
            assertTrue(found >= 9_000, "recall@10 of the graphs: " + found / 10_000.0);
        } finally {
            spark.conf().unset("spark.hyperstream.vector.search.ef");
        }
        // What the join refuses, by name.
        Dataset<Row> docs = spark.read().format("hyperstream").load(path);
        Exception bad = assertThrows(IllegalArgumentException.class, () -> VectorJoin.nearest(querySet, "qvec",
                docs.where("substring(category, 2) = '3'"), "embedding", 5, "l2"));
        assertTrue(bad.getMessage().contains("every predicate one the native scan runs"), bad.getMessage());
        bad = assertThrows(IllegalArgumentException.class, () -> VectorJoin.nearest(querySet.withColumnRenamed("qid", "id"), "qvec",
                docs.select("id"), "embedding", 5, "l2"));
        assertTrue(bad.getMessage().contains("column 'id' is on both sides"), bad.getMessage());
        bad = assertThrows(IllegalArgumentException.class, () -> VectorJoin.nearest(querySet, "qid", docs.select("id"),
                "embedding", 5, "l2"));
        assertTrue(bad.getMessage().contains("query column 'qid' is int, not an array of numbers"), bad.getMessage());
        bad = assertThrows(IllegalArgumentException.class, () -> VectorJoin.nearest(querySet, "qvec", docs.select("id"),
                "vec", 5, "l2"));
        assertTrue(bad.getMessage().contains("vector column 'vec' is not a column of the table"), bad.getMessage());
        Exception metric = assertThrows(Exception.class, () -> VectorJoin.nearest(querySet, "qvec", docs.select("id"),
                "embedding", 5, "manhattanish").collectAsList());
        assertTrue(LocalSpark.messages(metric).contains("manhattanish"), LocalSpark.messages(metric));
    }

    @Test
    void theBackendOptionSaysWhereAPushedSearchComparesVectors() {
        List<Hit> want = reference("l2_distance", id -> true, false, 10);
        spark.read().format("hyperstream").option("vector.search.backend", "CPU").load(path).createOrReplaceTempView("on_cpu");
        Dataset<Row> df = spark.sql("SELECT id, hyperstream.l2_distance(embedding, " + literal + ") AS d"
                + " FROM on_cpu ORDER BY d LIMIT 10");
        assertTrue(plan(df).contains("l2_distance(embedding, [16 values]) on cpu"), plan(df));
        assertAnswer(df, want);
        // The library the tests load has no GPU backend compiled in (or no device answers): a search
        // that insists on one fails, naming it, where auto would have stayed on the CPU.
        if (!io.hyperstream.jni.NativeLibrary.gpuBackends().contains("wgpu: available")) {
            spark.read().format("hyperstream").option("vector.search.backend", "wgpu").load(path)
                    .createOrReplaceTempView("on_wgpu");
            Exception e = assertThrows(Exception.class, () -> spark.sql("SELECT id FROM on_wgpu ORDER BY "
                    + "hyperstream.l2_distance(embedding, " + literal + ") LIMIT 3").collectAsList());
            assertTrue(LocalSpark.messages(e).contains("wgpu"), LocalSpark.messages(e));
        }
        Exception bad = assertThrows(Exception.class, () -> spark.read().format("hyperstream")
                .option("vector.search.backend", "tpu").load(path).count());
        assertTrue(LocalSpark.messages(bad).contains("'vector.search.backend' must be one of [auto, cpu, cuda, wgpu]"),
                LocalSpark.messages(bad));
    }

    @Test
    void aQueryOfTheWrongDimensionFailsClearly() {
        Exception e = assertThrows(Exception.class, () -> spark.sql(
                "SELECT id FROM docs ORDER BY hyperstream.cosine_distance(embedding, array(1.0, 2.0)) LIMIT 3").collectAsList());
        assertTrue(LocalSpark.messages(e).contains("2 dimensions but the column has 16"), LocalSpark.messages(e));
    }
}
