package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.VectorSearch;
import io.trino.testing.DistributedQueryRunner;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * End-to-end exact top-10 through Trino ({@code ORDER BY euclidean_distance(embedding, ARRAY[...])
 * LIMIT 10}, pushed into the scan as a native top-k) against the native search call on the same
 * stored table in the same process: medians over single queries, with their ratio. The table is
 * the sample table's rows (100,000 x 768 by default) written by Trino (CREATE TABLE AS).
 *
 * <pre>./build-connectors.sh bench topk [rows (100000)] [queries (20)]</pre>
 */
public final class TopKBenchmark {
    private static final int DIM = 768;
    // Trino's logging takes over System.out once the runner starts; the figures go to the real stdout.
    private static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    private TopKBenchmark() {}

    public static void main(String[] args) throws Exception {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 100_000L;
        int queries = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        Path root = Path.of("target", "bench-data", "topk-trino").toAbsolutePath();
        io.hyperstream.jni.LocalFiles.deleteTree(root);
        java.nio.file.Files.createDirectories(root);
        try (DistributedQueryRunner runner = DistributedQueryRunner.builder(
                testSessionBuilder().setCatalog("lake").setSchema("db").build()).build()) {
            IsolatedPlugin.install(runner);
            runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
            runner.createCatalog("hyperstream", "hyperstream", Map.of("hyperstream.sample.rows", Long.toString(rows),
                    "hyperstream.sample.dimension", Integer.toString(DIM)));
            runner.execute("CREATE SCHEMA lake.db");
            runner.execute("CREATE TABLE lake.db.items WITH (vectors = 'embedding:" + DIM + "') AS SELECT * FROM hyperstream.sample.items");
            // The floor: the same query over a 10-row table, what any Trino query costs here.
            runner.execute("CREATE TABLE lake.db.tiny WITH (vectors = 'embedding:" + DIM + "') AS SELECT * FROM hyperstream.sample.items WHERE id < 10");
            List<Double> floorMs = new ArrayList<>();
            String path = root.resolve("db").resolve("items").toString();
            List<Double> nativeMs = new ArrayList<>();
            List<Double> trinoMs = new ArrayList<>();
            List<Double> distributedMs = new ArrayList<>();
            io.trino.Session single = io.trino.Session.builder(runner.getDefaultSession())
                    .setCatalogSessionProperty("lake", "vector_search_plan", "single").build();
            io.trino.Session distributed = io.trino.Session.builder(runner.getDefaultSession())
                    .setCatalogSessionProperty("lake", "vector_search_plan", "distributed").build();
            int files;
            try (BufferAllocator allocator = Allocators.child("topk-bench");
                    NativeTable table = NativeTable.load(path, Map.of())) {
                String[] dataFiles = table.dataFiles(TableVersion.CURRENT);
                files = dataFiles.length;
                for (int q = -3; q < queries; q++) {
                    float[] query = query(q + 3);
                    long start = System.nanoTime();
                    List<Long> expected = ids(table.search(allocator, dataFiles, new String[] {"id"}, null,
                            new VectorSearch("embedding", query, "l2", 10), 1024));
                    double nativeTime = (System.nanoTime() - start) / 1e6;
                    start = System.nanoTime();
                    List<Long> got = runner.execute(single, "SELECT id FROM items ORDER BY euclidean_distance(embedding, "
                            + literal(query) + ") LIMIT 10").getOnlyColumn().map(Long.class::cast).toList();
                    double trinoTime = (System.nanoTime() - start) / 1e6;
                    start = System.nanoTime();
                    // The sample's vectors repeat, so rows tie: the distributed plan may take other rows of a
                    // tied distance, and is held to the single plan's distances.
                    String distanceSql = "SELECT euclidean_distance(embedding, " + literal(query) + ") AS d FROM items ORDER BY d LIMIT 10";
                    List<Double> spread = runner.execute(distributed, distanceSql).getOnlyColumn().map(Double.class::cast).toList();
                    double distributedTime = (System.nanoTime() - start) / 1e6;
                    start = System.nanoTime();
                    runner.execute("SELECT id FROM tiny ORDER BY euclidean_distance(embedding, " + literal(query) + ") LIMIT 10");
                    double floorTime = (System.nanoTime() - start) / 1e6;
                    List<Double> distances = runner.execute(single, distanceSql).getOnlyColumn().map(Double.class::cast).toList();
                    if (!got.equals(expected) || !spread.equals(distances)) {
                        throw new IllegalStateException("Trino's top-10 " + got + " differs from the native " + expected
                                + ", or the distributed plan's distances " + spread + " from the single plan's " + distances);
                    }
                    if (q >= 0) { // the first three warm up
                        nativeMs.add(nativeTime);
                        trinoMs.add(trinoTime);
                        floorMs.add(floorTime);
                        distributedMs.add(distributedTime);
                    }
                }
            }
            double n = median(nativeMs);
            double t = median(trinoMs);
            OUT.printf("%nExact top-10 over %,d x %d f32 (%d data files), median of %d single queries, same neighbours:%n",
                    rows, DIM, files, queries);
            OUT.println("| workload | ms | ratio to the native call |");
            OUT.println("|---|---|---|");
            OUT.printf("| native NativeTable.search (peer) | %.2f | 1.00 |%n", n);
            OUT.printf("| Trino, ORDER BY euclidean_distance LIMIT 10 (pushed) | %.2f | %.2f |%n", t, t / n);
            double f = median(floorMs);
            OUT.printf("| Trino floor: the same query over a 10-row table | %.2f | %.2f |%n", f, f / n);
            OUT.printf("| Trino less its floor | %.2f | %.2f |%n", t - f, (t - f) / n);
            double d = median(distributedMs);
            OUT.printf("| Trino, the same top-k distributed (a split per file, Trino's TopN over them) | %.2f | %.2f |%n", d, d / n);
            String q = "SELECT id FROM items ORDER BY euclidean_distance(embedding, " + literal(query(0)) + ") LIMIT 10";
            for (io.trino.Session session : List.of(single, distributed)) {
                String plan = (String) runner.execute(session, "EXPLAIN " + q).getOnlyValue();
                OUT.println(plan.lines().filter(l -> l.contains("TopN") || l.contains("nativeTopK"))
                        .map(l -> l.replaceAll("\\[[-0-9.E, ]{200,}\\]", "[...]")).collect(java.util.stream.Collectors.joining("\n")));
            }
            OUT.println("(./build-connectors.sh bench topk " + rows + " " + queries + ")");
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
        StringJoiner joined = new StringJoiner(", ", "ARRAY[", "]");
        for (float v : query) {
            joined.add("REAL '" + v + "'");
        }
        return joined.toString();
    }

    private static List<Long> ids(ArrowReader reader) throws Exception {
        List<Long> ids = new ArrayList<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                BigIntVector column = (BigIntVector) reader.getVectorSchemaRoot().getVector("id");
                for (int i = 0; i < column.getValueCount(); i++) {
                    ids.add(column.get(i));
                }
            }
        }
        return ids;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }
}
