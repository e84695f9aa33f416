package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;

import io.hyperstream.jni.QueryFuzz;
import io.trino.plugin.memory.MemoryPlugin;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The query oracles in Trino (see {@link QueryFuzz}): each seed's rows go into one of our tables
 * (several files, a scalar index and a bloom filter, format version 2 or 3 by seed) and into a table
 * of Trino's memory connector; every query runs through both (Trino's IEEE comparisons: NaN compares
 * false), SQLancer's TLP and NoREC check our pushed filters, and random DELETEs are compared with the
 * model. Bounded here; {@code bench/query-oracles} runs many more seeds.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestQueryOracles {
    private DistributedQueryRunner runner;

    @BeforeAll
    void start() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-oracles");
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("fuzz").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
        runner.installPlugin(new MemoryPlugin());
        runner.createCatalog("memory", "memory", Map.of());
        runner.execute("CREATE SCHEMA lake.fuzz");
        runner.execute("CREATE SCHEMA memory.fuzz");
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    @Test
    void ourScansAgreeWithTheMemoryConnectorAndTheLogicOracles() {
        QueryFuzz.Engine engine = new QueryFuzz.Engine() {
            @Override
            public void execute(String sql) {
                runner.execute(sql);
            }

            @Override
            public List<String> rows(String sql) {
                return runner.execute(sql).getMaterializedRows().stream().map(MaterializedRow::getFields)
                        .map(String::valueOf).toList();
            }
        };
        long first = QueryFuzz.firstSeed();
        for (long seed = first; seed < first + QueryFuzz.seeds(2); seed++) {
            String ours = "lake.fuzz.t" + seed;
            String reference = "memory.fuzz.reference" + seed;
            String columns = QueryFuzz.columns(QueryFuzz.Dialect.TRINO);
            runner.execute("CREATE TABLE " + ours + " (" + columns + ") WITH (format_version = " + (seed % 2 == 0 ? 3 : 2)
                    + ", indexed_columns = '" + String.join(",", QueryFuzz.INDEXED) + "', parquet_bloom_filter_columns = ARRAY['l'])");
            runner.execute("CREATE TABLE " + reference + " (" + columns + ")");
            QueryFuzz.run(seed, QueryFuzz.Dialect.TRINO, engine, ours, reference, 240, 4, QueryFuzz.queries(40));
            runner.execute("DROP TABLE " + ours);
            runner.execute("DROP TABLE " + reference);
        }
    }
}
