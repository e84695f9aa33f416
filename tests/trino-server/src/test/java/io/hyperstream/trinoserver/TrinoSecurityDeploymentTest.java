package io.hyperstream.trinoserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.RestCatalogTestServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine's security model, decided in a real Trino server with file-based access control: a user
 * without privileges on a table is denied by every table function and procedure that names it, a row
 * filter or column mask is never bypassed, and a canary token configured in a REST catalog's file never
 * appears in EXPLAIN output, the query info JSON the Web UI shows, or the server log, for every
 * statement kind.
 */
class TrinoSecurityDeploymentTest {
    private static final String QUERY = "ARRAY[REAL '0.5', REAL '0.25', REAL '0.75', REAL '1']";

    @TempDir
    Path dir;

    /** admin owns everything; alice may read open.t (filtered and masked) and nothing of secret, and may call every routine. */
    private static final String RULES = """
            {
              "catalogs": [{"allow": "all"}],
              "schemas": [{"user": "admin", "owner": true}, {"user": "alice", "schema": "open", "owner": false}],
              "tables": [
                {"user": "admin", "privileges": ["SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP", "GRANT_SELECT"]},
                {"user": "alice", "schema": "open", "table": "t", "privileges": ["SELECT"], "filter": "id < 10",
                 "columns": [{"name": "name", "mask": "'***'"}]},
                {"user": "alice", "schema": "information_schema", "privileges": ["SELECT"]}
              ],
              "procedures": [{"privileges": ["EXECUTE"]}],
              "functions": [{"privileges": ["EXECUTE"]}]
            }
            """;

    @Test
    void everyEntryPointAsksAccessControlAndTheCatalogsSecretStaysInIt() throws Exception {
        Path lake = Files.createDirectories(dir.resolve("lake"));
        Path rules = Files.writeString(dir.resolve("rules.json"), RULES);
        Path accessControl = Files.writeString(dir.resolve("access-control.properties"),
                "access-control.name=file\nsecurity.config-file=" + rules + "\n");
        String canary = "canary" + UUID.randomUUID().toString().replace("-", "");
        try (RestCatalogTestServer rest = RestCatalogTestServer.start(dir.resolve("rest"));
                TrinoNode node = TrinoNode.start(dir.resolve("trino"), TrinoNode.Role.SINGLE, null, Map.of("lake", lake),
                        Map.of("rest", rest.uri()), "2G", List.of("access-control.config-files=" + accessControl),
                        Map.of("hyperstream.rest-catalog.oauth2.token", canary));
                Connection admin = DriverManager.getConnection("jdbc:trino://127.0.0.1:" + node.port + "?user=admin");
                Connection alice = DriverManager.getConnection("jdbc:trino://127.0.0.1:" + node.port + "?user=alice")) {
            long first = tables(admin);
            deniedEverywhere(alice, first);
            assertEquals(40L, TrinoServerDeploymentTest.scalar(admin, "SELECT count(*) FROM lake.secret.t"), "alice changed nothing");
            filteredAndMasked(alice);
            secretsStayInTheCatalog(node, admin, canary);
        }
    }

    /** secret.t and open.t, 40 rows each in two INSERTs; the first snapshot of secret.t. */
    private static long tables(Connection admin) throws SQLException {
        for (String schema : new String[] {"secret", "open"}) {
            execute(admin, "CREATE SCHEMA lake." + schema);
            execute(admin, "CREATE TABLE lake." + schema + ".t (id bigint, name varchar, emb array(real) WITH (dimension = 4))");
            for (int part = 0; part < 2; part++) {
                List<String> rows = new ArrayList<>();
                for (int id = part * 20; id < part * 20 + 20; id++) {
                    rows.add("(" + id + ", 'n" + id + "', ARRAY[REAL '" + id + "', REAL '0.25', REAL '0.75', REAL '1'])");
                }
                execute(admin, "INSERT INTO lake." + schema + ".t VALUES " + String.join(", ", rows));
            }
        }
        return TrinoServerDeploymentTest.scalar(admin,
                "SELECT snapshot_id FROM lake.secret.\"t$snapshots\" ORDER BY committed_at LIMIT 1");
    }

    private static void deniedEverywhere(Connection alice, long first) {
        List<String> statements = List.of(
                "SELECT * FROM lake.secret.t",
                "SELECT * FROM TABLE(lake.system.vector_search('secret', 't', 'emb', " + QUERY + ", 10))",
                "SELECT * FROM TABLE(lake.system.vector_join(input => TABLE(SELECT " + QUERY + " AS q), query_column => 'q', "
                        + "schema_name => 'secret', table_name => 't', column_name => 'emb', k => 3))",
                "CALL lake.system.rollback_to_snapshot('secret', 't', " + first + ")",
                "CALL lake.system.expire_snapshots('secret', 't', 0, 1)",
                "CALL lake.system.remove_orphan_files('secret', 't', 72)",
                "CALL lake.system.rewrite_data_files('secret', 't')",
                "CALL lake.system.create_vector_index('secret', 't', 'emb')",
                "CALL lake.system.drop_vector_index('secret', 't', 'emb')",
                "ALTER TABLE lake.secret.t EXECUTE optimize",
                "ALTER TABLE lake.secret.t EXECUTE expire_snapshots(older_than_hours => 0)",
                "ALTER TABLE lake.secret.t EXECUTE remove_orphan_files",
                "ALTER TABLE lake.secret.t EXECUTE create_vector_index(column_name => 'emb')",
                "ALTER TABLE lake.secret.t EXECUTE drop_vector_index(column_name => 'emb')");
        for (String statement : statements) {
            SQLException e = assertThrows(SQLException.class, () -> execute(alice, statement), statement);
            assertTrue(e.getMessage().contains("Access Denied"), statement + ": " + e.getMessage());
        }
    }

    /** Trino applies alice's row filter and mask to her SELECT; a table function, which cannot, refuses. */
    private static void filteredAndMasked(Connection alice) throws SQLException {
        assertEquals(List.of(List.of(0L, "***"), List.of(9L, "***")), TrinoServerDeploymentTest.rows(alice,
                "SELECT id, name FROM lake.open.t WHERE id IN (0, 9, 10, 39) ORDER BY id"));
        for (String statement : List.of(
                "SELECT * FROM TABLE(lake.system.vector_search('open', 't', 'emb', " + QUERY + ", 50))",
                "SELECT * FROM TABLE(lake.system.vector_join(input => TABLE(SELECT " + QUERY + " AS q), query_column => 'q', "
                        + "schema_name => 'open', table_name => 't', column_name => 'emb', k => 50))")) {
            SQLException e = assertThrows(SQLException.class, () -> execute(alice, statement), statement);
            assertTrue(e.getMessage().contains("row filter or column mask"), statement + ": " + e.getMessage());
        }
    }

    /** Every statement kind on the REST catalog, then the canary token is nowhere a user or an operator reads. */
    private static void secretsStayInTheCatalog(TrinoNode node, Connection admin, String canary) throws Exception {
        List<String> shown = new ArrayList<>();
        execute(admin, "CREATE SCHEMA rest.s");
        execute(admin, "CREATE TABLE rest.s.t (id bigint, name varchar)");
        for (String statement : List.of(
                "EXPLAIN INSERT INTO rest.s.t VALUES (1, 'a')",
                "EXPLAIN CREATE TABLE rest.s.u AS SELECT * FROM rest.s.t",
                "EXPLAIN (TYPE DISTRIBUTED) SELECT * FROM rest.s.t WHERE id > 0",
                "EXPLAIN DELETE FROM rest.s.t WHERE id = 1",
                "EXPLAIN UPDATE rest.s.t SET name = 'b' WHERE id = 1",
                "EXPLAIN MERGE INTO rest.s.t t USING (VALUES (1, 'c')) s(id, name) ON t.id = s.id "
                        + "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)",
                "INSERT INTO rest.s.t VALUES (1, 'a'), (2, 'b')",
                "CREATE TABLE rest.s.u AS SELECT * FROM rest.s.t",
                "UPDATE rest.s.t SET name = 'z' WHERE id = 2",
                "DELETE FROM rest.s.t WHERE id = 1",
                "EXPLAIN ANALYZE SELECT count(*) FROM rest.s.t",
                "SHOW CREATE TABLE rest.s.t",
                "SELECT * FROM rest.s.\"t$properties\"",
                "SELECT * FROM rest.s.\"t$snapshots\"",
                "SELECT * FROM rest.s.t",
                "SHOW SESSION")) {
            shown.add(text(admin, statement));
        }
        try {
            execute(admin, "SELECT * FROM rest.s.missing");
        } catch (SQLException e) {
            shown.add(e.getMessage());
        }
        for (String output : shown) {
            assertFalse(output.contains(canary), "the token shows in a statement's output:\n" + output);
        }
        HttpClient http = HttpClient.newHttpClient();
        String list = get(http, node.uri().resolve("/v1/query"));
        Matcher ids = Pattern.compile("\"queryId\"\\s*:\\s*\"([^\"]+)\"").matcher(list);
        int infos = 0;
        while (ids.find()) {
            String info = get(http, node.uri().resolve("/v1/query/" + ids.group(1)));
            assertFalse(info.contains(canary), "the token is in the query info of " + ids.group(1));
            infos++;
        }
        assertTrue(infos >= shown.size(), "every query's info was read: " + infos);
        assertFalse(node.log().contains(canary), "the token is in the server log");
        assertTrue(Files.readString(node.home.resolve("etc").resolve("catalog").resolve("rest.properties")).contains(canary),
                "the token is configured where the operator put it");
    }

    private static String get(HttpClient http, URI uri) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri).header("X-Trino-User", "admin").build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), uri + ": " + response.body());
        return response.body();
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /** Every value {@code sql} returns, as text. */
    private static String text(Connection c, String sql) throws SQLException {
        StringBuilder out = new StringBuilder();
        try (Statement s = c.createStatement()) {
            if (s.execute(sql)) {
                try (ResultSet r = s.getResultSet()) {
                    int columns = r.getMetaData().getColumnCount();
                    while (r.next()) {
                        for (int i = 1; i <= columns; i++) {
                            out.append(r.getString(i)).append('\t');
                        }
                        out.append('\n');
                    }
                }
            }
        }
        return out.toString();
    }
}
