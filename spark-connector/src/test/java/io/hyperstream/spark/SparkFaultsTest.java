package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.NativeLibrary;
import io.hyperstream.jni.NativeTable;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a Spark user's bad input or a damaged file does: a clear exception naming what was wrong,
 * never a crashed executor; after each, the same session answers the next query.
 */
class SparkFaultsTest {
    private static SparkSession spark;

    @TempDir
    static Path dir;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-faults-test");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", dir.resolve("lake").toString());
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** The session still answers, and reads through the native library as before. */
    @AfterEach
    void theSessionStillAnswers() {
        assertEquals(4950L, spark.read().format("hyperstream").option("sample.rows", 100).load().selectExpr("sum(id)").first().getLong(0));
    }

    private static String failure(Runnable query) {
        return LocalSpark.messages(assertThrows(Exception.class, query::run));
    }

    /**
     * A write whose commit the object store stores but does not confirm, and whose read-back it
     * refuses: the job fails with {@code CommitStateUnknownException}, Spark's abort deletes nothing,
     * and the rows are there once the table is read again (the commit had taken effect).
     */
    @Test
    void aWriteWhoseCommitIsUnknownFailsSoAndKeepsItsFiles() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.hyperstream.jni.S3TestServer.available(),
                "hyperstream.test.python is not set: ./build-connectors.sh test sets it to a Python with moto");
        try (io.hyperstream.jni.S3TestServer s3 = io.hyperstream.jni.S3TestServer.start("--faults", "unknown", "unknown")) {
            Map<String, String> options = new java.util.HashMap<>();
            s3.storageOptions().forEach((k, v) -> options.put("storage." + k, v));
            options.put("path", "s3://unknown/db/t");
            String message = failure(() -> spark.range(0, 1000, 1, 2).write().format("hyperstream").options(options)
                    .mode("append").save());
            assertTrue(message.contains("CommitStateUnknownException") && message.contains("reload the table"), message);
            assertEquals(499_500L, spark.read().format("hyperstream").options(options).load()
                    .selectExpr("sum(id)").first().getLong(0), "the commit took effect and its files were kept");
        }
    }

    @Test
    void aPanicInsideANativeStreamIsAnInternalExceptionNotAnAbort() {
        NativeLibrary.armStreamPanic(3);
        String message = failure(() -> spark.read().format("hyperstream").option("sample.rows", 20_000).option("batch.rows", 1000)
                .load().selectExpr("sum(id)").collect());
        assertTrue(message.contains("io.hyperstream.jni.InternalException") && message.contains("native panic while reading a batch"), message);
    }

    @Test
    void absurdSizesAreRefusedByNameBeforeAnythingIsAllocated() {
        String splits = failure(() -> spark.read().format("hyperstream").option("sample.rows", 1_000_000_000_000_000L)
                .option("split.rows", 1).load().selectExpr("count(id)").collect());
        assertTrue(splits.contains("would make 1000000000000000 splits"), splits);
        String batch = failure(() -> spark.read().format("hyperstream").option("sample.rows", 10)
                .option("batch.rows", Integer.MAX_VALUE).load().collect());
        assertTrue(batch.contains("option 'batch.rows' must be between 1 and 1048576 rows, got 2147483647"), batch);
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.sizes");
        for (String dimension : new String[] {"0", "-3", "2147483647", "65537"}) {
            String message = failure(() -> spark.sql("CREATE TABLE lake.sizes.t (id BIGINT, v ARRAY<FLOAT>) USING hyperstream "
                    + "TBLPROPERTIES ('vector.v.dimension' = '" + dimension + "')"));
            assertTrue(message.contains("needs a dimension of 1 to 65536, got " + dimension), message);
        }
        String path = failure(() -> spark.range(3).selectExpr("id", "array(1.0f) AS v").write().format("hyperstream")
                .option("vector.v.dimension", 0).save(dir.resolve("zero-dim").toString()));
        assertTrue(path.contains("needs a dimension of 1 to 65536, got 0"), path);
    }

    @Test
    void negativeVersionsAndTimesBefore1970AreNotFound() {
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.travel");
        spark.sql("CREATE TABLE lake.travel.t (id BIGINT) USING hyperstream");
        spark.sql("INSERT INTO lake.travel.t VALUES (1), (2)");
        for (String version : new String[] {"-5", "-1"}) {
            String message = failure(() -> spark.sql("SELECT * FROM lake.travel.t VERSION AS OF '" + version + "'").collect());
            assertTrue(message.contains("NotFoundException") && message.contains("snapshot " + version), message);
        }
        String before = failure(() -> spark.sql("SELECT * FROM lake.travel.t TIMESTAMP AS OF '1969-07-20 20:17:00'").collect());
        assertTrue(before.contains("NotFoundException"), before);
        String option = failure(() -> spark.read().format("hyperstream").option("snapshot-id", -7)
                .load(dir.resolve("lake").resolve("travel").resolve("t").toString()).collect());
        assertTrue(option.contains("snapshot -7"), option);
        assertEquals(2L, spark.sql("SELECT count(*) FROM lake.travel.t").first().getLong(0));
    }

    @Test
    void aDamagedParquetPageIsACorruptDataExceptionNamingTheFile() throws Exception {
        Path table = dir.resolve("damaged");
        spark.range(0, 20_000, 1, 1).selectExpr("id", "concat('value-', id) AS name").write().format("hyperstream")
                .mode("append").save(table.toString());
        Path data;
        try (Stream<Path> files = Files.list(table.resolve("data"))) {
            data = files.filter(f -> f.toString().endsWith(".parquet")).findFirst().orElseThrow();
        }
        // Overwrite the first page of the first column chunk (right after the "PAR1" magic): its
        // header no longer decodes. (Damage inside page values decodes silently: the Parquet writer
        // of arrow-rs writes no page checksums.)
        try (RandomAccessFile file = new RandomAccessFile(data.toFile(), "rw")) {
            file.seek(4);
            byte[] garbage = new byte[64];
            java.util.Arrays.fill(garbage, (byte) 0xFF);
            file.write(garbage);
        }
        String message = failure(() -> spark.read().format("hyperstream").load(table.toString()).selectExpr("sum(id)", "sum(length(name))").collect());
        assertTrue(message.contains(data.getFileName().toString()), message);
    }

    @Test
    void aCraftedArrayHeaderIsRefusedNotMappedPastTheFile() throws Exception {
        Path store = dir.resolve("store");
        spark.range(0, 1000, 1, 2).selectExpr("array(float(id), float(-id)) AS value").write().format("hyperstream")
                .option("array", "emb").mode("append").save(store.toString());
        Path data;
        try (Stream<Path> files = Files.list(store)) {
            data = files.filter(f -> f.getFileName().toString().endsWith(".hsa")).findFirst().orElseThrow();
        }
        // The committed row count at byte 8 of the header, made to wrap: rows x 8 bytes = 2^64 + 8.
        try (RandomAccessFile file = new RandomAccessFile(data.toFile(), "rw")) {
            file.seek(8);
            file.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong((1L << 61) + 1).array());
        }
        String message = failure(() -> spark.read().format("hyperstream").option("array", "emb").load(store.toString()).collect());
        assertTrue(message.contains("CorruptDataException") && message.contains("committed but only"), message);
    }

    @Test
    void orphanRemovalRefusesACutoffOfNow() {
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.orphans");
        spark.sql("CREATE TABLE lake.orphans.t (id BIGINT) USING hyperstream");
        try (NativeTable table = NativeTable.load(dir.resolve("lake").resolve("orphans").resolve("t").toString(), Map.of())) {
            for (long cutoff : new long[] {System.currentTimeMillis(), Long.MAX_VALUE, System.currentTimeMillis() - 3_600_000}) {
                InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> table.removeOrphanFiles(cutoff));
                assertTrue(e.getMessage().contains("older than 24 hours"), e.getMessage());
            }
            assertEquals(0, table.removeOrphanFiles(System.currentTimeMillis() - 25 * 3_600_000L).size());
        }
    }
}
