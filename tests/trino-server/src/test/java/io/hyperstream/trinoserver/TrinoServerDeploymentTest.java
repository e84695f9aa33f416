package io.hyperstream.trinoserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NpyFiles;
import io.hyperstream.jni.RestCatalogTestServer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HyperStream as users deploy it in Trino: the plugin zip unpacked into real Trino server processes
 * ({@link TrinoNode}: their own JVMs, HTTP on loopback), queried through Trino's JDBC driver. The same
 * user scenario runs on one node, then on a coordinator and a worker, where every table handle, split,
 * column handle and page crosses the wire between two JVMs.
 */
class TrinoServerDeploymentTest {
    private static final int ROWS = 4000;
    private static final float[] QUERY = {0.5f, 0.25f, 0.75f, 1f};
    private static final String QUERY_SQL = "ARRAY[REAL '0.5', REAL '0.25', REAL '0.75', REAL '1']";

    @TempDir
    Path dir;

    @Test
    void oneServerRunsTheUserScenario() throws Exception {
        Lake lake = Lake.create(dir.resolve("lakes"));
        try (RestCatalogTestServer rest = RestCatalogTestServer.start(dir.resolve("rest"));
                TrinoNode node = TrinoNode.start(dir.resolve("trino"), TrinoNode.Role.SINGLE, null, lake.catalogs(),
                        Map.of("rest", rest.uri()), "2G")) {
            scenario(node, lake, 1);
        }
    }

    @Test
    void aCoordinatorAndTwoWorkersRunTheScenarioAcrossTheWire() throws Exception {
        Lake lake = Lake.create(dir.resolve("lakes"));
        try (RestCatalogTestServer rest = RestCatalogTestServer.start(dir.resolve("rest"));
                TrinoNode coordinator = TrinoNode.start(dir.resolve("coordinator"), TrinoNode.Role.COORDINATOR, null,
                        lake.catalogs(), Map.of("rest", rest.uri()), "1536M");
                TrinoNode worker = TrinoNode.start(dir.resolve("worker"), TrinoNode.Role.WORKER, coordinator.uri(),
                        lake.catalogs(), Map.of("rest", rest.uri()), "1280M");
                TrinoNode second = TrinoNode.start(dir.resolve("worker2"), TrinoNode.Role.WORKER, coordinator.uri(),
                        lake.catalogs(), Map.of("rest", rest.uri()), "1280M")) {
            // The coordinator schedules no splits on itself: every scan, write and search runs on the workers.
            coordinator.awaitActive(3, worker, second);
            try (Connection c = DriverManager.getConnection(coordinator.jdbcUrl())) {
                assertEquals(List.of(List.of(false), List.of(false)), rows(c,
                        "SELECT coordinator FROM system.runtime.nodes WHERE node_id LIKE 'worker-%'"));
            }
            scenario(coordinator, lake, 2);
            for (TrinoNode node : List.of(worker, second)) {
                assertTrue(java.util.regex.Pattern.compile("Finished loading plugin .*hyperstream").matcher(node.log()).find(),
                        "the worker loaded the plugin from plugin/hyperstream/:\n" + node.logTail());
                assertTrue(node.isAlive());
            }
            assertTrue(coordinator.isAlive());
        }
    }

    /** The catalog roots the servers keep, with what sits beside them that no name may reach. */
    private record Lake(Path parent, Path root, Path second, Path victim) {
        static Lake create(Path parent) throws Exception {
            Path root = Files.createDirectories(parent.resolve("lake"));
            Path second = Files.createDirectories(parent.resolve("lake2"));
            Path victim = Files.createDirectories(parent.resolve("victim"));
            Files.writeString(victim.resolve("keep.txt"), "canary");
            // A schema directory that is a symbolic link out of the root.
            Files.createSymbolicLink(root.resolve("linkout"), Path.of("..", "victim"));
            // An array store as a user's program lays one out: emb row r is [r, r + 0.5, -r].
            ByteBuffer emb = ByteBuffer.allocate(100 * 3 * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < 100; r++) {
                emb.putFloat(r).putFloat(r + 0.5f).putFloat(-r);
            }
            try (ArrayStore arrays = ArrayStore.open(root.resolve("arrays").toString())) {
                arrays.importNpy("emb", NpyFiles.write(parent.resolve("emb.npy"), "<f4", "(100, 3)", emb.array()).toString());
            }
            Files.delete(parent.resolve("emb.npy"));
            return new Lake(parent, root, second, victim);
        }

        Map<String, Path> catalogs() {
            Map<String, Path> catalogs = new LinkedHashMap<>();
            catalogs.put("lake", root);
            catalogs.put("lake2", second);
            return catalogs;
        }
    }

    /** The user scenario through {@code node}, whose cluster runs splits on {@code workers} nodes. */
    private static void scenario(TrinoNode node, Lake lake, int workers) throws Exception {
        try (Connection c = DriverManager.getConnection(node.jdbcUrl())) {
            assertTrue(column(c, "SHOW CATALOGS").containsAll(List.of("lake", "lake2")));
            tablesAndWrites(c);
            long beforeDelete = pushedFiltersTopKAndDeletes(c, workers);
            timeTravelSnapshotsAndProcedures(c, beforeDelete);
            rowLevelChanges(c);
            arraysAndASecondCatalog(c);
            aRestCatalog(c);
            badInputIsRefusedAndNothingLeavesTheRoot(c, lake);
            // Still answering after every refusal.
            assertEquals(ROWS - 500L, scalar(c, "SELECT count(*) FROM lake.db.items"));
        } catch (AssertionError | SQLException e) {
            e.addSuppressed(new Exception("server log of the " + node.role + " node:\n" + node.logTail()));
            throw e;
        }
    }

    private static void tablesAndWrites(Connection c) throws SQLException {
        execute(c, "CREATE SCHEMA lake.db");
        execute(c, "CREATE TABLE lake.db.items (id bigint NOT NULL, category varchar, embedding array(real) WITH (dimension = 4))");
        // Two INSERTs: two snapshots, two data files.
        for (int from = 0; from < ROWS; from += ROWS / 2) {
            execute(c, "INSERT INTO lake.db.items SELECT x, 'c' || CAST(x % 10 AS varchar), ARRAY[CAST(x % 97 AS real) / 97, "
                    + "CAST(x % 89 AS real) / 89, CAST(x % 83 AS real) / 83, REAL '1'] FROM UNNEST(sequence(" + from + ", "
                    + (from + ROWS / 2 - 1) + ")) AS t(x)");
        }
        assertEquals(List.of(List.of((long) ROWS, (long) ROWS * (ROWS - 1) / 2)),
                rows(c, "SELECT count(*), sum(id) FROM lake.db.items"));
        execute(c, "CREATE TABLE lake.db.evens AS SELECT * FROM lake.db.items WHERE id % 2 = 0");
        assertEquals(ROWS / 2L, scalar(c, "SELECT count(*) FROM lake.db.evens"));
        assertEquals(Set.of("items", "evens"), Set.copyOf(column(c, "SHOW TABLES FROM lake.db")));
    }

    /** Returns the snapshot current before the DELETE. */
    private static long pushedFiltersTopKAndDeletes(Connection c, int workers) throws SQLException {
        String filtered = "SELECT count(*), sum(id) FROM lake.db.items WHERE id BETWEEN 1000 AND 2999 AND category IN ('c3', 'c7')";
        List<Long> passing = LongStream.rangeClosed(1000, 2999).filter(x -> x % 10 == 3 || x % 10 == 7).boxed().toList();
        assertEquals(List.of(List.of((long) passing.size(), passing.stream().mapToLong(Long::longValue).sum())), rows(c, filtered));
        String plan = explain(c, filtered);
        assertTrue(plan.contains("filter=") && !plan.contains("filterPredicate"), "the whole filter is pushed:\n" + plan);

        String topK = "SELECT id, cosine_distance(embedding, " + QUERY_SQL + ") AS d FROM lake.db.items ORDER BY d LIMIT 5";
        assertNearest(rows(c, topK), 0, 5);
        String topKPlan = explain(c, topK);
        assertTrue(topKPlan.contains("nativeTopK=5 nearest by cosine_distance"), topKPlan);

        long beforeDelete = scalar(c, "SELECT snapshot_id FROM lake.db.\"items$snapshots\" ORDER BY sequence_number DESC LIMIT 1");
        execute(c, "DELETE FROM lake.db.items WHERE id < 500");
        assertEquals(ROWS - 500L, scalar(c, "SELECT count(*) FROM lake.db.items"));
        assertNearest(rows(c, topK), 500, 5);
        distributedTopK(c, workers);
        similarityJoin(c);
        return beforeDelete;
    }

    /**
     * UPDATE and MERGE across the wire (merge sinks on the workers, one commit on the coordinator):
     * the rows a model gives, an updated row keeping its row id, the metadata tables agreeing.
     */
    private static void rowLevelChanges(Connection c) throws SQLException {
        execute(c, "CREATE TABLE lake.db.changes (id bigint NOT NULL, v bigint) WITH (format_version = 3)");
        execute(c, "INSERT INTO lake.db.changes SELECT x, x FROM UNNEST(sequence(0, 999)) AS t(x)");
        long rowId = scalar(c, "SELECT _row_id FROM lake.db.changes WHERE id = 7");
        execute(c, "UPDATE lake.db.changes SET v = -v WHERE id % 7 = 0");
        execute(c, "MERGE INTO lake.db.changes t USING (SELECT x AS id FROM UNNEST(sequence(990, 1009)) AS u(x)) s ON t.id = s.id "
                + "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.id, 0)");
        long sum = LongStream.range(0, 990).map(x -> x % 7 == 0 ? -x : x).sum();
        assertEquals(List.of(List.of(1000L, sum)), rows(c, "SELECT count(*), sum(v) FROM lake.db.changes"));
        assertEquals(rowId, scalar(c, "SELECT _row_id FROM lake.db.changes WHERE id = 7"), "an updated row keeps its id");
        assertEquals(1000L, scalar(c, "SELECT sum(CASE content WHEN 0 THEN record_count ELSE -record_count END) "
                + "FROM lake.db.\"changes$files\""));
        execute(c, "DROP TABLE lake.db.changes");
    }

    /** A similarity join answers each query as that query's own pushed top-k does. */
    private static void similarityJoin(Connection c) throws SQLException {
        execute(c, "CREATE TABLE lake.db.queries AS SELECT q AS qid, ARRAY[CAST(q AS real) / 10, REAL '0.5', REAL '0.25', REAL '1'] "
                + "AS qvec FROM UNNEST(sequence(1, 12)) AS t(q)");
        List<List<Object>> joined = rows(c, "SELECT qid, id FROM TABLE(lake.system.vector_join(input => TABLE(lake.db.queries), "
                + "query_column => 'qvec', schema_name => 'db', table_name => 'items', column_name => 'embedding', k => 3, "
                + "filter => 'category <> ''c0''')) ORDER BY qid, _distance, id");
        assertEquals(36, joined.size());
        for (int q = 1; q <= 12; q++) {
            String vector = "ARRAY[REAL '" + q / 10.0 + "', REAL '0.5', REAL '0.25', REAL '1']";
            List<List<Object>> alone = rows(c, "SELECT " + q + ", id FROM lake.db.items WHERE category <> 'c0' "
                    + "ORDER BY euclidean_distance(embedding, " + vector + "), id LIMIT 3");
            assertEquals(alone.stream().map(r -> r.get(1)).toList(),
                    joined.subList(3 * (q - 1), 3 * q).stream().map(r -> r.get(1)).toList(), "query " + q);
        }
        execute(c, "DROP TABLE lake.db.queries");
    }

    /**
     * The same top-k divided among splits (a split per data file, Trino's TopN over them) returns the
     * single split's rows, its splits searched on every one of the {@code workers} nodes.
     */
    private static void distributedTopK(Connection c, int workers) throws SQLException {
        for (String where : List.of("", " WHERE category IN ('c1', 'c2', 'c9')")) {
            String topK = "SELECT id, euclidean_distance(embedding, " + QUERY_SQL + ") AS d FROM lake.db.items" + where
                    + " ORDER BY d LIMIT 9";
            execute(c, "SET SESSION lake.vector_search_plan = 'single'");
            assertTrue(explain(c, topK).contains("plan=single"), explain(c, topK));
            List<List<Object>> single = rows(c, topK);
            execute(c, "SET SESSION lake.vector_search_plan = 'distributed'");
            String plan = explain(c, topK);
            java.util.regex.Matcher splits = java.util.regex.Pattern.compile("plan=distributed splits=(\\d+)").matcher(plan);
            assertTrue(splits.find() && Integer.parseInt(splits.group(1)) >= 2 && plan.contains("TopNPartial"), plan);
            assertEquals(single, rows(c, topK));
            assertEquals(9, single.size());
            String query = (String) rows(c, "SELECT query_id FROM system.runtime.queries WHERE query = '"
                    + topK.replace("'", "''") + "' ORDER BY created DESC LIMIT 1").get(0).get(0);
            assertEquals((long) workers, scalar(c, "SELECT count(DISTINCT node_id) FROM system.runtime.tasks WHERE query_id = '"
                    + query + "' AND physical_input_bytes > 0 AND node_id LIKE '" + (workers > 1 ? "worker" : "single") + "-%'"),
                    "the nodes that searched a split");
        }
        execute(c, "RESET SESSION lake.vector_search_plan");
    }

    private static void timeTravelSnapshotsAndProcedures(Connection c, long beforeDelete) throws SQLException {
        assertEquals((long) ROWS, scalar(c, "SELECT count(*) FROM lake.db.items FOR VERSION AS OF " + beforeDelete));
        assertEquals(3L, scalar(c, "SELECT count(*) FROM lake.db.\"items$snapshots\""));
        String totals = "SELECT count(*), sum(id) FROM lake.db.items";
        List<List<Object>> expected = rows(c, totals);
        execute(c, "CALL lake.system.rewrite_data_files('db', 'items')");
        assertEquals(expected, rows(c, totals));
        execute(c, "CALL lake.system.remove_orphan_files('db', 'items')");
        execute(c, "CALL lake.system.create_vector_index('db', 'items', 'embedding', '{\"metric\":\"cosine\"}')");
        List<List<Object>> nearest = rows(c, "SELECT id, cosine_distance(embedding, " + QUERY_SQL + ") AS d "
                + "FROM lake.db.items ORDER BY d LIMIT 5");
        assertEquals(5, nearest.size());
        for (List<Object> row : nearest) {
            assertEquals(cosine((Long) row.get(0)), (Double) row.get(1), 1e-5, "distance of " + row.get(0));
        }
        execute(c, "CALL lake.system.drop_vector_index('db', 'items', 'embedding')");

        List<List<Object>> viaFunction = rows(c, "SELECT id, _distance FROM TABLE(lake.system.vector_search('db', 'items', "
                + "'embedding', " + QUERY_SQL + ", 5, 'cosine'))");
        assertNearest(viaFunction, 500, 5);
    }

    private static void arraysAndASecondCatalog(Connection c) throws SQLException {
        assertEquals(List.of(List.of(100L, 4950L, 5000.0)),
                rows(c, "SELECT count(*), sum(index), sum(CAST(value[2] AS double)) FROM lake.arrays.emb"));
        execute(c, "INSERT INTO lake.arrays.emb (value) VALUES ARRAY[REAL '1', 2, 3]");
        assertEquals(List.of(List.of(101L, 100L)), rows(c, "SELECT count(*), max(index) FROM lake.arrays.emb"));
        // A second catalog of the same plugin: a class loader and a native library of its own.
        execute(c, "CREATE SCHEMA lake2.s");
        execute(c, "CREATE TABLE lake2.s.t AS SELECT x FROM UNNEST(sequence(1, 10)) AS u(x)");
        assertEquals(55L, scalar(c, "SELECT sum(x) FROM lake2.s.t"));
    }

    /** A catalog whose tables an Iceberg REST catalog keeps (Iceberg's own server on loopback). */
    private static void aRestCatalog(Connection c) throws SQLException {
        execute(c, "CREATE SCHEMA rest.shop");
        execute(c, "CREATE TABLE rest.shop.items (id bigint, embedding array(real) WITH (dimension = 4))");
        execute(c, "INSERT INTO rest.shop.items SELECT x, ARRAY[REAL '1', CAST(x AS real), 0, 0] FROM UNNEST(sequence(1, 1000)) AS u(x)");
        long first = scalar(c, "SELECT max_by(snapshot_id, committed_at) FROM rest.shop.\"items$snapshots\"");
        execute(c, "INSERT INTO rest.shop.items VALUES (5000, ARRAY[REAL '1', 5000, 0, 0])");
        assertEquals(List.of(List.of(1001L, 505500L)), rows(c, "SELECT count(*), sum(id) FROM rest.shop.items"));
        assertEquals(1000L, scalar(c, "SELECT count(*) FROM rest.shop.items FOR VERSION AS OF " + first));
        assertEquals(List.of(List.of(7L)), rows(c, "SELECT id FROM rest.shop.items "
                + "ORDER BY euclidean_distance(embedding, ARRAY[1e0, 7e0, 0e0, 0e0]) LIMIT 1"));
        assertEquals(List.of("items"), column(c, "SHOW TABLES FROM rest.shop"));
        execute(c, "ALTER TABLE rest.shop.items RENAME TO rest.shop.goods");
        assertEquals(List.of("goods"), column(c, "SHOW TABLES FROM rest.shop"));
        assertEquals(1001L, scalar(c, "SELECT count(*) FROM rest.shop.goods"));
        execute(c, "DROP TABLE rest.shop.goods");
        execute(c, "DROP SCHEMA rest.shop");
        assertFalse(column(c, "SHOW SCHEMAS FROM rest").contains("shop"));
    }

    private static void badInputIsRefusedAndNothingLeavesTheRoot(Connection c, Lake lake) throws Exception {
        Path absolute = lake.parent().resolve("absolute_schema");
        for (String sql : List.of(
                "CREATE SCHEMA lake.\"../escaped_schema\"",
                "CREATE SCHEMA lake.\"" + absolute + "\"",
                "CREATE SCHEMA lake.\"a/b\"",
                "CREATE SCHEMA lake.\"..\"",
                "CREATE SCHEMA lake.\"x\\y\"",
                "DROP SCHEMA lake.\"../victim\" CASCADE",
                "DROP SCHEMA lake.\"..\" CASCADE",
                "DROP SCHEMA lake.\".\" CASCADE",
                "DROP SCHEMA lake.linkout CASCADE",
                "CREATE TABLE lake.db.\"../../escaped\" (id bigint)",
                "CREATE TABLE lake.db.\"a/b\" (id bigint)",
                "CREATE TABLE lake.db.\"..\" (id bigint)",
                "CREATE TABLE lake.db.\"" + absolute + "\" (id bigint)",
                "CREATE TABLE lake.linkout.t (id bigint)",
                "CREATE TABLE lake.\"../victim\".t AS SELECT 1 AS x",
                "SELECT * FROM lake.\"../victim\".keep",
                "DROP TABLE lake.db.\"../evens\"",
                "CALL lake.system.rewrite_data_files('..', 'victim')",
                "CALL lake.system.remove_orphan_files('../victim', 'x', 1000)",
                "CALL lake.system.create_vector_index('db', '../items', 'embedding')",
                "SELECT * FROM TABLE(lake.system.vector_search('..', 'victim', 'embedding', " + QUERY_SQL + ", 3))")) {
            SQLException e = assertThrows(SQLException.class, () -> execute(c, sql), sql);
            assertTrue(e.getMessage().contains("not allowed"), sql + ": " + e.getMessage());
        }
        // Nothing was made or removed beside the root, and the root's own schemas are as they were.
        assertEquals(new TreeSet<>(List.of("lake", "lake2", "victim")), list(lake.parent()));
        assertEquals("canary", Files.readString(lake.victim().resolve("keep.txt")));
        assertEquals(new TreeSet<>(List.of("arrays", "db", "linkout")), list(lake.root()));
        assertFalse(column(c, "SHOW SCHEMAS FROM lake").contains("linkout"), "a schema leading out of the root is not listed");

        // Input that is wrong in other ways fails clearly too.
        execute(c, "CREATE SCHEMA lake.stray");
        Files.writeString(lake.root().resolve("stray").resolve("notes.txt"), "a file, not a table");
        for (String[] bad : new String[][] {
                {"DROP SCHEMA lake.stray", "is not empty"},
                {"INSERT INTO lake.db.items VALUES (99999, 'x', ARRAY[REAL '1', 2])", "holds 2 values where 4 belong"},
                {"SELECT count(*) FROM lake.db.items FOR VERSION AS OF 42", "42"},
                {"SELECT * FROM TABLE(lake.system.vector_search('db', 'items', 'embedding', " + QUERY_SQL + ", 0))",
                        "k must be between 1 and 100000"},
                {"CALL lake.system.rollback_to_snapshot('db', 'items', 42)", "snapshot 42 does not exist"}}) {
            SQLException e = assertThrows(SQLException.class, () -> execute(c, bad[0]), bad[0]);
            assertTrue(e.getMessage().contains(bad[1]), bad[0] + ": " + e.getMessage());
        }
        assertTrue(Files.exists(lake.root().resolve("stray").resolve("notes.txt")));
        execute(c, "DROP SCHEMA lake.stray CASCADE");
        assertFalse(Files.exists(lake.root().resolve("stray")));
    }

    /** The rows are the {@code k} nearest to {@link #QUERY} among ids from {@code firstId}, nearest first. */
    private static void assertNearest(List<List<Object>> rows, long firstId, int k) {
        List<Long> ids = LongStream.range(firstId, ROWS).boxed().sorted(Comparator.comparingDouble(TrinoServerDeploymentTest::cosine)).toList();
        double kth = cosine(ids.get(k - 1));
        assertEquals(k, rows.size(), rows.toString());
        double previous = -1;
        for (List<Object> row : rows) {
            long id = (Long) row.get(0);
            double d = (Double) row.get(1);
            assertTrue(id >= firstId, rows.toString());
            assertEquals(cosine(id), d, 1e-5, "distance of " + id);
            assertTrue(d <= kth + 1e-5 && d >= previous - 1e-9, "nearest first: " + rows + ", k-th " + kth);
            previous = d;
        }
    }

    /** The cosine distance of row {@code id}'s vector (as the INSERT computes it) from {@link #QUERY}. */
    private static double cosine(long id) {
        float[] v = {(float) (id % 97) / 97f, (float) (id % 89) / 89f, (float) (id % 83) / 83f, 1f};
        double dot = 0;
        double nv = 0;
        double nq = 0;
        for (int i = 0; i < 4; i++) {
            dot += (double) v[i] * QUERY[i];
            nv += (double) v[i] * v[i];
            nq += (double) QUERY[i] * QUERY[i];
        }
        return 1 - dot / Math.sqrt(nv * nq);
    }

    private static TreeSet<String> list(Path dir) throws Exception {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static String explain(Connection c, String sql) throws SQLException {
        return (String) rows(c, "EXPLAIN " + sql).get(0).get(0);
    }

    static long scalar(Connection c, String sql) throws SQLException {
        return ((Number) rows(c, sql).get(0).get(0)).longValue();
    }

    private static List<String> column(Connection c, String sql) throws SQLException {
        return rows(c, sql).stream().map(r -> (String) r.get(0)).toList();
    }

    static List<List<Object>> rows(Connection c, String sql) throws SQLException {
        List<List<Object>> rows = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            int columns = r.getMetaData().getColumnCount();
            while (r.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= columns; i++) {
                    row.add(r.getObject(i));
                }
                rows.add(row);
            }
        }
        return rows;
    }
}
