package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    private long firstSnapshot;

    @BeforeAll
    void start() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-lake");
        String location = root.resolve("db").resolve("events").toString();
        // The sample table's rows (documented formulas), stored as a real table in two commits.
        try (BufferAllocator allocator = Allocators.child("trino-stored-test");
                SampleTable sample = SampleTable.open(1500, DIM, 0);
                NativeTable table = NativeTable.create(location, sample.schema(allocator), Map.of(), Map.of(), allocator)) {
            firstSnapshot = table.append(allocator, sample.scan(allocator, 0, 1000, 400, null));
            table.append(allocator, sample.scan(allocator, 1000, 1500, 400, null));
        }
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        runner.installPlugin(new HyperStreamPlugin());
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
    void unknownSnapshotsAndTablesFailClearly() {
        RuntimeException snapshot = assertThrows(RuntimeException.class,
                () -> runner.execute("SELECT count(*) FROM events FOR VERSION AS OF 42"));
        assertTrue(snapshot.getMessage().contains("snapshot 42 does not exist"), snapshot.getMessage());
        RuntimeException table = assertThrows(RuntimeException.class, () -> runner.execute("SELECT * FROM db.missing"));
        assertTrue(table.getMessage().contains("missing"), table.getMessage());
    }
}
