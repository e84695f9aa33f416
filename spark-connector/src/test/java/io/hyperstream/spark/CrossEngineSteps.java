package io.hyperstream.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Spark's steps of the cross-engine scenario that the Trino module's TestCrossEngineScenario drives
 * (Spark runs on JDK 17, Trino on JDK 25, so each engine has a JVM of its own):
 *
 * <ul>
 *   <li>{@code write <table>}: creates the table with 100,000 rows of mixed types (a 128-d vector
 *       column among them) in one append;</li>
 *   <li>{@code read <table> <snapshot id>}: reads the table now and as of the snapshot.</li>
 * </ul>
 *
 * Each step prints one {@code CHECKSUMS <name> v1 v2 ...} line per read: {@link #CHECKSUMS}, the
 * same aggregates the Trino side computes, over every column. A table given as {@code rest=<uri>} is
 * {@code db.events} of an Iceberg REST catalog at that URI (the HyperStream catalog with
 * {@code type=rest}), written and read in SQL; otherwise it is a path.
 */
public final class CrossEngineSteps {
    /** Checksums over every column; the values are exact (whole numbers and multiples of 1/8). */
    static final String CHECKSUMS = "SELECT count(*), sum(id), count(name), sum(length(name)), sum(score), sum(qty), "
            + "count_if(flag), sum(aggregate(embedding, 0D, (s, x) -> s + x)) FROM t";

    private CrossEngineSteps() {}

    public static void main(String[] args) {
        SparkSession spark = LocalSpark.start("hyperstream-cross-engine");
        spark.sparkContext().setLogLevel("WARN");
        try {
            String table = args[1];
            if (table.startsWith("rest=")) {
                rest(spark, table.substring("rest=".length()), args);
                return;
            }
            if (args[0].equals("write")) {
                rows(spark)
                        .write().format("hyperstream").option("vector.embedding.dimension", 128).mode("append").save(table);
                print(spark, "written", spark.read().format("hyperstream").load(table));
            } else {
                print(spark, "now", spark.read().format("hyperstream").load(table));
                print(spark, "before", spark.read().format("hyperstream").option("snapshot-id", args[2]).load(table));
            }
        } finally {
            spark.stop();
        }
    }

    /** The steps on {@code lake.db.events} of the REST catalog at {@code uri}. */
    private static void rest(SparkSession spark, String uri, String[] args) {
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.type", "rest");
        spark.conf().set("spark.sql.catalog.lake.uri", uri);
        if (args[0].equals("write")) {
            spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db");
            spark.sql("CREATE TABLE lake.db.events (id BIGINT, name STRING, score DOUBLE, qty INT, flag BOOLEAN, "
                    + "embedding ARRAY<FLOAT>) USING hyperstream TBLPROPERTIES ('vector.embedding.dimension' = '128')");
            rows(spark).createOrReplaceTempView("new_rows");
            spark.sql("INSERT INTO lake.db.events SELECT * FROM new_rows");
            print(spark, "written", spark.table("lake.db.events"));
        } else {
            print(spark, "now", spark.table("lake.db.events"));
            print(spark, "before", spark.sql("SELECT * FROM lake.db.events VERSION AS OF " + args[2]));
        }
    }

    private static org.apache.spark.sql.Dataset<Row> rows(SparkSession spark) {
        return spark.range(0, 100_000, 1, 4).selectExpr(
                        "id",
                        "if(id % 7 = 0, null, concat('name-', id)) as name",
                        "double(id) * 0.25 as score",
                        "int(id % 1000) as qty",
                        "id % 3 = 0 as flag",
                        "transform(sequence(0, 127), j -> float(((id * 7 + j) % 1000) / 8)) as embedding");
    }

    private static void print(SparkSession spark, String name, org.apache.spark.sql.Dataset<Row> rows) {
        rows.createOrReplaceTempView("t");
        Row sums = spark.sql(CHECKSUMS).first();
        List<String> values = new ArrayList<>();
        for (int i = 0; i < sums.length(); i++) {
            values.add(String.valueOf(sums.get(i)));
        }
        System.out.println("CHECKSUMS " + name + " " + String.join(" ", values));
    }
}
