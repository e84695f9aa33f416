package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.RestCatalogTestServer;
import io.trino.testing.DistributedQueryRunner;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A REST catalog's token stays in the catalog: no EXPLAIN of any statement kind and no query info
 * (what the Web UI shows every user) holds it, while every statement still reaches the catalog.
 */
class TestCatalogSecrets {
    private static final String CANARY = "canary-token-7f3a91c2";

    /** A query runner with catalog {@code lake} on {@code server}, its token the canary, and schema {@code lake.db}. */
    private static DistributedQueryRunner runner(RestCatalogTestServer server) throws Exception {
        DistributedQueryRunner runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.catalog.type", "rest",
                "hyperstream.rest-catalog.uri", server.uri(), "hyperstream.rest-catalog.oauth2.token", CANARY));
        runner.execute("CREATE SCHEMA lake.db");
        return runner;
    }

    @Test
    void theCatalogTokenNeverReachesAPlanOrTheQueryInfo() throws Exception {
        Path dir = Files.createTempDirectory("hyperstream-secrets");
        try (RestCatalogTestServer server = RestCatalogTestServer.start(dir); DistributedQueryRunner runner = runner(server)) {
            runner.execute("CREATE TABLE lake.db.t AS SELECT * FROM (VALUES (BIGINT '1', 'a')) AS v(id, name)");
            for (String sql : List.of("EXPLAIN INSERT INTO lake.db.t VALUES (2, 'b')",
                    "EXPLAIN CREATE TABLE lake.db.u AS SELECT * FROM lake.db.t",
                    "EXPLAIN SELECT * FROM lake.db.t WHERE id = 1",
                    "EXPLAIN (TYPE IO, FORMAT JSON) SELECT * FROM lake.db.t",
                    "EXPLAIN ANALYZE SELECT * FROM lake.db.t",
                    "EXPLAIN UPDATE lake.db.t SET name = 'c' WHERE id = 1",
                    "EXPLAIN DELETE FROM lake.db.t WHERE name = 'a'")) {
                String plan = runner.execute(sql).getMaterializedRows().toString();
                assertFalse(plan.contains(CANARY), sql + " shows the catalog's token: " + plan);
                assertTrue(plan.contains("lake"), plan);
            }
            runner.execute("INSERT INTO lake.db.t VALUES (2, 'b')");
            var select = runner.executeWithPlan(runner.getDefaultSession(), "SELECT count(*) FROM lake.db.t");
            assertEquals(2L, select.result().getOnlyValue());
            String info = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create(runner.getCoordinator().getBaseUrl() + "/v1/query/" + select.queryId()))
                    .header("X-Trino-User", "user").build(), HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(info.contains("lake"), info.substring(0, Math.min(info.length(), 500)));
            // Trino itself lists each catalog's properties as its catalog file gives them (which is why a
            // catalog file names secrets as ${ENV:...}); nothing else may hold the token.
            String beyondTheCatalogFile = info.replace("\"hyperstream.rest-catalog.oauth2.token\":\"" + CANARY + "\"", "");
            int at = beyondTheCatalogFile.indexOf(CANARY);
            assertFalse(at >= 0, () -> "the query info holds the catalog's token: ..."
                    + beyondTheCatalogFile.substring(Math.max(0, at - 400), Math.min(beyondTheCatalogFile.length(), at + 100)));
        }
    }

    /**
     * CREATE OR REPLACE TABLE ... AS on a REST catalog's table is atomic, as in a directory catalog:
     * the rewrite-in-place idiom keeps exactly the selected rows in one new snapshot (one commit of
     * the catalog, history kept), a failing query leaves the table as it was, and the staging
     * writers hold no token.
     */
    @Test
    void createOrReplaceAsSelectOfARestTableReplacesInOneCommitOrNotAtAll() throws Exception {
        Path dir = Files.createTempDirectory("hyperstream-rest-replace");
        try (RestCatalogTestServer server = RestCatalogTestServer.start(dir); DistributedQueryRunner runner = runner(server)) {
            runner.execute("CREATE TABLE lake.db.t AS SELECT * FROM (VALUES (BIGINT '1', 'a'), (2, 'b'), (3, 'c')) AS v(id, name)");
            long before = (long) runner.execute("SELECT count(*) FROM \"t$snapshots\"").getOnlyValue();
            String plan = runner.execute("EXPLAIN CREATE OR REPLACE TABLE t AS SELECT * FROM t WHERE id > 1").getMaterializedRows().toString();
            assertFalse(plan.contains(CANARY), plan);
            runner.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM t WHERE id > 1");
            assertEquals(List.of(2L, 3L), runner.execute("SELECT id FROM t ORDER BY id").getOnlyColumn().toList());
            assertEquals(before + 1, runner.execute("SELECT count(*) FROM \"t$snapshots\"").getOnlyValue(), "one new snapshot, history kept");
            assertThrows(RuntimeException.class, () -> runner.execute("CREATE OR REPLACE TABLE t AS SELECT id, CAST(1 / (id - 3) AS varchar) AS name FROM t"));
            assertEquals(List.of(2L, 3L), runner.execute("SELECT id FROM t ORDER BY id").getOnlyColumn().toList());
            assertEquals(before + 1, runner.execute("SELECT count(*) FROM \"t$snapshots\"").getOnlyValue());
        }
    }
}
