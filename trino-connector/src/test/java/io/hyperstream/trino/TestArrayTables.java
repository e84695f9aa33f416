package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NpyFiles;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Arrays of an array store under {@code hyperstream.root} as Trino tables: SELECT and INSERT. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestArrayTables {
    private static final int ROWS = 3000;
    private DistributedQueryRunner runner;
    private Path store;

    @BeforeAll
    void start() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-arrays");
        store = root.resolve("arrays");
        // Row r of emb is [r, r + 0.5, -r]; labels[r] = r % 256; big holds uint64 values past bigint.
        ByteBuffer emb = ByteBuffer.allocate(ROWS * 3 * 4).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer labels = ByteBuffer.allocate(ROWS);
        for (int r = 0; r < ROWS; r++) {
            emb.putFloat(r).putFloat(r + 0.5f).putFloat(-r);
            labels.put((byte) (r % 256));
        }
        ByteBuffer big = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(-1L).putLong(7);
        try (ArrayStore arrays = ArrayStore.open(store.toString())) {
            arrays.importNpy("emb", NpyFiles.write(root.resolve("emb.npy"), "<f4", "(" + ROWS + ", 3)", emb.array()).toString());
            arrays.importNpy("labels", NpyFiles.write(root.resolve("labels.npy"), "|u1", "(" + ROWS + ",)", labels.array()).toString());
            arrays.importNpy("big", NpyFiles.write(root.resolve("big.npy"), "<u8", "(2,)", big.array()).toString());
            arrays.importNpy("scratch", NpyFiles.write(root.resolve("scratch.npy"), "<u8", "(2,)", big.array()).toString());
        }
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("arrays").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString(), "hyperstream.split-rows", "1000"));
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    @Test
    void arraysAreTablesOfTheirStoresSchema() {
        assertTrue(runner.execute("SHOW SCHEMAS").getOnlyColumnAsSet().contains("arrays"));
        assertTrue(runner.execute("SHOW TABLES").getOnlyColumnAsSet().containsAll(List.of("big", "emb", "labels")));
        assertEquals(List.of("index bigint", "value array(real)"), describe("emb"));
        assertEquals(List.of("index bigint", "value smallint"), describe("labels"));
        assertEquals(List.of("index bigint", "value decimal(20,0)"), describe("big"));
    }

    private List<String> describe(String table) {
        return runner.execute("DESCRIBE " + table).getMaterializedRows().stream()
                .map(r -> r.getField(0) + " " + r.getField(1)).toList();
    }

    @Test
    void selectReadsEveryRowInRowRangeSplits() {
        MaterializedRow totals = runner.execute("SELECT count(*), sum(index), sum(value[1]), count_if(value[2] != value[1] + 0.5e0) "
                + "FROM emb WHERE index < " + ROWS).getMaterializedRows().get(0);
        assertEquals(List.of((long) ROWS, (long) ROWS * (ROWS - 1) / 2, (double) ROWS * (ROWS - 1) / 2, 0L),
                List.of(totals.getField(0), totals.getField(1), ((Number) totals.getField(2)).doubleValue(), totals.getField(3)));
        assertEquals(0L, runner.execute("SELECT count(*) FROM labels WHERE value != index % 256").getOnlyValue());
        assertEquals(List.of(new BigDecimal("18446744073709551615"), new BigDecimal("7")),
                runner.execute("SELECT value FROM big ORDER BY index").getOnlyColumn().toList());
    }

    @Test
    void insertAppendsRowsConvertedToTheArraysDtype() throws InterruptedException {
        runner.execute("INSERT INTO labels (value) VALUES 255, 0, 17");
        runner.execute("INSERT INTO big (value) SELECT CAST(index AS decimal(20, 0)) FROM labels WHERE index < 5");
        assertEquals(List.of(255, 0, 17).stream().map(Integer::shortValue).toList(),
                runner.execute("SELECT value FROM labels WHERE index >= " + ROWS + " ORDER BY index").getOnlyColumn().toList());
        assertEquals(7L, runner.execute("SELECT count(*) FROM big").getOnlyValue());
        try (ArrayStore arrays = ArrayStore.open(store.toString(), false, true)) {
            assertEquals("uint8", arrays.info("labels").dtype());
            assertEquals(ROWS + 3, arrays.info("labels").rows());
            assertTrue(arrays.names().stream().noneMatch(n -> n.startsWith("part-")), arrays.names().toString());
        }
        assertEquals(0, stagingLeft(), "staged parts are removed after the commit");
    }

    @Test
    void insertOfVectorsKeepsTheirOrderWithinAStatement() {
        long before = (long) runner.execute("SELECT count(*) FROM emb").getOnlyValue();
        runner.execute("INSERT INTO emb (value) VALUES ARRAY[REAL '1', 2, 3], ARRAY[REAL '4', 5, 6]");
        List<Object> tail = runner.execute("SELECT value FROM emb WHERE index >= " + before + " ORDER BY index").getOnlyColumn().toList();
        assertEquals(List.of(List.of(1.0f, 2.0f, 3.0f), List.of(4.0f, 5.0f, 6.0f)), tail);
    }

    @Test
    void refusedInsertsNameTheProblemAndChangeNothing() throws InterruptedException {
        long labels = (long) runner.execute("SELECT count(*) FROM labels").getOnlyValue();
        long emb = (long) runner.execute("SELECT count(*) FROM emb").getOnlyValue();
        Exception e = assertThrows(RuntimeException.class, () -> runner.execute("INSERT INTO labels (value) VALUES 256"));
        assertTrue(e.getMessage().contains("do not fit a uint8 array"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("INSERT INTO emb (value) VALUES ARRAY[REAL '1', 2]"));
        assertTrue(e.getMessage().contains("a row of array 'emb' holds 2 values where 3 belong"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("INSERT INTO emb (value) VALUES NULL"));
        assertTrue(e.getMessage().contains("NULL value not allowed for NOT NULL column: value"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("SELECT * FROM missing"));
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
        assertEquals(labels, runner.execute("SELECT count(*) FROM labels").getOnlyValue());
        assertEquals(emb, runner.execute("SELECT count(*) FROM emb").getOnlyValue());
        try (ArrayStore arrays = ArrayStore.open(store.toString(), false, true)) {
            assertArrayEquals(new long[] {emb, 3}, arrays.info("emb").shape());
        }
        assertEquals(0, stagingLeft());
    }

    @Test
    void dropTableDropsTheArray() {
        runner.execute("DROP TABLE scratch");
        try (ArrayStore arrays = ArrayStore.open(store.toString(), false, true)) {
            assertTrue(!arrays.names().contains("scratch"), arrays.names().toString());
        }
        Exception e = assertThrows(RuntimeException.class, () -> runner.execute("CREATE TABLE t (x bigint)"));
        assertTrue(e.getMessage().contains("is an array store"), e.getMessage());
    }

    /**
     * Staging stores left once the queries before are cleaned up: Trino runs {@code cleanupQuery}
     * after it reports a failed query, so this waits for the count to settle at zero (up to 30 s).
     */
    private long stagingLeft() throws InterruptedException {
        Path staging = store.resolve(ArrayStore.STAGING_DIR);
        long deadline = System.nanoTime() + 30_000_000_000L;
        long left;
        do {
            String[] names = staging.toFile().list();
            left = names == null ? 0 : Arrays.stream(names).count();
            if (left > 0) {
                Thread.sleep(50);
            }
        } while (left > 0 && System.nanoTime() < deadline);
        return left;
    }
}
