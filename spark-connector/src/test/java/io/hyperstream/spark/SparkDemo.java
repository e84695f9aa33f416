package io.hyperstream.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The Spark half of the demo: a local SparkSession reading rows produced by libhyperstream, then
 * writing them as a stored table under the directory given as the first argument (read by the
 * Trino half).
 */
public final class SparkDemo {
    private SparkDemo() {}

    public static void main(String[] args) {
        SparkSession spark = LocalSpark.start("hyperstream-demo");
        spark.sparkContext().setLogLevel("WARN");
        try {
            Dataset<Row> items = spark.read().format("hyperstream")
                    .option("sample.rows", 100_000)
                    .option("sample.dimension", 4)
                    .option("split.rows", 25_000)
                    .load();
            items.createOrReplaceTempView("items");
            banner("Spark: spark.read.format(\"hyperstream\") schema, from the native Arrow schema");
            items.printSchema();
            banner("Spark: SELECT * FROM items LIMIT 5");
            items.show(5, false);
            banner("Spark: aggregate over all 100,000 native rows, 4 natively planned splits");
            spark.sql("SELECT count(*) AS rows, sum(id) AS sum_id, count(category) AS non_null_categories, "
                    + "round(avg(embedding[0]), 4) AS avg_first_dim FROM items").show(false);
            banner("Spark: EXPLAIN of a projected, filtered query (only id and category are read)");
            Dataset<Row> filtered = spark.sql("SELECT id, category FROM items WHERE category = 'cat-3' AND id < 50");
            filtered.explain();
            filtered.show(5, false);

            if (args.length > 0) {
                String path = args[0] + "/demo/items";
                banner("Spark: write the rows as a stored table (Iceberg format) at " + path + ", in two appends");
                items.where("id < 60000").write().format("hyperstream")
                        .option("vector.embedding.dimension", 4).mode("append").save(path);
                items.where("id >= 60000").write().format("hyperstream").mode("append").save(path);
                Dataset<Row> stored = spark.read().format("hyperstream").load(path);
                stored.createOrReplaceTempView("stored");
                spark.sql("SELECT count(*) AS rows, sum(id) AS sum_id FROM stored").show(false);
                banner("Spark: a filter on the stored table runs in the native scan (filter= in the scan, no Filter node)");
                Dataset<Row> point = spark.sql("SELECT id, embedding FROM stored WHERE id = 4242");
                point.explain();
                point.show(false);
                String query = "array(0.25, 0.5, 0.75, 0.1)";
                banner("Spark: vector top-k, ORDER BY hyperstream.cosine_distance(...) LIMIT 5 as a native top-k (no Sort)");
                Dataset<Row> topK = spark.sql("SELECT id, category, hyperstream.cosine_distance(embedding, " + query
                        + ") AS distance FROM stored ORDER BY distance LIMIT 5");
                topK.explain();
                topK.show(false);
                banner("Spark: hybrid query, the filter and the top-k both in the native scan");
                Dataset<Row> hybrid = spark.sql("SELECT id, category, hyperstream.cosine_distance(embedding, " + query
                        + ") AS distance FROM stored WHERE category = 'cat-3' AND id >= 50000 ORDER BY distance LIMIT 5");
                hybrid.explain();
                hybrid.show(false);
            }
            System.out.println("native library loaded from: " + nativeLibraryOrigin());
        } finally {
            spark.stop();
        }
    }

    /** Where libhyperstream was loaded from (looked up by name: the demo compiles against Spark alone). */
    static String nativeLibraryOrigin() {
        try {
            return (String) Class.forName("io.hyperstream.jni.NativeLibrary").getMethod("loadedFrom").invoke(null);
        } catch (ReflectiveOperationException e) {
            return "unknown (" + e + ")";
        }
    }

    static void banner(String title) {
        System.out.println();
        System.out.println("=== " + title);
    }
}
