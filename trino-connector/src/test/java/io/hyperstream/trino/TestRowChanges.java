package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.Session;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * UPDATE, MERGE and DELETE through Trino against an in-memory model of the rows: random statements
 * applied to a table and to the model leave the same rows after every step, in full, filtered
 * (through the scalar index) and vector (exact and HNSW) reads, in format versions 2 and 3.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestRowChanges {
    private DistributedQueryRunner runner;
    private Path root;

    /** A model row: the group, value and tag columns and the vector's first component (the vector is [v, 1, -v, 0.5]). */
    private record Row(long grp, double val, String tag, float v) {}

    @BeforeAll
    void start() throws Exception {
        root = Files.createTempDirectory("hyperstream-row-changes");
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
        runner.execute("CREATE SCHEMA lake.db");
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    private static String vector(float v) {
        return "ARRAY[REAL '" + v + "', REAL '1', REAL '" + (-v) + "', REAL '0.5']";
    }

    private static String values(Map<Long, Row> rows) {
        return rows.entrySet().stream().map(e -> "(" + e.getKey() + ", " + e.getValue().grp() + ", " + e.getValue().val()
                + ", " + (e.getValue().tag() == null ? "NULL" : "'" + e.getValue().tag() + "'") + ", " + vector(e.getValue().v()) + ")")
                .collect(Collectors.joining(", "));
    }

    @Test
    void randomStatementsLeaveTheRowsOfAModel() throws Exception {
        for (int version : new int[] {2, 3}) {
            String t = "t" + version;
            runner.execute("CREATE TABLE " + t + " (id bigint NOT NULL, grp bigint, val double, tag varchar, "
                    + "embedding array(real) WITH (dimension = 4)) WITH (format_version = " + version + ", indexed_columns = 'grp')");
            runner.execute("CALL lake.system.create_vector_index('db', '" + t + "', 'embedding', '{\"metric\":\"l2\",\"m\":8}')");
            Random random = new Random(version);
            TreeMap<Long, Row> model = new TreeMap<>();
            long nextId = 0;
            for (int step = 0; step < 16; step++) {
                String statement;
                switch (step < 2 ? 0 : random.nextInt(5)) {
                    case 0 -> {
                        TreeMap<Long, Row> rows = new TreeMap<>();
                        for (int i = 0, n = 50 + random.nextInt(100); i < n; i++) {
                            rows.put(nextId++, new Row(random.nextInt(8), random.nextInt(1000), random.nextBoolean() ? "t" + random.nextInt(5) : null,
                                    random.nextInt(2000)));
                        }
                        statement = "INSERT INTO " + t + " VALUES " + values(rows);
                        model.putAll(rows);
                    }
                    case 1 -> {
                        long grp = random.nextInt(8);
                        float v = random.nextInt(2000);
                        String tag = "u" + step;
                        statement = "UPDATE " + t + " SET val = val + 1, tag = '" + tag + "', embedding = " + vector(v) + " WHERE grp = " + grp;
                        model.replaceAll((id, r) -> r.grp() == grp ? new Row(r.grp(), r.val() + 1, tag, v) : r);
                    }
                    case 2 -> {
                        // A condition the scan cannot answer alone: the rows go through the merge path.
                        int digit = random.nextInt(10);
                        statement = "DELETE FROM " + t + " WHERE CAST(id AS varchar) LIKE '%" + digit + "'";
                        model.keySet().removeIf(id -> id % 10 == digit);
                    }
                    case 3 -> {
                        long grp = random.nextInt(8);
                        statement = "DELETE FROM " + t + " WHERE grp = " + grp + " AND val < 500";
                        model.values().removeIf(r -> r.grp() == grp && r.val() < 500);
                    }
                    default -> {
                        // Source rows: some match (updated or deleted by their value), some are new.
                        TreeMap<Long, Double> source = new TreeMap<>();
                        for (int i = 0; i < 40; i++) {
                            long id = random.nextInt(4) == 0 ? 100_000 + 100 * step + i : random.nextInt((int) nextId);
                            source.put(id, (double) random.nextInt(1000) - 100);
                        }
                        String tag = "m" + step;
                        statement = "MERGE INTO " + t + " USING (VALUES " + source.entrySet().stream()
                                .map(e -> "(BIGINT '" + e.getKey() + "', DOUBLE '" + e.getValue() + "')").collect(Collectors.joining(", "))
                                + ") s(id, val) ON " + t + ".id = s.id"
                                + " WHEN MATCHED AND s.val < 0 THEN DELETE"
                                + " WHEN MATCHED THEN UPDATE SET val = s.val, tag = '" + tag + "'"
                                + " WHEN NOT MATCHED AND s.val < 800 THEN INSERT (id, grp, val, tag, embedding) VALUES (s.id, 9, s.val, 'new', "
                                + vector(3000) + ")";
                        source.forEach((id, val) -> {
                            Row r = model.get(id);
                            if (r != null && val < 0) {
                                model.remove(id);
                            } else if (r != null) {
                                model.put(id, new Row(r.grp(), val, tag, r.v()));
                            } else if (val < 800) {
                                model.put(id, new Row(9, val, "new", 3000));
                            }
                        });
                    }
                }
                runner.execute(statement);
                check(t, model, "v" + version + " step " + step + ": " + statement.substring(0, Math.min(120, statement.length())));
            }
            // Iceberg Java reads the same rows.
            assertEquals(model.entrySet().stream().map(e -> e.getKey() + "|" + e.getValue().grp() + "|" + e.getValue().val() + "|"
                    + e.getValue().tag()).sorted().toList(),
                    io.hyperstream.jni.IcebergJavaReader.read(root.resolve("db").resolve(t), "id", "grp", "val", "tag"));
            // Every change is a snapshot of its own; the metadata tables tell the table's state.
            long snapshots = (long) runner.execute("SELECT count(*) FROM \"" + t + "$snapshots\"").getOnlyValue();
            assertTrue(snapshots >= 16, "snapshots: " + snapshots);
            assertEquals(snapshots, runner.execute("SELECT count(*) FROM \"" + t + "$history\" WHERE is_current_ancestor").getOnlyValue());
            assertEquals((long) model.size(), runner.execute("SELECT sum(CASE content WHEN 0 THEN record_count ELSE -record_count END) FROM \""
                    + t + "$files\"").getOnlyValue(), "live rows: data file rows less deleted ones");
            assertEquals(runner.execute("SELECT count(*) FROM \"" + t + "$files\" WHERE content = 0").getOnlyValue(),
                    runner.execute("SELECT count(*) FROM \"" + t + "$indexes\" WHERE kind = 'hnsw graph' AND column_name = 'embedding'").getOnlyValue(),
                    "every data file has its graph");
            assertEquals(runner.execute("SELECT sum(record_count) FROM \"" + t + "$files\" WHERE content = 0").getOnlyValue(),
                    runner.execute("SELECT sum(record_count) FROM \"" + t + "$partitions\"").getOnlyValue());
            assertEquals(List.of("main"), runner.execute("SELECT name FROM \"" + t + "$refs\"").getOnlyColumn().toList());
            assertEquals(String.valueOf(version), runner.execute("SELECT value FROM \"" + t + "$properties\" WHERE key = 'format-version'")
                    .getOnlyColumn().findFirst().orElse(String.valueOf(version)));
            assertTrue((long) runner.execute("SELECT count(*) FROM \"" + t + "$manifests\"").getOnlyValue() > 0);
        }
    }

    private void check(String t, TreeMap<Long, Row> model, String step) {
        List<String> expected = model.entrySet().stream().map(e -> e.getKey() + "|" + e.getValue().grp() + "|" + e.getValue().val() + "|"
                + e.getValue().tag() + "|" + e.getValue().v()).toList();
        List<String> actual = runner.execute("SELECT id, grp, val, tag, embedding[1] FROM " + t + " ORDER BY id").getMaterializedRows()
                .stream().map(r -> r.getField(0) + "|" + r.getField(1) + "|" + r.getField(2) + "|" + r.getField(3) + "|" + r.getField(4)).toList();
        assertEquals(expected, actual, step);
        // Filtered through the scalar index of grp.
        List<Long> inGroup = model.entrySet().stream().filter(e -> e.getValue().grp() == 3).map(Map.Entry::getKey).toList();
        assertEquals(inGroup, runner.execute("SELECT id FROM " + t + " WHERE grp = 3 ORDER BY id").getOnlyColumn().toList(), step);
        // Vector top-k, exact and through the graphs: never a deleted row or an old vector.
        float q = 1000;
        List<Long> nearest = model.entrySet().stream()
                .sorted(Comparator.comparingDouble((Map.Entry<Long, Row> e) -> Math.abs(e.getValue().v() - q)).thenComparing(Map.Entry::getKey))
                .limit(5).map(Map.Entry::getKey).toList();
        String topK = "SELECT id, embedding[1] FROM " + t + " ORDER BY euclidean_distance(embedding, " + vector(q) + "), id LIMIT 5";
        for (long ef : new long[] {-1, 400}) {
            Session session = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", String.valueOf(ef)).build();
            List<MaterializedRow> found = runner.execute(session, topK).getMaterializedRows();
            for (MaterializedRow row : found) {
                Row live = model.get((Long) row.getField(0));
                assertTrue(live != null && live.v() == (Float) row.getField(1), step + ": ef " + ef + " found " + row);
            }
            List<Double> distances = found.stream().map(r -> Math.abs(((Float) r.getField(1)) - q)).map(Double::valueOf).toList();
            assertEquals(nearest.stream().map(id -> (double) Math.abs(model.get(id).v() - q)).toList(), distances, step + ": ef " + ef);
        }
    }

    /** Row lineage (format version 3): UPDATE and MERGE keep an updated row's _row_id and advance its sequence number. */
    @Test
    void formatVersion3UpdatesKeepRowIds() {
        runner.execute("CREATE TABLE lineage (id bigint NOT NULL, val bigint) WITH (format_version = 3)");
        runner.execute("INSERT INTO lineage SELECT x, x FROM UNNEST(sequence(0, 99)) AS u(x)");
        String lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM lineage ORDER BY id";
        Map<Long, List<Long>> before = new TreeMap<>();
        runner.execute(lineage).getMaterializedRows().forEach(r -> before.put((Long) r.getField(0), List.of((Long) r.getField(1), (Long) r.getField(2))));
        runner.execute("UPDATE lineage SET val = -1 WHERE id < 10");
        runner.execute("MERGE INTO lineage USING (VALUES BIGINT '50', BIGINT '500') s(id) ON lineage.id = s.id "
                + "WHEN MATCHED THEN UPDATE SET val = -2 WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, -3)");
        long first = before.get(0L).get(1);
        for (MaterializedRow row : runner.execute(lineage).getMaterializedRows()) {
            long id = (Long) row.getField(0);
            long rowId = (Long) row.getField(1);
            if (id == 500) {
                assertTrue(before.values().stream().noneMatch(b -> b.get(0) == rowId), "a new row takes a new id");
                continue;
            }
            assertEquals(before.get(id).get(0), rowId, "row " + id + " keeps its id");
            long expected = id < 10 ? first + 1 : id == 50 ? first + 2 : first;
            assertEquals(expected, row.getField(2), "sequence number of row " + id);
        }
        assertEquals(List.of(-1L, -2L, -3L), runner.execute("SELECT val FROM lineage WHERE id IN (0, 50, 500) ORDER BY id").getOnlyColumn().toList());
    }

    @Test
    void aRowMatchedTwiceIsAnErrorAndChangesNothing() {
        runner.execute("CREATE TABLE twice (id bigint, val bigint)");
        runner.execute("INSERT INTO twice VALUES (1, 10), (2, 20)");
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(
                "MERGE INTO twice USING (VALUES (1, 5), (1, 6)) s(id, val) ON twice.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val"));
        assertTrue(e.getMessage().contains("One MERGE target table row matched more than one source row"), e.getMessage());
        assertEquals(List.of(10L, 20L), runner.execute("SELECT val FROM twice ORDER BY id").getOnlyColumn().toList());
        RuntimeException travel = assertThrows(RuntimeException.class, () -> runner.execute("UPDATE twice FOR VERSION AS OF 1 SET val = 0"));
        assertTrue(travel.getMessage() != null);
    }
}
