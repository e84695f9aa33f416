package io.hyperstream.spark;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Full-table scan throughput into Spark: a HyperStream table against Spark's built-in Parquet
 * reader over the same rows (8 mixed columns) in the same session, all written by this Spark;
 * prints the ingest rate of each write and the scan medians with their ratio. The ratio compares
 * like with like: a HyperStream table written with Spark's codec (snappy, through Iceberg's
 * {@code write.parquet.compression-codec}); a table with our default codec (zstd, Iceberg's default)
 * is timed beside them and its ratio printed too.
 *
 * <pre>./build-connectors.sh bench scan [rows (10000000)] [runs (5)]</pre>
 *
 * Each scan reads every column of every row into Spark (the {@code noop} sink, so nothing but the
 * read is timed); the Parquet files are Spark's own (snappy, vectorized reader on). Scans alternate, so
 * that no side always runs on a warmer JVM or page cache.
 */
public final class ScanBenchmark {
    private ScanBenchmark() {}

    public static void main(String[] args) {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Path work = Path.of("target", "bench-data", "scan").toAbsolutePath();
        delete(work.toFile());
        SparkSession spark = LocalSpark.start("hyperstream-scan-bench");
        spark.sparkContext().setLogLevel("WARN");
        try {
            int partitions = spark.sparkContext().defaultParallelism() * 4;
            Dataset<Row> data = spark.range(0, rows, 1, partitions).selectExpr(
                    "id",
                    "int(id % 100000) as qty",
                    "double(id) * 0.5 as price",
                    "float(id % 1000) / 8 as ratio",
                    "id % 3 = 0 as flag",
                    "concat('sku-', id % 10000) as sku",
                    "(id * 7919) % 1000003 as customer",
                    "double(id % 977) / 3 as score");
            String ours = work.resolve("hyperstream").toString();
            String oursZstd = work.resolve("hyperstream-zstd").toString();
            String parquet = work.resolve("parquet").toString();
            double oursWrite = seconds(() -> data.write().format("hyperstream")
                    .option("write.parquet.compression-codec", "snappy").mode("append").save(ours));
            double zstdWrite = seconds(() -> data.write().format("hyperstream").mode("append").save(oursZstd));
            double parquetWrite = seconds(() -> data.write().mode("overwrite").parquet(parquet));

            Dataset<Row> oursScan = spark.read().format("hyperstream").load(ours);
            Dataset<Row> zstdScan = spark.read().format("hyperstream").load(oursZstd);
            Dataset<Row> parquetScan = spark.read().parquet(parquet);
            // Same rows on every side before timing anything.
            String check = "count(*), sum(id), sum(qty), sum(price), sum(length(sku)), sum(customer)";
            Row b = parquetScan.selectExpr(check.split(", ")).first();
            for (Dataset<Row> side : List.of(oursScan, zstdScan)) {
                Row a = side.selectExpr(check.split(", ")).first();
                if (!a.equals(b)) {
                    throw new IllegalStateException("the tables differ: " + a + " vs " + b);
                }
            }
            List<Double> oursTimes = new ArrayList<>();
            List<Double> zstdTimes = new ArrayList<>();
            List<Double> parquetTimes = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                parquetTimes.add(seconds(() -> parquetScan.write().format("noop").mode("overwrite").save()));
                oursTimes.add(seconds(() -> oursScan.write().format("noop").mode("overwrite").save()));
                zstdTimes.add(seconds(() -> zstdScan.write().format("noop").mode("overwrite").save()));
            }
            double oursScanS = median(oursTimes);
            double zstdScanS = median(zstdTimes);
            double parquetScanS = median(parquetTimes);
            System.out.printf("full scan into Spark, %,d rows x 8 columns (bigint, int, double, float, boolean, string, bigint, double), "
                    + "%d cores, median of %d%n", rows, spark.sparkContext().defaultParallelism(), runs);
            System.out.printf("%-30s %10s %14s %14s%n", "", "scan s", "rows/s", "ingest rows/s");
            System.out.printf("%-30s %10.3f %14.0f %14.0f%n", "HyperStream (snappy)", oursScanS, rows / oursScanS, rows / oursWrite);
            System.out.printf("%-30s %10.3f %14.0f %14.0f%n", "HyperStream (zstd, default)", zstdScanS, rows / zstdScanS, rows / zstdWrite);
            System.out.printf("%-30s %10.3f %14.0f %14.0f%n", "Spark Parquet (snappy)", parquetScanS, rows / parquetScanS, rows / parquetWrite);
            System.out.printf("throughput ratio (HyperStream / Parquet, both snappy, target >= 1.0): %.3f%n", parquetScanS / oursScanS);
            System.out.printf("throughput ratio (HyperStream zstd / Parquet snappy): %.3f%n", parquetScanS / zstdScanS);
            System.out.printf("scan runs s: HyperStream %s, HyperStream zstd %s, Parquet %s%n", oursTimes, zstdTimes, parquetTimes);
        } finally {
            spark.stop();
        }
    }

    private static double seconds(Runnable run) {
        long start = System.nanoTime();
        run.run();
        return (System.nanoTime() - start) / 1e9;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    static void delete(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                delete(child);
            }
        }
        file.delete();
    }
}
