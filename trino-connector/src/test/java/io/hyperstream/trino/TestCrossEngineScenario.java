package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.RestCatalog;
import io.hyperstream.jni.RestCatalogTestServer;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Spark and Trino on one table: Spark creates it with 100,000 rows of mixed types including a 128-d
 * vector column, Trino reads the same rows (checksums over every column equal Spark's), Trino
 * inserts more, Spark sees them, and a time-travel read in each engine returns Spark's snapshot.
 * Spark runs in a JVM of its own (JDK 17, the Spark module's test classes against its shaded JAR).
 */
class TestCrossEngineScenario {
    /** {@code CrossEngineSteps.CHECKSUMS} in Trino's SQL. */
    private static final String CHECKSUMS = "SELECT count(*), sum(id), count(name), sum(length(name)), sum(score), sum(qty), "
            + "count_if(flag), sum(reduce(embedding, 0e0, (s, x) -> s + x, s -> s)) FROM events";

    @Test
    void sparkWritesTrinoReadsAndInsertsSparkSeesItAndBothTravel() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-cross-engine");
        String table = root.resolve("db").resolve("events").toString();
        scenario(table, Map.of("hyperstream.root", root.toString()), new Catalog.TableRef(table, Map.of()));
    }

    /** The same scenario with the table kept in an Iceberg REST catalog (Iceberg's own server on loopback). */
    @Test
    void theSameThroughARestCatalog() throws Exception {
        Path dir = Files.createTempDirectory("hyperstream-cross-engine-rest");
        try (RestCatalogTestServer server = RestCatalogTestServer.start(dir)) {
            Map<String, String> catalog = Map.of("hyperstream.catalog.type", "rest", "hyperstream.rest-catalog.uri", server.uri());
            scenario("rest=" + server.uri(), catalog, null);
            Catalog.TableRef stored = new RestCatalog("lake", server.settings()).tableRef("db", "events").orElseThrow();
            assertTrue(stored.location().startsWith(server.warehouse().toString()), stored.location());
        }
    }

    /**
     * Spark writes {@code table} (a path, or {@code rest=<uri>}), Trino (catalog {@code properties})
     * reads and inserts, Spark sees it, both travel back to Spark's snapshot. {@code stored} opens the
     * table natively (null: found through Trino's catalog after Spark wrote it).
     */
    private static void scenario(String table, Map<String, String> properties, Catalog.TableRef stored) throws Exception {
        Map<String, List<Double>> spark = spark("write", table);

        DistributedQueryRunner runner = DistributedQueryRunner.builder(
                testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        try {
            IsolatedPlugin.install(runner);
            runner.createCatalog("lake", "hyperstream", properties);
            assertEquals(spark.get("written"), checksums(runner, ""), "Trino reads exactly the rows Spark wrote");
            assertEquals(List.of(100_000.0, 100_000.0 * 99_999 / 2), spark.get("written").subList(0, 2));

            long sparkSnapshot = ((Number) runner.execute("SELECT max_by(snapshot_id, committed_at) FROM \"events$snapshots\"")
                    .getOnlyValue()).longValue();
            if (stored != null) {
                try (NativeTable opened = stored.open()) {
                    assertEquals(opened.currentSnapshotId(), sparkSnapshot);
                }
            }
            runner.execute("INSERT INTO events SELECT id + 100000, name, score, qty, flag, embedding FROM events WHERE id < 1000");
            List<Double> trinoNow = checksums(runner, "");
            assertEquals(101_000.0, trinoNow.get(0));
            assertEquals(spark.get("written"), checksums(runner, " FOR VERSION AS OF " + sparkSnapshot),
                    "Trino's time travel returns Spark's snapshot");

            Map<String, List<Double>> sparkAgain = spark("read", table, Long.toString(sparkSnapshot));
            assertEquals(trinoNow, sparkAgain.get("now"), "Spark sees the rows Trino inserted");
            assertEquals(spark.get("written"), sparkAgain.get("before"), "Spark's time travel returns its own snapshot");
        } finally {
            runner.close();
        }
    }

    private static List<Double> checksums(DistributedQueryRunner runner, String version) {
        MaterializedRow row = runner.execute(CHECKSUMS.replace("FROM events", "FROM events" + version)).getMaterializedRows().get(0);
        List<Double> out = new ArrayList<>();
        for (Object value : row.getFields()) {
            out.add(((Number) value).doubleValue());
        }
        return out;
    }

    /** Runs a step of CrossEngineSteps in a Spark JVM; returns its checksum lines by name. */
    private static Map<String, List<Double>> spark(String... args) throws IOException, InterruptedException {
        Path module = Path.of(System.getProperty("hyperstream.spark.module", "../spark-connector")).toAbsolutePath();
        Path jvmArgs = module.resolve("target/run/jvm.args");
        Path classpath = module.resolve("target/run.classpath");
        Path jar;
        try (var jars = Files.list(module.resolve("target"))) {
            jar = jars.filter(p -> p.getFileName().toString().matches("hyperstream-spark-.*\\.jar")
                    && !p.getFileName().toString().endsWith("-tests.jar")).findFirst().orElse(null);
        }
        assertTrue(jar != null && Files.exists(classpath) && Files.exists(jvmArgs),
                "the Spark connector is not built in " + module + ": build it first (mvn install runs it before this module)");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("hyperstream.java17.home", "/usr/lib/jvm/java-17-openjdk-amd64"), "bin", "java").toString());
        command.addAll(Arrays.asList(Files.readString(jvmArgs).trim().split("\\s+")));
        command.addAll(List.of("-Xmx2g", "-Djava.library.path=/nonexistent", "-cp",
                module.resolve("target/test-classes") + ":" + jar + ":" + Files.readString(classpath).trim(),
                "io.hyperstream.spark.CrossEngineSteps"));
        command.addAll(List.of(args));
        Path log = Files.createTempFile("spark-step", ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean done = process.waitFor(10, TimeUnit.MINUTES);
        String output = Files.readString(log, StandardCharsets.UTF_8);
        if (!done) {
            process.destroyForcibly();
        }
        assertTrue(done && process.exitValue() == 0, "Spark step " + Arrays.toString(args) + " failed:\n"
                + output.substring(Math.max(0, output.length() - 6000)));
        Map<String, List<Double>> checksums = new HashMap<>();
        for (String line : output.split("\n")) {
            if (line.startsWith("CHECKSUMS ")) {
                String[] parts = line.trim().split(" ");
                checksums.put(parts[1], Arrays.stream(parts, 2, parts.length).map(Double::valueOf).toList());
            }
        }
        return checksums;
    }
}
