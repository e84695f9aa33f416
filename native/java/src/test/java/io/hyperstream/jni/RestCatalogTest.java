package io.hyperstream.jni;

import static io.hyperstream.jni.IcebergInteropTest.arrowSchema;
import static io.hyperstream.jni.IcebergInteropTest.element;
import static io.hyperstream.jni.IcebergInteropTest.name;
import static io.hyperstream.jni.IcebergInteropTest.read;
import static io.hyperstream.jni.IcebergInteropTest.readNative;
import static io.hyperstream.jni.IcebergInteropTest.rows;
import static io.hyperstream.jni.IcebergInteropTest.theirSchema;
import static io.hyperstream.jni.IcebergInteropTest.writeWithIceberg;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HyperStream tables kept in an Iceberg REST catalog: Apache Iceberg's own REST server on loopback
 * (a process of its own), and Apache Iceberg Java's {@link RESTCatalog} beside us as the other
 * writer and reader.
 */
class RestCatalogTest {
    @TempDir
    static Path dir;

    private static RestCatalogTestServer server;
    private static RESTCatalog iceberg;
    private BufferAllocator allocator;

    @BeforeAll
    static void startServer() throws Exception {
        server = RestCatalogTestServer.start(dir.resolve("server"));
        iceberg = new RESTCatalog();
        iceberg.initialize("iceberg", Map.of("uri", server.uri()));
    }

    @AfterAll
    static void stopServer() throws Exception {
        iceberg.close();
        server.close();
    }

    @BeforeEach
    void openAllocator() {
        allocator = Allocators.child("rest-catalog-test");
    }

    @AfterEach
    void closeAllocator() {
        allocator.close();
    }

    private static RestCatalog catalog() {
        return new RestCatalog("lake", server.settings());
    }

    @Test
    void hyperStreamTablesLiveInTheCatalogAndIcebergJavaReadsThem() throws Exception {
        RestCatalog catalog = catalog();
        assertTrue(catalog.createNamespace("ours", Map.of("owner", "tests")));
        assertFalse(catalog.createNamespace("ours", Map.of()), "it exists");
        assertTrue(catalog.namespaces().contains("ours"));
        assertEquals("tests", catalog.namespaceProperties("ours").get("owner"));
        Map<String, String> options = catalog.tableOptions("ours", "items", Map.of());
        long first;
        long second;
        String location;
        try (NativeTable table = NativeTable.create("", arrowSchema(), Map.of("vector.embedding.dimension", "4"), options, allocator)) {
            first = table.append(allocator, rows(allocator, 0, 300, arrowSchema()));
            second = table.append(allocator, rows(allocator, 300, 420, arrowSchema()));
        }
        assertEquals(List.of("items"), catalog.tables("ours"));
        location = catalog.tableLocation("ours", "items").orElseThrow();
        assertTrue(location.contains("ours") && location.endsWith("items"), location);
        assertTrue(Files.isDirectory(Path.of(location.replaceFirst("^file:", ""), "data")), "the data lies at the catalog's location");

        // The table as the catalog keeps it: our field ids and vector column survive the catalog's create.
        try (NativeTable table = NativeTable.load(location, options)) {
            assertEquals(second, table.currentSnapshotId());
            assertEquals(List.of(first, second), table.snapshots().stream().map(NativeTable.SnapshotInfo::snapshotId).toList());
            assertTrue(table.schema(allocator).findField("embedding").getType() instanceof ArrowType.FixedSizeList);
            assertEquals(420, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
            assertEquals(300, readNative(table.scan(allocator, TableVersion.snapshot(first), null, 64)).size());
        }

        // Apache Iceberg Java lists, loads and reads it through the same server, with identical rows.
        assertTrue(iceberg.listTables(Namespace.of("ours")).contains(TableIdentifier.of("ours", "items")));
        Table theirs = iceberg.loadTable(TableIdentifier.of("ours", "items"));
        assertEquals(second, theirs.currentSnapshot().snapshotId());
        Map<Long, Record> rows = read(IcebergGenerics.read(theirs).build());
        assertEquals(420, rows.size());
        for (long id = 0; id < 420; id++) {
            assertEquals(name(id), rows.get(id).getField("name"));
            assertEquals(id / 2.0, rows.get(id).getField("score"));
            assertEquals(element(id, 3), ((List<?>) rows.get(id).getField("embedding")).get(3));
        }
        assertEquals(300, read(IcebergGenerics.read(theirs).useSnapshot(first).build()).size());

        // Dropped from the catalog with its files kept, then registered again from its metadata file.
        String metadataFile = ((org.apache.iceberg.HasTableOperations) theirs).operations().current().metadataFileLocation();
        assertTrue(catalog.dropTable("ours", "items", false));
        assertTrue(catalog.tables("ours").isEmpty());
        assertEquals(location, catalog.registerTable("ours", "items", metadataFile));
        try (NativeTable table = catalog.tableRef("ours", "items").orElseThrow().open()) {
            assertEquals(420, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
        }

        // Renamed and dropped through the catalog.
        catalog.renameTable("ours", "items", "ours", "things");
        assertEquals(List.of("things"), catalog.tables("ours"));
        Path stray = Path.of(location).resolve("data").resolve("not-the-tables.parquet");
        Files.writeString(stray, "another writer's file, which the table's metadata does not name");
        assertTrue(catalog.dropTable("ours", "things", true));
        assertFalse(Files.exists(Path.of(location).resolve("metadata")), "the table's files are gone with it");
        assertTrue(Files.exists(stray), "a purge deletes only what the table's metadata reaches");
        assertFalse(catalog.dropTable("ours", "things", true));
        assertTrue(catalog.tables("ours").isEmpty());
        assertTrue(catalog.dropNamespace("ours"));
        assertFalse(catalog.namespaceExists("ours"));
    }

    @Test
    void hyperStreamReadsAndAppendsToATableIcebergJavaCreated() throws Exception {
        iceberg.createNamespace(Namespace.of("theirs"));
        Table theirs = iceberg.createTable(TableIdentifier.of("theirs", "events"), theirSchema(), PartitionSpec.unpartitioned());
        theirs.newAppend().appendFile(writeWithIceberg(theirs, theirs.location() + "/data/a.parquet", 0, 100)).commit();
        RestCatalog catalog = catalog();
        Map<String, String> options = catalog.tableOptions("theirs", "events", Map.of());
        Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
        try (NativeTable table = NativeTable.load(theirs.location(), options)) {
            assertEquals(100, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
            table.append(allocator, rows(allocator, 100, 150, plain));
        }
        theirs.refresh();
        Map<Long, Record> rows = read(IcebergGenerics.read(theirs).build());
        assertEquals(150, rows.size());
        assertEquals(name(120), rows.get(120L).getField("name"));
        assertEquals(2, theirs.history().size());
    }

    /** A HyperStream writer and an Iceberg Java writer each commit 25 times to one table at once: no commit is lost. */
    @Test
    void concurrentWritersOfEachKindLoseNoCommit() throws Exception {
        iceberg.createNamespace(Namespace.of("busy"));
        Table theirs = iceberg.createTable(TableIdentifier.of("busy", "log"), theirSchema(), PartitionSpec.unpartitioned(),
                Map.of("commit.retry.num-retries", "100", "commit.retry.min-wait-ms", "5", "commit.retry.max-wait-ms", "100"));
        Map<String, String> options = catalog().tableOptions("busy", "log", Map.of());
        Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
        int commits = 25;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Callable<Void>> writers = new ArrayList<>();
            writers.add(() -> {
                try (NativeTable table = NativeTable.load(theirs.location(), options)) {
                    for (int i = 0; i < commits; i++) {
                        table.append(allocator, rows(allocator, i * 10L, i * 10L + 10, plain));
                    }
                }
                return null;
            });
            writers.add(() -> {
                Table mine = iceberg.loadTable(TableIdentifier.of("busy", "log"));
                for (int i = 0; i < commits; i++) {
                    long start = 1_000 + i * 10L;
                    mine.newAppend().appendFile(writeWithIceberg(mine, mine.location() + "/data/j" + i + ".parquet", start, start + 10))
                            .commit();
                }
                return null;
            });
            for (Future<Void> done : pool.invokeAll(writers)) {
                done.get();
            }
        } finally {
            pool.shutdown();
        }
        theirs.refresh();
        assertEquals(2 * commits, theirs.history().size(), "every commit of both writers is a snapshot");
        assertEquals(2 * commits * 10, read(IcebergGenerics.read(theirs).build()).size());
        try (NativeTable table = NativeTable.load(theirs.location(), options)) {
            assertEquals(2 * commits * 10, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
        }
    }

    /**
     * A catalog whose warehouse is on S3 (the S3 test server): HyperStream's table lives at the location
     * the catalog gives, the catalog writes its metadata there with Iceberg's S3FileIO, and Iceberg Java
     * reads HyperStream's rows back through the same catalog.
     */
    @Test
    void tablesLiveOnS3WhereTheCatalogPutsThem() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(S3TestServer.available(), "needs the test Python with moto");
        try (S3TestServer s3 = S3TestServer.start("lakehouse")) {
            Map<String, String> storage = s3.storageOptions();
            Map<String, String> io = Map.of("io-impl", "org.apache.iceberg.aws.s3.S3FileIO",
                    "s3.endpoint", storage.get("aws_endpoint"), "s3.access-key-id", "hyperstream",
                    "s3.secret-access-key", "hyperstream", "s3.path-style-access", "true", "client.region", "us-east-1");
            try (RestCatalogTestServer onS3 = RestCatalogTestServer.start(dir.resolve("s3-server"), "s3://lakehouse/wh", io)) {
                RestCatalog catalog = new RestCatalog("s3lake", onS3.settings(), storage);
                assertTrue(catalog.createNamespace("remote", Map.of()));
                Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
                Catalog.TableRef target = catalog.newTable("remote", "t").orElseThrow();
                try (NativeTable table = NativeTable.create(target.location(), plain, Map.of(), target.options(), allocator)) {
                    table.append(allocator, rows(allocator, 0, 500, plain));
                }
                Catalog.TableRef stored = catalog.tableRef("remote", "t").orElseThrow();
                assertTrue(stored.location().startsWith("s3://lakehouse/wh/remote/t"), stored.location());
                try (NativeTable table = stored.open()) {
                    table.append(allocator, rows(allocator, 500, 600, plain));
                    assertEquals(600, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
                }
                Map<String, String> theirSettings = new HashMap<>(io);
                theirSettings.put("uri", onS3.uri());
                try (RESTCatalog theirCatalog = new RESTCatalog()) {
                    theirCatalog.initialize("theirs", theirSettings);
                    Table theirs = theirCatalog.loadTable(TableIdentifier.of("remote", "t"));
                    Map<Long, Record> rows = read(IcebergGenerics.read(theirs).build());
                    assertEquals(600, rows.size());
                    assertEquals(name(599), rows.get(599L).getField("name"));
                }
                assertTrue(catalog.dropTable("remote", "t"));
            }
        }
    }

    /**
     * The commit-state rules, against a proxy in front of the server that fails commits on purpose: a
     * 503 is retried; a 500 after the server applied the commit (its answer lost) is found landed by a
     * reload and counts once; a 500 for a commit the server never saw is a failure with nothing
     * committed. Commits of metadata alone (a rollback, an expiry) are judged by what they change: a
     * refused rollback is not taken for a landed one, and a change whose answer was lost while another
     * writer also committed is unknown, its outcome left for a reload to tell. A commit whose outcome
     * is unknown keeps its files.
     */
    @Test
    void commitsWhoseAnswerIsLostLandOnceAndFailedOnesLeaveNothing() throws Exception {
        RestFaultProxy proxy = RestFaultProxy.start(server.uri());
        java.util.Deque<RestFaultProxy.Fault> faults = proxy.faults;
        try {
            RestCatalog direct = catalog();
            direct.createNamespace("flaky", Map.of());
            Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
            Catalog.TableRef created = direct.newTable("flaky", "t").orElseThrow();
            try (NativeTable table = NativeTable.create(created.location(), plain, Map.of(), created.options(), allocator)) {
                table.append(allocator, rows(allocator, 0, 10, plain));
            }
            RestCatalog flaky = new RestCatalog("flaky", Map.of("uri", proxy.uri()));
            Catalog.TableRef through = flaky.tableRef("flaky", "t").orElseThrow();
            try (NativeTable table = through.open()) {
                faults.addAll(List.of(RestFaultProxy.Fault.UNAVAILABLE, RestFaultProxy.Fault.LOST));
                table.append(allocator, rows(allocator, 10, 20, plain));
                assertTrue(faults.isEmpty());
                faults.add(RestFaultProxy.Fault.REFUSED);
                HyperStreamIOException refused = assertThrows(HyperStreamIOException.class,
                        () -> table.append(allocator, rows(allocator, 20, 30, plain)));
                assertTrue(refused.getMessage().contains("nothing was committed") && refused.getMessage().contains("REST catalog flaky"),
                        refused.getMessage());
            }
            long first;
            try (NativeTable table = direct.tableRef("flaky", "t").orElseThrow().open()) {
                assertEquals(2, table.snapshots().size(), "the lost answer's commit counted once, the refused one not at all");
                assertEquals(20, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
                first = table.snapshots().get(0).snapshotId();
            }
            try (NativeTable table = flaky.tableRef("flaky", "t").orElseThrow().open()) {
                long current = table.currentSnapshotId();
                // A refused rollback changed nothing, and says so.
                faults.add(RestFaultProxy.Fault.REFUSED);
                HyperStreamIOException refused = assertThrows(HyperStreamIOException.class, () -> table.rollbackTo(first));
                assertTrue(refused.getMessage().contains("nothing was committed"), refused.getMessage());
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    assertEquals(current, now.currentSnapshotId(), "the refused rollback did not land");
                }
                // A rollback whose answer was lost landed, and is found so.
                faults.add(RestFaultProxy.Fault.LOST);
                table.rollbackTo(first);
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    assertEquals(first, now.currentSnapshotId());
                }
                // A change whose answer was lost while another writer committed too cannot tell: unknown.
                proxy.racer.set(() -> {
                    try (NativeTable other = direct.tableRef("flaky", "t").orElseThrow().open()) {
                        other.setProperties(Map.of("raced", "yes"));
                    }
                });
                faults.add(RestFaultProxy.Fault.LOST_AND_RACED);
                assertThrows(CommitStateUnknownException.class, () -> table.setProperties(Map.of("mine", "1")));
                // An append whose answer was lost and whose table cannot be read back: unknown, and its
                // files are kept, since the commit did land.
                int before;
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    before = readNative(now.scan(allocator, TableVersion.CURRENT, null, 64)).size();
                }
                faults.add(RestFaultProxy.Fault.LOST_UNREADABLE);
                try (NativeTable again = flaky.tableRef("flaky", "t").orElseThrow().open()) {
                    assertThrows(CommitStateUnknownException.class, () -> again.append(allocator, rows(allocator, 30, 40, plain)));
                }
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    assertEquals(before + 10, readNative(now.scan(allocator, TableVersion.CURRENT, null, 64)).size(),
                            "the append landed and its files are there");
                }
                // A refused expiry removed nothing, and says so.
                int snapshots;
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    snapshots = now.snapshots().size();
                }
                try (NativeTable again = flaky.tableRef("flaky", "t").orElseThrow().open()) {
                    faults.add(RestFaultProxy.Fault.REFUSED);
                    HyperStreamIOException expiry = assertThrows(HyperStreamIOException.class,
                            () -> again.expireSnapshots(System.currentTimeMillis() + 1, 1));
                    assertTrue(expiry.getMessage().contains("nothing was committed"), expiry.getMessage());
                }
                try (NativeTable now = direct.tableRef("flaky", "t").orElseThrow().open()) {
                    assertEquals(snapshots, now.snapshots().size(), "the refused expiry removed no snapshot");
                }
            }
        } finally {
            proxy.close();
        }
    }

    @Test
    void badInputFailsNamingTheCatalogAndWhatFailed() throws Exception {
        RestCatalog catalog = catalog();
        NotFoundException noNamespace = assertThrows(NotFoundException.class, () -> catalog.tables("nowhere"));
        assertTrue(noNamespace.getMessage().contains("REST catalog lake") && noNamespace.getMessage().contains("nowhere"),
                noNamespace.getMessage());
        catalog.createNamespace("checks", Map.of());
        NotFoundException noTable = assertThrows(NotFoundException.class,
                () -> NativeTable.load("", catalog.tableOptions("checks", "missing", Map.of())));
        assertTrue(noTable.getMessage().contains("checks.missing"), noTable.getMessage());
        assertTrue(catalog.tableLocation("checks", "missing").isEmpty());

        // A table the catalog has: a second create is refused; nothing changes.
        Map<String, String> options = catalog.tableOptions("checks", "t", Map.of());
        Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
        try (NativeTable table = NativeTable.create("", plain, Map.of(), options, allocator)) {
            table.append(allocator, rows(allocator, 0, 10, plain));
        }
        InvalidArgumentException twice = assertThrows(InvalidArgumentException.class,
                () -> NativeTable.create("", plain, Map.of(), options, allocator).close());
        assertTrue(twice.getMessage().contains("checks.t already exists"), twice.getMessage());

        // A commit the catalog rejects (the table was dropped under the writer): an error, nothing half-committed.
        try (NativeTable table = NativeTable.load("", options)) {
            iceberg.dropTable(TableIdentifier.of("checks", "t"), false);
            NotFoundException gone = assertThrows(NotFoundException.class, () -> table.append(allocator, rows(allocator, 10, 20, plain)));
            assertTrue(gone.getMessage().contains("checks.t"), gone.getMessage());
        }
        assertFalse(iceberg.tableExists(TableIdentifier.of("checks", "t")));

        // A server nobody runs.
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        RestCatalog down = new RestCatalog("offline", Map.of("uri", "http://127.0.0.1:" + port));
        HyperStreamIOException unreachable = assertThrows(HyperStreamIOException.class, down::namespaces);
        assertTrue(unreachable.getMessage().contains("REST catalog offline at http://127.0.0.1:" + port), unreachable.getMessage());

        // Credentials the token endpoint refuses.
        HttpServer refusing = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        refusing.createContext("/", exchange -> {
            byte[] body = "{\"error\":\"invalid_client\",\"error_description\":\"bad secret\"}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(401, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        refusing.start();
        try {
            Map<String, String> bad = new HashMap<>(server.settings());
            bad.put("credential", "client:wrong");
            bad.put("oauth2-server-uri", "http://127.0.0.1:" + refusing.getAddress().getPort() + "/token");
            InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                    () -> new RestCatalog("guarded", bad).namespaces());
            assertTrue(refused.getMessage().contains("REST catalog guarded") && refused.getMessage().contains("refused the client credentials")
                    && refused.getMessage().contains("401"), refused.getMessage());
        } finally {
            refusing.stop(0);
        }
        InvalidArgumentException unknown = assertThrows(InvalidArgumentException.class,
                () -> new RestCatalog("typo", Map.of("uri", server.uri(), "warehous", "w")));
        assertTrue(unknown.getMessage().contains("unknown setting 'warehous'"), unknown.getMessage());
    }
}
