package io.hyperstream.spark;

import io.hyperstream.jni.CommitCrashes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/**
 * A Spark driver killed while it runs INSERTs (two write tasks writing files, the driver committing),
 * readers reading the table meanwhile, at 24 points: every read and the table afterwards hold whole
 * INSERTs, the table takes the next INSERT, and orphan removal leaves only the live files.
 */
class SparkCommitCrashTest {
    static final int ROWS = 1000;
    static final int KILLS = 24;

    /** The writer process: a local Spark session with a HyperStream catalog, INSERTing forever. */
    public static void main(String[] args) {
        SparkSession spark = LocalSpark.start("hyperstream-crash-writer");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", args[0]);
        long start = spark.sql("SELECT count(*) FROM lake.db.t").first().getLong(0);
        System.out.println("ready");
        for (long first = start; ; first += ROWS) {
            spark.sql("INSERT INTO lake.db.t SELECT id + " + first + " FROM range(0, " + ROWS + ", 1, 2)");
            System.out.println("committed " + first);
        }
    }

    @Test
    void killedSparkWritersLeaveWholeInserts() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-spark-crash");
        String location = root.resolve("db").resolve("t").toString();
        Files.createDirectories(root.resolve("db"));
        // Reads go through Spark too (the connector's Arrow is relocated inside its JAR).
        SparkSession spark = LocalSpark.start("hyperstream-crash-check");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", root.toString());
        spark.sql("CREATE TABLE lake.db.t (id BIGINT) USING hyperstream");
        java.util.function.Supplier<long[]> ids = () -> spark.sql("SELECT id FROM lake.db.t").collectAsList().stream()
                .mapToLong(r -> r.getLong(0)).sorted().toArray();
        try {
            CommitCrashes.killRepeatedly(SparkCommitCrashTest.class, List.of(root.toString()), location, KILLS, ROWS, ids::get);
        } finally {
            spark.stop();
        }
    }
}
