package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/** Stored tables by path: Spark writes them through native data files and reads them back. */
class SparkTableTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-table-test");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static Dataset<Row> rows(long start, long end) {
        return spark.range(start, end, 1, 3).selectExpr(
                "id",
                "if(id % 5 = 0, null, concat('name-', id)) as name",
                "double(id) * 0.5 as score",
                "array(float(id), float(1.5), float(-id)) as embedding");
    }

    @Test
    void sparkAppendsAndReadsBackEveryRowWithTimeTravel() throws Exception {
        String path = dir.resolve("t").toString();
        rows(0, 1000).write().format("hyperstream").option("vector.embedding.dimension", 3).mode("append").save(path);
        long between = System.currentTimeMillis();
        Thread.sleep(20);
        rows(1000, 1500).write().format("hyperstream").mode("append").save(path);
        assertTrue(Files.exists(Path.of(path, "metadata", "v3.metadata.json")), "two commits after create");

        Dataset<Row> table = spark.read().format("hyperstream").load(path);
        assertEquals("struct<id:bigint,name:string,score:double,embedding:array<float>>", table.schema().simpleString());
        assertEquals(6, table.javaRDD().getNumPartitions(), "one split per data file, one file per write task");
        Row totals = table.selectExpr("count(*)", "sum(id)", "count(name)", "sum(score)", "sum(embedding[0])").first();
        assertEquals(1500L, totals.getLong(0));
        assertEquals(1500L * 1499 / 2, totals.getLong(1));
        assertEquals(1200L, totals.getLong(2));
        assertEquals(1500.0 * 1499 / 4, totals.getDouble(3));
        assertEquals(1500.0 * 1499 / 2, totals.getDouble(4), 1e-3);
        List<Row> one = table.where("id = 1234").select("embedding").collectAsList();
        assertEquals(List.of(1234.0f, 1.5f, -1234.0f), one.get(0).getList(0));

        long before = spark.read().format("hyperstream").option("as-of-timestamp", between).load(path).count();
        assertEquals(1000, before);
        // Each write task wrote one band of ids: a selective filter plans only the files that may match.
        Dataset<Row> selective = table.where("id >= 1100 AND id < 1150");
        assertEquals(1, selective.javaRDD().getNumPartitions(), "files outside the bounds are pruned");
        assertEquals(50, selective.count());
        // The scan reports its files' rows and bytes to the optimizer (join planning, broadcast choice).
        assertEquals(1500L, ((Number) table.queryExecution().optimizedPlan().stats().rowCount().get()).longValue());
        assertTrue(((Number) table.queryExecution().optimizedPlan().stats().sizeInBytes()).longValue() > 1000);
        String plan = table.select("id").queryExecution().executedPlan().toString();
        assertTrue(plan.contains("HyperStreamScan " + path + " columns=[id]"), plan);
    }

    @Test
    void narrowIntegersKeepTheirSign() {
        String path = dir.resolve("narrow").toString();
        spark.range(-50, 50).selectExpr("id", "smallint(id * 300) as s", "tinyint(id) as t").write()
                .format("hyperstream").mode("append").save(path);
        Dataset<Row> back = spark.read().format("hyperstream").load(path);
        assertEquals(0, back.where("s != id * 300 OR t != id").count());
        assertEquals(100, back.count());
    }

    @Test
    void badWritesFailWithTheProblemNamedAndCommitNothing() {
        String path = dir.resolve("bad").toString();
        rows(0, 10).write().format("hyperstream").option("vector.embedding.dimension", 3).mode("append").save(path);
        Dataset<Row> wrongDimension = spark.range(0, 5).selectExpr("id", "'x' as name", "double(1) as score",
                "array(float(1), float(2)) as embedding");
        Exception e = assertThrows(Exception.class,
                () -> wrongDimension.write().format("hyperstream").mode("append").save(path));
        assertTrue(LocalSpark.messages(e).contains("column 'embedding' holds 2 values where 3 belong"), LocalSpark.messages(e));
        assertEquals(10, spark.read().format("hyperstream").load(path).count());
        Exception unknown = assertThrows(Exception.class,
                () -> spark.read().format("hyperstream").option("colour", "red").load(path));
        assertTrue(LocalSpark.messages(unknown).contains("colour"), LocalSpark.messages(unknown));
        Exception missing = assertThrows(Exception.class,
                () -> spark.read().format("hyperstream").load(dir.resolve("nothing").toString()).count());
        assertTrue(LocalSpark.messages(missing).contains("no HyperStream or Iceberg table"), LocalSpark.messages(missing));
    }
}
