package io.hyperstream.trinoserver;

import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.execute;
import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.rows;
import static io.hyperstream.trinoserver.TrinoServerDeploymentTest.scalar;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.hyperstream.jni.RestCatalogTestServer;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tables shared with Trino's own Iceberg connector, in one real Trino server: catalog {@code ice}
 * (Trino's Iceberg connector) and catalog {@code lake} (our plugin) over the same Iceberg REST catalog.
 * Seeded random INSERT, UPDATE, DELETE and MERGE statements, each run through a catalog drawn at
 * random, with each one's compaction and snapshot expiry between them; after every
 * statement both catalogs read exactly the rows of an in-memory model and list the same snapshots.
 * Format versions 2 and 3. A failure names the seed, the table and the statements so far.
 * {@code -Dhyperstream.company.seeds=N} runs more seeds (from {@code -Dhyperstream.company.seed}).
 */
class TrinoIcebergCompanyTest {
    @TempDir
    Path dir;

    /** A row of the model: its group, value and tag (null allowed). */
    private record Row(long grp, double val, String tag) {
        String text(long id) {
            return id + "|" + grp + "|" + val + "|" + tag;
        }
    }

    @Test
    void trinosIcebergConnectorAndOursKeepEachOthersChanges() throws Exception {
        int seeds = Integer.getInteger("hyperstream.company.seeds", 2);
        long first = Long.getLong("hyperstream.company.seed", 1);
        String iceberg = String.join("\n", "connector.name=iceberg", "iceberg.catalog.type=rest",
                "iceberg.rest-catalog.uri=%s", "fs.native-local.enabled=true", "local.location=/", "");
        try (RestCatalogTestServer rest = RestCatalogTestServer.start(dir.resolve("rest"), "file://" + dir.resolve("warehouse"), Map.of());
                TrinoNode node = TrinoNode.start(dir.resolve("trino"), TrinoNode.Role.SINGLE, null, Map.of(), Map.of("lake", rest.uri()),
                        "2G", List.of(), Map.of(), Map.of("ice", iceberg.formatted(rest.uri())));
                Connection c = DriverManager.getConnection(node.jdbcUrl())) {
            execute(c, "CREATE SCHEMA ice.db");
            for (long seed = first; seed < first + seeds; seed++) {
                for (int version : new int[] {2, 3}) {
                    String table = "t" + seed + "_v" + version;
                    try {
                        run(c, seed, version, table);
                    } catch (AssertionError | SQLException e) {
                        e.addSuppressed(new Exception("server log:\n" + node.logTail()));
                        throw e;
                    }
                }
            }
        }
    }

    private static void run(Connection c, long seed, int version, String table) throws SQLException {
        Random random = new Random(seed * 31 + version);
        TreeMap<Long, Row> model = new TreeMap<>();
        List<String> steps = new ArrayList<>();
        String creator = random.nextBoolean() ? "ice" : "lake";
        String create = "CREATE TABLE " + creator + ".db." + table + " (id bigint, grp bigint, val double, tag varchar) WITH (format_version = "
                + version + ")";
        steps.add(create);
        execute(c, create);
        long nextId = 0;
        for (int step = 0; step < 12; step++) {
            String writer = random.nextBoolean() ? "ice" : "lake";
            String t = writer + ".db." + table;
            String statement;
            switch (step < 2 ? 0 : random.nextInt(8)) {
                case 0 -> {
                    List<String> values = new ArrayList<>();
                    for (int i = 0, n = 5 + random.nextInt(20); i < n; i++) {
                        Row row = new Row(random.nextInt(4), random.nextInt(100) / 4.0, random.nextInt(5) == 0 ? null : "g" + random.nextInt(3));
                        model.put(nextId, row);
                        values.add("(" + nextId++ + ", " + row.grp + ", " + row.val + ", " + (row.tag == null ? "NULL" : "'" + row.tag + "'") + ")");
                    }
                    statement = "INSERT INTO " + t + " VALUES " + String.join(", ", values);
                }
                case 1 -> {
                    long grp = random.nextInt(4);
                    statement = "UPDATE " + t + " SET val = val + 1, tag = 'u' WHERE grp = " + grp;
                    model.replaceAll((id, r) -> r.grp == grp ? new Row(r.grp, r.val + 1, "u") : r);
                }
                case 2 -> {
                    int m = 2 + random.nextInt(4);
                    int r = random.nextInt(m);
                    statement = "DELETE FROM " + t + " WHERE id % " + m + " = " + r;
                    model.keySet().removeIf(id -> id % m == r);
                }
                case 3 -> {
                    // Matched rows of one group go, others change their value; new keys come in.
                    long grp = random.nextInt(4);
                    List<Long> keys = new ArrayList<>();
                    for (int i = 0; i < 6; i++) {
                        keys.add((long) random.nextInt((int) nextId + 4));
                    }
                    statement = "MERGE INTO " + t + " t USING (SELECT DISTINCT id FROM (VALUES "
                            + keys.stream().map(String::valueOf).collect(Collectors.joining(", ")) + ") s(id)) s ON t.id = s.id "
                            + "WHEN MATCHED AND t.grp = " + grp + " THEN DELETE WHEN MATCHED THEN UPDATE SET val = -t.val "
                            + "WHEN NOT MATCHED THEN INSERT VALUES (s.id, 9, 0.5, 'm')";
                    for (long key : keys.stream().distinct().toList()) {
                        Row row = model.get(key);
                        if (row == null) {
                            model.put(key, new Row(9, 0.5, "m"));
                            nextId = Math.max(nextId, key + 1);
                        } else if (row.grp == grp) {
                            model.remove(key);
                        } else {
                            model.put(key, new Row(row.grp, -row.val, row.tag));
                        }
                    }
                }
                case 4 -> statement = "ALTER TABLE ice.db." + table + " EXECUTE optimize";
                case 5 -> statement = "ALTER TABLE ice.db." + table + " EXECUTE expire_snapshots(retention_threshold => '0s')";
                case 6 -> statement = "CALL lake.system.rewrite_data_files('db', '" + table + "')";
                default -> statement = "CALL lake.system.expire_snapshots('db', '" + table + "', 0.0, 1)";
            }
            steps.add(statement);
            String where = "seed " + seed + ", format version " + version + ", created by " + creator + ", steps:\n  "
                    + String.join("\n  ", steps);
            try {
                execute(c, statement.contains("expire_snapshots") ? "SET SESSION ice.expire_snapshots_min_retention = '0s'" : "SELECT 1");
                execute(c, statement);
            } catch (SQLException e) {
                throw new AssertionError(where + "\nfailed: " + e.getMessage(), e);
            }
            List<String> expected = model.entrySet().stream().map(e -> e.getValue().text(e.getKey())).toList();
            for (String catalog : List.of("ice", "lake")) {
                List<String> read = rows(c, "SELECT id, grp, val, tag FROM " + catalog + ".db." + table + " ORDER BY id").stream()
                        .map(r -> r.get(0) + "|" + r.get(1) + "|" + r.get(2) + "|" + r.get(3)).toList();
                assertEquals(expected, read, catalog + " reads the model; " + where);
            }
            assertEquals(scalar(c, "SELECT count(*) FROM ice.db.\"" + table + "$snapshots\""),
                    scalar(c, "SELECT count(*) FROM lake.db.\"" + table + "$snapshots\""), "the same snapshots; " + where);
        }
        execute(c, "DROP TABLE ice.db." + table);
    }
}
