package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.NativeTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** HyperStream tables in a Spark catalog: DDL, INSERT, CTAS and time travel in SQL. */
class SparkCatalogTest {
    private static SparkSession spark;

    @TempDir
    static Path root;

    @BeforeAll
    static void startSpark() {
        spark = LocalSpark.start("hyperstream-catalog-test");
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.root", root.toString());
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

    /**
     * CREATE OR REPLACE TABLE ... AS SELECT is atomic, as with Iceberg's staging catalog: the
     * rewrite-in-place idiom keeps exactly the selected rows, the table's history stays, and a
     * failing query leaves the table and its rows as they were.
     */
    @Test
    void createOrReplaceAsSelectReplacesInOneSnapshotOrNotAtAll() {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.redo");
        sql("CREATE TABLE lake.redo.u (id BIGINT, name STRING) USING hyperstream");
        sql("INSERT INTO lake.redo.u VALUES (1, 'a'), (2, 'b'), (3, 'c')");
        long before = sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0);
        sql("CREATE OR REPLACE TABLE lake.redo.u USING hyperstream AS SELECT * FROM lake.redo.u WHERE id > 1");
        assertEquals(List.of(2L, 3L), sql("SELECT id FROM lake.redo.u ORDER BY id").stream().map(r -> r.getLong(0)).toList());
        assertEquals(before + 1, sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0), "one new snapshot, history kept");
        // A query that fails part way: the table keeps its rows and gains no snapshot.
        assertThrows(Exception.class, () -> sql("CREATE OR REPLACE TABLE lake.redo.u USING hyperstream AS "
                + "SELECT id, assert_true(id < 3) AS name FROM lake.redo.u"));
        assertEquals(List.of(2L, 3L), sql("SELECT id FROM lake.redo.u ORDER BY id").stream().map(r -> r.getLong(0)).toList());
        assertEquals(before + 1, sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0));
        // REPLACE TABLE with a new definition: no rows, the same table.
        sql("REPLACE TABLE lake.redo.u (id BIGINT, score DOUBLE) USING hyperstream");
        assertEquals(0L, sql("SELECT count(*) FROM lake.redo.u").get(0).getLong(0));
        assertEquals(List.of("id", "score"), List.of(spark.table("lake.redo.u").columns()));
        // CREATE OR REPLACE of a table not there yet creates it.
        sql("CREATE OR REPLACE TABLE lake.redo.fresh USING hyperstream AS SELECT 7L AS id");
        assertEquals(7L, sql("SELECT id FROM lake.redo.fresh").get(0).getLong(0));
        try (var walk = Files.walk(root.resolve("redo").resolve("u"))) {
            assertTrue(walk.noneMatch(p -> p.toString().contains("staging") && p.toString().endsWith(".json")),
                    "no staging table is left");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Every user property persists as Iceberg keeps them; reserved and unknown own ones, and a LOCATION elsewhere, are refused by name. */
    @Test
    void tablePropertiesAreKeptAndBadOnesRefusedByName() {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.props");
        sql("CREATE TABLE lake.props.t (id BIGINT) USING hyperstream TBLPROPERTIES "
                + "('write.merge.isolation-level' = 'serializable', 'owner.team' = 'x')");
        Map<String, String> shown = new java.util.HashMap<>();
        sql("SHOW TBLPROPERTIES lake.props.t").forEach(r -> shown.put(r.getString(0), r.getString(1)));
        assertEquals("serializable", shown.get("write.merge.isolation-level"), shown.toString());
        assertEquals("x", shown.get("owner.team"), shown.toString());
        sql("ALTER TABLE lake.props.t SET TBLPROPERTIES ('owner.team' = 'y', 'note' = 'n')");
        sql("ALTER TABLE lake.props.t UNSET TBLPROPERTIES ('write.merge.isolation-level')");
        shown.clear();
        sql("SHOW TBLPROPERTIES lake.props.t").forEach(r -> shown.put(r.getString(0), r.getString(1)));
        assertEquals("y", shown.get("owner.team"));
        assertEquals("n", shown.get("note"));
        assertFalse(shown.containsKey("write.merge.isolation-level"));
        String unknown = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.props.u (id BIGINT) USING hyperstream "
                + "TBLPROPERTIES ('hyperstream.bogus' = '1')")).getMessage();
        assertTrue(unknown.contains("hyperstream.bogus"), unknown);
        String elsewhere = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.props.v (id BIGINT) USING hyperstream "
                + "LOCATION '" + root.resolve("elsewhere") + "'")).getMessage();
        assertTrue(elsewhere.contains("LOCATION"), elsewhere);
        sql("CREATE TABLE lake.props.w (id BIGINT) USING hyperstream LOCATION '" + root.resolve("props").resolve("w") + "'");
        assertEquals(0L, sql("SELECT count(*) FROM lake.props.w").get(0).getLong(0));
        // A table named metadata leaves its namespace a namespace.
        sql("CREATE TABLE lake.props.metadata (id BIGINT) USING hyperstream");
        List<String> tables = sql("SHOW TABLES IN lake.props").stream().map(r -> r.getString(1)).sorted().toList();
        assertEquals(List.of("metadata", "t", "w"), tables);
    }

    /** Write tasks hold a bounded buffer: an INSERT rolls files at the table's target size, losing no row. */
    @Test
    void insertsRollDataFilesAtTheTablesTargetSize() throws Exception {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.rolled");
        sql("CREATE TABLE lake.rolled.t (id BIGINT, name STRING) USING hyperstream "
                + "TBLPROPERTIES ('write.target-file-size-bytes' = '1048576')");
        sql("INSERT INTO lake.rolled.t SELECT id, concat('name-', id * 7919, '-', id) FROM range(0, 300000, 1, 2)");
        long files;
        try (var walk = Files.walk(root.resolve("rolled").resolve("t").resolve("data"))) {
            files = walk.filter(p -> p.toString().endsWith(".parquet")).count();
        }
        assertTrue(files >= 4, "two tasks, each rolling files: " + files);
        Row totals = sql("SELECT count(*), sum(id) FROM lake.rolled.t").get(0);
        assertEquals(300_000L, totals.getLong(0));
        assertEquals(44_999_850_000L, totals.getLong(1));
        assertEquals("name-7919-1", sql("SELECT name FROM lake.rolled.t WHERE id = 1").get(0).getString(0));
        String bad = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.rolled.bad (id BIGINT) USING hyperstream "
                + "TBLPROPERTIES ('write.target-file-size-bytes' = '12')")).getMessage();
        assertTrue(bad.contains("write.target-file-size-bytes") && bad.contains("'12'"), bad);
    }

    @Test
    void vectorIndexesAreManagedThroughTableProperties() {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.vec");
        sql("CREATE TABLE lake.vec.items (id BIGINT NOT NULL, embedding ARRAY<FLOAT>) USING hyperstream TBLPROPERTIES ("
                + "'vector.embedding.dimension' = '4', 'vector.embedding.index' = '{\"metric\":\"cosine\",\"m\":8}')");
        String dir = root.resolve("vec").resolve("items").toString();
        java.util.function.Supplier<String> index = () -> {
            try (NativeTable table = NativeTable.load(dir, Map.of())) {
                return table.vectorIndex("embedding");
            }
        };
        assertTrue(index.get().contains("\"metric\":\"cosine\"") && index.get().contains("\"m\":8"), index.get());
        sql("INSERT INTO lake.vec.items SELECT id, array(float(id), float(1), float(-id), float(2)) FROM range(300)");
        java.util.function.Supplier<String> shown = () -> sql("SHOW TBLPROPERTIES lake.vec.items").stream()
                .filter(r -> r.getString(0).equals("vector.embedding.index")).map(r -> r.getString(1)).findFirst().orElse(null);
        assertEquals(index.get(), shown.get());
        sql("ALTER TABLE lake.vec.items SET TBLPROPERTIES ('vector.embedding.index' = 'hnsw')");
        assertTrue(index.get().contains("\"metric\":\"l2\"") && index.get().contains("\"m\":16"), index.get());
        List<Long> nearest = sql("SELECT id FROM lake.vec.items ORDER BY hyperstream.l2_distance(embedding, array(7.0, 1.0, -7.0, 2.0)) LIMIT 3")
                .stream().map(r -> r.getLong(0)).toList();
        assertEquals(7L, nearest.get(0));
        // Search tuning on a catalog table: the session configuration, and a read's options over it.
        String top = "SELECT id FROM %s ORDER BY hyperstream.l2_distance(embedding, array(7.0, 1.0, -7.0, 2.0)) LIMIT 3";
        java.util.function.Function<String, String> plan = from -> spark.sql(String.format(top, from)).queryExecution()
                .executedPlan().toString();
        try {
            sql("SET spark.hyperstream.vector.search.ef = -1");
            sql("SET spark.hyperstream.vector.search.backend = cpu");
            assertTrue(plan.apply("lake.vec.items").contains("[7.0, 1.0, -7.0, 2.0]) exact on cpu"), plan.apply("lake.vec.items"));
            assertEquals(nearest, sql(String.format(top, "lake.vec.items")).stream().map(r -> r.getLong(0)).toList());
            spark.read().option("vector.search.ef", "10").table("lake.vec.items").createOrReplaceTempView("tuned_items");
            assertTrue(plan.apply("tuned_items").contains("-7.0, 2.0]) ef=10 on cpu"), "a read's option wins: " + plan.apply("tuned_items"));
            sql("SET spark.hyperstream.vector.search.ef = -5");
            Exception badConf = assertThrows(Exception.class, () -> sql(String.format(top, "lake.vec.items")));
            assertTrue(LocalSpark.messages(badConf).contains("spark.hyperstream.vector.search.ef must be between 1 and 100000, -1 for exact search"),
                    LocalSpark.messages(badConf));
        } finally {
            spark.conf().unset("spark.hyperstream.vector.search.ef");
            spark.conf().unset("spark.hyperstream.vector.search.backend");
        }
        // A row without a vector: ASC puts its null distance first in Spark, and so does the pushed search.
        sql("INSERT INTO lake.vec.items VALUES (1000, NULL)");
        assertTrue(plan.apply("lake.vec.items").contains("nulls first"), plan.apply("lake.vec.items"));
        List<Row> withNull = sql(String.format(top.replace("SELECT id", "SELECT id, hyperstream.l2_distance(embedding, "
                + "array(7.0, 1.0, -7.0, 2.0)) AS d"), "lake.vec.items"));
        assertEquals(List.of(1000L, 7L), withNull.stream().limit(2).map(r -> r.getLong(0)).toList());
        assertTrue(withNull.get(0).isNullAt(1) && withNull.get(1).getDouble(1) == 0.0, withNull.toString());
        String last = "SELECT id FROM lake.vec.items ORDER BY hyperstream.l2_distance(embedding, array(7.0, 1.0, -7.0, 2.0)) "
                + "NULLS LAST LIMIT 301";
        List<Row> nullLast = sql(last);
        assertEquals(1000L, nullLast.get(300).getLong(0));
        assertFalse(spark.sql(last).queryExecution().executedPlan().toString().contains("nulls first"));
        Exception bad = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.vec.items SET TBLPROPERTIES ('vector.embedding.index' = '{\"m\":1}')"));
        assertTrue(LocalSpark.messages(bad).contains("table property 'vector.embedding.index': ") && LocalSpark.messages(bad).contains("m must be between 2 and 128"), LocalSpark.messages(bad));
        bad = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.vec.items SET TBLPROPERTIES ('vector.id.index' = 'hnsw')"));
        assertTrue(LocalSpark.messages(bad).contains("not a float vector column"), LocalSpark.messages(bad));
        assertTrue(index.get().contains("\"m\":16"), "refused changes leave the index: " + index.get());
        sql("ALTER TABLE lake.vec.items UNSET TBLPROPERTIES ('vector.embedding.index')");
        assertEquals(null, index.get());
        assertEquals(null, shown.get());
        assertEquals(301L, sql("SELECT count(*) FROM lake.vec.items").get(0).getLong(0));
    }

    @Test
    void sqlCreatesInsertsCopiesTravelsAndDrops() {
        sql("CREATE NAMESPACE lake.db");
        assertTrue(Files.isDirectory(root.resolve("db")));
        sql("CREATE TABLE lake.db.t (id BIGINT NOT NULL, name STRING, embedding ARRAY<FLOAT>) USING hyperstream "
                + "TBLPROPERTIES ('vector.embedding.dimension' = '3')");
        sql("INSERT INTO lake.db.t VALUES (1, 'one', array(float(1), float(2), float(3))), (2, NULL, array(float(4), float(5), float(6)))");
        long first;
        try (NativeTable table = NativeTable.load(root.resolve("db").resolve("t").toString(), Map.of())) {
            first = table.currentSnapshotId();
        }
        sql("INSERT INTO lake.db.t SELECT id + 10, name, embedding FROM lake.db.t");
        assertEquals(List.of(4L, 26L, 2L), sql("SELECT count(*), sum(id), count(name) FROM lake.db.t").stream()
                .map(r -> List.of(r.getLong(0), r.getLong(1), r.getLong(2))).findFirst().orElseThrow());
        assertEquals(2L, sql("SELECT count(*) FROM lake.db.t VERSION AS OF " + first).get(0).getLong(0));
        assertEquals(List.of("id:bigint", "name:string", "embedding:array<float>"),
                sql("DESCRIBE lake.db.t").stream().limit(3).map(r -> r.getString(0) + ":" + r.getString(1)).toList());

        sql("CREATE TABLE lake.db.copy USING hyperstream TBLPROPERTIES ('vector.embedding.dimension' = '3') "
                + "AS SELECT * FROM lake.db.t WHERE id > 1");
        assertEquals(3L, sql("SELECT count(*) FROM lake.db.copy").get(0).getLong(0));
        assertEquals(List.of(4.0f, 5.0f, 6.0f), sql("SELECT embedding FROM lake.db.copy WHERE id = 12").get(0).getList(0));
        // INSERT OVERWRITE (and DataFrame mode "overwrite") replace every row; the old rows stay in time.
        long beforeOverwrite;
        try (NativeTable copy = NativeTable.load(root.resolve("db").resolve("copy").toString(), Map.of())) {
            beforeOverwrite = copy.currentSnapshotId();
        }
        sql("INSERT OVERWRITE lake.db.copy SELECT id + 100, name, embedding FROM lake.db.t WHERE id = 1");
        assertEquals(List.of(101L), sql("SELECT id FROM lake.db.copy").stream().map(r -> r.getLong(0)).toList());
        spark.table("lake.db.t").where("id = 2").write().format("hyperstream").mode("overwrite")
                .save(root.resolve("db").resolve("copy").toString());
        assertEquals(List.of(2L), sql("SELECT id FROM lake.db.copy").stream().map(r -> r.getLong(0)).toList());
        assertEquals(3L, sql("SELECT count(*) FROM lake.db.copy VERSION AS OF " + beforeOverwrite).get(0).getLong(0));
        assertEquals(List.of("copy", "t"), sql("SHOW TABLES IN lake.db").stream().map(r -> r.getString(1)).sorted().toList());

        Exception e = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.db.t (x BIGINT) USING hyperstream"));
        assertTrue(e.getMessage().contains("already exists"), e.getMessage());
        e = assertThrows(Exception.class, () -> sql("SELECT * FROM lake.db.missing"));
        assertTrue(e.getMessage().contains("missing"), e.getMessage());
        e = assertThrows(Exception.class, () -> sql("SELECT count(*) FROM lake.db.t VERSION AS OF 42"));
        assertTrue(e.getMessage().contains("snapshot 42 does not exist"), e.getMessage());

        sql("DROP TABLE lake.db.copy");
        assertFalse(Files.exists(root.resolve("db").resolve("copy")));
        e = assertThrows(Exception.class, () -> sql("DROP NAMESPACE lake.db"));
        sql("DROP NAMESPACE lake.db CASCADE");
        assertFalse(Files.exists(root.resolve("db")));
    }

    @Test
    void namesThatWouldLeaveTheRootAreRefusedAndChangeNothing() throws Exception {
        // A catalog whose root has a canary beside it and a namespace that is a link out of it.
        Path jail = Files.createDirectories(root.resolve("jail"));
        Path jailRoot = Files.createDirectories(jail.resolve("root"));
        Path victim = Files.createDirectories(jail.resolve("victim"));
        Files.writeString(victim.resolve("keep.txt"), "canary");
        Files.createSymbolicLink(jailRoot.resolve("linkout"), Path.of("..", "victim"));
        spark.conf().set("spark.sql.catalog.jail", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.jail.root", jailRoot.toString());
        sql("CREATE NAMESPACE jail.db");
        sql("CREATE TABLE jail.db.t (id BIGINT) USING hyperstream");
        sql("INSERT INTO jail.db.t VALUES (1), (2)");
        Path absolute = jail.resolve("absolute");
        for (String statement : List.of(
                "DROP NAMESPACE jail.`../victim` CASCADE",
                "DROP NAMESPACE jail.`..` CASCADE",
                "DROP NAMESPACE jail.`.` CASCADE",
                "DROP NAMESPACE jail.linkout CASCADE",
                "CREATE NAMESPACE jail.`../escaped`",
                "CREATE NAMESPACE jail.`" + absolute + "`",
                "CREATE NAMESPACE jail.`a/b`",
                "CREATE NAMESPACE jail.`x\\y`",
                "CREATE TABLE jail.db.`../../escaped` (id BIGINT) USING hyperstream",
                "CREATE TABLE jail.db.`a/b` (id BIGINT) USING hyperstream",
                "CREATE TABLE jail.db.`" + absolute + "` (id BIGINT) USING hyperstream",
                "CREATE TABLE jail.linkout.t (id BIGINT) USING hyperstream",
                "CREATE TABLE jail.`../victim`.t USING hyperstream AS SELECT 1 AS id",
                "SELECT * FROM jail.db.`../db/t`",
                "INSERT INTO jail.db.`..` VALUES (1)",
                "DROP TABLE jail.db.`../db/t`",
                "SHOW TABLES IN jail.`../victim`")) {
            Exception e = assertThrows(Exception.class, () -> sql(statement), statement);
            assertTrue(LocalSpark.messages(e).contains("is not a valid name"), statement + ": " + LocalSpark.messages(e));
        }
        try (var entries = Files.list(jail)) {
            assertEquals(List.of("root", "victim"), entries.map(p -> p.getFileName().toString()).sorted().toList());
        }
        try (var entries = Files.list(jailRoot)) {
            assertEquals(List.of("db", "linkout"), entries.map(p -> p.getFileName().toString()).sorted().toList());
        }
        assertEquals("canary", Files.readString(victim.resolve("keep.txt")));
        assertEquals(2L, sql("SELECT count(*) FROM jail.db.t").get(0).getLong(0));
        assertEquals(List.of("db"), sql("SHOW NAMESPACES IN jail").stream().map(r -> r.getString(0)).toList(),
                "a namespace leading out of the root is not listed");

        // Array names are checked by the same rule.
        Exception array = assertThrows(Exception.class, () -> spark.range(3).selectExpr("array(float(id)) AS value").write()
                .format("hyperstream").option("array", "../up").mode("append").save(jail.resolve("store").toString()));
        assertTrue(LocalSpark.messages(array).contains("array name \"../up\" is not allowed"), LocalSpark.messages(array));

        // Without CASCADE, a namespace that holds anything, a lone file too, stays.
        sql("CREATE NAMESPACE jail.stray");
        Files.writeString(jailRoot.resolve("stray").resolve("notes.txt"), "not a table");
        Exception notEmpty = assertThrows(Exception.class, () -> sql("DROP NAMESPACE jail.stray"));
        assertTrue(LocalSpark.messages(notEmpty).contains("stray"), LocalSpark.messages(notEmpty));
        assertTrue(Files.exists(jailRoot.resolve("stray").resolve("notes.txt")));
        sql("DROP NAMESPACE jail.stray CASCADE");
        assertFalse(Files.exists(jailRoot.resolve("stray")));
    }

    @Test
    void deleteFromRemovesTheMatchingRowsAndKeepsEarlierSnapshots() {
        sql("CREATE NAMESPACE lake.del");
        sql("CREATE TABLE lake.del.t (id BIGINT NOT NULL, name STRING, score DOUBLE) USING hyperstream");
        sql("INSERT INTO lake.del.t SELECT id, CASE WHEN id % 5 = 0 THEN NULL ELSE concat('n', id % 13) END, id * 0.5 "
                + "FROM range(0, 3000)");
        Path location = root.resolve("del").resolve("t");
        int firstFiles;
        try (NativeTable table = NativeTable.load(location.toString(), Map.of())) {
            firstFiles = table.dataFiles(TableVersion.CURRENT).length;
        }
        sql("INSERT INTO lake.del.t SELECT id, concat('n', id % 13), id * 0.5 FROM range(3000, 4000)");
        long before;
        try (NativeTable table = NativeTable.load(location.toString(), Map.of())) {
            before = table.currentSnapshotId();
        }
        String kept = "SELECT count(*), sum(id), sum(score) FROM lake.del.t";
        List<Object> expected = values(sql(kept.replace("FROM lake.del.t",
                "FROM lake.del.t WHERE NOT coalesce((id >= 100 AND id < 200) OR name = 'n3' OR (score > 1800 AND name IS NULL), false)")));
        sql("DELETE FROM lake.del.t WHERE (id >= 100 AND id < 200) OR name = 'n3' OR (score > 1800 AND name IS NULL)");
        assertEquals(expected, values(sql(kept)));
        assertEquals(0L, sql("SELECT count(*) FROM lake.del.t WHERE name = 'n3' OR id = 150").get(0).getLong(0));
        // A condition the native filters cannot evaluate runs as a row-level operation: Spark finds
        // the rows, the connector deletes them by position.
        expected = values(sql(kept.replace("FROM lake.del.t", "FROM lake.del.t WHERE id % 7 <> 3")));
        sql("DELETE FROM lake.del.t WHERE id % 7 = 3");
        assertEquals(expected, values(sql(kept)));
        // The earlier snapshot keeps every row; the second insert's files go whole with their rows.
        assertEquals(4000L, sql("SELECT count(*) FROM lake.del.t VERSION AS OF " + before).get(0).getLong(0));
        sql("DELETE FROM lake.del.t WHERE id >= 3000");
        assertEquals(0L, sql("SELECT count(*) FROM lake.del.t WHERE id >= 3000").get(0).getLong(0));
        try (NativeTable table = NativeTable.load(location.toString(), Map.of())) {
            assertEquals(firstFiles, table.dataFiles(TableVersion.CURRENT).length, "the second insert's files left the table");
        }
        sql("DELETE FROM lake.del.t");
        assertEquals(0L, sql("SELECT count(*) FROM lake.del.t").get(0).getLong(0));
        sql("DROP NAMESPACE lake.del CASCADE");
    }

    @Test
    void alterTableAddsRenamesAndDropsColumnsWithoutRewritingData() {
        sql("CREATE NAMESPACE lake.evolve");
        sql("CREATE TABLE lake.evolve.t (id BIGINT NOT NULL, name STRING) USING hyperstream");
        sql("INSERT INTO lake.evolve.t VALUES (1, 'a'), (2, 'b')");
        String location = root.resolve("evolve").resolve("t").toString();
        long first;
        long firstMillis;
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            first = table.currentSnapshotId();
            firstMillis = table.snapshots().get(0).timestampMillis();
        }
        sql("ALTER TABLE lake.evolve.t ADD COLUMNS (score DOUBLE, flag BOOLEAN)");
        sql("INSERT INTO lake.evolve.t VALUES (3, 'c', 1.5, true)");
        assertEquals(List.of("1:null", "2:null", "3:1.5"), sql("SELECT id, score FROM lake.evolve.t ORDER BY id").stream()
                .map(r -> r.getLong(0) + ":" + r.get(1)).toList());
        sql("ALTER TABLE lake.evolve.t RENAME COLUMN score TO points");
        assertEquals(List.of(3L), sql("SELECT id FROM lake.evolve.t WHERE points > 1").stream().map(r -> r.getLong(0)).toList());
        assertEquals(2L, sql("SELECT count(*) FROM lake.evolve.t WHERE points IS NULL").get(0).getLong(0));
        sql("ALTER TABLE lake.evolve.t DROP COLUMN flag");
        assertEquals(List.of("id", "name", "points"), List.of(spark.table("lake.evolve.t").schema().fieldNames()));
        Exception e = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.evolve.t ADD COLUMN early INT FIRST"));
        assertTrue(e.getMessage().contains("go last"), e.getMessage());
        e = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.evolve.t ADD COLUMNS (fine INT, name STRING)"));
        assertTrue(e.getMessage().contains("name"), e.getMessage());
        assertEquals(List.of("id", "name", "points"), List.of(spark.table("lake.evolve.t").schema().fieldNames()),
                "a refused ALTER TABLE changes nothing");
        // Time travel reads a snapshot under its own schema: the columns added since are not there.
        sql("ALTER TABLE lake.evolve.t RENAME COLUMN name TO label");
        for (String version : List.of("VERSION AS OF " + first, "TIMESTAMP AS OF timestamp_millis(" + firstMillis + ")")) {
            Dataset<Row> old = spark.sql("SELECT * FROM lake.evolve.t " + version + " ORDER BY id");
            assertEquals(List.of("id", "name"), List.of(old.schema().fieldNames()), version);
            assertEquals(List.of("1:a", "2:b"), old.collectAsList().stream().map(r -> r.getLong(0) + ":" + r.getString(1)).toList());
            assertEquals("b", sql("SELECT name FROM lake.evolve.t " + version + " WHERE name > 'a'").get(0).getString(0));
        }
        Dataset<Row> byOption = spark.read().format("hyperstream").option("snapshot-id", first).load(location);
        assertEquals(List.of("id", "name"), List.of(byOption.schema().fieldNames()));
        assertEquals(2L, byOption.filter("name IS NOT NULL").count());
        e = assertThrows(Exception.class, () -> byOption.write().format("hyperstream").option("snapshot-id", first)
                .mode("append").save(location));
        assertTrue(e.getMessage().contains("time travel"), e.getMessage());
        assertEquals(List.of("id", "label", "points"), List.of(spark.table("lake.evolve.t").schema().fieldNames()));
        sql("DROP NAMESPACE lake.evolve CASCADE");
    }

    @Test
    void formatVersion3TablesHaveRowLineageMetadataColumns() {
        sql("CREATE NAMESPACE lake.lineage");
        sql("CREATE TABLE lake.lineage.t (id BIGINT NOT NULL, name STRING) USING hyperstream TBLPROPERTIES ('format-version' = '3')");
        sql("INSERT INTO lake.lineage.t SELECT id, concat('n', id) FROM range(0, 100)");
        sql("INSERT INTO lake.lineage.t VALUES (100, 'x')");
        assertEquals(List.of("id", "name"), List.of(spark.table("lake.lineage.t").schema().fieldNames()), "not among the columns");
        assertTrue(sql("SHOW TBLPROPERTIES lake.lineage.t").stream().anyMatch(r -> r.getString(0).equals("format-version") && r.getString(1).equals("3")));
        String lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM lake.lineage.t";
        Map<Long, List<Long>> before = new java.util.TreeMap<>();
        sql(lineage).forEach(r -> before.put(r.getLong(0), List.of(r.getLong(1), r.getLong(2))));
        assertEquals(101, before.values().stream().map(v -> v.get(0)).filter(id -> id >= 0 && id < 101).distinct().count(), "ids 0..100, each once");
        long firstSequence = before.get(0L).get(1);
        assertTrue(before.entrySet().stream().allMatch(e -> e.getValue().get(1) == (e.getKey() == 100 ? firstSequence + 1 : firstSequence)));
        assertEquals(42L, sql("SELECT id FROM lake.lineage.t WHERE _row_id = " + before.get(42L).get(0)).get(0).getLong(0));
        // A delete (deletion vectors) leaves every other row its id.
        sql("DELETE FROM lake.lineage.t WHERE id < 10");
        Map<Long, List<Long>> after = new java.util.TreeMap<>();
        sql(lineage).forEach(r -> after.put(r.getLong(0), List.of(r.getLong(1), r.getLong(2))));
        before.keySet().removeIf(id -> id < 10);
        assertEquals(before, after);
        sql("DROP NAMESPACE lake.lineage CASCADE");
    }

    @Test
    void bigFilesAreReadByATaskPerRunOfRowGroups() {
        sql("CREATE NAMESPACE lake.split");
        sql("CREATE TABLE lake.split.t (id BIGINT NOT NULL, name STRING) USING hyperstream "
                + "TBLPROPERTIES ('hyperstream.write.row-group-rows' = '100')");
        sql("INSERT INTO lake.split.t SELECT /*+ COALESCE(1) */ id, concat('n', id) FROM range(0, 1000)");
        sql("DELETE FROM lake.split.t WHERE id IN (5, 250, 999)");
        String location = root.resolve("split").resolve("t").toString();
        Dataset<Row> whole = spark.read().format("hyperstream").load(location);
        Dataset<Row> split = spark.read().format("hyperstream").option("split.rows", 250).load(location);
        assertEquals(1, whole.rdd().getNumPartitions());
        assertEquals(4, split.rdd().getNumPartitions(), "runs of 3, 3, 3 and 1 row groups");
        String totals = "count(*), sum(id), count(DISTINCT name)";
        assertEquals(whole.selectExpr(totals.split(", ")).first(), split.selectExpr(totals.split(", ")).first());
        assertEquals(997L, split.count());
        assertEquals(List.of(249L, 251L), split.filter("id BETWEEN 249 AND 251").select("id").orderBy("id").collectAsList().stream()
                .map(r -> r.getLong(0)).toList());
        assertEquals(9L, split.filter("id >= 990").limit(10).count(), "990..998: 999 is deleted");
        sql("DROP NAMESPACE lake.split CASCADE");
    }

    @Test
    void listsAndStructsRoundTrip() {
        sql("CREATE NAMESPACE lake.nested");
        sql("CREATE TABLE lake.nested.t (id BIGINT NOT NULL, tags ARRAY<STRING>, nums ARRAY<BIGINT>, "
                + "point STRUCT<x: DOUBLE, y: DOUBLE, label: STRING>, rows ARRAY<STRUCT<k: INT, v: ARRAY<FLOAT>>>) USING hyperstream");
        sql("INSERT INTO lake.nested.t VALUES "
                + "(1, array('a', 'b'), array(1L, 2L, 3L), named_struct('x', 1.5D, 'y', -2.0D, 'label', 'p'), "
                + "array(named_struct('k', 7, 'v', array(float(0.5))))), "
                + "(2, array(), NULL, NULL, array()), "
                + "(3, array('c', NULL), array(NULL, 4L), named_struct('x', 0D, 'y', NULL, 'label', NULL), NULL)");
        // As JSON (a null struct field is left out), the same in every Spark version.
        List<String> rows = sql("SELECT to_json(named_struct('id', id, 'tags', tags, 'nums', nums, 'point', point, 'rows', rows)) "
                + "FROM lake.nested.t ORDER BY id").stream().map(r -> r.getString(0)).toList();
        assertEquals(List.of(
                "{\"id\":1,\"tags\":[\"a\",\"b\"],\"nums\":[1,2,3],\"point\":{\"x\":1.5,\"y\":-2.0,\"label\":\"p\"},\"rows\":[{\"k\":7,\"v\":[0.5]}]}",
                "{\"id\":2,\"tags\":[],\"rows\":[]}",
                "{\"id\":3,\"tags\":[\"c\",null],\"nums\":[null,4],\"point\":{\"x\":0.0}}"), rows);
        assertEquals(List.of(1L), sql("SELECT id FROM lake.nested.t WHERE point.x > 1 AND size(tags) = 2").stream()
                .map(r -> r.getLong(0)).toList());
        assertEquals(List.of("a", "c"), sql("SELECT tags[0] FROM lake.nested.t WHERE size(tags) > 0 ORDER BY id").stream()
                .map(r -> r.getString(0)).toList());
        // Spark prunes a struct to the fields a query names (here point.label alone, and rows' k); the
        // scan reads the columns whole and Spark takes the fields from them (this crashed the JVM when
        // the batches were taken for the pruned struct).
        assertEquals(List.of(2L, 3L), sql("SELECT id FROM lake.nested.t WHERE point.label IS NULL ORDER BY id").stream()
                .map(r -> r.getLong(0)).toList());
        assertEquals(List.of("p", "null"), sql("SELECT point.label, rows.k FROM lake.nested.t WHERE point IS NOT NULL ORDER BY id")
                .stream().map(r -> String.valueOf(r.get(0))).toList());
        sql("DROP NAMESPACE lake.nested CASCADE");
    }

    @Test
    void datesTimestampsDecimalsAndBinaryRoundTripAndFilterNatively() {
        sql("CREATE NAMESPACE lake.types");
        sql("CREATE TABLE lake.types.t (id BIGINT NOT NULL, d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, amount DECIMAL(12,3), "
                + "big DECIMAL(30,5), raw BINARY) USING hyperstream");
        String rows = "(1, DATE'2024-01-31', TIMESTAMP'2024-01-31 10:20:30.123456', TIMESTAMP_NTZ'2024-01-31 10:20:30.123456', "
                + "123.456, 12345678901234567890.12345, X'CAFE'), "
                + "(2, NULL, NULL, NULL, NULL, NULL, NULL), "
                + "(3, DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP_NTZ'1900-01-01 00:00:00', "
                + "-0.001, -1.00001, X'')";
        sql("INSERT INTO lake.types.t VALUES " + rows);
        sql("CREATE TEMPORARY VIEW types_ref AS SELECT * FROM VALUES " + rows + " AS r(id, d, ts, ntz, amount, big, raw)");
        String cast = "SELECT id, d, ts, ntz, CAST(amount AS DECIMAL(12,3)) amount, CAST(big AS DECIMAL(30,5)) big, raw FROM types_ref";
        assertEquals(0L, spark.sql("SELECT * FROM lake.types.t EXCEPT " + cast).count());
        assertEquals(0L, spark.sql(cast + " EXCEPT SELECT * FROM lake.types.t").count());
        for (String[] filter : new String[][] {
                {"d = DATE'2024-01-31'", "1"}, {"d < DATE'2000-01-01'", "3"}, {"ts > TIMESTAMP'2000-01-01 00:00:00'", "1"},
                {"ntz <= TIMESTAMP_NTZ'1900-01-01 00:00:00'", "3"}, {"amount > 100", "1"}, {"amount < 0", "3"},
                {"big = 12345678901234567890.12345", "1"}, {"d IS NULL", "2"}}) {
            String query = "SELECT id FROM lake.types.t WHERE " + filter[0];
            assertEquals(List.of(Long.parseLong(filter[1])), sql(query).stream().map(r -> r.getLong(0)).toList(), filter[0]);
            String plan = spark.sql(query).queryExecution().executedPlan().toString();
            assertFalse(plan.contains("Filter "), "pushed whole, no Filter over the scan: " + plan);
        }
        sql("DROP NAMESPACE lake.types CASCADE");
    }

    @Test
    void partitionedTablesSplitWritesByPartitionSortThemAndPruneByThem() throws Exception {
        sql("CREATE NAMESPACE lake.parts");
        sql("CREATE TABLE lake.parts.t (id BIGINT NOT NULL, category STRING, ts TIMESTAMP) USING hyperstream "
                + "PARTITIONED BY (bucket(4, id), days(ts)) TBLPROPERTIES ('hyperstream.sorted-by' = 'id DESC')");
        String rows = "SELECT id, concat('c', id % 3) category, timestamp_seconds(1709251200 + (id % 5) * 86400 + id) ts FROM range(0, 1000, 1, 2)";
        sql("INSERT INTO lake.parts.t " + rows);
        String describe = sql("DESCRIBE TABLE lake.parts.t").toString();
        assertTrue(describe.contains("bucket(4, id)") && describe.contains("days(ts)"), describe);
        String location = root.resolve("parts").resolve("t").toString();
        int all;
        int forOneId;
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(List.of("bucket(id, 4)", "day(ts)"), table.partitioning());
            assertEquals(List.of("id DESC NULLS LAST"), table.sortOrder());
            all = table.dataFiles(TableVersion.CURRENT).length;
            forOneId = table.dataFiles(TableVersion.CURRENT, io.hyperstream.jni.Filters.eq("id", 123)).length;
        }
        assertTrue(all >= 20 && all <= 40, all + " files: one per partition (4 buckets x 5 days) and write task");
        assertTrue(forOneId >= 1 && forOneId * 4 <= all, forOneId + " of " + all);
        sql("CREATE TEMPORARY VIEW parts_ref AS " + rows);
        assertEquals(0L, spark.sql("SELECT * FROM lake.parts.t EXCEPT SELECT * FROM parts_ref").count());
        assertEquals(0L, spark.sql("SELECT * FROM parts_ref EXCEPT SELECT * FROM lake.parts.t").count());
        for (String filter : new String[] {"id = 123", "id IN (5, 900)", "ts >= TIMESTAMP'2024-03-04 00:00:00'", "category = 'c1' AND id < 40"}) {
            var query = spark.sql("SELECT * FROM lake.parts.t WHERE " + filter);
            assertEquals(0L, query.except(spark.sql("SELECT * FROM parts_ref WHERE " + filter)).count(), filter);
            assertEquals(query.count(), spark.sql("SELECT * FROM parts_ref WHERE " + filter).count(), filter);
        }
        String plan = spark.sql("SELECT * FROM lake.parts.t WHERE id = 123").queryExecution().executedPlan().toString();
        java.util.regex.Matcher files = java.util.regex.Pattern.compile("files (\\d+)/(\\d+)").matcher(plan);
        assertTrue(files.find() && Integer.parseInt(files.group(1)) <= forOneId, plan);
        // A DataFrame append lands in the same partitions; DELETE and time travel work per partition too.
        spark.sql(rows.replace("range(0, 1000, 1, 2)", "range(1000, 1100, 1, 1)")).writeTo("lake.parts.t").append();
        sql("DELETE FROM lake.parts.t WHERE id < 100 AND category = 'c1'");
        assertEquals(1100L - 33, sql("SELECT count(*) FROM lake.parts.t").get(0).getLong(0));
        assertEquals(0L, sql("SELECT count(*) FROM lake.parts.t WHERE id < 100 AND category = 'c1'").get(0).getLong(0));
        Exception twice = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.parts.bad (id BIGINT) USING hyperstream "
                + "PARTITIONED BY (id) TBLPROPERTIES ('hyperstream.partitioning' = 'id')"));
        assertTrue(twice.getMessage().contains("once"), twice.getMessage());
        Exception wrong = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.parts.bad (id BIGINT, s STRING) USING hyperstream "
                + "PARTITIONED BY (hours(s))"));
        assertTrue(wrong.getMessage().contains("does not apply to column 's'"), wrong.getMessage());
        sql("DROP NAMESPACE lake.parts CASCADE");
    }

    @Test
    void scalarIndexesReadOnlyTheMatchingRowsAndShowTheirPruning() {
        sql("CREATE NAMESPACE lake.idx");
        sql("CREATE TABLE lake.idx.t (id BIGINT NOT NULL, user_id BIGINT, category STRING) USING hyperstream "
                + "TBLPROPERTIES ('hyperstream.index.columns' = 'user_id', 'hyperstream.write.row-group-rows' = '500')");
        // user_id is a permutation of id: every file and row group spans all of it, so bounds prune nothing.
        for (int i = 0; i < 2; i++) {
            sql("INSERT INTO lake.idx.t SELECT id, (id * 7919) % 10000, concat('c', id % 50) FROM range(" + i * 5000 + ", "
                    + (i + 1) * 5000 + ")");
        }
        sql("DELETE FROM lake.idx.t WHERE id = 6000");
        long expected = java.util.stream.LongStream.range(0, 10000).filter(id -> id * 7919 % 10000 == 1234).findFirst().orElseThrow();
        var query = spark.sql("SELECT id, category FROM lake.idx.t WHERE user_id = 1234");
        String plan = query.queryExecution().executedPlan().toString();
        assertTrue(plan.contains("rows read 1/10000") && plan.contains("index pruned 9999")
                && !java.util.regex.Pattern.compile("\\bFilter\\b").matcher(plan).find(), plan);
        assertEquals(List.of(expected), query.collectAsList().stream().map(r -> r.getLong(0)).toList());
        var scan = query.queryExecution().executedPlan().collectLeaves().head();
        assertEquals(1L, scan.metrics().get("rowsRead").get().value(), scan.metrics().toString());
        assertEquals(9999L, scan.metrics().get("rowsPrunedByIndex").get().value());

        // A join whose dimension side is selective prunes the fact table at run time, by its index. (Spark
        // plans dynamic pruning from a Filter it keeps on the dimension side, so the dimension here is
        // Parquet, whose filters Spark also evaluates itself.)
        spark.range(0, 20).selectExpr("id * 500 AS user_id", "IF(id % 10 = 3, 'gold', 'basic') AS tier")
                .write().parquet(root.resolve("users-parquet").toString());
        spark.read().parquet(root.resolve("users-parquet").toString()).createOrReplaceTempView("users");
        var join = spark.sql("SELECT e.id FROM lake.idx.t e JOIN users u ON e.user_id = u.user_id WHERE u.tier = 'gold'");
        List<Long> joined = join.collectAsList().stream().map(r -> r.getLong(0)).sorted().toList();
        List<Long> wantJoined = java.util.stream.LongStream.range(0, 10000).filter(id -> id != 6000)
                .filter(id -> java.util.Set.of(1500L, 6500L).contains(id * 7919 % 10000)).boxed().sorted().toList();
        assertEquals(wantJoined, joined);
        String joinPlan = join.queryExecution().executedPlan().toString();
        assertTrue(joinPlan.contains("dynamicpruning"), joinPlan);
        // The runtime filter joined the scan's filter: only the joined rows are read.
        assertTrue(joinPlan.contains("rows read " + wantJoined.size() + "/10000"), joinPlan);

        // Indexes declared later are built for the files already there; the answers never change.
        List<Long> inCategories = sql("SELECT id FROM lake.idx.t WHERE category IN ('c7', 'c8') AND user_id < 5000 ORDER BY id")
                .stream().map(r -> r.getLong(0)).toList();
        sql("ALTER TABLE lake.idx.t SET TBLPROPERTIES ('hyperstream.index.columns' = 'user_id, category')");
        try (NativeTable table = NativeTable.load(root.resolve("idx").resolve("t").toString(), Map.of())) {
            assertEquals(List.of("user_id", "category"), table.scalarIndexes());
        }
        assertEquals(inCategories, sql("SELECT id FROM lake.idx.t WHERE category IN ('c7', 'c8') AND user_id < 5000 ORDER BY id")
                .stream().map(r -> r.getLong(0)).toList());
        assertEquals(List.of(), sql("SELECT id FROM lake.idx.t WHERE id = 6000"), "deleted rows stay deleted");
        sql("ALTER TABLE lake.idx.t UNSET TBLPROPERTIES ('hyperstream.index.columns')");
        try (NativeTable table = NativeTable.load(root.resolve("idx").resolve("t").toString(), Map.of())) {
            assertEquals(List.of(), table.scalarIndexes());
        }
        Exception e = assertThrows(Exception.class,
                () -> sql("ALTER TABLE lake.idx.t SET TBLPROPERTIES ('hyperstream.index.columns' = 'nope')"));
        assertTrue(e.getMessage().contains("'nope'"), e.getMessage());

        // Iceberg's bloom filter property: a point lookup opens only the row groups whose filter may hold the key.
        sql("CREATE TABLE lake.idx.b (id BIGINT, user_id BIGINT) USING hyperstream "
                + "TBLPROPERTIES ('write.parquet.bloom-filter-enabled.column.user_id' = 'true', 'hyperstream.write.row-group-rows' = '1000')");
        // Each row group's user_ids span the same range (bounds prune nothing); each value is in one group.
        sql("INSERT INTO lake.idx.b SELECT id, (id % 1000) * 4 + id DIV 1000 FROM range(0, 4000, 1, 1)");
        var lookup = spark.sql("SELECT id FROM lake.idx.b WHERE user_id = 1234");
        String lookupPlan = lookup.queryExecution().executedPlan().toString();
        assertTrue(lookupPlan.contains("row groups 1/4 (stats pruned 0, bloom pruned 3"), lookupPlan);
        assertEquals(List.of(2308L), lookup.collectAsList().stream().map(r -> r.getLong(0)).toList());
        // Declared later, a bloom filter column applies to the files written after.
        sql("CREATE TABLE lake.idx.later (id BIGINT, user_id BIGINT) USING hyperstream TBLPROPERTIES ('hyperstream.write.row-group-rows' = '1000')");
        sql("ALTER TABLE lake.idx.later SET TBLPROPERTIES ('write.parquet.bloom-filter-enabled.column.user_id' = 'true')");
        sql("INSERT INTO lake.idx.later SELECT id, (id % 1000) * 4 + id DIV 1000 FROM range(0, 4000, 1, 1)");
        assertTrue(spark.sql("SELECT id FROM lake.idx.later WHERE user_id = 1234").queryExecution().executedPlan().toString()
                .contains("bloom pruned 3"));
        Exception badFpp = assertThrows(Exception.class,
                () -> sql("ALTER TABLE lake.idx.later SET TBLPROPERTIES ('write.parquet.bloom-filter-fpp.column.user_id' = '2')"));
        assertTrue(badFpp.getMessage().contains("between 0 and 1"), badFpp.getMessage());
        sql("ALTER TABLE lake.idx.later UNSET TBLPROPERTIES ('write.parquet.bloom-filter-enabled.column.user_id')");
        sql("DROP NAMESPACE lake.idx CASCADE");
    }

    @Test
    void limitIsPushedIntoTheScanAndDeletedRowsDoNotCount() {
        sql("CREATE NAMESPACE lake.lim");
        sql("CREATE TABLE lake.lim.t (id BIGINT NOT NULL, name STRING) USING hyperstream "
                + "TBLPROPERTIES ('hyperstream.write.row-group-rows' = '100')");
        // A filter on the (ascending) id reads only the row groups that may hold it, with the same answer.
        Exception bad = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.lim.bad (id BIGINT) USING hyperstream "
                + "TBLPROPERTIES ('hyperstream.write.row-group-rows' = 'many')"));
        assertTrue(bad.getMessage().contains("hyperstream.write.row-group-rows"), bad.getMessage());
        for (int i = 0; i < 3; i++) {
            sql("INSERT INTO lake.lim.t SELECT id, concat('n', id) FROM range(" + i * 1000 + ", " + (i + 1) * 1000 + ")");
        }
        String plan = spark.sql("SELECT id FROM lake.lim.t LIMIT 5").queryExecution().executedPlan().toString();
        assertTrue(plan.contains("limit=5"), plan);
        assertEquals(5, sql("SELECT id FROM lake.lim.t LIMIT 5").size());
        assertEquals(List.of(1234L, 1777L), sql("SELECT id FROM lake.lim.t WHERE id IN (1234, 1777) ORDER BY id").stream()
                .map(r -> r.getLong(0)).toList());
        List<Long> late = sql("SELECT id FROM lake.lim.t WHERE id >= 2990 LIMIT 100").stream().map(r -> r.getLong(0)).toList();
        assertEquals(10, late.size());
        assertTrue(late.stream().allMatch(id -> id >= 2990), late.toString());
        // Most rows deleted: a limit still finds its rows in the files after the emptied ones.
        sql("DELETE FROM lake.lim.t WHERE id < 2450");
        assertEquals(550, sql("SELECT id FROM lake.lim.t LIMIT 1000").size());
        // COUNT(*) comes from the metadata (deletes subtracted); Spark aggregates nothing.
        String count = "SELECT count(*) FROM lake.lim.t";
        plan = spark.sql(count).queryExecution().executedPlan().toString();
        assertTrue(plan.contains("count(*) from metadata") && !plan.contains("HashAggregate"), plan);
        assertEquals(550L, sql(count).get(0).getLong(0));
        assertEquals(549L, sql("SELECT count(*) FROM lake.lim.t WHERE id > 2450").get(0).getLong(0), "a filtered count is Spark's");
        // MIN and MAX need bounds no deleted row may hold: with deletes, Spark aggregates the rows.
        String minMax = "SELECT min(id), max(name), count(name), count(*) FROM lake.lim.t";
        assertTrue(spark.sql(minMax).queryExecution().executedPlan().toString().contains("Aggregate"));
        assertEquals("[2450,n2999,550,550]", sql(minMax).get(0).toString());
        assertEquals(20, sql("SELECT id FROM lake.lim.t LIMIT 20").size());
        // Without deletes they come from the manifests' bounds and counts, equal to Spark's own answer.
        sql("CREATE TABLE lake.lim.m (id BIGINT, name STRING, day DATE, score DOUBLE) USING hyperstream");
        for (int i = 0; i < 3; i++) {
            sql("INSERT INTO lake.lim.m SELECT (id * 7919) % 5000 - 1000, IF(id % 7 = 0, NULL, concat('n', id)), date_add(DATE'2026-01-01', CAST(id % 300 AS INT)), CAST(id AS DOUBLE) / 3"
                    + " FROM range(" + i * 1000 + ", " + (i + 1) * 1000 + ")");
        }
        String aggregates = "SELECT min(id), max(id), min(name), max(name), count(name), min(day), max(day), count(*) FROM lake.lim.m";
        plan = spark.sql(aggregates).queryExecution().executedPlan().toString();
        assertTrue(plan.contains("from metadata") && !plan.contains("Aggregate"), plan);
        String viaMetadata = sql(aggregates).get(0).toString();
        // The slow twin: a filter every row passes keeps the aggregates in Spark, over every row read.
        String overRows = aggregates + " WHERE id > -1000000";
        assertTrue(spark.sql(overRows).queryExecution().executedPlan().toString().contains("Aggregate"));
        assertEquals(sql(overRows).get(0).toString(), viaMetadata);
        assertTrue(viaMetadata.startsWith("[-1000,") && viaMetadata.endsWith(",n1,n999,2571,2026-01-01,2026-10-27,3000]"), viaMetadata);
        // With the cost-based optimizer on, the scan reports distinct values (sketches) and nulls (manifests).
        spark.conf().set("spark.sql.cbo.enabled", "true");
        try {
            String columnStats = spark.sql("SELECT id, name FROM lake.lim.m").queryExecution().optimizedPlan().stats()
                    .attributeStats().mkString(";");
            java.util.regex.Matcher id = java.util.regex.Pattern.compile("id#\\d+L? -> ColumnStat\\(Some\\((\\d+)\\),None,None,Some\\(0\\)")
                    .matcher(columnStats);
            assertTrue(id.find(), columnStats);
            assertEquals(3000, Long.parseLong(id.group(1)), 150, columnStats);
            java.util.regex.Matcher name = java.util.regex.Pattern.compile("name#\\d+ -> ColumnStat\\(Some\\((\\d+)\\),None,None,Some\\(429\\)")
                    .matcher(columnStats);
            assertTrue(name.find(), columnStats);
            assertEquals(2571, Long.parseLong(name.group(1)), 130, columnStats);
        } finally {
            spark.conf().unset("spark.sql.cbo.enabled");
        }
        // A float may be NaN, which bounds leave out: Spark aggregates.
        assertTrue(spark.sql("SELECT max(score) FROM lake.lim.m").queryExecution().executedPlan().toString().contains("HashAggregate"));
        assertEquals(2999 / 3.0, sql("SELECT max(score) FROM lake.lim.m").get(0).getDouble(0), 1e-9);
        sql("DROP NAMESPACE lake.lim CASCADE");
    }

    private static List<Object> values(List<Row> rows) {
        Row row = rows.get(0);
        return List.of(row.getLong(0), row.getLong(1), row.getDouble(2));
    }

    /**
     * ALTER TABLE ... ADD COLUMN ... DEFAULT (format version 3): rows written before the column read
     * its default (Iceberg's {@code initial-default}), an INSERT that omits it and {@code SET c =
     * DEFAULT} take it ({@code write-default}, which Spark fills in), and Iceberg Java reads the same.
     */
    @Test
    void columnsAddedWithADefaultReadItInOlderRowsAndTakeItWhereAWriteOmitsIt() throws Exception {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.defaults");
        sql("CREATE TABLE lake.defaults.t (id BIGINT) USING hyperstream TBLPROPERTIES ('format-version' = '3')");
        sql("INSERT INTO lake.defaults.t VALUES (1), (2)");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN n INT DEFAULT 7");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN s STRING DEFAULT 'it\\'s'");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN d DATE DEFAULT DATE '2024-02-29'");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN m DECIMAL(10, 2) DEFAULT 1.25");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN ts TIMESTAMP_NTZ DEFAULT TIMESTAMP_NTZ '2024-01-01 10:00:00.000001'");
        sql("ALTER TABLE lake.defaults.t ADD COLUMN plain INT");
        // Spark 3.5 fills defaults into an INSERT's VALUES only where DEFAULT is written (not for omitted columns).
        sql(spark.version().startsWith("3.") ? "INSERT INTO lake.defaults.t VALUES (3, DEFAULT, DEFAULT, DEFAULT, DEFAULT, DEFAULT, NULL)"
                : "INSERT INTO lake.defaults.t (id) VALUES (3)");
        sql("INSERT INTO lake.defaults.t VALUES (4, 5, 'y', DATE '2020-01-01', 2.5, TIMESTAMP_NTZ '2020-01-01 00:00:00', 9)");
        sql("UPDATE lake.defaults.t SET n = DEFAULT WHERE id = 4");
        List<String> rows = sql("SELECT id, n, s, d, m, ts, plain FROM lake.defaults.t ORDER BY id").stream().map(Row::toString).toList();
        String defaults = "7,it's,2024-02-29,1.25,2024-01-01T10:00:00.000001,null]";
        assertEquals(List.of("[1," + defaults, "[2," + defaults, "[3," + defaults, "[4,7,y,2020-01-01,2.50,2020-01-01T00:00,9]"), rows);
        // Iceberg Java reads the defaults of the rows written before the columns.
        List<String> iceberg = io.hyperstream.jni.IcebergJavaReader.read(root.resolve("defaults").resolve("t"), "id", "n", "s", "d");
        assertEquals(List.of("1|7|it's|2024-02-29", "2|7|it's|2024-02-29", "3|7|it's|2024-02-29", "4|7|y|2020-01-01"), iceberg);
        // Defaults need format version 3; a new table takes none yet; a NaN is no Iceberg default.
        sql("CREATE TABLE lake.defaults.v2 (id BIGINT) USING hyperstream");
        Exception v2 = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.defaults.v2 ADD COLUMN n INT DEFAULT 7"));
        assertTrue(LocalSpark.messages(v2).contains("format version 3"), LocalSpark.messages(v2));
        Exception created = assertThrows(Exception.class,
                () -> sql("CREATE TABLE lake.defaults.c (id BIGINT, n INT DEFAULT 1) USING hyperstream TBLPROPERTIES ('format-version' = '3')"));
        assertTrue(LocalSpark.messages(created).contains("ADD COLUMN ... DEFAULT"), LocalSpark.messages(created));
        Exception nan = assertThrows(Exception.class, () -> sql("ALTER TABLE lake.defaults.t ADD COLUMN f DOUBLE DEFAULT double('NaN')"));
        assertTrue(LocalSpark.messages(nan).contains("finite"), LocalSpark.messages(nan));
    }
}
