package io.hyperstream.spark;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.NativeTable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.filter2.compat.FilterCompat;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexFilter;
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexStore;
import org.apache.parquet.internal.filter2.columnindex.RowRanges;
import org.apache.parquet.io.api.Binary;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Index-pruned scans through Spark: a HyperStream table with scalar indexes on {@code user_id} and
 * {@code category} against Spark's built-in Parquet reader over the same rows, in the same session.
 *
 * <pre>./build-connectors.sh bench index [rows (10000000)] [runs (5)]</pre>
 *
 * Rows: id, user_id (a permutation of id, so unsorted: no file or row-group bound helps), category
 * (100 values), ts (ascending with id), amount, note. Workloads (every column of the matching rows,
 * produced to the end and counted): a point lookup on user_id, {@code category IN} one value (1%), a
 * 0.1% range of ts, and a join with a Parquet dimension of 1,000 users of which 10 pass its filter
 * (the HyperStream side is pruned at run time by the join keys). Printed per workload: medians, the
 * ratio, and bytes read (Parquet: the Hadoop file system's read counter; HyperStream: the pages and
 * index blocks its scan reads, from the plan). Also: Spark's fixed cost (the point lookup on a 10-row
 * table), the native point lookup against a full native scan (the library called directly, no
 * Spark), and what building the indexes adds to the write.
 */
public final class IndexBenchmark {
    private IndexBenchmark() {}

    private static final Pattern BYTES = Pattern.compile("bytes read (\\d+)");
    private static final Pattern ROWS = Pattern.compile("rows read (\\d+)/");

    public static void main(String[] args) {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Path work = Path.of("target", "bench-data", "index").toAbsolutePath();
        ScanBenchmark.delete(work.toFile());
        SparkSession spark = LocalSpark.start("hyperstream-index-bench");
        spark.sparkContext().setLogLevel("WARN");
        spark.conf().set("spark.sql.catalog.bench", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.bench.root", work.resolve("lake").toString());
        try {
            int partitions = spark.sparkContext().defaultParallelism() * 4;
            Dataset<Row> data = spark.range(0, rows, 1, partitions).selectExpr(
                    "id",
                    "(id * 7919 + 13) % " + rows + " AS user_id",
                    "concat('cat-', (id * 37) % 100) AS category",
                    "timestamp_micros(1700000000000000 + id * 1000000) AS ts",
                    "double(id % 100000) / 7 AS amount",
                    "concat('payload-', id % 100003) AS note");
            data.createOrReplaceTempView("src");
            String columns = "(id BIGINT NOT NULL, user_id BIGINT, category STRING, ts TIMESTAMP, amount DOUBLE, note STRING)";
            spark.sql("CREATE NAMESPACE bench.b");
            spark.sql("CREATE TABLE bench.b.events " + columns + " USING hyperstream "
                    + "TBLPROPERTIES ('hyperstream.index.columns' = 'user_id,category')");
            spark.sql("CREATE TABLE bench.b.plain " + columns + " USING hyperstream");
            spark.sql("CREATE TABLE bench.b.tiny " + columns + " USING hyperstream "
                    + "TBLPROPERTIES ('hyperstream.index.columns' = 'user_id,category')");
            String parquet = work.resolve("parquet").toString();
            // One write first, so that neither timed write pays for the JIT's warm-up.
            spark.sql("CREATE TABLE bench.b.warm " + columns + " USING hyperstream");
            spark.sql("INSERT INTO bench.b.warm SELECT * FROM src WHERE id % 4 = 0");
            double plainWrite = seconds(() -> spark.sql("INSERT INTO bench.b.plain SELECT * FROM src"));
            double indexedWrite = seconds(() -> spark.sql("INSERT INTO bench.b.events SELECT * FROM src"));
            // Timestamps as INT64 microseconds (not Spark's default INT96, which carries no statistics),
            // so that Parquet's own pruning works on ts as it does on the other columns.
            spark.conf().set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS");
            double parquetWrite = seconds(() -> data.write().parquet(parquet));
            spark.sql("INSERT INTO bench.b.tiny SELECT * FROM src LIMIT 10");
            spark.read().parquet(parquet).createOrReplaceTempView("pq");
            spark.range(0, 1000).selectExpr("(id * 9973) % " + rows + " AS user_id", "IF(id % 100 = 7, 'gold', 'basic') AS tier")
                    .write().parquet(work.resolve("users").toString());
            spark.read().parquet(work.resolve("users").toString()).createOrReplaceTempView("users");

            long pointUser = (4_242_424L * 7919 + 13) % rows;
            long from = rows / 2;
            String range = "ts >= timestamp_micros(" + (1700000000000000L + from * 1_000_000L) + ") AND ts < timestamp_micros("
                    + (1700000000000000L + (from + rows / 1000) * 1_000_000L) + ")";
            Map<String, String> workloads = new LinkedHashMap<>();
            Map<String, FilterPredicate> parquetFilters = new LinkedHashMap<>();
            workloads.put("point lookup user_id = X", "SELECT * FROM %s WHERE user_id = " + pointUser);
            parquetFilters.put("point lookup user_id = X", FilterApi.eq(FilterApi.longColumn("user_id"), pointUser));
            workloads.put("category IN (1 of 100)", "SELECT * FROM %s WHERE category IN ('cat-42')");
            parquetFilters.put("category IN (1 of 100)", FilterApi.eq(FilterApi.binaryColumn("category"), Binary.fromString("cat-42")));
            workloads.put("0.1% range on ts", "SELECT * FROM %s WHERE " + range);
            parquetFilters.put("0.1% range on ts", FilterApi.and(
                    FilterApi.gtEq(FilterApi.longColumn("ts"), 1700000000000000L + from * 1_000_000L),
                    FilterApi.lt(FilterApi.longColumn("ts"), 1700000000000000L + (from + rows / 1000) * 1_000_000L)));
            workloads.put("join, 10 of 1,000 users", "SELECT e.* FROM %s e JOIN users u ON e.user_id = u.user_id WHERE u.tier = 'gold'");
            parquetFilters.put("join, 10 of 1,000 users", null);

            System.out.printf("%nindex-pruned scans into Spark, %,d rows x 6 columns, %d cores, median of %d runs%n", rows,
                    spark.sparkContext().defaultParallelism(), runs);
            System.out.printf("%-26s %10s %10s %9s %9s %14s %14s %9s%n", "workload", "ours ms", "parquet ms", "speedup",
                    "rows", "ours bytes", "parquet bytes", "bytes %");
            for (Map.Entry<String, String> w : workloads.entrySet()) {
                String ours = String.format(w.getValue(), "bench.b.events");
                String theirs = String.format(w.getValue(), "pq");
                long oursRows = spark.sql(ours).count();
                long theirRows = spark.sql(theirs).count();
                if (oursRows != theirRows) {
                    throw new IllegalStateException(w.getKey() + ": HyperStream found " + oursRows + " rows, Parquet " + theirRows);
                }
                List<Double> oursTimes = new ArrayList<>();
                List<Double> theirTimes = new ArrayList<>();
                long theirBytes = parquetBytes(parquet, parquetFilters.get(w.getKey()));
                String plan = "";
                for (int i = 0; i < runs; i++) {
                    theirTimes.add(millis(() -> run(spark.sql(theirs))));
                    Dataset<Row> query = spark.sql(ours);
                    oursTimes.add(millis(() -> run(query)));
                    plan = query.queryExecution().executedPlan().toString(); // the adaptive plan, final once run
                }
                // An adaptive plan prints its final plan and its initial one: count the final one.
                int initial = plan.indexOf("== Initial Plan ==");
                if (initial >= 0) {
                    plan = plan.substring(0, initial);
                }
                long oursBytes = sum(BYTES, plan);
                System.out.printf("%-26s %10.1f %10.1f %8.1fx %9d %14d %14d %8.3f%%%n", w.getKey(), median(oursTimes),
                        median(theirTimes), median(theirTimes) / median(oursTimes), oursRows, oursBytes, theirBytes,
                        100.0 * oursBytes / Math.max(1, theirBytes));
                if (sum(ROWS, plan) < oursRows) {
                    throw new IllegalStateException(w.getKey() + ": the plan reads fewer rows than it returns: " + plan);
                }
            }
            // Spark's fixed cost: the same point lookup on a 10-row table.
            String tiny = "SELECT * FROM bench.b.tiny WHERE user_id = " + pointUser;
            List<Double> floor = new ArrayList<>();
            List<Double> point = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                floor.add(millis(() -> run(spark.sql(tiny))));
                point.add(millis(() -> run(spark.sql(String.format(workloads.get("point lookup user_id = X"), "bench.b.events")))));
            }
            System.out.printf("Spark's floor (point lookup on a 10-row table): %.1f ms; the point lookup on %,d rows: %.1f ms = %.2fx "
                    + "the floor (target <= 1.5x)%n", median(floor), rows, median(point), median(point) / median(floor));
            nativeLookup(work.resolve("lake").resolve("b").resolve("events").toString(), pointUser, runs);
            System.out.printf("write: plain %.1f s, with indexes on user_id and category %.1f s (+%.0f%%, target <= 30%%), "
                    + "Spark Parquet %.1f s; ingest %,.0f rows/s with indexes%n", plainWrite, indexedWrite,
                    100 * (indexedWrite / plainWrite - 1), parquetWrite, rows / indexedWrite);
        } finally {
            spark.stop();
        }
    }

    /** The library called directly: the point lookup against a full scan of every column. */
    private static void nativeLookup(String location, long user, int runs) {
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            String[] files = table.dataFiles(TableVersion.CURRENT);
            String filter = "{\"op\":\"eq\",\"column\":\"user_id\",\"value\":" + user + "}";
            List<Double> full = new ArrayList<>();
            List<Double> lookup = new ArrayList<>();
            long found = 0;
            for (int i = 0; i < runs; i++) {
                full.add(millis(() -> table.scanRowCount(files, null, null)));
                long start = System.nanoTime();
                found = table.scanRowCount(files, null, filter);
                lookup.add((System.nanoTime() - start) / 1e6);
            }
            System.out.printf("native (no Spark): point lookup %.2f ms (%d row), full scan of every column %.1f ms: %.0fx faster "
                    + "(target >= 100x); %s%n", median(lookup), found, median(full), median(full) / median(lookup),
                    table.explain(files, filter));
        }
    }

    /** Runs a query to the end: every row of every column produced, none converted or collected. */
    private static void run(Dataset<Row> query) {
        query.queryExecution().toRdd().count();
    }

    /**
     * The bytes Spark's Parquet reader fetches for {@code filter} (null: none) over every column, at
     * best: the data pages of the row groups the footer statistics keep, less the pages the column
     * indexes rule out (what parquet-mr's own filters compute), plus the dictionary pages.
     */
    private static long parquetBytes(String dir, FilterPredicate filter) {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
        long bytes = 0;
        try (var files = java.nio.file.Files.list(Path.of(dir))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".parquet")).toList()) {
                ParquetReadOptions.Builder options = ParquetReadOptions.builder().useStatsFilter(true).useColumnIndexFilter(true);
                if (filter != null) {
                    options.withRecordFilter(FilterCompat.get(filter));
                }
                try (ParquetFileReader reader = ParquetFileReader.open(
                        HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(file.toString()), conf), options.build())) {
                    List<BlockMetaData> groups = reader.getRowGroups();
                    for (int g = 0; g < groups.size(); g++) {
                        BlockMetaData group = groups.get(g);
                        ColumnIndexStore store = reader.getColumnIndexStore(g);
                        Set<ColumnPath> paths = new HashSet<>();
                        group.getColumns().forEach(c -> paths.add(c.getPath()));
                        RowRanges ranges = filter == null ? RowRanges.createSingle(group.getRowCount())
                                : ColumnIndexFilter.calculateRowRanges(FilterCompat.get(filter), store, paths, group.getRowCount());
                        for (ColumnChunkMetaData column : group.getColumns()) {
                            OffsetIndex pages = store.getOffsetIndex(column.getPath());
                            long dataPages = 0;
                            for (int p = 0; p < pages.getPageCount(); p++) {
                                long size = pages.getCompressedPageSize(p);
                                dataPages += size;
                                if (ranges.isOverlapping(pages.getFirstRowIndex(p), pages.getLastRowIndex(p, group.getRowCount()))) {
                                    bytes += size;
                                }
                            }
                            bytes += Math.max(0, column.getTotalSize() - dataPages); // the dictionary page
                        }
                    }
                }
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return bytes;
    }

    private static long sum(Pattern pattern, String text) {
        long total = 0;
        Matcher m = pattern.matcher(text);
        while (m.find()) {
            total += Long.parseLong(m.group(1));
        }
        return total;
    }

    private static double seconds(Runnable run) {
        return millis(run) / 1e3;
    }

    private static double millis(Runnable run) {
        long start = System.nanoTime();
        run.run();
        return (System.nanoTime() - start) / 1e6;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }
}
