package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.RestCatalog;
import io.hyperstream.jni.RestCatalogTestServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Spark catalog of HyperStream tables kept in an Iceberg REST catalog (Apache Iceberg's own REST
 * server, in a process of its own on loopback): defined as Iceberg's Spark catalog is
 * ({@code type=rest}, {@code uri}), with SQL DDL, INSERT, time travel and vector top-k on its tables.
 */
class SparkRestCatalogTest {
    private static SparkSession spark;
    private static RestCatalogTestServer server;

    @TempDir
    static Path dir;

    /** The driver's log at INFO, as a deployment keeps it, for the whole test (the console shows warnings only). */
    private static final java.io.StringWriter driverLog = new java.io.StringWriter();

    /** Adds an INFO appender writing to {@link #driverLog} to the root logger of the driver's log4j2. */
    private static void captureDriverLog() {
        org.apache.logging.log4j.core.LoggerContext context =
                (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        org.apache.logging.log4j.core.config.Configuration config = context.getConfiguration();
        org.apache.logging.log4j.core.Appender appender = org.apache.logging.log4j.core.appender.WriterAppender.newBuilder()
                .setName("canary-check").setTarget(driverLog)
                .setLayout(org.apache.logging.log4j.core.layout.PatternLayout.newBuilder().withPattern("%p %c: %m%n").build()).build();
        appender.start();
        config.addAppender(appender);
        org.apache.logging.log4j.core.config.LoggerConfig root = config.getRootLogger();
        // The console keeps showing warnings only; the captured log takes INFO and above.
        for (String name : List.copyOf(root.getAppenders().keySet())) {
            org.apache.logging.log4j.core.Appender existing = root.getAppenders().get(name);
            root.removeAppender(name);
            root.addAppender(existing, org.apache.logging.log4j.Level.WARN, null);
        }
        root.addAppender(appender, org.apache.logging.log4j.Level.INFO, null);
        root.setLevel(org.apache.logging.log4j.Level.INFO);
        context.updateLoggers();
    }

    @BeforeAll
    static void start() throws Exception {
        captureDriverLog();
        server = RestCatalogTestServer.start(dir.resolve("server"));
        // The catalog "guarded" has a token, given at start as deployments give it (spark-defaults.conf,
        // --conf), where Spark's redaction covers it; and an event log, which a History Server shows.
        spark = LocalSpark.start("hyperstream-rest-catalog-test", java.util.Map.of(
                "spark.eventLog.enabled", "true",
                "spark.eventLog.compress", "false", // searchable as text (Spark 4 compresses by default)
                "spark.eventLog.dir", Files.createDirectories(dir.resolve("events")).toUri().toString(),
                "spark.sql.catalog.guarded", HyperStreamCatalog.class.getName(),
                "spark.sql.catalog.guarded.type", "rest",
                "spark.sql.catalog.guarded.uri", server.uri(),
                "spark.sql.catalog.guarded.token", CANARY));
        spark.conf().set("spark.sql.catalog.lake", HyperStreamCatalog.class.getName());
        spark.conf().set("spark.sql.catalog.lake.type", "rest");
        spark.conf().set("spark.sql.catalog.lake.uri", server.uri());
    }

    /** The token of catalog "guarded", which nothing a user or an operator reads may show. */
    private static final String CANARY = "canary" + java.util.UUID.randomUUID().toString().replace("-", "");

    @AfterAll
    static void stop() throws java.io.IOException {
        if (spark != null) {
            spark.stop();
            // Spark's event log, written whole at stop: plans, SQL executions, settings, jobs, tasks.
            StringBuilder events = new StringBuilder();
            try (var logs = Files.walk(dir.resolve("events"))) {
                for (Path log : logs.filter(Files::isRegularFile).toList()) {
                    events.append(Files.readString(log, java.nio.charset.StandardCharsets.ISO_8859_1));
                }
            }
            assertTrue(events.toString().contains("vault"), "the event log holds the token test's statements");
            int at = events.indexOf(CANARY);
            assertTrue(at < 0, "the token is in Spark's event log: ..." + (at < 0 ? "" : events.substring(Math.max(0, at - 300), at)));
            // The driver's own log at INFO: Spark's jobs, stages and tasks of every statement, and ours.
            String log = driverLog.toString();
            assertTrue(log.contains("INFO") && log.contains("DAGScheduler"), "the driver's log was captured: " + log.length() + " chars");
            int inLog = log.indexOf(CANARY);
            assertTrue(inLog < 0, "the token is in the driver's log: ..." + (inLog < 0 ? "" : log.substring(Math.max(0, inLog - 300), inLog)));
        }
        if (server != null) {
            server.close();
        }
    }

    private static List<Row> sql(String query) {
        return spark.sql(query).collectAsList();
    }

    /** What the catalog service itself answers for {@code path} (under {@code /v1/}). */
    private static String catalogSays(String path) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(server.uri() + "/v1/" + path)).build(), HttpResponse.BodyHandlers.ofString());
        return response.statusCode() + " " + response.body();
    }

    @Test
    void tablesLiveInTheRestCatalog() throws Exception {
        sql("CREATE NAMESPACE lake.shop");
        assertTrue(catalogSays("namespaces").contains("[\"shop\"]"));
        sql("CREATE TABLE lake.shop.items (id BIGINT NOT NULL, name STRING, embedding ARRAY<FLOAT>) USING hyperstream "
                + "TBLPROPERTIES ('vector.embedding.dimension' = '4', 'hyperstream.index.columns' = 'id')");
        sql("INSERT INTO lake.shop.items SELECT id, concat('item-', id), array(float(id), float(1), float(-id), float(2)) "
                + "FROM range(0, 200, 1, 2)");
        long first;
        Catalog.TableRef ref = new RestCatalog("lake", java.util.Map.of("uri", server.uri())).tableRef("shop", "items").orElseThrow();
        try (NativeTable opened = NativeTable.load(ref.location(), ref.options())) {
            first = opened.currentSnapshotId();
        }
        sql("INSERT INTO lake.shop.items SELECT id, concat('item-', id), array(float(id), float(1), float(-id), float(2)) "
                + "FROM range(200, 300)");

        // The catalog service has the table, at a location under its warehouse, where our files are.
        String table = catalogSays("namespaces/shop/tables/items");
        assertTrue(table.startsWith("200 ") && table.contains("\"metadata-location\""), table);
        Path location = Path.of(ref.location().replaceFirst("^file:", ""));
        assertTrue(location.startsWith(server.warehouse()), location + " under " + server.warehouse());
        try (var files = Files.walk(location.resolve("data"))) {
            assertTrue(files.anyMatch(p -> p.toString().endsWith(".parquet")), "data files under the catalog's location");
        }

        assertEquals(List.of("items"), sql("SHOW TABLES IN lake.shop").stream().map(r -> r.getString(1)).toList());
        assertEquals(300L, sql("SELECT count(*) FROM lake.shop.items").get(0).getLong(0));
        assertEquals(200L, sql("SELECT count(*) FROM lake.shop.items VERSION AS OF " + first).get(0).getLong(0));
        assertEquals("item-42", sql("SELECT name FROM lake.shop.items WHERE id = 42").get(0).getString(0));
        List<Long> nearest = sql("SELECT id FROM lake.shop.items ORDER BY hyperstream.l2_distance(embedding, "
                + "array(7.0, 1.0, -7.0, 2.0)) LIMIT 3").stream().map(r -> r.getLong(0)).toList();
        assertEquals(7L, nearest.get(0));
        assertEquals(java.util.Set.of(6L, 8L), java.util.Set.copyOf(nearest.subList(1, 3)));

        // Schema changes commit through the catalog.
        sql("ALTER TABLE lake.shop.items ADD COLUMNS (price DOUBLE)");
        assertTrue(catalogSays("namespaces/shop/tables/items").contains("\"price\""));
        sql("INSERT INTO lake.shop.items SELECT 1000, 'new', array(float(0), float(0), float(0), float(0)), 9.5");
        assertEquals(9.5, sql("SELECT price FROM lake.shop.items WHERE id = 1000").get(0).getDouble(0));

        sql("ALTER TABLE lake.shop.items RENAME TO lake.shop.products");
        assertEquals(301L, sql("SELECT count(*) FROM lake.shop.products").get(0).getLong(0));
        assertTrue(catalogSays("namespaces/shop/tables/items").startsWith("404"));

        String nonEmpty = assertThrows(Exception.class, () -> sql("DROP NAMESPACE lake.shop")).getMessage();
        assertTrue(nonEmpty.contains("shop"), nonEmpty);
        // As with Iceberg's catalog: CASCADE does not purge the catalog's tables, DROP TABLE keeps the
        // files, DROP TABLE ... PURGE removes what the table's metadata reaches.
        assertThrows(Exception.class, () -> sql("DROP NAMESPACE lake.shop CASCADE"));
        assertEquals(301L, sql("SELECT count(*) FROM lake.shop.products").get(0).getLong(0));
        sql("CREATE TABLE lake.shop.kept USING hyperstream AS SELECT 1L AS id");
        Path kept = Path.of(new RestCatalog("lake", java.util.Map.of("uri", server.uri())).tableRef("shop", "kept").orElseThrow()
                .location().replaceFirst("^file:", ""));
        sql("DROP TABLE lake.shop.kept");
        assertTrue(catalogSays("namespaces/shop/tables/kept").startsWith("404"));
        assertTrue(Files.exists(kept.resolve("metadata")), "DROP TABLE without PURGE keeps the files");
        sql("DROP TABLE lake.shop.products PURGE");
        assertTrue(catalogSays("namespaces/shop/tables/products").startsWith("404"));
        assertFalse(Files.exists(location.resolve("metadata")), "the table's files are gone with it");
        sql("DROP NAMESPACE lake.shop");
        assertFalse(catalogSays("namespaces").contains("shop"));
        assertTrue(Files.exists(kept.resolve("metadata")), "dropping the namespace took no table's files");
    }

    /**
     * A row-level change whose commit landed but whose answer was lost, and whose table could not be
     * read back at once (the outcome unknown): Spark's abort keeps the change's new files, so the
     * table, read again, holds the change whole (the updated rows' new versions are there).
     */
    @Test
    void aRowLevelChangeOfUnknownOutcomeKeepsItsFiles() throws Exception {
        try (io.hyperstream.jni.RestFaultProxy proxy = io.hyperstream.jni.RestFaultProxy.start(server.uri())) {
            spark.conf().set("spark.sql.catalog.flaky", HyperStreamCatalog.class.getName());
            spark.conf().set("spark.sql.catalog.flaky.type", "rest");
            spark.conf().set("spark.sql.catalog.flaky.uri", proxy.uri());
            sql("CREATE NAMESPACE IF NOT EXISTS lake.unknown");
            sql("CREATE TABLE lake.unknown.t (id BIGINT, v BIGINT) USING hyperstream");
            sql("INSERT INTO lake.unknown.t SELECT id, id FROM range(0, 100)");
            proxy.faults.add(io.hyperstream.jni.RestFaultProxy.Fault.LOST_UNREADABLE);
            Exception unknown = assertThrows(Exception.class, () -> sql("UPDATE flaky.unknown.t SET v = -v WHERE id % 10 = 0"));
            assertTrue(LocalSpark.messages(unknown).contains("CommitStateUnknown"), LocalSpark.messages(unknown));
            assertEquals(List.of(100L, 4950L - 2 * 450L), sql("SELECT count(*), sum(v) FROM lake.unknown.t").stream()
                    .map(r -> List.of(r.getLong(0), r.getLong(1))).findFirst().orElseThrow(), "the change landed whole, its files kept");
            sql("DROP TABLE lake.unknown.t PURGE");
            sql("DROP NAMESPACE lake.unknown");
        }
    }

    /**
     * CREATE OR REPLACE TABLE ... AS SELECT on a REST catalog's table is atomic, as in a directory
     * catalog: the rewrite-in-place idiom keeps exactly the selected rows in one new snapshot of the
     * same table (one commit of the catalog, history kept), and a failing query leaves the table as it was.
     */
    @Test
    void createOrReplaceAsSelectOfARestTableReplacesInOneCommitOrNotAtAll() throws Exception {
        sql("CREATE NAMESPACE IF NOT EXISTS lake.redo");
        sql("CREATE TABLE lake.redo.u (id BIGINT, name STRING) USING hyperstream");
        sql("INSERT INTO lake.redo.u VALUES (1, 'a'), (2, 'b'), (3, 'c')");
        long before = sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0);
        String uuid = catalogSays("namespaces/redo/tables/u").replaceAll("(?s).*\"table-uuid\"\\s*:\\s*\"([^\"]+)\".*", "$1");
        sql("CREATE OR REPLACE TABLE lake.redo.u USING hyperstream AS SELECT * FROM lake.redo.u WHERE id > 1");
        assertEquals(List.of(2L, 3L), sql("SELECT id FROM lake.redo.u ORDER BY id").stream().map(r -> r.getLong(0)).toList());
        assertEquals(before + 1, sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0), "one new snapshot, history kept");
        assertTrue(catalogSays("namespaces/redo/tables/u").contains(uuid), "the same table");
        // A query that fails part way: the table keeps its rows and gains no snapshot.
        assertThrows(Exception.class, () -> sql("CREATE OR REPLACE TABLE lake.redo.u USING hyperstream AS "
                + "SELECT id, assert_true(id < 3) AS name FROM lake.redo.u"));
        assertEquals(List.of(2L, 3L), sql("SELECT id FROM lake.redo.u ORDER BY id").stream().map(r -> r.getLong(0)).toList());
        assertEquals(before + 1, sql("SELECT count(*) FROM lake.redo.u.snapshots").get(0).getLong(0));
        // A new definition: the same table, its new columns.
        sql("CREATE OR REPLACE TABLE lake.redo.u USING hyperstream AS SELECT id, id * 2.0 AS score FROM lake.redo.u");
        assertEquals(List.of("[2,4.0]", "[3,6.0]"), sql("SELECT id, score FROM lake.redo.u ORDER BY id").stream().map(Object::toString).toList());
        sql("DROP TABLE lake.redo.u PURGE");
        sql("DROP NAMESPACE lake.redo");
    }

    /**
     * The catalog's token stays in the driver's catalog: the tasks Spark ships (input partitions,
     * writer factories of appends and row-level changes) open the table at its metadata file, and
     * neither they nor EXPLAIN hold the token; the tasks still read and write.
     */
    @Test
    void theCatalogsTokenNeverTravelsWithATask() throws Exception {
        String canary = CANARY;
        sql("CREATE NAMESPACE guarded.vault");
        sql("CREATE TABLE guarded.vault.t (id BIGINT NOT NULL, name STRING) USING hyperstream");
        sql("INSERT INTO guarded.vault.t SELECT id, concat('n', id) FROM range(0, 100, 1, 2)");
        sql("UPDATE guarded.vault.t SET name = 'u' WHERE id % 10 = 1");
        sql("DELETE FROM guarded.vault.t WHERE id >= 90");
        assertEquals(List.of("[90,9]"), sql("SELECT count(*), count_if(name = 'u') FROM guarded.vault.t").stream()
                .map(Row::toString).toList());
        for (String explain : List.of("EXPLAIN EXTENDED SELECT * FROM guarded.vault.t WHERE id > 5",
                "EXPLAIN EXTENDED INSERT INTO guarded.vault.t VALUES (1000, 'x')",
                "EXPLAIN EXTENDED UPDATE guarded.vault.t SET name = 'v' WHERE id = 3")) {
            assertFalse(sql(explain).get(0).getString(0).contains(canary), explain);
        }
        org.apache.spark.sql.connector.catalog.TableCatalog catalog = (org.apache.spark.sql.connector.catalog.TableCatalog)
                spark.sessionState().catalogManager().catalog("guarded");
        org.apache.spark.sql.connector.catalog.Table table = catalog.loadTable(
                org.apache.spark.sql.connector.catalog.Identifier.of(new String[] {"vault"}, "t"));
        org.apache.spark.sql.util.CaseInsensitiveStringMap none = new org.apache.spark.sql.util.CaseInsensitiveStringMap(java.util.Map.of());
        List<Object> shipped = new java.util.ArrayList<>(List.of(((org.apache.spark.sql.connector.catalog.SupportsRead) table)
                .newScanBuilder(none).build().toBatch().planInputPartitions()));
        org.apache.spark.sql.types.StructType schema = table.schema();
        org.apache.spark.sql.connector.write.LogicalWriteInfo info = new org.apache.spark.sql.connector.write.LogicalWriteInfo() {
            @Override
            public org.apache.spark.sql.util.CaseInsensitiveStringMap options() {
                return none;
            }

            @Override
            public String queryId() {
                return "q";
            }

            @Override
            public org.apache.spark.sql.types.StructType schema() {
                return schema;
            }
        };
        shipped.add(((org.apache.spark.sql.connector.catalog.SupportsWrite) table).newWriteBuilder(info).build().toBatch()
                .createBatchWriterFactory(null));
        assertTrue(shipped.size() >= 2, "input partitions and a writer factory: " + shipped);
        for (Object task : shipped) {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
                out.writeObject(task);
            }
            String serialized = bytes.toString(java.nio.charset.StandardCharsets.ISO_8859_1);
            assertFalse(serialized.contains(canary), "the token travels with " + task);
            assertFalse(serialized.contains(server.uri()), "a task would call the catalog: " + task);
            assertTrue(serialized.contains(".metadata.json"), "a task opens the table at its metadata file: " + task);
        }
        sql("DROP TABLE guarded.vault.t");
        sql("DROP NAMESPACE guarded.vault");
    }

    @Test
    void missingNamesFailAsSparksOwnErrors() {
        String noNamespace = assertThrows(Exception.class, () -> sql("CREATE TABLE lake.nowhere.t (id BIGINT) USING hyperstream"))
                .getClass().getSimpleName();
        assertEquals("NoSuchNamespaceException", noNamespace);
        sql("CREATE NAMESPACE IF NOT EXISTS lake.empty");
        String noTable = assertThrows(Exception.class, () -> sql("SELECT * FROM lake.empty.missing")).getMessage();
        assertTrue(noTable.contains("TABLE_OR_VIEW_NOT_FOUND"), noTable);
    }
}
