package io.hyperstream.trino;

import static io.trino.testing.TestingAccessControlManager.TestingPrivilegeType.DELETE_TABLE;
import static io.trino.testing.TestingAccessControlManager.TestingPrivilegeType.INSERT_TABLE;
import static io.trino.testing.TestingAccessControlManager.TestingPrivilegeType.SELECT_COLUMN;
import static io.trino.testing.TestingAccessControlManager.privilege;
import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.metadata.QualifiedObjectName;
import io.trino.spi.security.ViewExpression;
import io.trino.testing.DistributedQueryRunner;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Every entry point that names a table asks Trino's access control: the table functions as a SELECT
 * of every column they return (a row filter or column mask they would not apply refuses them), the
 * maintenance procedures as an INSERT and a DELETE (they change what every reader sees).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestAccessControl {
    private static final String SEARCH = "SELECT count(*) FROM TABLE(lake.system.vector_search('secret', 't', 'emb', ARRAY[0.0, 0.0], 10))";
    private static final String JOIN = "SELECT count(*) FROM TABLE(lake.system.vector_join(input => TABLE(SELECT "
            + "CAST(ARRAY[0.0, 0.0] AS array(real)) AS q), query_column => 'q', schema_name => 'secret', table_name => 't', "
            + "column_name => 'emb', k => 2))";
    private DistributedQueryRunner runner;

    @BeforeAll
    void start() throws Exception {
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("secret").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", Files.createTempDirectory("hyperstream-acl").toString()));
        runner.execute("CREATE SCHEMA lake.secret");
        runner.execute("CREATE TABLE lake.secret.t WITH (vectors = 'emb:2') AS "
                + "SELECT id, CAST(ARRAY[id, 1.0] AS array(real)) AS emb FROM UNNEST(sequence(1, 20)) AS u(id)");
        runner.execute("INSERT INTO lake.secret.t SELECT 21, CAST(ARRAY[21, 1.0] AS array(real))");
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    @AfterEach
    void allowAgain() {
        runner.getAccessControl().reset();
    }

    private void assertDenied(String sql) {
        Exception e = assertThrows(Exception.class, () -> runner.execute(sql), sql);
        assertTrue(e.getMessage().contains("Access Denied"), sql + ": " + e.getMessage());
    }

    @Test
    void tableFunctionsReadOnlyWhatTheUserMaySelect() {
        assertEquals(10L, runner.execute(SEARCH).getOnlyValue());
        runner.getAccessControl().deny(privilege("t.emb", SELECT_COLUMN));
        assertDenied(SEARCH);
        assertDenied(JOIN);
        runner.getAccessControl().reset();
        runner.getAccessControl().deny(privilege("t.id", SELECT_COLUMN));
        assertDenied(SEARCH);
    }

    @Test
    void tableFunctionsRefuseTablesWithARowFilterOrColumnMask() {
        QualifiedObjectName table = new QualifiedObjectName("lake", "secret", "t");
        runner.getAccessControl().rowFilter(table, "user", ViewExpression.builder().expression("id < 5").build());
        assertDenied(SEARCH);
        assertEquals(4L, runner.execute("SELECT count(*) FROM lake.secret.t").getOnlyValue(), "a plain read applies the filter");
        runner.getAccessControl().reset();
        runner.getAccessControl().columnMask(table, "id", "user", ViewExpression.builder().expression("0").build());
        assertDenied(JOIN);
    }

    @Test
    void maintenanceProceduresNeedInsertAndDeleteOnTheTable() {
        long first = (Long) runner.execute("SELECT min(snapshot_id) FROM lake.secret.\"t$snapshots\"").getOnlyValue();
        for (var denied : List.of(privilege("t", INSERT_TABLE), privilege("t", DELETE_TABLE))) {
            runner.getAccessControl().reset();
            runner.getAccessControl().deny(denied);
            assertDenied("CALL lake.system.rollback_to_snapshot('secret', 't', " + first + ")");
            assertDenied("CALL lake.system.expire_snapshots('secret', 't', 0, 1)");
            assertDenied("CALL lake.system.remove_orphan_files('secret', 't', 24)");
            assertDenied("CALL lake.system.rewrite_data_files('secret', 't')");
            assertDenied("CALL lake.system.create_vector_index('secret', 't', 'emb')");
            assertDenied("CALL lake.system.drop_vector_index('secret', 't', 'emb')");
        }
        runner.getAccessControl().reset();
        assertEquals(21L, runner.execute("SELECT count(*) FROM lake.secret.t").getOnlyValue(), "nothing was rolled back");
    }
}
