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

    /**
     * The maintenance a run draws from: Iceberg's actions (what its procedures of the same names run),
     * a tag and a branch with retention made through Iceberg's API, and ours.
     */
    private static final String[] MAINTENANCE = {"rewrite_data_files", "rewrite_position_delete_files", "expire_snapshots",
        "compute_table_stats", "tag_and_branch", "our rewrite_data_files", "our expire_snapshots"};

    /** One step of a run: a row change by one writer, or one maintenance action. */
    private record Step(String writer, RowChangeModel.Change change, String maintenance) {
        void run(String table) {
            if (change != null) {
                spark.sql(SparkRowChangesTest.sql(writer + "." + table, change)).collectAsList();
            } else if (maintenance.startsWith("our ")) {
                ourMaintenance(maintenance.substring("our ".length()), table);
            } else {
                icebergMaintenance(maintenance, "ice." + table);
            }
        }

        @Override
        public String toString() {
            if (change == null) {
                return maintenance.startsWith("our ") ? maintenance : "Iceberg's " + maintenance;
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
            if (name.equals("tag_and_branch")) {
                // A tag and a branch at the current snapshot, the branch keeping two snapshots and a day's worth.
                Object current = tableClass.getMethod("currentSnapshot").invoke(loaded);
                long at = (Long) Class.forName("org.apache.iceberg.Snapshot").getMethod("snapshotId").invoke(current);
                Class<?> manage = Class.forName("org.apache.iceberg.ManageSnapshots");
                Object m = tableClass.getMethod("manageSnapshots").invoke(loaded);
                String suffix = Long.toString(at).replace("-", "m");
                m = manage.getMethod("createTag", String.class, long.class).invoke(m, "tag_" + suffix, at);
                m = manage.getMethod("createBranch", String.class, long.class).invoke(m, "branch_" + suffix, at);
                m = manage.getMethod("setMinSnapshotsToKeep", String.class, int.class).invoke(m, "branch_" + suffix, 2);
                m = manage.getMethod("setMaxSnapshotAgeMs", String.class, long.class).invoke(m, "branch_" + suffix, 86_400_000L);
                manage.getMethod("commit").invoke(m);
                return;
            }
            Class<?> actions = Class.forName("org.apache.iceberg.spark.actions.SparkActions");
            Object all = actions.getMethod("get", SparkSession.class).invoke(null, spark);
            Class<?> action = Class.forName("org.apache.iceberg.actions.Action");
            Object chosen = switch (name) {
                case "rewrite_data_files" -> action.getMethod("option", String.class, String.class)
                        .invoke(actions.getMethod("rewriteDataFiles", tableClass).invoke(all, loaded), "min-input-files", "2");
                case "rewrite_position_delete_files" -> action.getMethod("option", String.class, String.class)
                        .invoke(actions.getMethod("rewritePositionDeletes", tableClass).invoke(all, loaded), "rewrite-all", "true");
                case "compute_table_stats" -> actions.getMethod("computeTableStats", tableClass).invoke(all, loaded);
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

    /** Our maintenance of the table, through the library as our procedures run it (Spark 3.5 has no CALL). */
    private static void ourMaintenance(String name, String table) {
        try {
            org.apache.spark.sql.connector.catalog.TableCatalog lake = (org.apache.spark.sql.connector.catalog.TableCatalog)
                    spark.sessionState().catalogManager().catalog("lake");
            String[] parts = table.split("\\.");
            PathOptions options = ((HyperStreamPathTable) lake.loadTable(
                    org.apache.spark.sql.connector.catalog.Identifier.of(new String[] {parts[0]}, parts[1]))).options();
            try (io.hyperstream.jni.NativeTable t = io.hyperstream.jni.NativeTable.load(options.path(), options.storage())) {
                if (name.equals("rewrite_data_files")) {
                    t.rewriteDataFiles(1_048_576);
                } else {
                    t.expireSnapshots(System.currentTimeMillis() + 1, 2);
                }
            }
        } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
            throw new IllegalStateException(e);
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
        // How Iceberg's own row-level commands change rows (ours are merge-on-read either way). Iceberg's
        // copy-on-write of a format version 3 table needs its session extensions on Spark 3.5 (they add
        // the row lineage columns its writer expects), which this session cannot hold: version 2 only.
        boolean copyOnWrite = random.nextBoolean() && version == 2;
        String mode = copyOnWrite ? "copy-on-write" : "merge-on-read";
        String table = "diff.t";
        spark.sql("DROP TABLE IF EXISTS ice." + table + " PURGE");
        spark.sql("CREATE TABLE " + creator + "." + table + " (id BIGINT NOT NULL, grp BIGINT, val DOUBLE, tag STRING, embedding ARRAY<FLOAT>) "
                + "USING " + (creator.equals("lake") ? "hyperstream" : "iceberg") + (partitioned ? " PARTITIONED BY (grp)" : "")
                + " TBLPROPERTIES ('format-version' = '" + version + "', 'write.delete.mode' = '" + mode + "', "
                + "'write.update.mode' = '" + mode + "', 'write.merge.mode' = '" + mode + "', "
                + "'write.delete.granularity' = '" + granularity + "')");
        String setup = "seed " + seed + " (format version " + version + ", " + (partitioned ? "partitioned by grp" : "unpartitioned")
                + ", " + mode + ", delete granularity " + granularity + ", made by " + creator + ")";
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
            } catch (Exception e) { // Spark's own exceptions are checked ones, thrown unchecked
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
            // The metadata tables agree: the same snapshots and the same refs.
            for (String metadata : new String[] {"SELECT snapshot_id FROM %s.snapshots ORDER BY snapshot_id",
                    "SELECT name, type, snapshot_id FROM %s.refs ORDER BY name"}) {
                List<String> ours = spark.sql(metadata.formatted("lake." + table)).collectAsList().stream().map(Object::toString).toList();
                List<String> theirs = spark.sql(metadata.formatted("ice." + table)).collectAsList().stream().map(Object::toString).toList();
                if (!ours.equals(theirs)) {
                    return setup + ": after step " + done.size() + " " + metadata.formatted("...") + " differs: ours " + ours + ", Iceberg's "
                            + theirs + "\nsteps: " + done;
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
