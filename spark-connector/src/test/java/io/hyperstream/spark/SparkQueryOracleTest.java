package io.hyperstream.spark;

import io.hyperstream.jni.QueryFuzz;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The query oracles in Spark (see {@link QueryFuzz}): each seed's rows go into one of our tables
 * (several files, small row groups, a scalar index and a bloom filter, format version 2 or 3 by
 * seed) and into a Parquet table of Spark's own; every query runs through both and SQLancer's TLP
 * and NoREC check our pushed filters, then random DELETEs are compared with the model. Bounded here;
 * {@code bench/query-oracles} runs many more seeds.
 */
class SparkQueryOracleTest {
    private static SparkSession spark;

    @TempDir
    static Path root;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-query-oracles");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", root.resolve("lake").toString());
        // The reference's Parquet files hold dates and times before 1582 as they are (Spark 4's
        // default; Spark 3.5 refuses to write them without this).
        spark.conf().set("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED");
        spark.conf().set("spark.sql.parquet.datetimeRebaseModeInRead", "CORRECTED");
        spark.conf().set("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED");
        spark.conf().set("spark.sql.parquet.int96RebaseModeInRead", "CORRECTED");
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.fuzz");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    @Test
    void ourScansAgreeWithSparksParquetReaderAndTheLogicOracles() {
        QueryFuzz.Engine engine = new QueryFuzz.Engine() {
            @Override
            public void execute(String sql) {
                spark.sql(sql).collectAsList();
            }

            @Override
            public List<String> rows(String sql) {
                return spark.sql(sql).collectAsList().stream().map(Row::toString).toList();
            }
        };
        long first = QueryFuzz.firstSeed();
        for (long seed = first; seed < first + QueryFuzz.seeds(3); seed++) {
            String ours = "lake.fuzz.t" + seed;
            String reference = "spark_catalog.default.fuzz_reference" + seed;
            String columns = QueryFuzz.columns(QueryFuzz.Dialect.SPARK);
            spark.sql("CREATE TABLE " + ours + " (" + columns + ") USING hyperstream TBLPROPERTIES ("
                    + "'format-version' = '" + (seed % 2 == 0 ? 3 : 2) + "', "
                    + "'hyperstream.index.columns' = '" + String.join(",", QueryFuzz.INDEXED) + "', "
                    + "'hyperstream.write.row-group-rows' = '16', "
                    + "'write.parquet.bloom-filter-enabled.column.l' = 'true')");
            spark.sql("CREATE TABLE " + reference + " (" + columns + ") USING parquet LOCATION '"
                    + root.resolve("reference" + seed).toUri() + "'");
            QueryFuzz.run(seed, QueryFuzz.Dialect.SPARK, engine, ours, reference, 240, 4, QueryFuzz.queries(40));
            spark.sql("DROP TABLE " + ours);
            spark.sql("DROP TABLE " + reference);
        }
    }
}
