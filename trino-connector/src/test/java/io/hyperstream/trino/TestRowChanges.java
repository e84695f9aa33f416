package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.IcebergJavaReader;
import io.hyperstream.jni.RowChangeModel;
import io.trino.Session;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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

    @BeforeAll
    void start() throws Exception {
        root = Files.createTempDirectory("hyperstream-row-changes");
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
        runner.execute("CREATE SCHEMA lake.db");
        runner.installPlugin(new io.trino.spi.Plugin() {
            @Override
            public java.util.Set<Class<?>> getFunctions() {
                return java.util.Set.of(Pause.class);
            }
        });
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

    private static String values(Map<Long, RowChangeModel.Row> rows) {
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
            // The index by CALL in one version, by the table procedure of the same name in the other.
            runner.execute(version == 2 ? "CALL lake.system.create_vector_index('db', '" + t + "', 'embedding', '{\"metric\":\"l2\",\"m\":8}')"
                    : "ALTER TABLE " + t + " EXECUTE create_vector_index(column_name => 'embedding', definition => '{\"metric\":\"l2\",\"m\":8}')");
            RowChangeModel model = new RowChangeModel(version);
            for (int step = 0; step < 16; step++) {
                String statement = sql(t, model.next(step));
                runner.execute(statement);
                check(t, model, "v" + version + " step " + step + ": " + statement.substring(0, Math.min(120, statement.length())));
            }
            // Iceberg Java reads the same rows.
            assertEquals(model.rowsAsText(), IcebergJavaReader.read(root.resolve("db").resolve(t), "id", "grp", "val", "tag"));
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

    /** The change in Trino's SQL. */
    private static String sql(String t, RowChangeModel.Change change) {
        if (change instanceof RowChangeModel.Insert insert) {
            return "INSERT INTO " + t + " VALUES " + values(insert.rows());
        }
        if (change instanceof RowChangeModel.Update update) {
            return "UPDATE " + t + " SET val = val + 1, tag = '" + update.tag() + "', embedding = " + vector(update.v())
                    + " WHERE grp = " + update.grp();
        }
        if (change instanceof RowChangeModel.DeleteDigit delete) {
            // A condition the scan cannot answer alone: the rows go through the merge path.
            return "DELETE FROM " + t + " WHERE CAST(id AS varchar) LIKE '%" + delete.digit() + "'";
        }
        if (change instanceof RowChangeModel.DeleteGroup delete) {
            return "DELETE FROM " + t + " WHERE grp = " + delete.grp() + " AND val < 500";
        }
        RowChangeModel.Merge merge = (RowChangeModel.Merge) change;
        return "MERGE INTO " + t + " USING (VALUES " + merge.source().entrySet().stream()
                .map(e -> "(BIGINT '" + e.getKey() + "', DOUBLE '" + e.getValue() + "')").collect(Collectors.joining(", "))
                + ") s(id, val) ON " + t + ".id = s.id"
                + " WHEN MATCHED AND s.val < 0 THEN DELETE"
                + " WHEN MATCHED THEN UPDATE SET val = s.val, tag = '" + merge.tag() + "'"
                + " WHEN NOT MATCHED AND s.val < 800 THEN INSERT (id, grp, val, tag, embedding) VALUES (s.id, 9, s.val, 'new', "
                + vector(RowChangeModel.MERGED_V) + ")";
    }

    private void check(String t, RowChangeModel model, String step) {
        List<String> actual = runner.execute("SELECT id, grp, val, tag, embedding[1] FROM " + t + " ORDER BY id").getMaterializedRows()
                .stream().map(r -> r.getField(0) + "|" + r.getField(1) + "|" + r.getField(2) + "|" + r.getField(3) + "|" + r.getField(4)).toList();
        assertEquals(model.rows(), actual, step);
        // Filtered through the scalar index of grp.
        assertEquals(model.inGroup(3), runner.execute("SELECT id FROM " + t + " WHERE grp = 3 ORDER BY id").getOnlyColumn().toList(), step);
        // Vector top-k, exact and through the graphs: never a deleted row or an old vector.
        float q = 1000;
        String topK = "SELECT id, embedding[1] FROM " + t + " ORDER BY euclidean_distance(embedding, " + vector(q) + "), id LIMIT 5";
        for (long ef : new long[] {-1, 400}) {
            Session session = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", String.valueOf(ef)).build();
            List<MaterializedRow> found = runner.execute(session, topK).getMaterializedRows();
            for (MaterializedRow row : found) {
                RowChangeModel.Row live = model.get((Long) row.getField(0));
                assertTrue(live != null && live.v() == (Float) row.getField(1), step + ": ef " + ef + " found " + row);
            }
            assertEquals(model.nearestDistances(q, 5), found.stream().map(r -> RowChangeModel.distance((Float) r.getField(1), q)).toList(),
                    step + ": ef " + ef);
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

    /** {@code pause(x)}: x, holding the statement that calls it while another writer commits ({@link io.hyperstream.jni.ConcurrentCommit}). */
    public static final class Pause {
        private Pause() {}

        @io.trino.spi.function.ScalarFunction(value = "pause", deterministic = false)
        @io.trino.spi.function.SqlType(io.trino.spi.type.StandardTypes.BIGINT)
        public static long pause(@io.trino.spi.function.SqlType(io.trino.spi.type.StandardTypes.BIGINT) long value) {
            return io.hyperstream.jni.ConcurrentCommit.pause(value);
        }
    }

    /** Runs {@code statement} and, held inside it between its read and its commit, {@code other}: its failure, or null. */
    private Throwable concurrently(String statement, String other) throws Exception {
        return io.hyperstream.jni.ConcurrentCommit.between(() -> runner.execute(statement), () -> runner.execute(other));
    }

    private List<String> rows(String t) {
        return runner.execute("SELECT id, val FROM " + t + " ORDER BY id, val").getMaterializedRows().stream()
                .map(r -> r.getField(0) + "=" + r.getField(1)).toList();
    }

    /**
     * Iceberg's isolation levels, by {@code write.delete.isolation-level} as Trino's Iceberg
     * connector reads it for every row-level statement: under {@code serializable} (the default) an
     * insert-only MERGE fails when another writer added rows its scan would have read (the key it
     * inserts), and an UPDATE does not when the added rows lie outside its pushed filter; under
     * {@code snapshot} the MERGE lands beside them.
     */
    @Test
    void serializableChangesFailWhenAConcurrentWriterAddedRowsTheyWouldHaveRead() throws Exception {
        String merge = " t USING (SELECT pause(id) AS id, val FROM (VALUES (BIGINT '7', BIGINT '71')) s(id, val)) s ON t.id = s.id "
                + "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.val)";
        for (String level : new String[] {"serializable", "snapshot"}) {
            String t = "isolation_" + level;
            runner.execute("CREATE TABLE " + t + " (id bigint, val bigint)");
            if (level.equals("snapshot")) {
                try (io.hyperstream.jni.NativeTable table = io.hyperstream.jni.NativeTable.load(root.resolve("db").resolve(t).toString(), Map.of())) {
                    table.setProperties(Map.of("write.delete.isolation-level", "snapshot"));
                }
            }
            runner.execute("INSERT INTO " + t + " VALUES (1, 10), (2, 20)");
            Throwable failed = concurrently("MERGE INTO " + t + merge, "INSERT INTO " + t + " VALUES (7, 70)");
            if (level.equals("serializable")) {
                assertTrue(failed != null && failed.getMessage().contains("serializable"), failed == null ? "the MERGE committed" : failed.toString());
                assertEquals(List.of("1=10", "2=20", "7=70"), rows(t), "the MERGE changed nothing");
            } else {
                assertEquals(null, failed);
                assertEquals(List.of("1=10", "2=20", "7=70", "7=71"), rows(t), "snapshot isolation lets both in");
            }
        }
        // Rows added outside the UPDATE's pushed filter do not conflict with it; rows inside it do.
        String t = "isolation_serializable";
        assertEquals(null, concurrently("UPDATE " + t + " SET val = pause(val) + 1 WHERE id = 1", "INSERT INTO " + t + " VALUES (100, 1000)"));
        assertEquals(List.of("1=11", "2=20", "7=70", "100=1000"), rows(t));
        Throwable failed = concurrently("UPDATE " + t + " SET val = pause(val) + 1 WHERE id >= 100", "INSERT INTO " + t + " VALUES (200, 2000)");
        assertTrue(failed != null && failed.getMessage().contains("serializable"), String.valueOf(failed));
        assertEquals(List.of("1=11", "2=20", "7=70", "100=1000", "200=2000"), rows(t));
    }
}
