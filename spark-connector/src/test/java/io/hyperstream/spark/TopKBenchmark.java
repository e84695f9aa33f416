package io.hyperstream.spark;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.VectorSearch;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * End-to-end exact top-10 through Spark SQL ({@code ORDER BY hyperstream.l2_distance(embedding,
 * <literal>) LIMIT 10}, pushed into the scan as a native top-k) against the native search call on
 * the same stored table in the same process: medians over single queries, with their ratio. The
 * table is the sample table's rows (100,000 x 768 by default) written by Spark as 4 data files. The
 * same query runs in one task (the single plan, what the figures of the native call compare with)
 * and divided among four (the distributed plan), and both plans are printed.
 *
 * <pre>./build-connectors.sh bench topk [rows (100000)] [queries (20)]</pre>
 */
public final class TopKBenchmark {
    private static final int DIM = 768;

    private TopKBenchmark() {}

    public static void main(String[] args) throws Exception {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 100_000L;
        int queries = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        String path = Path.of("target", "bench-data", "topk-spark").toAbsolutePath().toString();
        ScanBenchmark.delete(new java.io.File(path));
        SparkSession spark = LocalSpark.start("hyperstream-topk-bench");
        spark.sparkContext().setLogLevel("WARN");
        spark.conf().set("spark.hyperstream.vector.search.plan", "single");
        try {
            spark.read().format("hyperstream").option("sample.rows", rows).option("sample.dimension", DIM).load()
                    .repartition(4).write().format("hyperstream").option("vector.embedding.dimension", DIM)
                    .mode("append").save(path);
            spark.read().format("hyperstream").load(path).createOrReplaceTempView("items");
            // The floor: the same query over a 10-row table, what any Spark query costs here.
            String tiny = path + "-tiny";
            ScanBenchmark.delete(new java.io.File(tiny));
            spark.read().format("hyperstream").option("sample.rows", 10).option("sample.dimension", DIM).load()
                    .write().format("hyperstream").option("vector.embedding.dimension", DIM).mode("append").save(tiny);
            spark.read().format("hyperstream").load(tiny).createOrReplaceTempView("tiny");
            List<Double> floorMs = new ArrayList<>();
            List<Double> nativeMs = new ArrayList<>();
            List<Double> sparkMs = new ArrayList<>();
            List<Double> distributedMs = new ArrayList<>();
            // Keys only, no Arrow: the Spark 3.5 line runs this against the shaded JAR.
            try (NativeTable table = NativeTable.load(path, Map.of())) {
                String[] files = table.dataFiles(TableVersion.CURRENT);
                for (int q = -3; q < queries; q++) {
                    float[] query = query(q + 3);
                    long start = System.nanoTime();
                    List<Long> expected = java.util.Arrays.stream(table.searchKeys(files, "id", null,
                            new VectorSearch("embedding", query, "l2", 10))).boxed().toList();
                    double nativeTime = (System.nanoTime() - start) / 1e6;
                    start = System.nanoTime();
                    List<Long> got = spark.sql("SELECT id FROM items ORDER BY hyperstream.l2_distance(embedding, "
                            + literal(query) + ") LIMIT 10").collectAsList().stream().map(r -> r.getLong(0)).toList();
                    double sparkTime = (System.nanoTime() - start) / 1e6;
                    start = System.nanoTime();
                    spark.sql("SELECT id FROM tiny ORDER BY hyperstream.l2_distance(embedding, " + literal(query) + ") LIMIT 10")
                            .collectAsList();
                    double floorTime = (System.nanoTime() - start) / 1e6;
                    // The sample's vectors repeat, so rows tie: the distributed plan may take other rows of a
                    // tied distance, and is held to the single plan's distances.
                    String distanceSql = "SELECT hyperstream.l2_distance(embedding, " + literal(query) + ") AS d FROM items ORDER BY d LIMIT 10";
                    spark.conf().set("spark.hyperstream.vector.search.plan", "distributed");
                    start = System.nanoTime();
                    List<Double> spread = spark.sql(distanceSql).collectAsList().stream().map(r -> r.getDouble(0)).toList();
                    double distributedTime = (System.nanoTime() - start) / 1e6;
                    spark.conf().set("spark.hyperstream.vector.search.plan", "single");
                    List<Double> distances = spark.sql(distanceSql).collectAsList().stream().map(r -> r.getDouble(0)).toList();
                    if (!got.equals(expected) || !spread.equals(distances)) {
                        throw new IllegalStateException("Spark's top-10 " + got + " differs from the native " + expected
                                + ", or the distributed plan's distances " + spread + " from the single plan's " + distances);
                    }
                    if (q >= 0) { // the first three warm up
                        nativeMs.add(nativeTime);
                        sparkMs.add(sparkTime);
                        floorMs.add(floorTime);
                        distributedMs.add(distributedTime);
                    }
                }
            }
            double n = median(nativeMs);
            double s = median(sparkMs);
            System.out.printf("%nExact top-10 over %,d x %d f32 (4 data files), median of %d single queries, same neighbours:%n",
                    rows, DIM, queries);
            System.out.println("| workload | ms | ratio to the native call |");
            System.out.println("|---|---|---|");
            System.out.printf("| native NativeTable.search (peer) | %.2f | 1.00 |%n", n);
            System.out.printf("| Spark SQL, ORDER BY l2_distance LIMIT 10 (pushed) | %.2f | %.2f |%n", s, s / n);
            double f = median(floorMs);
            System.out.printf("| Spark floor: the same query over a 10-row table | %.2f | %.2f |%n", f, f / n);
            System.out.printf("| Spark less its floor | %.2f | %.2f |%n", s - f, (s - f) / n);
            double d = median(distributedMs);
            System.out.printf("| Spark SQL, the same top-k distributed (a task per file, Spark's top-k over them) | %.2f | %.2f |%n",
                    d, d / n);
            spark.conf().set("spark.hyperstream.vector.search.plan", "distributed");
            String q = "SELECT id FROM items ORDER BY hyperstream.l2_distance(embedding, " + literal(query(0)) + ") LIMIT 10";
            System.out.println("distributed plan: " + spark.sql(q).queryExecution().executedPlan().toString().replaceAll("\\[[-0-9.E, ]{200,}\\]", "[...]"));
            spark.conf().set("spark.hyperstream.vector.search.plan", "single");
            System.out.println("single plan: " + spark.sql(q).queryExecution().executedPlan().toString().replaceAll("\\[[-0-9.E, ]{200,}\\]", "[...]"));
            System.out.println("(./build-connectors.sh bench topk " + rows + " " + queries + ")");
        } finally {
            spark.stop();
        }
    }

    /** Query {@code q}: a row of the table, nudged so that it is no row's exact copy. */
    static float[] query(int q) {
        float[] query = new float[DIM];
        long id = 7919L * q + 13;
        for (int j = 0; j < DIM; j++) {
            query[j] = (float) ((id * 31 + j * 17L) % 1000) / 1000.0f + 0.0003f * (j % 7);
        }
        return query;
    }

    private static String literal(float[] query) {
        StringJoiner joined = new StringJoiner(", ", "array(", ")");
        for (float v : query) {
            joined.add(Float.toString(v));
        }
        return joined.toString();
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }
}
