package io.hyperstream.spark;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.hyperstream.jni.RestCatalogTestServer;
import io.hyperstream.jni.RowChangeModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tables shared with Iceberg's own Spark runtime, decided against a model: one table in an Iceberg
 * REST catalog, made by either writer (format version 2 or 3, partitioned or not, merge-on-read
 * deletes at file or partition granularity), then random INSERTs, UPDATEs, DELETEs and MERGEs
 * ({@link RowChangeModel}), each by a writer drawn at random, with Iceberg's maintenance procedures
 * (rewrite_data_files, rewrite_position_delete_files, expire_snapshots, through its Java API) between them. After every
 * step both writers read exactly the model's rows. A mismatch names the seed and the steps so far,
 * shrunk to the fewest that still fail. Bounded here ({@code -Dhyperstream.differential.seeds=N} for
 * a long run); runs where Iceberg's Spark runtime is on the class path (the Spark 3.5 line's tests).
 */
class IcebergDifferentialTest {
    private static final String ICEBERG_CATALOG = "org.apache.iceberg.spark.SparkCatalog";
    private static SparkSession spark;
    private static RestCatalogTestServer server;

    @TempDir
    static Path dir;

    @BeforeAll
    static void start() throws Exception {
        boolean icebergRuntime;
        try {
            Class.forName(ICEBERG_CATALOG);
            icebergRuntime = true;
        } catch (ClassNotFoundException e) {
            icebergRuntime = false;
        }
        assumeTrue(icebergRuntime, "Iceberg's Spark runtime is not on this line's class path");
        server = RestCatalogTestServer.start(dir.resolve("server"));
        spark = LocalSpark.start("hyperstream-iceberg-differential");
        for (String[] catalog : new String[][] {{"lake", HyperStreamCatalog.class.getName()}, {"ice", ICEBERG_CATALOG}}) {
            spark.conf().set("spark.sql.catalog." + catalog[0], catalog[1]);
            spark.conf().set("spark.sql.catalog." + catalog[0] + ".type", "rest");
            spark.conf().set("spark.sql.catalog." + catalog[0] + ".uri", server.uri());
        }
        spark.conf().set("spark.sql.catalog.ice.cache-enabled", "false");
        spark.sql("CREATE NAMESPACE lake.diff");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
        if (server != null) {
            server.close();
        }
    }

    /** Iceberg's maintenance actions a run draws from (what its procedures of the same names run). */
    private static final String[] MAINTENANCE = {"rewrite_data_files", "rewrite_position_delete_files", "expire_snapshots"};

    /** One step of a run: a row change by one writer, or one of Iceberg's maintenance actions. */
    private record Step(String writer, RowChangeModel.Change change, String maintenance) {
        void run(String table) {
            if (change != null) {
                spark.sql(SparkRowChangesTest.sql(writer + "." + table, change)).collectAsList();
            } else {
                icebergMaintenance(maintenance, "ice." + table);
            }
        }

        @Override
        public String toString() {
            if (change == null) {
                return "Iceberg's " + maintenance;
            }
            String sql = SparkRowChangesTest.sql(writer + ".diff.t", change);
            return sql.length() > 160 ? sql.substring(0, 160) + "..." : sql;
        }
    }

    /**
     * Runs Iceberg's maintenance action {@code name} on {@code table} through its Java API (Spark
     * 3.5's CALL needs Iceberg's session extensions, whose row-lineage rules fail UPDATE and MERGE of
     * every table that is not Iceberg's own; reflection, as the Spark 4 line compiles this test
     * without Iceberg's runtime).
     */
    private static void icebergMaintenance(String name, String table) {
        try {
            Class<?> tableClass = Class.forName("org.apache.iceberg.Table");
            Object loaded = Class.forName("org.apache.iceberg.spark.Spark3Util").getMethod("loadIcebergTable", SparkSession.class, String.class)
                    .invoke(null, spark, table);
            Class<?> actions = Class.forName("org.apache.iceberg.spark.actions.SparkActions");
            Object all = actions.getMethod("get", SparkSession.class).invoke(null, spark);
            Class<?> action = Class.forName("org.apache.iceberg.actions.Action");
            Object chosen = switch (name) {
                case "rewrite_data_files" -> action.getMethod("option", String.class, String.class)
                        .invoke(actions.getMethod("rewriteDataFiles", tableClass).invoke(all, loaded), "min-input-files", "2");
                case "rewrite_position_delete_files" -> action.getMethod("option", String.class, String.class)
                        .invoke(actions.getMethod("rewritePositionDeletes", tableClass).invoke(all, loaded), "rewrite-all", "true");
                default -> {
                    Class<?> expire = Class.forName("org.apache.iceberg.actions.ExpireSnapshots");
                    Object e = expire.getMethod("expireOlderThan", long.class)
                            .invoke(actions.getMethod("expireSnapshots", tableClass).invoke(all, loaded), System.currentTimeMillis() + 1);
                    yield expire.getMethod("retainLast", int.class).invoke(e, 2);
                }
            };
            action.getMethod("execute").invoke(chosen);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new RuntimeException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Iceberg's Spark runtime lacks " + e.getMessage(), e);
        }
    }

    @Test
    void bothWritersReadTheModelAfterEveryChangeEitherMakes() {
        long first = Long.getLong("hyperstream.differential.seed", 1);
        int seeds = Integer.getInteger("hyperstream.differential.seeds", 3);
        for (long seed = first; seed < first + seeds; seed++) {
            List<Step> steps = steps(seed, 14);
            String failure = replay(seed, steps, steps.size());
            if (failure != null) {
                throw new AssertionError(shrunk(seed, steps, failure));
            }
        }
    }

    /** The random steps of {@code seed}; the model's changes are drawn in order, so a prefix replays alike. */
    private static List<Step> steps(long seed, int count) {
        Random random = new Random(seed * 31 + 7);
        RowChangeModel model = new RowChangeModel(seed);
        List<Step> steps = new ArrayList<>();
        for (int step = 0; step < count; step++) {
            String writer = random.nextBoolean() ? "lake" : "ice";
            steps.add(new Step(writer, model.next(step), null));
            if (step % 4 == 3) {
                steps.add(new Step("ice", null, MAINTENANCE[random.nextInt(MAINTENANCE.length)]));
            }
        }
        return steps;
    }

    /**
     * Makes the seed's table and runs {@code steps} (the first {@code upTo} row changes are applied
     * to a fresh model alike); the first mismatch, or null.
     */
    private static String replay(long seed, List<Step> steps, int upTo) {
        Random random = new Random(seed);
        int version = 2 + random.nextInt(2);
        boolean partitioned = random.nextBoolean();
        String granularity = random.nextBoolean() ? "partition" : "file";
        String creator = random.nextBoolean() ? "lake" : "ice";
        String table = "diff.t";
        spark.sql("DROP TABLE IF EXISTS ice." + table + " PURGE");
        spark.sql("CREATE TABLE " + creator + "." + table + " (id BIGINT NOT NULL, grp BIGINT, val DOUBLE, tag STRING, embedding ARRAY<FLOAT>) "
                + "USING " + (creator.equals("lake") ? "hyperstream" : "iceberg") + (partitioned ? " PARTITIONED BY (grp)" : "")
                + " TBLPROPERTIES ('format-version' = '" + version + "', 'write.delete.mode' = 'merge-on-read', "
                + "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read', "
                + "'write.delete.granularity' = '" + granularity + "')");
        String setup = "seed " + seed + " (format version " + version + ", " + (partitioned ? "partitioned by grp" : "unpartitioned")
                + ", delete granularity " + granularity + ", made by " + creator + ")";
        RowChangeModel model = new RowChangeModel(seed);
        int changes = 0;
        List<Step> done = new ArrayList<>();
        for (Step step : steps) {
            if (step.change() != null) {
                if (changes == upTo) {
                    break;
                }
                model.next(changes++); // the same draws as steps(): the model now holds this change
            }
            done.add(step);
            try {
                step.run(table);
            } catch (RuntimeException e) {
                e.printStackTrace(); // the whole trace, for the one reading the test's output
                return setup + ": step " + done.size() + " failed: " + LocalSpark.messages(e) + "\nsteps: " + done;
            }
            for (String reader : new String[] {"lake", "ice"}) {
                List<String> rows = spark.sql("SELECT id, grp, val, tag, embedding[0] FROM " + reader + "." + table + " ORDER BY id")
                        .collectAsList().stream()
                        .map(r -> r.get(0) + "|" + r.get(1) + "|" + r.get(2) + "|" + r.get(3) + "|" + r.get(4)).toList();
                if (!rows.equals(model.rows())) {
                    List<String> extra = new ArrayList<>(rows);
                    extra.removeAll(model.rows());
                    List<String> missing = new ArrayList<>(model.rows());
                    missing.removeAll(rows);
                    return setup + ": after step " + done.size() + " " + reader + " reads " + rows.size() + " rows where the model holds "
                            + model.size() + " (extra " + extra + ", missing " + missing + ")\nsteps: " + done;
                }
            }
        }
        return null;
    }

    /** The failure of the shortest prefix of row changes that still fails (maintenance steps kept between them). */
    private static String shrunk(long seed, List<Step> steps, String failure) {
        long changes = steps.stream().filter(s -> s.change() != null).count();
        for (int upTo = 1; upTo < changes; upTo++) {
            String f = replay(seed, steps, upTo);
            if (f != null) {
                return f + "\n(rerun with -Dhyperstream.differential.seed=" + seed + " -Dhyperstream.differential.seeds=1)";
            }
        }
        return failure + "\n(rerun with -Dhyperstream.differential.seed=" + seed + " -Dhyperstream.differential.seeds=1)";
    }
}
