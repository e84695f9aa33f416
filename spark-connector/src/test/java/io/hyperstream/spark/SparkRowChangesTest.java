package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.IcebergJavaReader;
import io.hyperstream.jni.RowChangeModel;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * UPDATE, MERGE INTO and DELETE through Spark against an in-memory model of the rows: random
 * statements applied to a table and to the model leave the same rows after every step, in full,
 * filtered (through the scalar index) and vector (exact and HNSW) reads, in format versions 2 and 3.
 */
class SparkRowChangesTest {
    private static SparkSession spark;

    @TempDir
    static Path root;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-row-changes-test");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", root.toString());
        sql("CREATE NAMESPACE lake.rc");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static List<Row> sql(String query) {
        return spark.sql(query).collectAsList();
    }

    static String vector(float v) {
        return "array(float(" + v + "), float(1), float(" + (-v) + "), float(0.5))";
    }

    @Test
    void randomStatementsLeaveTheRowsOfAModel() throws Exception {
        for (int version : new int[] {2, 3}) {
            String t = "lake.rc.t" + version;
            sql("CREATE TABLE " + t + " (id BIGINT NOT NULL, grp BIGINT, val DOUBLE, tag STRING, embedding ARRAY<FLOAT>) USING hyperstream "
                    + "TBLPROPERTIES ('format-version' = '" + version + "', 'vector.embedding.dimension' = '4', "
                    + "'vector.embedding.index' = '{\"metric\":\"l2\",\"m\":8}', 'hyperstream.index.columns' = 'grp')");
            RowChangeModel model = new RowChangeModel(version);
            for (int step = 0; step < 14; step++) {
                String statement = sql(t, model.next(step));
                sql(statement);
                check(t, model, "v" + version + " step " + step + ": " + statement.substring(0, Math.min(120, statement.length())));
            }
            // Iceberg Java reads the same rows.
            assertEquals(model.rowsAsText(), IcebergJavaReader.read(root.resolve("rc").resolve("t" + version), "id", "grp", "val", "tag"));
            // The metadata tables tell the table's state.
            long snapshots = sql("SELECT count(*) FROM " + t + ".snapshots").get(0).getLong(0);
            assertEquals(snapshots, sql("SELECT count(*) FROM " + t + ".history WHERE is_current_ancestor").get(0).getLong(0));
            assertEquals((long) model.size(), sql("SELECT sum(CASE content WHEN 0 THEN record_count ELSE -record_count END) FROM "
                    + t + ".files").get(0).getLong(0), "live rows: data file rows less deleted ones");
            assertEquals(sql("SELECT count(*) FROM " + t + ".files WHERE content = 0").get(0).getLong(0),
                    sql("SELECT count(*) FROM " + t + ".indexes WHERE kind = 'hnsw graph' AND column_name = 'embedding'").get(0).getLong(0),
                    "every data file has its graph");
            assertEquals(sql("SELECT sum(record_count) FROM " + t + ".files WHERE content = 0").get(0).getLong(0),
                    sql("SELECT sum(record_count) FROM " + t + ".partitions").get(0).getLong(0));
            assertEquals(List.of("main"), sql("SELECT name FROM " + t + ".refs").stream().map(r -> r.getString(0)).toList());
            assertTrue(sql("SELECT count(*) FROM " + t + ".manifests").get(0).getLong(0) > 0);
            assertTrue(sql("SELECT operation FROM " + t + ".snapshots ORDER BY sequence_number DESC LIMIT 1").get(0).getString(0) != null);
        }
    }

    /** The change in Spark's SQL, on table {@code t} (ours, or Iceberg's runtime's in {@link IcebergDifferentialTest}). */
    static String sql(String t, RowChangeModel.Change change) {
        if (change instanceof RowChangeModel.Insert insert) {
            return "INSERT INTO " + t + " VALUES " + insert.rows().entrySet().stream().map(e -> "(" + e.getKey() + ", "
                    + e.getValue().grp() + ", " + e.getValue().val() + ", " + (e.getValue().tag() == null ? "NULL"
                    : "'" + e.getValue().tag() + "'") + ", " + vector(e.getValue().v()) + ")").collect(Collectors.joining(", "));
        }
        if (change instanceof RowChangeModel.Update update) {
            return "UPDATE " + t + " SET val = val + 1, tag = '" + update.tag() + "', embedding = " + vector(update.v())
                    + " WHERE grp = " + update.grp();
        }
        if (change instanceof RowChangeModel.DeleteDigit delete) {
            // A condition the native filter cannot evaluate: the rows go through the row-level path.
            return "DELETE FROM " + t + " WHERE id % 10 = " + delete.digit();
        }
        if (change instanceof RowChangeModel.DeleteGroup delete) {
            return "DELETE FROM " + t + " WHERE grp = " + delete.grp() + " AND val < 500";
        }
        RowChangeModel.Merge merge = (RowChangeModel.Merge) change;
        return "MERGE INTO " + t + " t USING (SELECT * FROM VALUES " + merge.source().entrySet().stream()
                .map(e -> "(" + e.getKey() + "L, " + e.getValue() + "D)").collect(Collectors.joining(", "))
                + " AS s(id, val)) s ON t.id = s.id"
                + " WHEN MATCHED AND s.val < 0 THEN DELETE"
                + " WHEN MATCHED THEN UPDATE SET val = s.val, tag = '" + merge.tag() + "'"
                + " WHEN NOT MATCHED AND s.val < 800 THEN INSERT (id, grp, val, tag, embedding) VALUES (s.id, 9, s.val, 'new', "
                + vector(RowChangeModel.MERGED_V) + ")";
    }

    private static void check(String t, RowChangeModel model, String step) {
        List<String> actual = sql("SELECT id, grp, val, tag, embedding[0] FROM " + t + " ORDER BY id").stream()
                .map(r -> r.get(0) + "|" + r.get(1) + "|" + r.get(2) + "|" + r.get(3) + "|" + r.get(4)).toList();
        assertEquals(model.rows(), actual, step);
        assertEquals(model.inGroup(3), sql("SELECT id FROM " + t + " WHERE grp = 3 ORDER BY id").stream().map(r -> r.getLong(0)).toList(), step);
        float q = 1000;
        String topK = "SELECT id, embedding[0] FROM " + t + " ORDER BY hyperstream.l2_distance(embedding, " + vector(q) + ") LIMIT 5";
        for (String ef : new String[] {"-1", "400"}) {
            sql("SET spark.hyperstream.vector.search.ef = " + ef);
            List<Row> found = sql(topK);
            for (Row row : found) {
                RowChangeModel.Row live = model.get(row.getLong(0));
                assertTrue(live != null && live.v() == row.getFloat(1), step + ": ef " + ef + " found " + row);
            }
            assertEquals(model.nearestDistances(q, 5), found.stream().map(r -> RowChangeModel.distance(r.getFloat(1), q)).toList(),
                    step + ": ef " + ef);
        }
        sql("RESET spark.hyperstream.vector.search.ef");
    }

    /** Row lineage (format version 3): UPDATE and MERGE keep an updated row's _row_id and advance its sequence number. */
    @Test
    void formatVersion3UpdatesKeepRowIds() {
        String t = "lake.rc.lineage";
        sql("CREATE TABLE " + t + " (id BIGINT NOT NULL, val BIGINT) USING hyperstream TBLPROPERTIES ('format-version' = '3')");
        sql("INSERT INTO " + t + " SELECT id, id FROM range(0, 100)");
        String lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM " + t + " ORDER BY id";
        Map<Long, long[]> before = new TreeMap<>();
        sql(lineage).forEach(r -> before.put(r.getLong(0), new long[] {r.getLong(1), r.getLong(2)}));
        sql("UPDATE " + t + " SET val = -1 WHERE id < 10");
        sql("MERGE INTO " + t + " t USING (SELECT * FROM VALUES (50L), (500L) AS s(id)) s ON t.id = s.id "
                + "WHEN MATCHED THEN UPDATE SET val = -2 WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, -3)");
        Map<Long, long[]> after = new TreeMap<>();
        sql(lineage).forEach(r -> after.put(r.getLong(0), new long[] {r.getLong(1), r.getLong(2)}));
        long first = before.get(0L)[1];
        for (Map.Entry<Long, long[]> row : after.entrySet()) {
            long id = row.getKey();
            if (id == 500) {
                assertTrue(before.values().stream().noneMatch(b -> b[0] == row.getValue()[0]), "a new row takes a new id");
                continue;
            }
            assertEquals(before.get(id)[0], row.getValue()[0], "row " + id + " keeps its id");
            long expected = id < 10 ? first + 1 : id == 50 ? first + 2 : first;
            assertEquals(expected, row.getValue()[1], "sequence number of row " + id);
        }
        assertEquals(List.of(-1L, -2L, -3L), sql("SELECT val FROM " + t + " WHERE id IN (0, 50, 500) ORDER BY id").stream()
                .map(r -> r.getLong(0)).toList());
    }

    @Test
    void aTargetRowMatchedTwiceIsAnErrorAndChangesNothing() {
        sql("CREATE TABLE lake.rc.twice (id BIGINT, val BIGINT) USING hyperstream");
        sql("INSERT INTO lake.rc.twice VALUES (1, 10), (2, 20)");
        Exception e = assertThrows(Exception.class, () -> sql("MERGE INTO lake.rc.twice t USING (SELECT * FROM VALUES (1L, 5L), (1L, 6L) "
                + "AS s(id, val)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val"));
        assertTrue(LocalSpark.messages(e).contains("MERGE_CARDINALITY_VIOLATION") || LocalSpark.messages(e).contains("more than one"),
                LocalSpark.messages(e));
        assertEquals(List.of(10L, 20L), sql("SELECT val FROM lake.rc.twice ORDER BY id").stream().map(r -> r.getLong(0)).toList());
        // _file and _pos name each row's place.
        List<Row> places = sql("SELECT id, _file, _pos FROM lake.rc.twice ORDER BY id");
        assertEquals(2, places.stream().map(r -> r.getString(1) + "#" + r.getLong(2)).distinct().count(), places.toString());
        assertTrue(places.get(0).getString(1).endsWith(".parquet"), places.toString());
    }

    /** Runs {@code statement} and, held inside it between its read and its commit, {@code other}: its failure, or null. */
    private static Throwable concurrently(String statement, String other) throws Exception {
        return io.hyperstream.jni.ConcurrentCommit.between(() -> sql(statement), () -> sql(other));
    }

    private static List<String> rows(String t) {
        return sql("SELECT id, val FROM " + t + " ORDER BY id, val").stream().map(r -> r.getLong(0) + "=" + r.getLong(1)).toList();
    }

    /**
     * Iceberg's isolation levels: under {@code serializable} (the default of
     * {@code write.<operation>.isolation-level}) a MERGE fails when another writer added rows its
     * scan would have read after that scan (here the key it inserts), and an UPDATE does not when
     * the added rows lie outside its pushed filter; under {@code snapshot} the MERGE lands beside them.
     */
    @Test
    void serializableChangesFailWhenAConcurrentWriterAddedRowsTheyWouldHaveRead() throws Exception {
        spark.udf().register("pause", org.apache.spark.sql.functions.udf(
                (org.apache.spark.sql.api.java.UDF1<Long, Long>) io.hyperstream.jni.ConcurrentCommit::pause,
                org.apache.spark.sql.types.DataTypes.LongType)
                .asNondeterministic());
        String merge = " t USING (SELECT pause(id) AS id, val FROM VALUES (7L, 71L) AS s(id, val)) s ON t.id = s.id "
                + "WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT *";
        for (String level : new String[] {"serializable", "snapshot"}) {
            String t = "lake.rc.isolation_" + level;
            String properties = level.equals("serializable") ? "" : " TBLPROPERTIES ('write.merge.isolation-level' = 'snapshot')";
            sql("CREATE TABLE " + t + " (id BIGINT, val BIGINT) USING hyperstream" + properties);
            sql("INSERT INTO " + t + " VALUES (1, 10), (2, 20)");
            Throwable failed = concurrently("MERGE INTO " + t + merge, "INSERT INTO " + t + " VALUES (7, 70)");
            if (level.equals("serializable")) {
                assertTrue(failed != null && LocalSpark.messages(failed).contains("serializable"),
                        failed == null ? "the MERGE committed" : LocalSpark.messages(failed));
                assertEquals(List.of("1=10", "2=20", "7=70"), rows(t), "the MERGE changed nothing");
            } else {
                assertEquals(null, failed);
                assertEquals(List.of("1=10", "2=20", "7=70", "7=71"), rows(t), "snapshot isolation lets both in");
            }
        }
        // Rows added outside the UPDATE's pushed filter do not conflict with it.
        String t = "lake.rc.isolation_serializable";
        assertEquals(null, concurrently("UPDATE " + t + " SET val = pause(val) + 1 WHERE id = 1", "INSERT INTO " + t + " VALUES (100, 1000)"));
        assertEquals(List.of("1=11", "2=20", "7=70", "100=1000"), rows(t));
        // Rows added inside it do.
        Throwable failed = concurrently("UPDATE " + t + " SET val = pause(val) + 1 WHERE id >= 100", "INSERT INTO " + t + " VALUES (200, 2000)");
        assertTrue(failed != null && LocalSpark.messages(failed).contains("serializable"), String.valueOf(failed));
        assertEquals(List.of("1=11", "2=20", "7=70", "100=1000", "200=2000"), rows(t));
    }
}
