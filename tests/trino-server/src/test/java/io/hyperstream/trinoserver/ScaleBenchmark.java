package io.hyperstream.trinoserver;

import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.execute;
import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.explain;
import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.rows;
import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.scalar;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Trino half of the engine scale benchmark: the table {@code scale_bench --keep} stored, searched
 * through a coordinator and two workers started from the plugin zip ({@link TrinoNode}), over JDBC.
 * Each stored query runs as {@code SELECT id FROM lake.db.items ORDER BY euclidean_distance(embedding,
 * ARRAY[...]) LIMIT 10}, exactly ({@code vector_search_ef} -1) and through the HNSW graphs (ef 64),
 * as one split (the single plan) and a split per data file (the distributed plan). Prints a Markdown
 * row per search and plan (splits, p50/p99 latency of the whole query, recall@10 against the stored
 * exact answer) and both plans, and writes them to {@code <lake>/trino.md}.
 *
 * <p>A benchmark, not a test: surefire runs it only when named, as {@code ./build-connectors.sh bench
 * scale} does ({@code -Dtest=ScaleBenchmark}, the lake in {@code HYPERSTREAM_SCALE_LAKE}).
 */
class ScaleBenchmark {
    private static final int WARM_UP = 8;
    private static final int K = 10;

    @TempDir
    Path dir;

    @Test
    void searchTheStoredTableThroughACoordinatorAndTwoWorkers() throws Exception {
        String given = System.getenv("HYPERSTREAM_SCALE_LAKE");
        assumeTrue(given != null && !given.isBlank(), "HYPERSTREAM_SCALE_LAKE names no lake (./build-connectors.sh bench scale does)");
        Path lake = Path.of(given);
        List<long[]> truth = Files.readAllLines(lake.resolve("truth.txt")).stream().filter(l -> !l.isBlank())
                .map(l -> Arrays.stream(l.trim().split(" ")).mapToLong(Long::parseLong).toArray()).toList();
        ByteBuffer stored = ByteBuffer.wrap(Files.readAllBytes(lake.resolve("queries.f32"))).order(ByteOrder.LITTLE_ENDIAN);
        int dim = stored.remaining() / 4 / truth.size();
        List<String> queries = new ArrayList<>();
        for (int q = 0; q < truth.size(); q++) {
            StringJoiner literal = new StringJoiner(", ", "ARRAY[", "]");
            for (int j = 0; j < dim; j++) {
                literal.add("REAL '" + stored.getFloat() + "'");
            }
            queries.add("SELECT id FROM lake.db.items ORDER BY euclidean_distance(embedding, " + literal + ") LIMIT " + K);
        }
        StringBuilder out = new StringBuilder();
        try (TrinoNode coordinator = TrinoNode.start(dir.resolve("coordinator"), TrinoNode.Role.COORDINATOR, null,
                        Map.of("lake", lake), Map.of(), "1536M");
                TrinoNode worker = TrinoNode.start(dir.resolve("worker"), TrinoNode.Role.WORKER, coordinator.uri(),
                        Map.of("lake", lake), Map.of(), "2G");
                TrinoNode second = TrinoNode.start(dir.resolve("worker2"), TrinoNode.Role.WORKER, coordinator.uri(),
                        Map.of("lake", lake), Map.of(), "2G");
                Connection c = connect(coordinator, worker, second)) {
            long rows = scalar(c, "SELECT count(*) FROM lake.db.items");
            // The coordinator's parser and planner and the workers' read path warm up over the first few
            // dozen queries: every configuration runs its first queries before any is measured.
            Object[][] searches = {{"exact", -1}, {"HNSW ef 64", 64}};
            for (int round = 0; round < WARM_UP; round++) {
                for (Object[] search : searches) {
                    for (String plan : List.of("single", "distributed")) {
                        execute(c, "SET SESSION lake.vector_search_ef = " + search[1]);
                        execute(c, "SET SESSION lake.vector_search_plan = '" + plan + "'");
                        rows(c, queries.get(round % queries.size()));
                    }
                }
            }
            out.append("| vectors | engine | search | plan | splits | p50 ms | p99 ms | recall@10 |\n|---|---|---|---|---|---|---|---|\n");
            for (Object[] search : searches) {
                execute(c, "SET SESSION lake.vector_search_ef = " + search[1]);
                for (String plan : List.of("single", "distributed")) {
                    execute(c, "SET SESSION lake.vector_search_plan = '" + plan + "'");
                    Matcher splits = Pattern.compile("splits=(\\d+)").matcher(explain(c, queries.get(0)));
                    List<Double> ms = new ArrayList<>();
                    long found = 0;
                    for (int q = 0; q < queries.size(); q++) {
                        long start = System.nanoTime();
                        List<List<Object>> answer = rows(c, queries.get(q));
                        ms.add((System.nanoTime() - start) / 1e6);
                        Set<Long> expected = Arrays.stream(truth.get(q)).boxed().collect(Collectors.toSet());
                        found += answer.stream().filter(r -> expected.contains(((Number) r.get(0)).longValue())).count();
                    }
                    String row = String.format("| %,d x %d | Trino, coordinator + 2 workers | %s | %s | %s | %.1f | %.1f | %.3f |%n",
                            rows, dim, search[0], plan, splits.find() ? splits.group(1) : "1", percentile(ms, 0.5),
                            percentile(ms, 0.99), found / (double) (K * queries.size()));
                    out.append(row);
                    System.out.print(row);
                }
            }
            for (String plan : List.of("single", "distributed")) {
                execute(c, "SET SESSION lake.vector_search_plan = '" + plan + "'");
                String shown = plan + " plan:\n" + explain(c, queries.get(0)).lines()
                        .filter(l -> l.contains("TopN") || l.contains("nativeTopK")).collect(Collectors.joining("\n")) + "\n";
                out.append(shown);
                System.out.print(shown);
            }
        }
        Files.writeString(lake.resolve("trino.md"), out);
    }

    /** A connection to the coordinator once both workers are active. */
    private static Connection connect(TrinoNode coordinator, TrinoNode... workers) throws Exception {
        coordinator.awaitActive(1 + workers.length, workers);
        return DriverManager.getConnection(coordinator.jdbcUrl());
    }

    private static double percentile(List<Double> values, double p) {
        List<Double> sorted = new ArrayList<>(values);
        java.util.Collections.sort(sorted);
        return sorted.get((int) Math.round((sorted.size() - 1) * p));
    }
}
