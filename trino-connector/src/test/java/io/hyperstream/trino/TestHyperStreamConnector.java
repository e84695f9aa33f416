package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.Session;
import io.trino.spi.Plugin;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedResult;
import io.trino.testing.MaterializedRow;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Runs the plugin directory the build laid out, loaded as a server loads it ({@link IsolatedPlugin}),
 * in Trino's own distributed query runner. {@link TestPluginIsolation} drives the same plugin through
 * the SPI alone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestHyperStreamConnector {
    private static final long ROWS = 10_000;
    private static final int DIM = 8;
    private static final long SEED = 3;
    private DistributedQueryRunner runner;
    private Plugin plugin;

    @BeforeAll
    void startTrino() throws Exception {
        Session session = testSessionBuilder().setCatalog("hyperstream").setSchema("sample").build();
        runner = DistributedQueryRunner.builder(session).setWorkerCount(1).build();
        plugin = IsolatedPlugin.install(runner);
        runner.createCatalog("hyperstream", "hyperstream", Map.of(
                "hyperstream.sample.rows", String.valueOf(ROWS),
                "hyperstream.sample.dimension", String.valueOf(DIM),
                "hyperstream.sample.seed", String.valueOf(SEED),
                "hyperstream.split-rows", "2500",
                "hyperstream.batch-rows", "1000"));
    }

    @AfterAll
    void stopTrino() {
        if (runner != null) {
            runner.close();
        }
    }

    private MaterializedResult query(String sql) {
        return runner.execute(sql);
    }

    @Test
    void schemasTablesAndColumnsComeFromTheNativeTable() {
        assertTrue(query("SHOW SCHEMAS").getOnlyColumnAsSet().contains("sample"));
        assertEquals(List.of("items"), query("SHOW TABLES").getOnlyColumn().toList());
        List<MaterializedRow> columns = query("DESCRIBE items").getMaterializedRows();
        assertEquals(List.of("id bigint", "value double", "category varchar", "flag boolean", "embedding array(real)"),
                columns.stream().map(r -> r.getField(0) + " " + r.getField(1)).toList());
    }

    @Test
    void everyRowArrivesThroughTheNativeScan() {
        MaterializedRow totals = query("SELECT count(*), sum(id), sum(value), count(category), "
                + "count_if(flag), sum(reduce(embedding, 0e0, (s, x) -> s + x, s -> s)) FROM items").getMaterializedRows().get(0);
        assertEquals(ROWS, totals.getField(0));
        assertEquals(ROWS * (ROWS - 1) / 2, totals.getField(1));
        assertEquals(ROWS * (ROWS - 1) / 4.0, totals.getField(2));
        assertEquals(ROWS - ROWS / 10, totals.getField(3));
        assertEquals((ROWS + 2) / 3, totals.getField(4));
        double embeddingSum = 0;
        for (long id = 0; id < ROWS; id++) {
            for (int j = 0; j < DIM; j++) {
                embeddingSum += (float) ((id * 31 + j * 17L + SEED) % 1000) / 1000.0f;
            }
        }
        assertEquals(embeddingSum, (double) totals.getField(5), 1e-6 * embeddingSum);
    }

    @Test
    void valuesOfSingleRowsMatchTheDocumentedFormulas() {
        List<MaterializedRow> rows = query("SELECT id, value, category, flag, embedding FROM items "
                + "WHERE id IN (4242, 4249) ORDER BY id").getMaterializedRows();
        assertEquals(2, rows.size());
        MaterializedRow first = rows.get(0);
        assertEquals(4242L, first.getField(0));
        assertEquals(2121.0, first.getField(1));
        assertEquals("cat-" + (4242 % 7), first.getField(2));
        assertEquals(true, first.getField(3));
        @SuppressWarnings("unchecked")
        List<Float> embedding = (List<Float>) first.getField(4);
        assertEquals(DIM, embedding.size());
        for (int j = 0; j < DIM; j++) {
            assertEquals((float) ((4242L * 31 + j * 17L + SEED) % 1000) / 1000.0f, embedding.get(j));
        }
        assertNull(rows.get(1).getField(2), "id 4249 has a null category");
        assertEquals(ROWS, query("SELECT count(*) FROM items WHERE category IS NULL OR category IS NOT NULL").getOnlyValue());
    }

    @Test
    void unknownTablesAndVersionsFailClearly() {
        RuntimeException missing = assertThrows(RuntimeException.class, () -> query("SELECT * FROM nope"));
        assertTrue(missing.getMessage().contains("nope"), missing.getMessage());
        RuntimeException version = assertThrows(RuntimeException.class,
                () -> query("SELECT * FROM items FOR VERSION AS OF 1"));
        assertTrue(version.getMessage().contains("no versions"), version.getMessage());
        assertEquals(ROWS, query("SELECT count(*) FROM items").getOnlyValue());
    }

    @Test
    void badCatalogPropertiesAreRejectedWithTheirName() {
        RuntimeException unknown = assertThrows(RuntimeException.class, () -> runner.createCatalog("bad1", "hyperstream",
                Map.of("hyperstream.colour", "blue")));
        assertTrue(messages(unknown).contains("hyperstream.colour"), messages(unknown));
        runner.createCatalog("bad2", "hyperstream", Map.of("hyperstream.sample.rows", "-3"));
        RuntimeException rows = assertThrows(RuntimeException.class, () -> query("SELECT count(*) FROM bad2.sample.items"));
        assertTrue(rows.getMessage().contains("sample rows must be >= 0, got -3"), rows.getMessage());

        RuntimeException type = assertThrows(RuntimeException.class, () -> runner.createCatalog("bad3", "hyperstream",
                Map.of("hyperstream.catalog.type", "glue")));
        assertTrue(messages(type).contains("hyperstream.catalog.type must be 'filesystem' or 'rest', got 'glue'"), messages(type));
        RuntimeException noUri = assertThrows(RuntimeException.class, () -> runner.createCatalog("bad4", "hyperstream",
                Map.of("hyperstream.catalog.type", "rest")));
        assertTrue(messages(noUri).contains("hyperstream.rest-catalog.uri must be set"), messages(noUri));
        // A REST catalog nobody serves: the catalog is made, and its first use fails naming it and its URI.
        int port;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            port = socket.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        runner.createCatalog("offline", "hyperstream", Map.of("hyperstream.catalog.type", "rest",
                "hyperstream.rest-catalog.uri", "http://127.0.0.1:" + port));
        RuntimeException offline = assertThrows(RuntimeException.class, () -> query("SHOW SCHEMAS FROM offline"));
        assertTrue(offline.getMessage().contains("REST catalog offline at http://127.0.0.1:" + port), offline.getMessage());
    }

    @Test
    void thePluginDirectoryHoldsItsDependenciesAndNotTrinosOwn() throws Exception {
        List<String> jars = IsolatedPlugin.jars().stream().map(p -> p.getFileName().toString()).toList();
        // The zip unpacks to the very directory the tests load.
        try (ZipFile zip = new ZipFile(System.getProperty("hyperstream.plugin.zip"))) {
            assertEquals(jars.stream().map(j -> "hyperstream/" + j).sorted().toList(), zip.stream().map(ZipEntry::getName)
                    .filter(n -> n.endsWith(".jar")).sorted().toList(), "plugin zip layout");
        }
        Path pluginJar = IsolatedPlugin.directory().resolve(only(jars, "hyperstream-trino-"));
        try (JarFile file = new JarFile(pluginJar.toFile())) {
            assertNotNull(file.getEntry("META-INF/services/io.trino.spi.Plugin"));
        }
        try (JarFile file = new JarFile(IsolatedPlugin.directory().resolve(only(jars, "hyperstream-jni-")).toFile())) {
            assertNotNull(file.getEntry("native/linux-x86_64/libhyperstream.so"));
        }
        // What Trino lends every plugin stays out; Jackson comes at one version, with Blackbird beside it.
        assertTrue(jars.stream().noneMatch(j -> j.startsWith("trino-spi") || j.startsWith("jackson-annotations")
                || j.startsWith("slice-")), jars.toString());
        String databind = only(jars, "jackson-databind-");
        String blackbird = only(jars, "jackson-module-blackbird-");
        assertEquals(databind.substring("jackson-databind-".length()), blackbird.substring("jackson-module-blackbird-".length()));

        query("SELECT count(*) FROM items");
        Class<?> loader = plugin.getClass().getClassLoader().loadClass("io.hyperstream.jni.NativeLibrary");
        Path source = Path.of(loader.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertEquals(IsolatedPlugin.directory().toRealPath(), source.toRealPath().getParent(), "classes come from the plugin directory");
        String loadedFrom = (String) loader.getMethod("loadedFrom").invoke(null);
        assertTrue(loadedFrom.startsWith("jar:file:") && loadedFrom.endsWith("!/native/linux-x86_64/libhyperstream.so"),
                loadedFrom);
        assertFalse(System.getProperty("java.library.path").contains("target/release"));
    }

    private static String only(List<String> jars, String prefix) {
        List<String> matching = jars.stream().filter(j -> j.startsWith(prefix)).toList();
        assertEquals(1, matching.size(), prefix + " in " + jars);
        return matching.get(0);
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
