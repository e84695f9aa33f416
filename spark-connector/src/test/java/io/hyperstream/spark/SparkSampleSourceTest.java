package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Runs against the shaded connector JAR (see the POM), in a real local SparkSession. */
class SparkSampleSourceTest {
    private static final long ROWS = 10_000;
    private static final int DIM = 8;
    private static final long SEED = 3;
    private static SparkSession spark;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-spark-test");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static Dataset<Row> sample() {
        return spark.read().format("hyperstream")
                .option("sample.rows", ROWS)
                .option("sample.dimension", DIM)
                .option("sample.seed", SEED)
                .option("split.rows", 2_500)
                .option("batch.rows", 1_000)
                .load();
    }

    @Test
    void schemaComesFromTheNativeTable() {
        assertEquals("struct<id:bigint,value:double,category:string,flag:boolean,embedding:array<float>>",
                sample().schema().simpleString());
    }

    @Test
    void everyRowArrivesThroughTheNativeScanInNativelyPlannedPartitions() {
        Dataset<Row> df = sample();
        assertEquals(4, df.javaRDD().getNumPartitions());
        Row totals = df.selectExpr("count(*)", "sum(id)", "sum(value)", "count(category)",
                "sum(if(flag, 1, 0))", "sum(aggregate(embedding, 0D, (acc, x) -> acc + x))").first();
        assertEquals(ROWS, totals.getLong(0));
        assertEquals(ROWS * (ROWS - 1) / 2, totals.getLong(1));
        assertEquals(ROWS * (ROWS - 1) / 4.0, totals.getDouble(2));
        assertEquals(ROWS - ROWS / 10, totals.getLong(3));
        assertEquals((ROWS + 2) / 3, totals.getLong(4));
        double embeddingSum = 0;
        for (long id = 0; id < ROWS; id++) {
            for (int j = 0; j < DIM; j++) {
                embeddingSum += (float) ((id * 31 + j * 17L + SEED) % 1000) / 1000.0f;
            }
        }
        assertEquals(embeddingSum, totals.getDouble(5), 1e-6 * embeddingSum);
    }

    @Test
    void valuesOfSingleRowsMatchTheDocumentedFormulas() {
        List<Row> rows = sample().where("id in (4242, 4249)").orderBy("id").collectAsList();
        assertEquals(2, rows.size());
        Row first = rows.get(0);
        assertEquals(4242L, first.getLong(0));
        assertEquals(2121.0, first.getDouble(1));
        assertEquals("cat-" + (4242 % 7), first.getString(2));
        assertTrue(first.getBoolean(3));
        List<Float> embedding = first.getList(4);
        assertEquals(DIM, embedding.size());
        for (int j = 0; j < DIM; j++) {
            assertEquals((float) ((4242L * 31 + j * 17L + SEED) % 1000) / 1000.0f, embedding.get(j));
        }
        assertNull(rows.get(1).get(2), "id 4249 has a null category");
    }

    @Test
    void onlyTheRequestedColumnsAreRead() {
        Dataset<Row> df = sample().select("id", "category");
        String plan = df.queryExecution().executedPlan().toString();
        assertTrue(plan.contains("HyperStreamScan sample(rows=10000, dimension=8, seed=3) columns=[id, category]"), plan);
        assertEquals(ROWS, df.count());
        assertEquals(ROWS, sample().selectExpr("count(*)").first().getLong(0));
    }

    @Test
    void badOptionsFailWithTheNativeMessage() {
        Exception dimension = assertThrows(Exception.class, () -> spark.read().format("hyperstream")
                .option("sample.rows", 10).option("sample.dimension", 0).load());
        assertTrue(LocalSpark.messages(dimension).contains("needs a dimension of 1 to 65536, got 0"), LocalSpark.messages(dimension));
        assertEquals("io.hyperstream.jni.InvalidArgumentException", rootCause(dimension).getClass().getName());
        Exception unknown = assertThrows(IllegalArgumentException.class, () -> spark.read().format("hyperstream")
                .option("sample.rows", 10).option("sample.colour", "blue").load());
        assertTrue(unknown.getMessage().contains("sample.colour"), unknown.getMessage());
        Exception missing = assertThrows(IllegalArgumentException.class,
                () -> spark.read().format("hyperstream").load());
        assertTrue(missing.getMessage().contains("sample.rows"), missing.getMessage());
        // The session goes on serving.
        assertEquals(ROWS, sample().count());
    }

    @Test
    void theShadedJarCarriesTheLibraryAndRelocatedArrow() throws Exception {
        String jar = System.getProperty("hyperstream.connector.jar");
        assertNotNull(jar, "the POM passes the shaded JAR's path");
        try (JarFile file = new JarFile(jar)) {
            assertNotNull(file.getEntry("native/linux-x86_64/libhyperstream.so"));
            assertNotNull(file.getEntry("io/hyperstream/shaded/org/apache/arrow/vector/BigIntVector.class"));
            assertNotNull(file.getEntry("org/apache/arrow/c/Data.class"), "org.apache.arrow.c keeps its name");
            assertNull(file.getEntry("org/apache/arrow/vector/BigIntVector.class"), "Arrow must be relocated");
            assertNotNull(file.getEntry("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"));
        }
        sample().count();
        Class<?> loader = Class.forName("io.hyperstream.jni.NativeLibrary");
        Path source = Path.of(loader.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertEquals(Path.of(jar).toRealPath(), source.toRealPath(), "classes come from the shaded JAR");
        String loadedFrom = (String) loader.getMethod("loadedFrom").invoke(null);
        assertTrue(loadedFrom.startsWith("jar:file:") && loadedFrom.endsWith("!/native/linux-x86_64/libhyperstream.so"),
                loadedFrom);
        assertFalse(System.getProperty("java.library.path").contains("target/release"));
    }

    private static Throwable rootCause(Throwable e) {
        while (e.getCause() != null && e.getCause() != e) {
            e = e.getCause();
        }
        return e;
    }
}
