package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;

import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedResult;
import io.trino.testing.MaterializedRow;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The Trino half of the demo: an in-process Trino with a hyperstream catalog; with a directory as
 * the first argument, also a catalog {@code lake} over the tables Spark stored there.
 */
public final class TrinoDemo {
    // Trino's logging takes over System.out once the runner starts; the demo writes to the real stdout.
    private static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
            StandardCharsets.UTF_8);

    private TrinoDemo() {}

    public static void main(String[] args) throws Exception {
        try (DistributedQueryRunner runner = DistributedQueryRunner.builder(
                testSessionBuilder().setCatalog("hyperstream").setSchema("sample").build()).build()) {
            io.trino.spi.Plugin plugin = IsolatedPlugin.install(runner);
            runner.createCatalog("hyperstream", "hyperstream", Map.of(
                    "hyperstream.sample.rows", "100000",
                    "hyperstream.sample.dimension", "4",
                    "hyperstream.split-rows", "25000"));
            show(runner, "SHOW TABLES FROM hyperstream.sample");
            show(runner, "DESCRIBE hyperstream.sample.items");
            show(runner, "SELECT * FROM items ORDER BY id LIMIT 5");
            show(runner, "SELECT count(*) AS rows, sum(id) AS sum_id, count(category) AS non_null_categories, "
                    + "round(avg(embedding[1]), 4) AS avg_first_dim FROM items");
            show(runner, "EXPLAIN SELECT id, category FROM items WHERE category = 'cat-3' AND id < 50");
            show(runner, "SELECT id, category FROM items WHERE category = 'cat-3' AND id < 50 ORDER BY id LIMIT 5");
            if (args.length > 0) {
                runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", args[0]));
                show(runner, "SHOW TABLES FROM lake.demo");
                show(runner, "SELECT count(*) AS rows, sum(id) AS sum_id FROM lake.demo.items");
                show(runner, "SELECT id, embedding FROM lake.demo.items WHERE id = 4242");
                String query = "ARRAY[0.25, 0.5, 0.75, 0.1]";
                String topK = "SELECT id, category, cosine_distance(embedding, " + query + ") AS distance"
                        + " FROM lake.demo.items ORDER BY distance LIMIT 5";
                show(runner, "EXPLAIN " + topK);
                show(runner, topK);
                String hybrid = "SELECT id, category, cosine_distance(embedding, " + query + ") AS distance"
                        + " FROM lake.demo.items WHERE category = 'cat-3' AND id >= 50000 ORDER BY distance LIMIT 5";
                show(runner, "EXPLAIN " + hybrid);
                show(runner, hybrid);
                long first = (Long) runner.execute("SELECT min_by(snapshot_id, committed_at) FROM lake.demo.\"items$snapshots\"")
                        .getOnlyValue();
                show(runner, "SELECT count(*) AS rows_at_first_snapshot FROM lake.demo.items FOR VERSION AS OF " + first);
            }
            // The plugin's own copy of the library, loaded in its class loader as a server loads it.
            Object loadedFrom = plugin.getClass().getClassLoader().loadClass("io.hyperstream.jni.NativeLibrary")
                    .getMethod("loadedFrom").invoke(null);
            OUT.println("native library loaded (by the plugin's class loader) from: " + loadedFrom);
        }
    }

    private static void show(DistributedQueryRunner runner, String sql) {
        OUT.println();
        OUT.println("=== Trino: " + sql);
        MaterializedResult result = runner.execute(sql);
        OUT.println(String.join(" | ", result.getColumnNames()));
        for (MaterializedRow row : result.getMaterializedRows()) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.getFieldCount(); i++) {
                if (i > 0) {
                    line.append(" | ");
                }
                line.append(row.getField(i));
            }
            OUT.println(line);
        }
    }
}
