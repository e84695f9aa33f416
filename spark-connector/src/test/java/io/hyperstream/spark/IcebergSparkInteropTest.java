package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.hyperstream.jni.RestCatalogTestServer;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Apache Iceberg's own Spark runtime and HyperStream in one Spark session, both catalogs defined on
 * the same Iceberg REST server ({@code ice}: Iceberg's {@code SparkCatalog}, {@code lake}: ours, the
 * same settings): each lists, reads and appends to the other's tables, with identical rows. Runs where
 * Iceberg's Spark runtime is on the class path (the Spark 3.5 line's tests); skipped elsewhere.
 */
class IcebergSparkInteropTest {
    private static final String ICEBERG_CATALOG = "org.apache.iceberg.spark.SparkCatalog";
    private static SparkSession spark;
    private static RestCatalogTestServer server;

    @TempDir
    static Path dir;

    @BeforeAll
    static void start() throws Exception {
        boolean icebergRuntime;
        try {
            Class.forName(ICEBERG_CATALOG);
            icebergRuntime = true;
        } catch (ClassNotFoundException e) {
            icebergRuntime = false;
        }
        assumeTrue(icebergRuntime, "Iceberg's Spark runtime is not on this line's class path");
        server = RestCatalogTestServer.start(dir.resolve("server"));
        spark = LocalSpark.start("hyperstream-iceberg-spark-interop");
        for (String[] catalog : new String[][] {{"lake", HyperStreamCatalog.class.getName()}, {"ice", ICEBERG_CATALOG}}) {
            spark.conf().set("spark.sql.catalog." + catalog[0], catalog[1]);
            spark.conf().set("spark.sql.catalog." + catalog[0] + ".type", "rest");
            spark.conf().set("spark.sql.catalog." + catalog[0] + ".uri", server.uri());
        }
        // Iceberg's catalog caches loaded tables for a session; another writer's commits show after a refresh.
        spark.conf().set("spark.sql.catalog.ice.cache-enabled", "false");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
        if (server != null) {
            server.close();
        }
    }

    private static List<Row> sql(String query) {
        return spark.sql(query).collectAsList();
    }

    private static List<String> rows(String query) {
        return sql(query).stream().map(Row::toString).toList();
    }

    @Test
    void icebergsSparkRuntimeAndHyperStreamShareTablesThroughTheCatalog() {
        sql("CREATE NAMESPACE lake.both");
        // Ours, read and appended to by Iceberg's runtime.
        sql("CREATE TABLE lake.both.ours (id BIGINT, name STRING, score DOUBLE) USING hyperstream");
        sql("INSERT INTO lake.both.ours SELECT id, concat('n', id), id / 4.0 FROM range(0, 1000)");
        assertEquals(List.of("ours"), sql("SHOW TABLES IN ice.both").stream().map(r -> r.getString(1)).toList());
        String totals = "SELECT count(*), sum(id), sum(length(name)), sum(score) FROM %s";
        assertEquals(rows(totals.formatted("lake.both.ours")), rows(totals.formatted("ice.both.ours")));
        sql("INSERT INTO ice.both.ours SELECT id, concat('i', id), 0.5 FROM range(1000, 1100)");
        assertEquals(List.of("[1100,604450]"), rows("SELECT count(*), sum(id) FROM lake.both.ours"));
        assertEquals(rows("SELECT * FROM lake.both.ours ORDER BY id"), rows("SELECT * FROM ice.both.ours ORDER BY id"));
        // Our row-level changes (position deletes and new files in one snapshot), read by theirs.
        sql("UPDATE lake.both.ours SET name = 'u' WHERE id % 10 = 1");
        sql("MERGE INTO lake.both.ours t USING (SELECT id FROM range(1090, 1110)) s ON t.id = s.id "
                + "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, name, score) VALUES (s.id, 'm', 1.0)");
        assertEquals(List.of("[1100,109,10]"), rows("SELECT count(*), count_if(name = 'u'), count_if(name = 'm') FROM ice.both.ours"));
        assertEquals(rows("SELECT * FROM lake.both.ours ORDER BY id"), rows("SELECT * FROM ice.both.ours ORDER BY id"));

        // Theirs, read and appended to by HyperStream.
        sql("CREATE TABLE ice.both.theirs (id BIGINT, name STRING) USING iceberg");
        sql("INSERT INTO ice.both.theirs SELECT id, concat('t', id) FROM range(0, 500)");
        assertEquals(rows("SELECT * FROM ice.both.theirs ORDER BY id"), rows("SELECT * FROM lake.both.theirs ORDER BY id"));
        sql("INSERT INTO lake.both.theirs SELECT id, concat('h', id) FROM range(500, 600)");
        assertEquals(List.of("[600,179700]"), rows("SELECT count(*), sum(id) FROM ice.both.theirs"));
        assertEquals(rows("SELECT * FROM lake.both.theirs ORDER BY id"), rows("SELECT * FROM ice.both.theirs ORDER BY id"));
    }
}
