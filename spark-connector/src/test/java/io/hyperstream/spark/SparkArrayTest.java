package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.ArrayStore;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Arrays of an array store as DataFrames: written by Spark tasks, committed at once, read back in row ranges. */
class SparkArrayTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-array-test");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Rows {@code start..end}: value = [id, 2 id, -id] as floats, in 3 partitions. */
    private static Dataset<Row> vectors(long start, long end) {
        return spark.range(start, end, 1, 3).selectExpr("array(float(id), float(id * 2), float(-id)) as value");
    }

    private Dataset<Row> read(String store, String array, long splitRows) {
        return spark.read().format("hyperstream").option("array", array).option("split.rows", splitRows).load(store);
    }

    @Test
    void sparkAppendsOverwritesAndReadsAnArrayRowForRow() {
        String store = dir.resolve("store").toString();
        vectors(0, 1000).write().format("hyperstream").option("array", "emb").mode("append").save(store);
        vectors(1000, 1500).write().format("hyperstream").option("array", "emb").mode("append").save(store);

        Dataset<Row> emb = read(store, "emb", 400);
        assertEquals("struct<index:bigint,value:array<float>>", emb.schema().simpleString());
        assertEquals(4, emb.javaRDD().getNumPartitions(), "1500 rows in splits of 400");
        // Each row holds the id it was written with, and appended rows keep their order.
        assertEquals(0, emb.where("value[0] != float(index) OR value[1] != float(index * 2) OR value[2] != -value[0]").count());
        Row totals = emb.selectExpr("count(*)", "sum(index)", "max(index)").first();
        assertEquals(List.of(1500L, 1500L * 1499 / 2, 1499L), List.of(totals.get(0), totals.get(1), totals.get(2)));
        try (ArrayStore native_ = ArrayStore.open(store, false, true)) {
            assertEquals("float32", native_.info("emb").dtype());
            assertArrayEquals(new long[] {1500, 3}, native_.info("emb").shape());
        }
        assertFalse(Files.exists(Path.of(store, ArrayStore.STAGING_DIR)) && Path.of(store, ArrayStore.STAGING_DIR).toFile().list().length > 0,
                "staged parts are gone after the commit");

        vectors(7, 17).write().format("hyperstream").option("array", "emb").mode("overwrite").save(store);
        List<Row> rows = read(store, "emb", 1 << 20).orderBy("index").collectAsList();
        assertEquals(10, rows.size());
        assertEquals(0L, rows.get(0).getLong(0));
        assertEquals(List.of(7.0f, 14.0f, -7.0f), rows.get(0).getList(1));
    }

    @Test
    void dtypesAndRowShapesConvertExactlyBothWays() {
        String store = dir.resolve("store").toString();
        // uint8 from Spark integers: read back as smallint.
        spark.range(0, 256).selectExpr("int(id) as value").write().format("hyperstream")
                .option("array", "labels").option("dtype", "uint8").mode("append").save(store);
        Dataset<Row> labels = read(store, "labels", 100);
        assertEquals("struct<index:bigint,value:smallint>", labels.schema().simpleString());
        assertEquals(0, labels.where("value != index").count());
        // A value the dtype cannot hold fails the write and commits nothing.
        Exception e = assertThrows(Exception.class, () -> spark.range(250, 260).selectExpr("int(id) as value").write()
                .format("hyperstream").option("array", "labels").mode("append").save(store));
        assertTrue(LocalSpark.messages(e).contains("do not fit a uint8 array"), LocalSpark.messages(e));
        assertEquals(256, read(store, "labels", 100).count());

        // uint64 beyond bigint: decimal(20, 0) in Spark.
        spark.sql("SELECT CAST('18446744073709551615' AS DECIMAL(20, 0)) AS value UNION ALL SELECT CAST(5 AS DECIMAL(20, 0))")
                .coalesce(1).write().format("hyperstream").option("array", "big").option("dtype", "uint64").mode("append").save(store);
        List<Row> big = read(store, "big", 10).orderBy("index").collectAsList();
        assertEquals(new BigDecimal("18446744073709551615"), big.get(0).getDecimal(1));
        assertEquals(new BigDecimal("5"), big.get(1).getDecimal(1));

        // 2-d rows of float64, flattened row-major.
        spark.range(0, 6, 1, 2).selectExpr("transform(sequence(0, 5), j -> double(id * 10 + j)) as value").write()
                .format("hyperstream").option("array", "grid").option("shape", "2,3").mode("append").save(store);
        try (ArrayStore native_ = ArrayStore.open(store, false, true)) {
            assertEquals("float64", native_.info("grid").dtype());
            assertArrayEquals(new long[] {6, 2, 3}, native_.info("grid").shape());
        }
        Row row = read(store, "grid", 10).where("index = 4").first();
        assertEquals(List.of(40.0, 41.0, 42.0, 43.0, 44.0, 45.0), row.getList(1));
    }

    @Test
    void everyRealDtypeRoundTripsThroughSpark() {
        String store = dir.resolve("store").toString();
        // dtype, the written value for row id, and the Spark type it reads back as.
        String[][] cases = {
            {"bool", "id % 3 = 0", "boolean"},
            {"int8", "tinyint(id % 100 - 50)", "tinyint"},
            {"uint8", "int(id % 256)", "smallint"},
            {"int16", "smallint(id * 7 - 15000)", "smallint"},
            {"uint16", "int(id * 60)", "int"},
            {"int32", "int(id * -100003)", "int"},
            {"uint32", "id * 4000000", "bigint"},
            {"int64", "id * -3000000000000", "bigint"},
            {"uint64", "cast(id as decimal(20, 0)) * 18000000000000000", "decimal(20,0)"},
            {"float16", "float(id % 100) / 4", "float"},
            {"float32", "float(id) / 8", "float"},
            {"float64", "double(id) / 3", "double"},
        };
        for (String[] c : cases) {
            Dataset<Row> source = spark.range(0, 1000, 1, 2).selectExpr("id", c[1] + " as value");
            source.write().format("hyperstream").option("array", c[0]).option("dtype", c[0]).mode("append").save(store);
            Dataset<Row> back = read(store, c[0], 300);
            assertEquals("struct<index:bigint,value:" + c[2] + ">", back.schema().simpleString(), c[0]);
            long wrong = back.join(source.withColumnRenamed("value", "expected"), back.col("index").equalTo(source.col("id")))
                    .where("value != expected").count();
            assertEquals(0, wrong, c[0]);
            assertEquals(1000, back.count(), c[0]);
        }
        try (ArrayStore native_ = ArrayStore.open(store, false, true)) {
            for (String[] c : cases) {
                assertEquals(c[0], native_.info(c[0]).dtype());
            }
        }
    }

    @Test
    void badArrayWritesAndReadsNameTheProblem() {
        String store = dir.resolve("store").toString();
        vectors(0, 10).write().format("hyperstream").option("array", "emb").mode("append").save(store);
        Exception e = assertThrows(Exception.class, () -> spark.range(0, 5).selectExpr("array(float(id)) as value").write()
                .format("hyperstream").option("array", "emb").mode("append").save(store));
        assertTrue(LocalSpark.messages(e).contains("holds 1 values where 3 belong"), LocalSpark.messages(e));
        e = assertThrows(Exception.class, () -> spark.range(0, 5).selectExpr("'x' as value").write()
                .format("hyperstream").option("array", "emb").mode("append").save(store));
        assertTrue(LocalSpark.messages(e).contains("array rows cannot hold string values"), LocalSpark.messages(e));
        e = assertThrows(Exception.class, () -> read(store, "missing", 10).count());
        assertTrue(LocalSpark.messages(e).contains("array 'missing'"), LocalSpark.messages(e));
        e = assertThrows(Exception.class, () -> spark.read().format("hyperstream").option("array", "emb")
                .option("colour", "red").load(store));
        assertTrue(LocalSpark.messages(e).contains("unknown HyperStream array option 'colour'"), LocalSpark.messages(e));
        assertEquals(10, read(store, "emb", 10).count());
    }
}
