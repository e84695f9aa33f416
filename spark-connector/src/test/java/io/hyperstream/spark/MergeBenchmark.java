package io.hyperstream.spark;

import java.io.File;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * MERGE INTO through Spark: a HyperStream table against Apache Iceberg's own Spark runtime
 * (merge-on-read: position deletes plus new data files) doing the same MERGE on a table of the same
 * rows in the same session. The target holds {@code rows} rows (id, category, value, an 8-d
 * embedding); the source {@code rows / 10} rows, half updating existing ids (a new value and
 * embedding) and half inserting new ones, plus a tenth of the matched ones deleted. Prints each
 * side's time and what its snapshot wrote (data files, delete files, rows), checks both tables hold
 * the same rows after, and prints the ratio. Runs on the Spark 3.5 line, whose test class path has
 * Iceberg's runtime:
 *
 * <pre>./build-connectors.sh bench merge [rows (10000000)]</pre>
 */
public final class MergeBenchmark {
    private MergeBenchmark() {}

    public static void main(String[] args) {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
        Path work = Path.of("target", "bench-data", "merge").toAbsolutePath();
        delete(work.toFile());
        SparkSession spark = SparkSession.builder()
                .master("local[2]")
                .appName("hyperstream-merge-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.shuffle.partitions", "4")
                .config("spark.sql.catalog.lake", HyperStreamCatalog.class.getName())
                .config("spark.sql.catalog.lake.root", work.resolve("hyperstream").toString())
                .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
                .config("spark.sql.catalog.ice.type", "hadoop")
                .config("spark.sql.catalog.ice.warehouse", work.resolve("iceberg").toString())
                .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        try {
            System.out.printf("Spark %s, %d target rows, %d source rows%n", spark.version(), rows, rows / 10);
            for (String catalog : List.of("lake", "ice")) {
                spark.sql("CREATE NAMESPACE " + catalog + ".db");
            }
            // A warm-up MERGE of a tenth of the size on both sides first (same JIT state for the timed ones).
            prepare(spark, "w", rows / 10);
            spark.sql(MERGE.formatted("lake.db.w", "src_w"));
            spark.sql(MERGE.formatted("ice.db.w", "src_w"));
            double[] inserts = prepare(spark, "t", rows);
            System.out.printf("insert: HyperStream %.1f s, Iceberg %.1f s%n", inserts[0], inserts[1]);
            // What the MERGE reads: every target row with its row id.
            String scan = "SELECT count(*), sum(_pos), sum(length(_file)), sum(value), sum(embedding[0]), sum(length(category)) FROM %s";
            double oursScan = seconds(() -> spark.sql(scan.formatted("lake.db.t")).collect());
            double theirsScan = seconds(() -> spark.sql(scan.formatted("ice.db.t")).collect());
            System.out.printf("scan of the target with _file and _pos: HyperStream %.2f s, Iceberg %.2f s%n", oursScan, theirsScan);
            double ours = seconds(() -> spark.sql(MERGE.formatted("lake.db.t", "src_t")));
            double theirs = seconds(() -> spark.sql(MERGE.formatted("ice.db.t", "src_t")));
            String oursSummary = spark.sql("SELECT summary FROM lake.db.t.snapshots ORDER BY sequence_number DESC LIMIT 1")
                    .first().getString(0);
            Row theirsSummary = spark.sql("SELECT summary['added-data-files'], summary['added-delete-files'], "
                    + "summary['added-records'], summary['added-position-deletes'] FROM ice.db.t.snapshots ORDER BY committed_at DESC LIMIT 1")
                    .first();
            String check = "SELECT count(*), sum(id), sum(value), sum(embedding[0]), count_if(category = 'new') FROM %s";
            Row a = spark.sql(check.formatted("lake.db.t")).first();
            Row b = spark.sql(check.formatted("ice.db.t")).first();
            if (!a.equals(b)) {
                throw new IllegalStateException("the tables differ after MERGE: " + a + " vs " + b);
            }
            System.out.printf("MERGE of %d source rows into %d rows (same rows after: %s)%n", rows / 10, rows, a);
            System.out.printf("  HyperStream: %.2f s; snapshot %s%n", ours, oursSummary);
            System.out.printf("  Iceberg:     %.2f s; added data files %s, delete files %s, records %s, position deletes %s%n", theirs,
                    theirsSummary.get(0), theirsSummary.get(1), theirsSummary.get(2), theirsSummary.get(3));
            System.out.printf("  ratio (Iceberg / HyperStream): %.2fx%n", theirs / ours);
        } finally {
            spark.stop();
            delete(work.toFile());
        }
        System.exit(0);
    }

    private static final String MERGE = "MERGE INTO %s t USING %s s ON t.id = s.id "
            + "WHEN MATCHED AND s.gone THEN DELETE "
            + "WHEN MATCHED THEN UPDATE SET value = s.value, embedding = s.embedding "
            + "WHEN NOT MATCHED THEN INSERT (id, category, value, embedding) VALUES (s.id, 'new', s.value, s.embedding)";

    /**
     * Tables {@code lake.db.<name>} and {@code ice.db.<name>} of the same {@code rows} rows, and the
     * cached source view {@code src_<name>}: every 20th id updated (a tenth of them deleted), as many
     * new ids inserted. Returns the two inserts' seconds.
     */
    private static double[] prepare(SparkSession spark, String name, long rows) {
        String columns = "(id BIGINT NOT NULL, category STRING, value DOUBLE, embedding ARRAY<FLOAT>)";
        spark.sql("CREATE TABLE lake.db." + name + " " + columns + " USING hyperstream TBLPROPERTIES ('vector.embedding.dimension' = '8')");
        spark.sql("CREATE TABLE ice.db." + name + " " + columns + " USING iceberg TBLPROPERTIES ('format-version' = '2', "
                + "'write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read')");
        String target = "SELECT id, concat('c', id % 100) AS category, double(id) AS value, "
                + "transform(sequence(0, 7), j -> float(id % 1000 + j)) AS embedding FROM range(0, " + rows + ", 1, 8)";
        double ours = seconds(() -> spark.sql("INSERT INTO lake.db." + name + " " + target));
        double theirs = seconds(() -> spark.sql("INSERT INTO ice.db." + name + " " + target));
        Dataset<Row> source = spark.sql("SELECT CASE WHEN id % 2 = 0 THEN id * 10 ELSE " + rows + " + id END AS id, "
                + "double(-id) AS value, id % 20 = 0 AS gone, transform(sequence(0, 7), j -> float(-j)) AS embedding "
                + "FROM range(0, " + rows / 10 + ", 1, 4)").cache();
        source.count();
        source.createOrReplaceTempView("src_" + name);
        return new double[] {ours, theirs};
    }

    private static double seconds(Runnable work) {
        long start = System.nanoTime();
        work.run();
        return (System.nanoTime() - start) / 1e9;
    }

    private static void delete(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                delete(child);
            }
        }
        file.delete();
    }
}
