package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.NpyFiles;
import io.trino.spi.Plugin;
import io.trino.testing.DistributedQueryRunner;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What a Trino user's bad input or a damaged file does: a clear error naming what was wrong, never a
 * crashed worker; after each, the same runner answers the next query.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestFaults {
    private DistributedQueryRunner runner;
    private Plugin plugin;
    private Path root;

    @BeforeAll
    void start() throws Exception {
        root = Files.createTempDirectory("hyperstream-faults");
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        plugin = IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString(), "hyperstream.batch-rows", "500"));
        runner.execute("CREATE SCHEMA lake.db");
        runner.execute("CREATE TABLE lake.db.t AS SELECT a * 2 + b AS id, 'value-' || CAST(a * 2 + b AS varchar) AS name "
                + "FROM UNNEST(sequence(0, 9999)) AS u(a) CROSS JOIN UNNEST(sequence(0, 1)) AS v(b)");
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    @AfterEach
    void theRunnerStillAnswers() {
        assertEquals(4950L, runner.execute("SELECT sum(id) FROM lake.sample.items WHERE id < 100").getOnlyValue());
    }

    private String failure(String sql) {
        return assertThrows(RuntimeException.class, () -> runner.execute(sql), sql).getMessage();
    }

    /** The plugin's own NativeLibrary (its class loader's copy of the library). */
    private void armStreamPanic(int afterBatches) throws Exception {
        plugin.getClass().getClassLoader().loadClass("io.hyperstream.jni.NativeLibrary")
                .getMethod("armStreamPanic", int.class).invoke(null, afterBatches);
    }

    @Test
    void aPanicInsideANativeStreamIsAnInternalErrorNotAnAbort() throws Exception {
        armStreamPanic(2);
        String message = failure("SELECT sum(length(name)) FROM lake.db.t");
        assertTrue(message.contains("native panic while reading a batch"), message);
        assertEquals(20000L, runner.execute("SELECT count(name) FROM lake.db.t").getOnlyValue());
    }

    @Test
    void absurdSizesAreRefusedByName() {
        runner.createCatalog("huge", "hyperstream", Map.of("hyperstream.sample.rows", "1000000000000000", "hyperstream.split-rows", "1"));
        String splits = failure("SELECT count(id) FROM huge.sample.items");
        assertTrue(splits.contains("would make 1000000000000000 splits"), splits);
        RuntimeException batch = assertThrows(RuntimeException.class, () -> runner.createCatalog("wide", "hyperstream",
                Map.of("hyperstream.batch-rows", "2147483647")));
        assertTrue(messages(batch).contains("hyperstream.batch-rows must be between 1 and 1048576 rows, got 2147483647"), messages(batch));
        for (String dimension : new String[] {"0", "-3", "2147483647"}) {
            String message = failure("CREATE TABLE lake.db.v (v array(real) WITH (dimension = " + dimension + "))");
            assertTrue(message.contains("needs a dimension of 1 to 65536, got " + dimension), message);
        }
    }

    @Test
    void negativeVersionsAndTimesBefore1970AreNotFound() {
        for (String version : new String[] {"-5", "-1"}) {
            String message = failure("SELECT count(*) FROM lake.db.t FOR VERSION AS OF " + version);
            assertTrue(message.contains("snapshot " + version), message);
        }
        String before = failure("SELECT count(*) FROM lake.db.t FOR TIMESTAMP AS OF TIMESTAMP '1969-07-20 20:17:00 UTC'");
        assertTrue(before.contains("the table has no snapshot at or before -"), before);
    }

    @Test
    void aDamagedParquetPageIsACorruptDataErrorNamingTheFile() throws Exception {
        runner.execute("CREATE TABLE lake.db.damaged AS SELECT * FROM lake.db.t");
        Path data;
        try (Stream<Path> files = Files.list(root.resolve("db").resolve("damaged").resolve("data"))) {
            data = files.filter(f -> f.toString().endsWith(".parquet")).findFirst().orElseThrow();
        }
        // The first page of the first column chunk, right after the "PAR1" magic, no longer decodes.
        try (RandomAccessFile file = new RandomAccessFile(data.toFile(), "rw")) {
            file.seek(4);
            byte[] garbage = new byte[64];
            java.util.Arrays.fill(garbage, (byte) 0xFF);
            file.write(garbage);
        }
        String message = failure("SELECT sum(id), sum(length(name)) FROM lake.db.damaged");
        assertTrue(message.contains(data.getFileName().toString()) && message.contains("corrupt data"), message);
    }

    @Test
    void aCraftedArrayHeaderIsRefusedNotMappedPastTheFile() throws Exception {
        Path store = root.resolve("arrays");
        ByteBuffer rows = ByteBuffer.allocate(100 * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < 100; r++) {
            rows.putFloat(r).putFloat(-r);
        }
        try (ArrayStore arrays = ArrayStore.open(store.toString())) {
            arrays.importNpy("emb", NpyFiles.write(root.resolve("emb.npy"), "<f4", "(100, 2)", rows.array()).toString());
        }
        assertEquals(100L, runner.execute("SELECT count(*) FROM lake.arrays.emb").getOnlyValue());
        Path data;
        try (Stream<Path> files = Files.list(store)) {
            data = files.filter(f -> f.getFileName().toString().endsWith(".hsa")).findFirst().orElseThrow();
        }
        // The committed row count at byte 8 of the header, made to wrap: rows x 8 bytes = 2^64 + 8.
        try (RandomAccessFile file = new RandomAccessFile(data.toFile(), "rw")) {
            file.seek(8);
            file.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong((1L << 61) + 1).array());
        }
        String message = failure("SELECT sum(value[1]) FROM lake.arrays.emb");
        assertTrue(message.contains("committed but only"), message);
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
