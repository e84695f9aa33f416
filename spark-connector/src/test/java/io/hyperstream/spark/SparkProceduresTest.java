package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Table maintenance through {@code CALL lake.system.<name>(...)} (Spark 4; Spark 3.5 has no CALL). */
class SparkProceduresTest {
    private static SparkSession spark;

    @TempDir
    static Path root;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-procedures-test");
        assumeTrue(spark.version().startsWith("4"), "CALL needs Spark 4");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", root.toString());
        sql("CREATE NAMESPACE lake.m");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static List<Row> sql(String query) {
        return spark.sql(query).collectAsList();
    }

    private static long one(String query) {
        return sql(query).get(0).getLong(0);
    }

    @Test
    void maintenanceRunsThroughCall() throws Exception {
        sql("CREATE TABLE lake.m.t (id BIGINT NOT NULL, embedding ARRAY<FLOAT>) USING hyperstream "
                + "TBLPROPERTIES ('vector.embedding.dimension' = '2')");
        for (int i = 0; i < 4; i++) {
            sql("INSERT INTO lake.m.t SELECT id, array(float(id), float(1)) FROM range(" + i * 100 + ", " + (i + 1) * 100 + ")");
        }
        long beforeDelete = one("SELECT snapshot_id FROM lake.m.t.snapshots ORDER BY sequence_number DESC LIMIT 1");
        sql("DELETE FROM lake.m.t WHERE id % 3 = 0");
        assertEquals(266L, one("SELECT count(*) FROM lake.m.t"));
        // Rollback to before the delete; then the delete again.
        Row rolled = sql("CALL lake.system.rollback_to_snapshot('m.t', " + beforeDelete + ")").get(0);
        assertEquals(beforeDelete, rolled.getLong(1));
        assertEquals(400L, one("SELECT count(*) FROM lake.m.t"));
        sql("DELETE FROM lake.m.t WHERE id % 3 = 0");
        long rows = one("SELECT count(*) FROM lake.m.t");
        long files = one("SELECT count(*) FROM lake.m.t.files WHERE content = 0");
        assertTrue(files >= 4, "files: " + files);

        // Compaction: fewer files, the same rows.
        Row rewritten = sql("CALL lake.system.rewrite_data_files(table => 'm.t', options => map('target-rows', '100000'))").get(0);
        assertEquals(files, rewritten.getLong(0));
        assertEquals(1L, rewritten.getLong(1));
        assertEquals(1L, one("SELECT count(*) FROM lake.m.t.files WHERE content = 0"));
        assertEquals(rows, one("SELECT count(*) FROM lake.m.t"));

        // Vector indexes: built for the files there, then dropped.
        assertEquals(1L, sql("CALL lake.system.create_vector_index('m.t', 'embedding', '{\"metric\":\"l2\",\"m\":8}')").get(0).getLong(0));
        assertEquals(1L, one("SELECT count(*) FROM lake.m.t.indexes WHERE kind = 'hnsw graph'"));
        sql("CALL lake.system.drop_vector_index(table => 'm.t', column => 'embedding')");
        assertEquals(0L, one("SELECT count(*) FROM lake.m.t.indexes WHERE kind = 'hnsw graph'"));

        // Expiry: every snapshot but the current one goes.
        long snapshots = one("SELECT count(*) FROM lake.m.t.snapshots");
        List<Row> expired = sql("CALL lake.system.expire_snapshots(table => 'm.t', older_than => current_timestamp(), retain_last => 1)");
        assertEquals(snapshots - 1, expired.size());
        assertEquals(1L, one("SELECT count(*) FROM lake.m.t.snapshots"));
        assertEquals(rows, one("SELECT count(*) FROM lake.m.t"));

        // Orphans: a stray file older than the cutoff goes; the table's own stay.
        Path stray = root.resolve("m").resolve("t").resolve("data").resolve("stray.parquet");
        Files.writeString(stray, "left by a killed writer");
        Files.setLastModifiedTime(stray, FileTime.fromMillis(System.currentTimeMillis() - 5L * 24 * 3_600_000));
        List<Row> orphans = sql("CALL lake.system.remove_orphan_files(table => 'm.t')");
        assertEquals(1, orphans.size(), orphans.toString());
        assertTrue(orphans.get(0).getString(0).endsWith("stray.parquet"), orphans.toString());
        assertTrue(Files.notExists(stray));
        assertEquals(rows, one("SELECT count(*) FROM lake.m.t"));

        // Bad arguments fail by name, changing nothing.
        String unknown = LocalSpark.messages(assertThrows(Exception.class, () -> sql("CALL lake.system.rewrite_data_files('m.nope')")));
        assertTrue(unknown.contains("m.nope"), unknown);
        String option = LocalSpark.messages(assertThrows(Exception.class,
                () -> sql("CALL lake.system.rewrite_data_files('m.t', map('min-input-files', '2'))")));
        assertTrue(option.contains("target-rows"), option);
        String procedure = LocalSpark.messages(assertThrows(Exception.class, () -> sql("CALL lake.system.nope('m.t')")));
        assertTrue(procedure.toLowerCase(java.util.Locale.ROOT).contains("nope"), procedure);
    }
}
