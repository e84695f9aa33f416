package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Stored tables under {@code hyperstream.root}, written natively and read through Trino. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestStoredTables {
    private static final int DIM = 4;
    private DistributedQueryRunner runner;
    private Path root;
    private long firstSnapshot;

    @BeforeAll
    void start() throws Exception {
        root = Files.createTempDirectory("hyperstream-lake");
        String location = root.resolve("db").resolve("events").toString();
        // The sample table's rows (documented formulas), stored as a real table in two commits.
        try (BufferAllocator allocator = Allocators.child("trino-stored-test");
                SampleTable sample = SampleTable.open(1500, DIM, 0);
                NativeTable table = NativeTable.create(location, sample.schema(allocator), Map.of(), Map.of(), allocator)) {
            firstSnapshot = table.append(allocator, sample.scan(allocator, 0, 1000, 400, null));
            table.append(allocator, sample.scan(allocator, 1000, 1500, 400, null));
        }
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    @Test
    void schemasAndTablesAreDirectoriesUnderTheRoot() {
        assertTrue(runner.execute("SHOW SCHEMAS").getOnlyColumnAsSet().containsAll(List.of("db", "sample")));
        assertEquals(List.of("events"), runner.execute("SHOW TABLES").getOnlyColumn().toList());
        assertEquals(List.of("id bigint", "value double", "category varchar", "flag boolean", "embedding array(real)"),
                runner.execute("DESCRIBE events").getMaterializedRows().stream()
                        .map(r -> r.getField(0) + " " + r.getField(1)).toList());
    }

    @Test
    void everyStoredRowIsReadAndVersionsTravel() {
        MaterializedRow totals = runner.execute("SELECT count(*), sum(id), count(category), count_if(flag) FROM events")
                .getMaterializedRows().get(0);
        assertEquals(1500L, totals.getField(0));
        assertEquals(1500L * 1499 / 2, totals.getField(1));
        assertEquals(1350L, totals.getField(2));
        assertEquals(500L, totals.getField(3));
        assertEquals(1000L, runner.execute("SELECT count(*) FROM events FOR VERSION AS OF " + firstSnapshot).getOnlyValue());
        // Pushed filters prune whole files by their bounds (the first commit holds ids below 1000).
        MaterializedRow late = runner.execute("SELECT count(*), sum(id) FROM events WHERE id >= 1200 AND category IS NOT NULL")
                .getMaterializedRows().get(0);
        assertEquals(270L, late.getField(0));
        assertEquals(java.util.stream.LongStream.range(1200, 1500).filter(i -> i % 10 != 9).sum(), late.getField(1));
        @SuppressWarnings("unchecked")
        List<Float> vector = (List<Float>) runner.execute("SELECT embedding FROM events WHERE id = 1234").getOnlyValue();
        for (int j = 0; j < DIM; j++) {
            assertEquals((float) ((1234L * 31 + j * 17L) % 1000) / 1000.0f, vector.get(j));
        }
    }

    @Test
    void limitIsPushedIntoTheScanAndPlansOnlyTheFilesItNeeds() {
        String plan = (String) runner.execute("EXPLAIN SELECT id FROM events LIMIT 7").getOnlyValue();
        assertTrue(plan.contains("limit=7"), plan);
        assertEquals(7, runner.execute("SELECT id FROM events LIMIT 7").getRowCount());
        assertEquals(1500, runner.execute("SELECT id FROM events LIMIT 100000").getRowCount());
        // With a filter the limit still caps each split, and the answer is the filtered rows.
        List<Object> late = runner.execute("SELECT id FROM events WHERE id >= 1490 LIMIT 20").getOnlyColumn().toList();
        assertEquals(10, late.size());
        assertTrue(late.stream().allMatch(id -> (long) id >= 1490), late.toString());
    }

    @Test
    void orAcrossColumnsAndNotArePushedWholeIntoTheScan() {
        String where = "id < 100 OR category = 'cat-3' OR (id > 1400 AND NOT flag)";
        String plan = (String) runner.execute("EXPLAIN SELECT id FROM events WHERE " + where).getOnlyValue();
        assertTrue(plan.contains("filter=") && !plan.contains("filterPredicate"), plan);
        long expected = java.util.stream.LongStream.range(0, 1500).filter(id -> id < 100
                || (id % 10 != 9 && id % 7 == 3) || (id * 0.5 > 700 && id % 3 != 0)).count();
        assertEquals(expected, runner.execute("SELECT count(*) FROM events WHERE " + where).getOnlyValue());
        // A float comparison is pushed for pruning and checked again by Trino (NaN compares false there).
        String floats = "id < 100 OR (value > 700 AND NOT flag)";
        plan = (String) runner.execute("EXPLAIN SELECT id FROM events WHERE " + floats).getOnlyValue();
        assertTrue(plan.contains("filter=") && plan.contains("filterPredicate"), plan);
        assertEquals(java.util.stream.LongStream.range(0, 1500).filter(id -> id < 100 || (id * 0.5 > 700 && id % 3 != 0)).count(),
                runner.execute("SELECT count(*) FROM events WHERE " + floats).getOnlyValue());
        // A part Trino must evaluate stays with Trino; the rest is still pushed.
        String mixed = "(id < 100 OR category = 'cat-3') AND category LIKE '%3'";
        plan = (String) runner.execute("EXPLAIN SELECT id FROM events WHERE " + mixed).getOnlyValue();
        assertTrue(plan.contains("filter=") && plan.contains("filterPredicate"), plan);
        long mixedExpected = java.util.stream.LongStream.range(0, 1500).filter(id -> id % 10 != 9 && id % 7 == 3).count();
        assertEquals(mixedExpected, runner.execute("SELECT count(*) FROM events WHERE " + mixed).getOnlyValue());
    }

    @Test
    void theSnapshotsTableListsTheHistory() {
        List<MaterializedRow> rows = runner.execute(
                "SELECT snapshot_id, parent_id, sequence_number FROM \"events$snapshots\" ORDER BY sequence_number").getMaterializedRows();
        assertEquals(2, rows.size());
        assertEquals(firstSnapshot, rows.get(0).getField(0));
        assertEquals(null, rows.get(0).getField(1));
        assertEquals(firstSnapshot, rows.get(1).getField(1));
        assertEquals(2L, rows.get(1).getField(2));
    }

    @Test
    void insertCommitsEveryWritersFileAsOneSnapshot() throws Exception {
        // A table of its own (schema "writes"), so that the other tests' counts stay as they are.
        String location = root.resolve("writes").resolve("log").toString();
        try (BufferAllocator allocator = Allocators.child("trino-insert-test");
                SampleTable sample = SampleTable.open(10, DIM, 0);
                NativeTable table = NativeTable.create(location, sample.schema(allocator), Map.of(), Map.of(), allocator)) {
            table.append(allocator, sample.scan(allocator, 0, 10, 10, null));
        }
        long before = (long) runner.execute(
                "SELECT snapshot_id FROM writes.\"log$snapshots\" ORDER BY sequence_number DESC LIMIT 1").getOnlyValue();
        runner.execute("INSERT INTO writes.log VALUES (100, 1.5, 'a', true, ARRAY[REAL '1', 2, 3, 4]), "
                + "(101, 2.5, NULL, false, ARRAY[REAL '5', 6, 7, 8])");
        runner.execute("INSERT INTO writes.log SELECT id + 1000, value, category, flag, embedding FROM events");
        MaterializedRow totals = runner.execute("SELECT count(*), sum(id), count(value), count(category) FROM writes.log")
                .getMaterializedRows().get(0);
        assertEquals(10L + 2 + 1500, totals.getField(0));
        assertEquals(45L + 201 + 1500L * 1499 / 2 + 1500L * 1000, totals.getField(1));
        assertEquals(10L + 2 + 1500, totals.getField(2));
        assertEquals(9L + 1 + 1350, totals.getField(3));
        assertEquals(List.of(5.0f, 6.0f, 7.0f, 8.0f), runner.execute("SELECT embedding FROM writes.log WHERE id = 101").getOnlyValue());
        assertEquals(0L, runner.execute("SELECT count(*) FROM writes.log w JOIN events e ON w.id = e.id + 1000 "
                + "WHERE w.embedding != e.embedding OR w.value != e.value OR w.flag != e.flag").getOnlyValue());
        // Each INSERT is one snapshot; the table before it is still there to travel to.
        assertEquals(3L, runner.execute("SELECT count(*) FROM writes.\"log$snapshots\"").getOnlyValue(),
                "the first append and two inserts");
        assertEquals(10L, runner.execute("SELECT count(*) FROM writes.log FOR VERSION AS OF " + before).getOnlyValue());

        RuntimeException wrong = assertThrows(RuntimeException.class,
                () -> runner.execute("INSERT INTO writes.log VALUES (7, 1.0, 'x', true, ARRAY[REAL '1', 2])"));
        assertTrue(wrong.getMessage().contains("column 'embedding' holds 2 values where 4 belong"), wrong.getMessage());
        RuntimeException required = assertThrows(RuntimeException.class,
                () -> runner.execute("INSERT INTO writes.log VALUES (7, NULL, 'x', true, ARRAY[REAL '1', 2, 3, 4])"));
        assertTrue(required.getMessage().contains("value"), required.getMessage());
        assertEquals(10L + 2 + 1500, runner.execute("SELECT count(*) FROM writes.log").getOnlyValue());
    }

    @Test
    void deleteRunsNativelyWithItsWholeConditionPushed() throws Exception {
        // A table of its own (schema "gone"): the sample's 1,500 rows in two data files.
        String location = root.resolve("gone").resolve("t").toString();
        try (BufferAllocator allocator = Allocators.child("trino-delete-test");
                SampleTable sample = SampleTable.open(1500, DIM, 0);
                NativeTable table = NativeTable.create(location, sample.schema(allocator), Map.of(), Map.of(), allocator)) {
            table.append(allocator, sample.scan(allocator, 0, 1000, 400, null));
            table.append(allocator, sample.scan(allocator, 1000, 1500, 400, null));
        }
        long before = (long) runner.execute(
                "SELECT snapshot_id FROM gone.\"t$snapshots\" ORDER BY sequence_number DESC LIMIT 1").getOnlyValue();
        String condition = "(id BETWEEN 100 AND 199 OR category IN ('cat-3', 'cat-5')) AND NOT (flag AND id > 1200)";
        String left = "SELECT count(*), sum(id) FROM gone.t";
        MaterializedRow expected = runner.execute(left + " WHERE NOT coalesce(" + condition + ", false)").getMaterializedRows().get(0);
        long matching = (long) runner.execute("SELECT count(*) FROM gone.t WHERE " + condition).getOnlyValue();
        assertEquals(matching, runner.execute("DELETE FROM gone.t WHERE " + condition).getUpdateCount().orElseThrow());
        assertEquals(expected, runner.execute(left).getMaterializedRows().get(0));
        assertEquals(0L, runner.execute("SELECT count(*) FROM gone.t WHERE " + condition).getOnlyValue());
        assertEquals(1500L, runner.execute("SELECT count(*) FROM gone.t FOR VERSION AS OF " + before).getOnlyValue());

        // A condition the scan cannot take whole runs as a merge: Trino finds the rows, the
        // connector deletes them by position.
        long like = (long) runner.execute("SELECT count(*) FROM gone.t WHERE category LIKE '%4'").getOnlyValue();
        assertTrue(like > 0);
        assertEquals(like, runner.execute("DELETE FROM gone.t WHERE category LIKE '%4'").getUpdateCount().orElseThrow());
        assertEquals(0L, runner.execute("SELECT count(*) FROM gone.t WHERE category LIKE '%4'").getOnlyValue());
        expected = runner.execute(left).getMaterializedRows().get(0);
        long first = (long) runner.execute("SELECT min(id) FROM gone.t").getOnlyValue();
        assertEquals(1L, runner.execute("UPDATE gone.t SET value = -1 WHERE id = " + first).getUpdateCount().orElseThrow());
        assertEquals(-1.0, runner.execute("SELECT value FROM gone.t WHERE id = " + first).getOnlyValue());
        assertEquals(expected, runner.execute(left).getMaterializedRows().get(0));

        // Most of the first file deleted: a LIMIT still gets its rows from the files after it.
        runner.execute("DELETE FROM gone.t WHERE id < 950");
        long live = (long) runner.execute("SELECT count(id) FROM gone.t").getOnlyValue();
        assertTrue(live > 300 && live < 550, "rows left: " + live);
        assertEquals(300, runner.execute("SELECT id FROM gone.t LIMIT 300").getRowCount());
        // COUNT(*) from metadata (the deletes subtracted): Trino aggregates nothing.
        String plan = (String) runner.execute("EXPLAIN SELECT count(*) FROM gone.t").getOnlyValue();
        assertTrue(plan.contains("count(*) from metadata") && !plan.contains("Aggregate"), plan);
        assertEquals(live, runner.execute("SELECT count(*) FROM gone.t").getOnlyValue());
        assertEquals(1500L, runner.execute("SELECT count(*) FROM gone.t FOR VERSION AS OF " + before).getOnlyValue());
        // The rest of the first file: it leaves the table; then every row.
        runner.execute("DELETE FROM gone.t WHERE id < 1000");
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(1, table.dataFiles(TableVersion.CURRENT).length);
        }
        assertEquals(0L, runner.execute("SELECT count(*) FROM gone.t WHERE id < 1000").getOnlyValue());
        runner.execute("DELETE FROM gone.t");
        assertEquals(0L, runner.execute("SELECT count(*) FROM gone.t").getOnlyValue());
        assertEquals(1500L, runner.execute("SELECT count(*) FROM gone.t FOR VERSION AS OF " + before).getOnlyValue());
    }

    @Test
    void scalarIndexesReadOnlyTheMatchingRowsAndExplainShowsThePruning() {
        runner.execute("CREATE SCHEMA idx");
        runner.execute("CREATE TABLE idx.t (id bigint NOT NULL, user_id bigint, category varchar) WITH (indexed_columns = 'user_id')");
        // user_id is a permutation of id, so no file or row group bound rules a key out.
        runner.execute("INSERT INTO idx.t SELECT x, (x * 7919) % 4000, 'c' || CAST(x % 40 AS varchar) FROM UNNEST(sequence(0, 3999)) AS t(x)");
        long expected = java.util.stream.LongStream.range(0, 4000).filter(id -> id * 7919 % 4000 == 1234).findFirst().orElseThrow();
        String query = "SELECT id FROM idx.t WHERE user_id = 1234";
        String plan = (String) runner.execute("EXPLAIN " + query).getOnlyValue();
        assertTrue(plan.contains("rows read 1/4000") && plan.contains("index pruned 3999") && !plan.contains("filterPredicate"), plan);
        assertEquals(List.of(expected), runner.execute(query).getOnlyColumn().toList());
        assertTrue(((String) runner.execute("SHOW CREATE TABLE idx.t").getOnlyValue()).contains("indexed_columns = 'user_id'"));
        // Declared later, an index is built for the files already there; the answers stay the same.
        String inCategories = "SELECT count(*) FROM idx.t WHERE category IN ('c7', 'c8') AND user_id < 2000";
        Object before = runner.execute(inCategories).getOnlyValue();
        runner.execute("ALTER TABLE idx.t SET PROPERTIES indexed_columns = 'user_id,category'");
        assertEquals(before, runner.execute(inCategories).getOnlyValue());
        plan = (String) runner.execute("EXPLAIN SELECT id FROM idx.t WHERE category = 'c7'").getOnlyValue();
        assertTrue(plan.contains("rows read 100/4000"), plan);
        runner.execute("ALTER TABLE idx.t SET PROPERTIES indexed_columns = DEFAULT");
        assertTrue(((String) runner.execute("EXPLAIN " + query).getOnlyValue()).contains("rows read 4000/4000"));
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> runner.execute("ALTER TABLE idx.t SET PROPERTIES indexed_columns = 'nope'"));
        assertTrue(e.getMessage().contains("'nope'"), e.getMessage());
        runner.execute("DROP SCHEMA idx CASCADE");
    }

    @Test
    void showStatsReportsRowsDistinctValuesAndNulls() {
        MaterializedRow exact = runner.execute("SELECT count(*), count(DISTINCT id), count(DISTINCT category), count_if(category IS NULL) FROM events")
                .getMaterializedRows().get(0);
        long rows = (Long) exact.getField(0);
        Map<String, MaterializedRow> stats = new java.util.HashMap<>();
        for (MaterializedRow row : runner.execute("SHOW STATS FOR events").getMaterializedRows()) {
            stats.put(row.getField(0) == null ? "" : (String) row.getField(0), row);
        }
        assertEquals((double) rows, stats.get("").getField(4), "row count");
        // Columns: column_name, data_size, distinct_values_count, nulls_fraction, row_count, low_value, high_value.
        assertEquals((Long) exact.getField(1), (Double) stats.get("id").getField(2), rows * 0.05, "distinct ids");
        assertEquals(0.0, stats.get("id").getField(3));
        assertEquals((Long) exact.getField(2), (Double) stats.get("category").getField(2), 2.0, "distinct categories");
        assertEquals((double) (Long) exact.getField(3) / rows, (Double) stats.get("category").getField(3), 1e-9);
        // A filtered scan reports none: Trino estimates its rows itself.
        assertEquals(null, runner.execute("SHOW STATS FOR (SELECT * FROM events WHERE id < 10)").getMaterializedRows().stream()
                .filter(r -> "id".equals(r.getField(0))).findFirst().orElseThrow().getField(2));
    }

    @Test
    void partitionedSortedTablesWriteAFilePerPartitionAndPruneByIt() {
        runner.execute("CREATE SCHEMA parts");
        try {
            runner.execute("CREATE TABLE parts.t (id bigint, category varchar, day date) "
                    + "WITH (partitioning = ARRAY['bucket(id, 4)', 'category'], sorted_by = ARRAY['id DESC'])");
            runner.execute("INSERT INTO parts.t SELECT x, 'c' || CAST(x % 3 AS varchar), DATE '2024-03-01' + x % 7 * INTERVAL '1' DAY "
                    + "FROM UNNEST(sequence(0, 1999)) AS t(x)");
            String show = (String) runner.execute("SHOW CREATE TABLE parts.t").getOnlyValue();
            assertTrue(show.contains("partitioning = ARRAY['bucket(id, 4)','category']") && show.contains("sorted_by = ARRAY['id DESC NULLS LAST']"), show);
            int files;
            try (NativeTable table = NativeTable.load(root.resolve("parts").resolve("t").toString(), Map.of())) {
                files = table.dataFiles(TableVersion.CURRENT).length;
            }
            assertTrue(files >= 12, files + " files: at least one per partition (4 buckets x 3 categories)");
            assertEquals(List.of(1L, 1234L), runner.execute("SELECT count(*), max(id) FROM parts.t WHERE id = 1234").getMaterializedRows()
                    .stream().flatMap(r -> r.getFields().stream()).toList());
            String plan = (String) runner.execute("EXPLAIN SELECT * FROM parts.t WHERE id = 1234 AND category = 'c1'").getOnlyValue();
            java.util.regex.Matcher planned = java.util.regex.Pattern.compile("files (\\d+)/(\\d+)").matcher(plan);
            assertTrue(planned.find() && Long.parseLong(planned.group(1)) * 6 <= files, plan);
            assertEquals(667L, runner.execute("SELECT count(*) FROM parts.t WHERE category = 'c0'").getOnlyValue());
            runner.execute("DELETE FROM parts.t WHERE category = 'c2' AND id < 1000");
            assertEquals(2000L - 333, runner.execute("SELECT count(*) FROM parts.t").getOnlyValue());
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> runner.execute("CREATE TABLE parts.bad (id bigint) WITH (partitioning = ARRAY['hour(id)'])"));
            assertTrue(e.getMessage().contains("does not apply"), e.getMessage());
        } finally {
            runner.execute("DROP SCHEMA parts CASCADE");
        }
    }

    @Test
    void bloomFilterColumnsSkipRowGroupsWithoutTheValue() {
        runner.execute("CREATE SCHEMA bloom");
        try {
            runner.execute("CREATE TABLE bloom.t (id bigint, user_id bigint) WITH (parquet_bloom_filter_columns = ARRAY['user_id'])");
            // Four inserts whose user_id ranges overlap (bounds prune nothing); each value is in one.
            for (int i = 0; i < 4; i++) {
                runner.execute("INSERT INTO bloom.t SELECT x, x * 4 + " + i + " FROM UNNEST(sequence(0, 999)) AS t(x)");
            }
            String query = "SELECT id FROM bloom.t WHERE user_id = 1234";
            String plan = (String) runner.execute("EXPLAIN " + query).getOnlyValue();
            java.util.regex.Matcher pruned = java.util.regex.Pattern.compile("row groups (\\d+)/(\\d+) \\(stats pruned 0, bloom pruned (\\d+)").matcher(plan);
            assertTrue(pruned.find(), plan);
            assertEquals(Long.parseLong(pruned.group(2)) - 1, Long.parseLong(pruned.group(3)), plan);
            assertEquals(List.of(308L), runner.execute(query).getOnlyColumn().toList());
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> runner.execute("CREATE TABLE bloom.u (id bigint) WITH (parquet_bloom_filter_columns = ARRAY['nope'])"));
            assertTrue(e.getMessage().contains("'nope'"), e.getMessage());
        } finally {
            runner.execute("DROP SCHEMA bloom CASCADE");
        }
    }

    @Test
    void aJoinsDynamicFilterNarrowsTheScanOfTheOtherSide() {
        runner.execute("CREATE SCHEMA joins");
        try {
            runner.execute("CREATE TABLE joins.picks AS SELECT * FROM (VALUES BIGINT '1234', BIGINT '1300', BIGINT '99999') t(id)");
            String query = "SELECT count(*), sum(e.id) FROM events e JOIN joins.picks p ON e.id = p.id";
            io.trino.Session on = io.trino.Session.builder(runner.getDefaultSession())
                    .setSystemProperty("join_distribution_type", "BROADCAST").build();
            io.trino.Session off = io.trino.Session.builder(on).setSystemProperty("enable_dynamic_filtering", "false").build();
            List<Object> expected = List.of(2L, 2534L);
            assertEquals(expected, runner.execute(off, query).getMaterializedRows().get(0).getFields());
            assertEquals(expected, runner.execute(on, query).getMaterializedRows().get(0).getFields());
            // Without the dynamic filter the scan of events reads every row; with it, only the two that join.
            assertTrue(rowsRead(off, query) >= 1500, "without dynamic filtering: " + rowsRead(off, query));
            assertEquals(3 + 2, rowsRead(on, query));
            // Nothing joins: no row of events is read.
            runner.execute("DELETE FROM joins.picks");
            assertEquals(0L, runner.execute(on, query).getMaterializedRows().get(0).getField(0));
            assertEquals(0, rowsRead(on, query));
        } finally {
            runner.execute("DROP SCHEMA joins CASCADE");
        }
    }

    /** The rows every table scan of the query read. */
    private long rowsRead(io.trino.Session session, String query) {
        io.trino.spi.QueryId id = runner.executeWithPlan(session, query).queryId();
        return runner.getCoordinator().getQueryManager().getFullQueryInfo(id).getQueryStats().getPhysicalInputPositions();
    }

    @Test
    void alterTableAddsRenamesAndDropsColumns() {
        runner.execute("CREATE SCHEMA evolve");
        runner.execute("CREATE TABLE evolve.t (id bigint NOT NULL, name varchar)");
        runner.execute("INSERT INTO evolve.t VALUES (1, 'a'), (2, 'b')");
        MaterializedRow first = runner.execute(
                "SELECT snapshot_id, committed_at FROM evolve.\"t$snapshots\" ORDER BY sequence_number DESC LIMIT 1").getMaterializedRows().get(0);
        runner.execute("ALTER TABLE evolve.t ADD COLUMN score double");
        runner.execute("ALTER TABLE evolve.t ADD COLUMN v array(real) WITH (dimension = 2)");
        runner.execute("INSERT INTO evolve.t VALUES (3, 'c', 1.5, ARRAY[REAL '1', 2])");
        assertEquals(List.of("1:null", "2:null", "3:1.5"), runner.execute("SELECT id, score FROM evolve.t ORDER BY id")
                .getMaterializedRows().stream().map(r -> r.getField(0) + ":" + r.getField(1)).toList());
        runner.execute("ALTER TABLE evolve.t RENAME COLUMN score TO points");
        assertEquals(List.of(3L), runner.execute("SELECT id FROM evolve.t WHERE points > 1").getOnlyColumn().toList());
        runner.execute("ALTER TABLE evolve.t DROP COLUMN name");
        assertEquals(List.of("id bigint", "points double", "v array(real)"), runner.execute("DESCRIBE evolve.t")
                .getMaterializedRows().stream().map(r -> r.getField(0) + " " + r.getField(1)).toList());
        assertEquals(List.of(1.0f, 2.0f), runner.execute("SELECT v FROM evolve.t WHERE id = 3").getOnlyValue());
        // Time travel reads a snapshot under its own schema: the dropped column is there, the added ones are not.
        String committed = ((java.time.ZonedDateTime) first.getField(1)).withZoneSameInstant(java.time.ZoneOffset.UTC)
                .format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS"));
        for (String version : List.of("VERSION AS OF " + first.getField(0), "TIMESTAMP AS OF TIMESTAMP '" + committed + " UTC'")) {
            List<MaterializedRow> rows = runner.execute("SELECT * FROM evolve.t FOR " + version + " ORDER BY id").getMaterializedRows();
            assertEquals(List.of("1:a", "2:b"), rows.stream().map(r -> r.getField(0) + ":" + r.getField(1)).toList(), version);
            assertEquals(2, rows.get(0).getFieldCount(), version);
            assertEquals("b", runner.execute("SELECT name FROM evolve.t FOR " + version + " WHERE id = 2").getOnlyValue());
        }
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> runner.execute("SELECT points FROM evolve.t FOR VERSION AS OF " + first.getField(0)));
        assertTrue(e.getMessage().contains("points"), e.getMessage());
        e = assertThrows(RuntimeException.class,
                () -> runner.execute("ALTER TABLE evolve.t ADD COLUMN strict bigint NOT NULL"));
        assertTrue(e.getMessage().contains("must be nullable"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("ALTER TABLE evolve.t ADD COLUMN early bigint FIRST"));
        assertTrue(e.getMessage().contains("go last"), e.getMessage());
        runner.execute("DROP SCHEMA evolve CASCADE");
    }

    /**
     * ALTER TABLE ... ADD COLUMN ... DEFAULT (format version 3): rows written before the column read
     * its default (Iceberg's {@code initial-default}), an INSERT that omits it takes it
     * ({@code write-default}, which Trino fills in), and Iceberg Java reads the same.
     */
    @Test
    void columnsAddedWithADefaultReadItInOlderRowsAndTakeItWhereAWriteOmitsIt() throws Exception {
        runner.execute("CREATE SCHEMA defaults");
        runner.execute("CREATE TABLE defaults.t (id bigint) WITH (format_version = 3)");
        runner.execute("INSERT INTO defaults.t VALUES 1, 2");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN n integer DEFAULT 7");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN b bigint DEFAULT 9223372036854775807");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN s varchar DEFAULT 'it''s'");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN d date DEFAULT DATE '2024-02-29'");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN m decimal(10, 2) DEFAULT 1.25");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN ts timestamp(6) DEFAULT TIMESTAMP '2024-01-01 10:00:00.000001'");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN r real DEFAULT REAL '2.5'");
        runner.execute("ALTER TABLE defaults.t ADD COLUMN plain integer");
        runner.execute("INSERT INTO defaults.t (id) VALUES 3");
        runner.execute("INSERT INTO defaults.t VALUES (4, 5, 6, 'y', DATE '2020-01-01', 2.5, TIMESTAMP '2020-01-01 00:00:00', REAL '1', 9)");
        List<String> rows = runner.execute("SELECT id, n, b, s, d, m, ts, r, plain FROM defaults.t ORDER BY id").getMaterializedRows().stream()
                .map(r -> r.getFields().toString()).toList();
        String defaults = "7, 9223372036854775807, it's, 2024-02-29, 1.25, 2024-01-01T10:00:00.000001, 2.5, null]";
        assertEquals(List.of("[1, " + defaults, "[2, " + defaults, "[3, " + defaults,
                "[4, 5, 6, y, 2020-01-01, 2.50, 2020-01-01T00:00, 1.0, 9]"), rows);
        assertTrue(((String) runner.execute("SHOW CREATE TABLE defaults.t").getOnlyValue()).contains("DEFAULT"));
        // Iceberg Java reads the defaults of the rows written before the columns.
        assertEquals(List.of("1|7|it's|2024-02-29", "2|7|it's|2024-02-29", "3|7|it's|2024-02-29", "4|5|y|2020-01-01"),
                io.hyperstream.jni.IcebergJavaReader.read(root.resolve("defaults").resolve("t"), "id", "n", "s", "d"));
        // Defaults need format version 3; a new table takes none yet.
        runner.execute("CREATE TABLE defaults.v2 (id bigint)");
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute("ALTER TABLE defaults.v2 ADD COLUMN n integer DEFAULT 7"));
        assertTrue(e.getMessage().contains("format version 3"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("CREATE TABLE defaults.c (id bigint, n integer DEFAULT 1) WITH (format_version = 3)"));
        assertTrue(e.getMessage().contains("ADD COLUMN ... DEFAULT"), e.getMessage());
        runner.execute("DROP SCHEMA defaults CASCADE");
    }

    @Test
    void formatVersion3TablesKeepHiddenRowIdsThroughDeletesAndCompaction() {
        runner.execute("CREATE SCHEMA lineage");
        runner.execute("CREATE TABLE lineage.t (id bigint NOT NULL, name varchar) WITH (format_version = 3)");
        runner.execute("INSERT INTO lineage.t SELECT x, 'n' || CAST(x AS varchar) FROM UNNEST(sequence(0, 99)) AS u(x)");
        runner.execute("INSERT INTO lineage.t VALUES (100, 'x'), (101, 'y')");
        assertTrue(((String) runner.execute("SHOW CREATE TABLE lineage.t").getOnlyValue()).contains("format_version = 3"));
        assertEquals(List.of("id", "name"), runner.execute("DESCRIBE lineage.t").getMaterializedRows().stream()
                .map(r -> r.getField(0)).toList(), "hidden from DESCRIBE");
        assertEquals(2, runner.execute("SELECT * FROM lineage.t LIMIT 1").getMaterializedRows().get(0).getFieldCount());
        String lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM lineage.t";
        Map<Long, List<Long>> before = new java.util.TreeMap<>();
        runner.execute(lineage).getMaterializedRows().forEach(r -> before.put((Long) r.getField(0), List.of((Long) r.getField(1), (Long) r.getField(2))));
        assertEquals(102, before.size());
        assertEquals(102, before.values().stream().map(v -> v.get(0)).filter(id -> id >= 0 && id < 102).distinct().count(), "ids 0..101, each once");
        long firstSequence = before.get(0L).get(1);
        assertTrue(before.entrySet().stream().allMatch(e -> e.getValue().get(1) == (e.getKey() >= 100 ? firstSequence + 1 : firstSequence)));
        long rowId = before.get(42L).get(0);
        assertEquals(42L, runner.execute("SELECT id FROM lineage.t WHERE _row_id = " + rowId).getOnlyValue());
        // Deletes (deletion vectors) and compaction leave every other row its id and sequence number.
        runner.execute("DELETE FROM lineage.t WHERE id < 10 OR id = 100");
        runner.execute("CALL lake.system.rewrite_data_files('lineage', 't')");
        Map<Long, List<Long>> after = new java.util.TreeMap<>();
        runner.execute(lineage).getMaterializedRows().forEach(r -> after.put((Long) r.getField(0), List.of((Long) r.getField(1), (Long) r.getField(2))));
        before.keySet().removeIf(id -> id < 10 || id == 100);
        assertEquals(before, after);
        runner.execute("DROP SCHEMA lineage CASCADE");
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> runner.execute("CREATE TABLE db.v4 (id bigint) WITH (format_version = 4)"));
        assertTrue(e.getMessage().contains("format-version must be 2 or 3"), e.getMessage());
    }

    @Test
    void createOrReplaceRedefinesATableInOneSnapshotAndKeepsItsHistory() {
        runner.execute("CREATE SCHEMA redo");
        runner.execute("CREATE TABLE redo.t (id bigint NOT NULL, name varchar)");
        runner.execute("INSERT INTO redo.t VALUES (1, 'a'), (2, 'b')");
        String latest = "SELECT snapshot_id FROM redo.\"t$snapshots\" ORDER BY sequence_number DESC LIMIT 1";
        long before = (long) runner.execute(latest).getOnlyValue();
        runner.execute("CREATE OR REPLACE TABLE redo.t (id bigint, day date, score double) WITH (partitioning = ARRAY['day(day)'])");
        assertEquals(0L, runner.execute("SELECT count(*) FROM redo.t").getOnlyValue());
        assertEquals(List.of("id", "day", "score"), runner.execute("DESCRIBE redo.t").getMaterializedRows().stream()
                .map(r -> r.getField(0)).toList());
        assertTrue(((String) runner.execute("SHOW CREATE TABLE redo.t").getOnlyValue()).contains("day(day)"));
        runner.execute("INSERT INTO redo.t VALUES (3, DATE '2024-01-01', 1.5), (4, DATE '2024-01-02', 2.5)");
        assertEquals(4.0, runner.execute("SELECT sum(score) FROM redo.t").getOnlyValue());
        // The old rows, under the old columns.
        assertEquals("b", runner.execute("SELECT name FROM redo.t FOR VERSION AS OF " + before + " WHERE id = 2").getOnlyValue());
        // CREATE OR REPLACE TABLE ... AS is atomic: the rewrite-in-place idiom keeps exactly the selected
        // rows in one new snapshot; a query that fails leaves the table as it was.
        long snapshots = (long) runner.execute("SELECT count(*) FROM redo.\"t$snapshots\"").getOnlyValue();
        runner.execute("CREATE OR REPLACE TABLE redo.t AS SELECT id, score FROM redo.t WHERE id > 3");
        assertEquals(List.of("4:2.5"), runner.execute("SELECT id, score FROM redo.t").getMaterializedRows().stream()
                .map(r -> r.getField(0) + ":" + r.getField(1)).toList());
        assertEquals(snapshots + 1, runner.execute("SELECT count(*) FROM redo.\"t$snapshots\"").getOnlyValue());
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(
                "CREATE OR REPLACE TABLE redo.t AS SELECT id, CAST(1 / (id - 4) AS double) AS score FROM redo.t"));
        assertTrue(e.getMessage().contains("Division by zero"), e.getMessage());
        assertEquals(List.of("4:2.5"), runner.execute("SELECT id, score FROM redo.t").getMaterializedRows().stream()
                .map(r -> r.getField(0) + ":" + r.getField(1)).toList(), "a failed replacement changes nothing");
        assertEquals(snapshots + 1, runner.execute("SELECT count(*) FROM redo.\"t$snapshots\"").getOnlyValue());
        // Replacing a table that is not there creates it.
        runner.execute("CREATE OR REPLACE TABLE redo.fresh (x bigint)");
        assertEquals(0L, runner.execute("SELECT count(*) FROM redo.fresh").getOnlyValue());
        runner.execute("DROP SCHEMA redo CASCADE");
    }

    @Test
    void arraysAndRowsRoundTrip() {
        runner.execute("CREATE SCHEMA nested");
        runner.execute("CREATE TABLE nested.t (id bigint NOT NULL, tags array(varchar), nums array(bigint), "
                + "point row(x double, y double, label varchar), items array(row(k integer, v array(real))))");
        runner.execute("INSERT INTO nested.t VALUES "
                + "(1, ARRAY['a', 'b'], ARRAY[1, 2, 3], ROW(1.5, -2.0, 'p'), ARRAY[ROW(7, ARRAY[REAL '0.5'])]), "
                + "(2, ARRAY[], NULL, NULL, ARRAY[]), "
                + "(3, ARRAY['c', NULL], ARRAY[NULL, 4], ROW(0.0, NULL, NULL), NULL)");
        List<String> rows = runner.execute("SELECT json_format(CAST(CAST(ROW(tags, nums, point, items) AS "
                + "ROW(tags array(varchar), nums array(bigint), point row(x double, y double, label varchar), "
                + "items array(row(k integer, v array(real))))) AS json)) FROM nested.t ORDER BY id").getOnlyColumn()
                .map(String::valueOf).toList();
        assertEquals(List.of(
                "{\"tags\":[\"a\",\"b\"],\"nums\":[1,2,3],\"point\":{\"x\":1.5,\"y\":-2.0,\"label\":\"p\"},\"items\":[{\"k\":7,\"v\":[0.5]}]}",
                "{\"tags\":[],\"nums\":null,\"point\":null,\"items\":[]}",
                "{\"tags\":[\"c\",null],\"nums\":[null,4],\"point\":{\"x\":0.0,\"y\":null,\"label\":null},\"items\":null}"), rows);
        assertEquals(List.of(1L), runner.execute("SELECT id FROM nested.t WHERE point.x > 1 AND cardinality(tags) = 2")
                .getOnlyColumn().toList());
        // What Trino wrote, the native library (and so Spark) reads as lists and structs.
        try (BufferAllocator allocator = Allocators.child("trino-nested-test");
                NativeTable table = NativeTable.load(root.resolve("nested").resolve("t").toString(), Map.of())) {
            assertEquals("List", table.schema(allocator).findField("tags").getType().toString());
            assertEquals("Struct", table.schema(allocator).findField("point").getType().toString());
        }
        runner.execute("DROP SCHEMA nested CASCADE");
    }

    @Test
    void maintenanceProceduresCompactAndRollBack() {
        runner.execute("CREATE SCHEMA maint");
        runner.execute("CREATE TABLE maint.t (id bigint NOT NULL, name varchar)");
        for (int i = 0; i < 4; i++) {
            runner.execute("INSERT INTO maint.t SELECT x + " + (i * 100) + ", 'n' || CAST(x AS varchar) FROM UNNEST(sequence(0, 99)) AS u(x)");
        }
        long beforeDelete = (long) runner.execute(
                "SELECT snapshot_id FROM maint.\"t$snapshots\" ORDER BY sequence_number DESC LIMIT 1").getOnlyValue();
        runner.execute("DELETE FROM maint.t WHERE id BETWEEN 150 AND 249");
        String totals = "SELECT count(*), sum(id), count(DISTINCT name) FROM maint.t";
        MaterializedRow expected = runner.execute(totals).getMaterializedRows().get(0);
        assertEquals(300L, expected.getField(0));
        String location = root.resolve("maint").resolve("t").toString();
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertTrue(table.dataFiles(TableVersion.CURRENT).length >= 3);
        }
        runner.execute("CALL lake.system.rewrite_data_files('maint', 't')");
        assertEquals(expected, runner.execute(totals).getMaterializedRows().get(0));
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            String[] files = table.dataFiles(TableVersion.CURRENT);
            assertEquals(1, files.length);
            assertTrue(!files[0].contains("\"deletes\""), "the delete files left with the rows they deleted");
        }
        // Back to before the delete: its rows are read again, and the later snapshots stay.
        runner.execute("CALL lake.system.rollback_to_snapshot('maint', 't', " + beforeDelete + ")");
        assertEquals(400L, runner.execute("SELECT count(*) FROM maint.t").getOnlyValue());
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> runner.execute("CALL lake.system.rollback_to_snapshot('maint', 't', 42)"));
        assertTrue(e.getMessage().contains("snapshot 42 does not exist"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("CALL lake.system.rewrite_data_files('maint', 't', 0)"));
        assertTrue(e.getMessage().contains("target_rows must be positive"), e.getMessage());
        // The same maintenance as table procedures, which Trino authorizes per table.
        runner.execute("DELETE FROM maint.t WHERE id < 10");
        runner.execute("INSERT INTO maint.t VALUES (1000, 'x')");
        MaterializedRow now = runner.execute(totals).getMaterializedRows().get(0);
        runner.execute("ALTER TABLE maint.t EXECUTE optimize");
        assertEquals(now, runner.execute(totals).getMaterializedRows().get(0));
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(1, table.dataFiles(TableVersion.CURRENT).length, "optimize compacted the table");
        }
        runner.execute("ALTER TABLE maint.t EXECUTE optimize(target_rows => 100)");
        assertEquals(now, runner.execute(totals).getMaterializedRows().get(0));
        runner.execute("ALTER TABLE maint.t EXECUTE expire_snapshots(older_than_hours => 0, retain_last => 1)");
        assertEquals(1L, runner.execute("SELECT count(*) FROM maint.\"t$snapshots\"").getOnlyValue());
        runner.execute("ALTER TABLE maint.t EXECUTE remove_orphan_files");
        assertEquals(now, runner.execute(totals).getMaterializedRows().get(0));
        e = assertThrows(RuntimeException.class, () -> runner.execute("ALTER TABLE maint.t EXECUTE optimize(target_rows => 0)"));
        assertTrue(e.getMessage().contains("target_rows must be positive"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("ALTER TABLE maint.t EXECUTE vacuum"));
        assertTrue(e.getMessage().contains("VACUUM"), e.getMessage());
        runner.execute("DROP SCHEMA maint CASCADE");
    }

    @Test
    void datesTimestampsDecimalsAndVarbinaryRoundTripAndFilter() {
        runner.execute("CREATE SCHEMA types");
        runner.execute("CREATE TABLE types.t (id bigint NOT NULL, d date, ts timestamp(6), tz timestamp(6) with time zone, "
                + "amount decimal(12,3), big decimal(30,5), raw varbinary)");
        String rows = "(1, DATE '2024-01-31', TIMESTAMP '2024-01-31 10:20:30.123456', TIMESTAMP '2024-01-31 10:20:30.123456 UTC', "
                + "DECIMAL '123.456', DECIMAL '12345678901234567890.12345', X'CAFE'), "
                + "(2, NULL, NULL, NULL, NULL, NULL, NULL), "
                + "(3, DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.999999', TIMESTAMP '1969-12-31 23:59:59.999999 UTC', "
                + "DECIMAL '-0.001', DECIMAL '-1.00001', X'')";
        runner.execute("INSERT INTO types.t VALUES " + rows);
        String reference = "SELECT * FROM (VALUES " + rows + ") AS r(id, d, ts, tz, amount, big, raw)";
        assertEquals(0L, runner.execute("SELECT count(*) FROM (SELECT * FROM types.t EXCEPT " + reference + ")").getOnlyValue());
        assertEquals(0L, runner.execute("SELECT count(*) FROM (" + reference + " EXCEPT SELECT * FROM types.t)").getOnlyValue());
        for (String[] filter : new String[][] {
                {"d = DATE '2024-01-31'", "1"}, {"d < DATE '2000-01-01'", "3"}, {"ts > TIMESTAMP '2000-01-01 00:00:00'", "1"},
                {"amount > 100", "1"}, {"amount < 0", "3"}, {"big = DECIMAL '12345678901234567890.12345'", "1"},
                {"tz < TIMESTAMP '2000-01-01 00:00:00 UTC'", "3"}, {"raw = X'CAFE'", "1"}}) {
            assertEquals(List.of(Long.parseLong(filter[1])),
                    runner.execute("SELECT id FROM types.t WHERE " + filter[0]).getOnlyColumn().toList(), filter[0]);
        }
        String plan = (String) runner.execute("EXPLAIN SELECT id FROM types.t WHERE d = DATE '2024-01-31' AND amount > 100").getOnlyValue();
        assertTrue(plan.contains("filter="), plan);
        runner.execute("DROP SCHEMA types CASCADE");
    }

    @Test
    void trinoCreatesFillsCopiesAndDropsTables() {
        runner.execute("CREATE SCHEMA made");
        assertTrue(Files.isDirectory(root.resolve("made")));
        runner.execute("CREATE TABLE made.t (id bigint NOT NULL, name varchar, score double, n integer, small smallint, "
                + "flag boolean, embedding array(real) WITH (dimension = 3))");
        runner.execute("CREATE TABLE IF NOT EXISTS made.t (id bigint)");
        runner.execute("INSERT INTO made.t VALUES (1, 'one', 0.5, 10, 2, true, ARRAY[REAL '1', 2, 3]), "
                + "(2, NULL, NULL, NULL, NULL, NULL, NULL)");
        assertEquals(List.of("id bigint", "name varchar", "score double", "n integer", "small integer", "flag boolean",
                "embedding array(real)"), runner.execute("DESCRIBE made.t").getMaterializedRows().stream()
                        .map(r -> r.getField(0) + " " + r.getField(1)).toList());
        runner.execute("CREATE TABLE made.copy WITH (vectors = 'embedding:3') AS SELECT * FROM made.t");
        assertEquals(List.of(1L, 2L), runner.execute("SELECT id FROM made.copy ORDER BY id").getOnlyColumn().toList());
        assertEquals(List.of(1.0f, 2.0f, 3.0f), runner.execute("SELECT embedding FROM made.copy WHERE id = 1").getOnlyValue());
        // The copy is a table of its own, which the native library (and so Spark) reads.
        try (BufferAllocator allocator = Allocators.child("trino-ctas-test");
                NativeTable copy = NativeTable.load(root.resolve("made").resolve("copy").toString(), Map.of())) {
            assertEquals("FixedSizeList(3)", copy.schema(allocator).findField("embedding").getType().toString());
        }

        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute("CREATE TABLE made.t (id bigint)"));
        assertTrue(e.getMessage().contains("already exists"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("CREATE TABLE made.bad (m map(varchar, bigint))"));
        assertTrue(e.getMessage().contains("cannot store yet"), e.getMessage());
        e = assertThrows(RuntimeException.class,
                () -> runner.execute("CREATE TABLE made.wrong WITH (vectors = 'embedding:4') AS SELECT * FROM made.t WHERE id = 1"));
        assertTrue(e.getMessage().contains("holds 3 values where 4 belong"), e.getMessage());
        assertTrue(!Files.exists(root.resolve("made").resolve("wrong")), "a failed CREATE TABLE AS leaves no table");
        e = assertThrows(RuntimeException.class, () -> runner.execute("CREATE TABLE nowhere.t (id bigint)"));
        assertTrue(e.getMessage().contains("nowhere"), e.getMessage());

        long full = (long) runner.execute("SELECT snapshot_id FROM made.\"copy$snapshots\" ORDER BY sequence_number DESC LIMIT 1")
                .getOnlyValue();
        runner.execute("TRUNCATE TABLE made.copy");
        assertEquals(0L, runner.execute("SELECT count(*) FROM made.copy").getOnlyValue());
        assertEquals(2L, runner.execute("SELECT count(*) FROM made.copy FOR VERSION AS OF " + full).getOnlyValue());
        runner.execute("CALL lake.system.expire_snapshots('made', 'copy', 0)");
        assertEquals(1L, runner.execute("SELECT count(*) FROM made.\"copy$snapshots\"").getOnlyValue(), "only the current one is left");
        RuntimeException expired = assertThrows(RuntimeException.class,
                () -> runner.execute("SELECT count(*) FROM made.copy FOR VERSION AS OF " + full));
        assertTrue(expired.getMessage().contains("does not exist"), expired.getMessage());
        runner.execute("DROP TABLE made.copy");
        assertTrue(!Files.exists(root.resolve("made").resolve("copy")));
        assertEquals(List.of("t"), runner.execute("SHOW TABLES FROM made").getOnlyColumn().toList());
        e = assertThrows(RuntimeException.class, () -> runner.execute("DROP SCHEMA made"));
        assertTrue(e.getMessage().contains("non-empty schema"), e.getMessage());
        runner.execute("DROP SCHEMA made CASCADE");
        assertTrue(!Files.exists(root.resolve("made")));
    }

    @Test
    void removeOrphanFilesDeletesOnlyOldUnreferencedFiles() throws Exception {
        Path data = root.resolve("db").resolve("events").resolve("data");
        Path old = Files.writeString(data.resolve("left-by-a-killed-writer.parquet"), "partial");
        Path recent = Files.writeString(data.resolve("being-written.parquet"), "partial");
        Files.setLastModifiedTime(old, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 100 * 3_600_000L));
        long files;
        try (var listing = Files.list(data)) {
            files = listing.count();
        }
        runner.execute("CALL lake.system.remove_orphan_files('db', 'events')");
        assertTrue(!Files.exists(old), "an orphan older than 72 hours is removed");
        assertTrue(Files.exists(recent), "a recent file may belong to a writer about to commit");
        try (var listing = Files.list(data)) {
            assertEquals(files - 1, listing.count(), "committed files stay");
        }
        // Younger cutoffs would take the files of a writer about to commit: refused, nothing removed.
        for (String hours : List.of("0", "23.5", "nan()", "-1")) {
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> runner.execute("CALL lake.system.remove_orphan_files('db', 'events', " + hours + ")"), hours);
            assertTrue(e.getMessage().contains("older than 24 hours") || e.getMessage().contains("older_than_hours must be"),
                    hours + ": " + e.getMessage());
        }
        assertTrue(Files.exists(recent));
        Files.setLastModifiedTime(recent, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 30 * 3_600_000L));
        runner.execute("CALL lake.system.remove_orphan_files('db', 'events', 24)");
        assertTrue(!Files.exists(recent), "a day-old orphan goes with a cutoff of 24 hours");
        assertEquals(1500L, runner.execute("SELECT count(*) FROM events").getOnlyValue());
    }

    @Test
    void unknownSnapshotsAndTablesFailClearly() {
        RuntimeException snapshot = assertThrows(RuntimeException.class,
                () -> runner.execute("SELECT count(*) FROM events FOR VERSION AS OF 42"));
        assertTrue(snapshot.getMessage().contains("snapshot 42 does not exist"), snapshot.getMessage());
        RuntimeException table = assertThrows(RuntimeException.class, () -> runner.execute("SELECT * FROM db.missing"));
        assertTrue(table.getMessage().contains("missing"), table.getMessage());
    }
}
