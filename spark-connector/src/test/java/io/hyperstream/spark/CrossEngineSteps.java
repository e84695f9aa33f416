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
 * same aggregates the Trino side computes, over every column.
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
            if (args[0].equals("write")) {
                spark.range(0, 100_000, 1, 4).selectExpr(
                        "id",
                        "if(id % 7 = 0, null, concat('name-', id)) as name",
                        "double(id) * 0.25 as score",
                        "int(id % 1000) as qty",
                        "id % 3 = 0 as flag",
                        "transform(sequence(0, 127), j -> float(((id * 7 + j) % 1000) / 8)) as embedding")
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
