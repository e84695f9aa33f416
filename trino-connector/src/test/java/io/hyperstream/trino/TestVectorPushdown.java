package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.BatchListReader;
import io.hyperstream.jni.NativeTable;
import io.trino.Session;
import io.trino.sql.planner.plan.TopNNode;
import io.trino.sql.query.QueryAssertions;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedRow;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;
import java.util.function.LongPredicate;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Vector top-k and filters pushed into the native scan: {@code isFullyPushedDown()} also runs each
 * query with pushdown disabled and checks that both answers agree.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestVectorPushdown {
    private static final int DIM = 16;
    private static final int FILES = 3;
    private static final int ROWS_PER_FILE = 1500;

    private DistributedQueryRunner runner;
    private QueryAssertions assertions;
    private final float[][] vectors = new float[FILES * ROWS_PER_FILE][DIM];
    private final float[] query = new float[DIM];
    private String literal;
    private Path root;

    @BeforeAll
    void start() throws Exception {
        Random random = new Random(11);
        for (float[] v : vectors) {
            for (int j = 0; j < DIM; j++) {
                v[j] = (float) random.nextGaussian();
            }
        }
        StringJoiner joined = new StringJoiner(", ", "ARRAY[", "]");
        for (int j = 0; j < DIM; j++) {
            query[j] = Math.round(random.nextGaussian() * 100) / 100.0f;
            joined.add(String.format("%.2f", query[j]));
        }
        literal = joined.toString();
        root = Files.createTempDirectory("hyperstream-vectors");
        writeTable(root.resolve("db").resolve("docs").toString());
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
        assertions = new QueryAssertions(runner);
    }

    @AfterAll
    void stop() {
        if (assertions != null) {
            assertions.close();
        }
    }

    private static String category(long id) {
        return "c" + (id % 10);
    }

    private void writeTable(String location) {
        Field item = new Field("item", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null);
        Schema schema = new Schema(List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                Field.nullable("category", ArrowType.Utf8.INSTANCE),
                new Field("embedding", FieldType.notNullable(new ArrowType.FixedSizeList(DIM)), List.of(item))));
        try (BufferAllocator allocator = Allocators.child("trino-vector-test");
                NativeTable table = NativeTable.create(location, schema, Map.of(), Map.of(), allocator)) {
            for (int f = 0; f < FILES; f++) {
                BatchListReader reader = new BatchListReader(allocator, schema);
                try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
                    root.allocateNew();
                    FixedSizeListVector embeddings = (FixedSizeListVector) root.getVector("embedding");
                    Float4Vector elements = (Float4Vector) embeddings.getDataVector();
                    for (int i = 0; i < ROWS_PER_FILE; i++) {
                        int id = f * ROWS_PER_FILE + i;
                        ((BigIntVector) root.getVector("id")).setSafe(i, id);
                        ((VarCharVector) root.getVector("category")).setSafe(i, category(id).getBytes(StandardCharsets.UTF_8));
                        embeddings.setNotNull(i);
                        for (int j = 0; j < DIM; j++) {
                            elements.setSafe(i * DIM + j, vectors[id][j]);
                        }
                    }
                    root.setRowCount(ROWS_PER_FILE);
                    reader.add(root);
                }
                table.append(allocator, reader);
            }
        }
    }

    private record Hit(long id, double value) {}

    /** The reference: every row's value of {@code function} in double, sorted, first k. */
    private List<Hit> reference(String function, LongPredicate keep, boolean descending, int k) {
        List<Hit> hits = new ArrayList<>();
        for (int id = 0; id < vectors.length; id++) {
            if (!keep.test(id)) {
                continue;
            }
            double dot = 0, l2 = 0, l1 = 0, nq = 0, nv = 0;
            for (int j = 0; j < DIM; j++) {
                double a = vectors[id][j];
                double b = query[j];
                dot += a * b;
                l1 += Math.abs(a - b);
                l2 += (a - b) * (a - b);
                nq += b * b;
                nv += a * a;
            }
            double value = switch (function) {
                case "euclidean_distance" -> Math.sqrt(l2);
                case "cosine_distance" -> 1 - dot / Math.sqrt(nq * nv);
                case "dot_product" -> dot;
                case "l1" -> l1;
                default -> throw new IllegalArgumentException(function);
            };
            hits.add(new Hit(id, value));
        }
        Comparator<Hit> order = Comparator.comparingDouble(Hit::value);
        hits.sort(descending ? order.reversed() : order);
        return hits.subList(0, k);
    }

    private void assertAnswer(String sql, List<Hit> want) {
        List<MaterializedRow> rows = runner.execute(sql).getMaterializedRows();
        assertEquals(want.size(), rows.size(), sql);
        for (int i = 0; i < rows.size(); i++) {
            assertEquals(want.get(i).id(), rows.get(i).getField(0), sql + " rank " + i);
            assertEquals(want.get(i).value(), (Double) rows.get(i).getField(1), 1e-4, sql + " rank " + i);
        }
    }

    @Test
    void orderByDistanceLimitIsANativeTopK() {
        for (String function : List.of("cosine_distance", "euclidean_distance")) {
            String sql = "SELECT id, " + function + "(embedding, " + literal + ") AS d FROM docs ORDER BY d LIMIT 10";
            assertThat(assertions.query(sql)).isFullyPushedDown();
            assertAnswer(sql, reference(function, id -> true, false, 10));
            assertThat(assertions.query("SELECT id FROM docs ORDER BY " + function + "(embedding, " + literal + ") LIMIT 10"))
                    .isFullyPushedDown();
        }
        String dot = "SELECT id, dot_product(embedding, " + literal + ") AS d FROM docs ORDER BY d DESC LIMIT 7";
        assertThat(assertions.query(dot)).isFullyPushedDown();
        assertAnswer(dot, reference("dot_product", id -> true, true, 7));
    }

    @Test
    void theCatalogsOwnDistanceFunctionsComputeAndPush() {
        String sql = "SELECT id, lake.system.l1_distance(embedding, " + literal + ") AS d FROM docs WHERE category = 'c2'"
                + " ORDER BY d LIMIT 8";
        assertThat(assertions.query(sql)).isFullyPushedDown();
        assertAnswer(sql, reference("l1", id -> id % 10 == 2, false, 8));
        String explain = (String) runner.execute("EXPLAIN " + sql).getOnlyValue();
        assertTrue(explain.contains("nativeTopK=8 nearest by l1_distance"), explain);
        // Unpushed (no LIMIT), Trino runs the function itself: the same values.
        List<MaterializedRow> rows = runner.execute("SELECT id, lake.system.l1_distance(embedding, " + literal
                + ") FROM docs WHERE id < 20 ORDER BY id").getMaterializedRows();
        for (MaterializedRow row : rows) {
            long id = (Long) row.getField(0);
            assertEquals(reference("l1", i -> i == id, false, 1).get(0).value(), (Double) row.getField(1), 1e-4);
        }
        // 0x0F and 0xF1 differ in 7 bits, share 1 and set 8 between them.
        MaterializedRow bits = runner.execute("SELECT lake.system.hamming_distance(X'0F', X'F1'), lake.system.jaccard_distance(X'0F', X'F1'),"
                + " lake.system.jaccard_distance(X'0000', X'0000'), lake.system.hamming_distance(X'0F', CAST(NULL AS varbinary))")
                .getMaterializedRows().get(0);
        assertEquals(7.0, bits.getField(0));
        assertEquals(0.875, (Double) bits.getField(1), 1e-12);
        assertEquals(0.0, bits.getField(2));
        assertEquals(null, bits.getField(3));
        // Over a varbinary column of bit-packed vectors, ORDER BY hamming/jaccard LIMIT k is a native top-k.
        runner.execute("CREATE TABLE prints AS SELECT id, to_big_endian_64(id * 2654435761) AS bits FROM UNNEST(sequence(0, 499)) AS t(id)");
        for (String function : List.of("hamming_distance", "jaccard_distance")) {
            String top = "SELECT lake.system." + function + "(bits, X'00FF00FF0F0F3C3C') AS d FROM prints WHERE id >= 40 ORDER BY d LIMIT 12";
            assertThat(assertions.query(top)).isFullyPushedDown();
            String plan = (String) runner.execute("EXPLAIN " + top).getOnlyValue();
            assertTrue(plan.contains("nativeTopK=12 nearest by " + function), plan);
        }
        List<Object> names = runner.execute("SHOW FUNCTIONS FROM lake.system").getMaterializedRows().stream()
                .map(row -> row.getField(0)).toList();
        assertTrue(names.containsAll(List.of("l1_distance", "hamming_distance", "jaccard_distance")), names.toString());
        for (String[] bad : new String[][] {
                {"lake.system.l1_distance(ARRAY[1.0], ARRAY[1.0, 2.0])", "l1_distance: vectors of 1 and 2 dimensions"},
                {"lake.system.l1_distance(ARRAY[1.0, NULL], ARRAY[1.0, 2.0])", "holds a null at position 1"},
                {"lake.system.hamming_distance(X'00', X'0000')", "hamming_distance: bit vectors of 1 and 2 bytes"},
                {"lake.system.hamming_distance('a', 'b')", "Unexpected parameters (varchar(1), varchar(1)) for function lake.system.hamming_distance"}}) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute("SELECT " + bad[0]));
            assertTrue(e.getMessage().contains(bad[1]), bad[0] + ": " + e.getMessage());
        }
    }

    @Test
    void sparseVectorColumnsComputeAndPush() {
        runner.execute("CREATE TABLE terms AS SELECT id, CAST(ROW(p, transform(p, i -> sin(i * 0.7 + id * 1.3))) AS "
                + "ROW(indices array(integer), \"values\" array(real))) AS terms FROM (SELECT id, "
                + "filter(sequence(0, 49), i -> (i * 7 + id * 13) % 5 = 0) AS p FROM UNNEST(sequence(0, 299)) AS t(id))");
        // Position → value; positions from 0.
        String query = "MAP(ARRAY[3, 7, 40], ARRAY[0.5, -1.25, 2.0])";
        for (String function : List.of("euclidean_distance", "cosine_distance", "l1_distance", "dot_product")) {
            boolean larger = function.equals("dot_product");
            String sql = "SELECT id, lake.system." + function + "(terms, " + query + ") AS d FROM terms WHERE id >= 30 ORDER BY d"
                    + (larger ? " DESC" : "") + " LIMIT 8";
            assertThat(assertions.query(sql)).isFullyPushedDown();
            String plan = (String) runner.execute("EXPLAIN " + sql).getOnlyValue();
            assertTrue(plan.contains("nativeTopK=8 nearest by " + function), plan);
            // Unpushed (no LIMIT), Trino runs the function itself; the pushed answer is its first 8.
            List<MaterializedRow> all = runner.execute("SELECT id, lake.system." + function + "(terms, " + query + ") AS d FROM terms "
                    + "WHERE id >= 30").getMaterializedRows().stream()
                    .sorted(Comparator.comparingDouble(r -> (larger ? -1 : 1) * (Double) r.getField(1))).toList();
            List<MaterializedRow> pushed = runner.execute(sql).getMaterializedRows();
            assertEquals(8, pushed.size());
            for (int i = 0; i < 8; i++) {
                assertEquals((Double) all.get(i).getField(1), (Double) pushed.get(i).getField(1), 1e-5, function + " rank " + i);
            }
        }
        // A row without a vector: its null distance goes where the order says, in the native top-k too.
        runner.execute("INSERT INTO terms VALUES (1000, NULL)");
        for (String nulls : List.of("NULLS FIRST", "NULLS LAST")) {
            String sql = "SELECT id, lake.system.l1_distance(terms, " + query + ") AS d FROM terms ORDER BY d " + nulls + " LIMIT 3";
            assertThat(assertions.query(sql)).isFullyPushedDown();
            List<MaterializedRow> rows = runner.execute(sql).getMaterializedRows();
            assertEquals(nulls.equals("NULLS FIRST"), rows.get(0).getField(0).equals(1000L), nulls + ": " + rows);
        }
        // The definitions, by hand: (1, 2) at positions 0 and 2 against 3 at position 2.
        MaterializedRow row = runner.execute("SELECT lake.system.euclidean_distance(v, q), lake.system.dot_product(v, q), "
                + "lake.system.l1_distance(v, q), lake.system.cosine_distance(v, q) FROM (VALUES (CAST(ROW(ARRAY[0, 2], "
                + "ARRAY[1, 2]) AS ROW(indices array(integer), \"values\" array(real))), MAP(ARRAY[2], ARRAY[3e0]))) AS t(v, q)")
                .getMaterializedRows().get(0);
        assertEquals(Math.sqrt(2), (Double) row.getField(0), 1e-9);
        assertEquals(6.0, (Double) row.getField(1), 1e-9);
        assertEquals(2.0, (Double) row.getField(2), 1e-9);
        assertEquals(1 - 6 / (Math.sqrt(5) * 3), (Double) row.getField(3), 1e-9);
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute("SELECT lake.system.l1_distance("
                + "CAST(ROW(ARRAY[2, 1], ARRAY[1, 2]) AS ROW(indices array(integer), \"values\" array(real))), MAP(ARRAY[1], ARRAY[1e0]))"));
        assertTrue(e.getMessage().contains("l1_distance: sparse vector indices must be non-negative and strictly increasing"),
                e.getMessage());
    }

    @Test
    void topKUnderAWhereClauseIsFullyPushedAndHonoursTheFilter() {
        String sql = "SELECT id, cosine_distance(embedding, " + literal + ") AS d FROM docs"
                + " WHERE category IN ('c3', 'c7') AND id >= 500 ORDER BY d LIMIT 25";
        assertThat(assertions.query(sql)).isFullyPushedDown();
        assertAnswer(sql, reference("cosine_distance", id -> (id % 10 == 3 || id % 10 == 7) && id >= 500, false, 25));
        String explain = (String) runner.execute("EXPLAIN " + sql).getOnlyValue();
        assertTrue(explain.contains("nativeTopK=25 nearest by cosine_distance"), explain);
        assertTrue(explain.contains("\"op\":\"in\""), explain);
    }

    @Test
    void theVectorSearchTableFunctionRunsANativeTopKByAnyMetric() {
        String sql = "SELECT id, _distance FROM TABLE(lake.system.vector_search('db', 'docs', 'embedding', " + literal + ", 12, 'l1'))";
        assertAnswer(sql, reference("l1", id -> true, false, 12));
        assertEquals(List.of("id", "category", "embedding", "_distance"), runner.execute(
                "SELECT * FROM TABLE(lake.system.vector_search('db', 'docs', 'embedding', " + literal + ", 3))")
                .getColumnNames());
        // Default metric l2: the same rows as the pushed ORDER BY euclidean_distance.
        List<Object> viaFunction = runner.execute("SELECT id FROM TABLE(lake.system.vector_search('db', 'docs', 'embedding', "
                + literal + ", 9))").getOnlyColumn().toList();
        assertEquals(reference("euclidean_distance", id -> true, false, 9).stream().map(Hit::id).toList(), viaFunction);
        String explain = (String) runner.execute("EXPLAIN " + sql).getOnlyValue();
        assertTrue(explain.contains("nativeTopK=12 nearest by l1"), explain);
        for (String[] bad : new String[][] {
                {"'db', 'docs', 'embedding', " + literal + ", 0", "k must be between 1 and 100000"},
                {"'db', 'docs', 'embedding', " + literal + ", 5, 'hamming'", "unknown metric 'hamming'"},
                {"'db', 'docs', 'category', " + literal, "is not a vector column"},
                {"'db', 'docs', 'nope', " + literal, "column 'nope' is not in table db.docs"},
                {"'db', 'missing', 'embedding', " + literal, "table db.missing does not exist"},
                {"'db', 'docs', 'embedding', ARRAY[1.0, 2.0]", "dimension"},
                {"'db', 'docs', 'embedding', ARRAY[1.0, nan()]", "every element must be a finite number"}}) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(
                    "SELECT * FROM TABLE(lake.system.vector_search(" + bad[0] + "))"));
            assertTrue(e.getMessage().contains(bad[1]), bad[0] + ": " + e.getMessage());
        }
    }

    @Test
    void farthestFirstIsNotPushedButStillRight() {
        String sql = "SELECT id, euclidean_distance(embedding, " + literal + ") AS d FROM docs ORDER BY d DESC LIMIT 5";
        assertThat(assertions.query(sql)).isNotFullyPushedDown(TopNNode.class);
        assertAnswer(sql, reference("euclidean_distance", id -> true, true, 5));
    }

    @Test
    void filtersArePushedIntoTheNativeScan() {
        assertThat(assertions.query("SELECT id FROM docs WHERE category = 'c4' AND id BETWEEN 100 AND 300"))
                .isFullyPushedDown();
        assertEquals(20L, runner.execute("SELECT count(*) FROM docs WHERE category = 'c4' AND id BETWEEN 100 AND 300")
                .getOnlyValue());
        // A distance computed for every row (no LIMIT) matches the reference too.
        List<MaterializedRow> rows = runner.execute("SELECT id, cosine_distance(embedding, " + literal
                + ") FROM docs WHERE id < 50").getMaterializedRows();
        assertEquals(50, rows.size());
        for (Hit hit : reference("cosine_distance", id -> id < 50, false, 50)) {
            MaterializedRow row = rows.stream().filter(r -> (Long) r.getField(0) == hit.id()).findFirst().orElseThrow();
            assertEquals(hit.value(), (Double) row.getField(1), 1e-4);
        }
    }

    @Test
    void vectorIndexesAreManagedByProceduresAndUsedAsTheSessionSays() {
        writeTable(root.resolve("db").resolve("indexed").toString());
        runner.execute("CALL lake.system.create_vector_index('db', 'indexed', 'embedding', '{\"metric\":\"l2\",\"m\":12}')");
        String sql = "SELECT id, euclidean_distance(embedding, " + literal + ") AS d FROM indexed ORDER BY d LIMIT 10";
        List<Hit> want = reference("euclidean_distance", id -> true, false, 10);
        // A short candidate list keeps the graph in use on these small files; -1 is exact search.
        Session graph = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", "10").build();
        List<MaterializedRow> rows = runner.execute(graph, sql).getMaterializedRows();
        assertEquals(10, rows.size());
        long found = 0;
        for (MaterializedRow row : rows) {
            long id = (Long) row.getField(0);
            assertEquals(reference("euclidean_distance", i -> i == id, false, 1).get(0).value(), (Double) row.getField(1), 1e-4);
            found += want.stream().filter(h -> h.id() == id).count();
        }
        assertTrue(found >= 7, "recall@10 " + found / 10.0);
        Session exact = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", "-1").build();
        // (isFullyPushedDown also compares the answer with Trino's own exact one, so it is checked here.)
        assertThat(assertions.query(exact, sql)).isFullyPushedDown();
        List<MaterializedRow> exactRows = runner.execute(exact, sql).getMaterializedRows();
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i).id(), exactRows.get(i).getField(0), "exact rank " + i);
        }
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(
                "CALL lake.system.create_vector_index('db', 'indexed', 'category')"));
        assertTrue(e.getMessage().contains("not a float vector column"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute(
                "CALL lake.system.create_vector_index('db', 'indexed', 'embedding', '{\"m\":1}')"));
        assertTrue(e.getMessage().contains("m must be between 2 and 128"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute(
                "CALL lake.system.create_vector_index('db', 'nope', 'embedding')"));
        assertTrue(e.getMessage().contains("table db.nope does not exist"), e.getMessage());
        runner.execute("ALTER TABLE db.indexed EXECUTE drop_vector_index(column_name => 'embedding')");
        e = assertThrows(RuntimeException.class, () -> runner.execute(
                "CALL lake.system.drop_vector_index('db', 'indexed', 'embedding')"));
        assertTrue(e.getMessage().contains("has no vector index"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute("ALTER TABLE db.indexed EXECUTE drop_vector_index"));
        assertTrue(e.getMessage().contains("column_name is required"), e.getMessage());
        e = assertThrows(RuntimeException.class, () -> runner.execute(Session.builder(runner.getDefaultSession())
                .setCatalogSessionProperty("lake", "vector_search_ef", "-5").build(), sql));
        assertTrue(e.getMessage().contains("vector_search_ef must be between"), e.getMessage());
        assertAnswer(sql, want);
    }

    /**
     * A top-k divided among splits (a split per file, Trino's TopN over their answers) returns the
     * single split's rows, for every metric, with and without a filter, by graph and exactly, over
     * files with deleted rows; EXPLAIN says which plan ran.
     */
    @Test
    void aDistributedTopKReturnsTheSingleSplitAnswer() {
        writeTable(root.resolve("db").resolve("spread").toString());
        runner.execute("CALL lake.system.create_vector_index('db', 'spread', 'embedding', '{\"metric\":\"l2\",\"m\":8}')");
        runner.execute("DELETE FROM spread WHERE category = 'c5'");
        String[][] queries = {{"cosine_distance", ""}, {"euclidean_distance", ""}, {"dot_product", " DESC"}};
        for (String ef : List.of("0", "10")) {
            Session single = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", ef)
                    .setCatalogSessionProperty("lake", "vector_search_plan", "single").build();
            Session distributed = Session.builder(single).setCatalogSessionProperty("lake", "vector_search_plan", "DISTRIBUTED").build();
            for (String[] q : queries) {
                for (String where : List.of("", " WHERE category IN ('c3', 'c5', 'c7') AND id >= 300")) {
                    String sql = "SELECT id, " + q[0] + "(embedding, " + literal + ") AS d FROM spread" + where
                            + " ORDER BY d" + q[1] + " LIMIT 20";
                    String singlePlan = explain(single, sql);
                    assertTrue(singlePlan.contains("nativeTopK=20 nearest by " + q[0] + " plan=single"), singlePlan);
                    assertFalse(singlePlan.contains("TopN"), singlePlan);
                    // Each file goes through its graph where enough rows pass for a walk (64 x ef: 1,280 at
                    // ef 20; 1,350 of a file's rows are left, ~300 under the filter); exact otherwise.
                    boolean graphs = ef.equals("10") && where.isEmpty() && q[0].equals("euclidean_distance");
                    assertTrue(singlePlan.contains(graphs ? "index=[graph 3 files, exact 0 files]"
                            : "index=[graph 0 files, exact 3 files]"), singlePlan);
                    String distributedPlan = explain(distributed, sql);
                    assertTrue(distributedPlan.contains("plan=distributed splits=" + FILES), distributedPlan);
                    assertTrue(distributedPlan.contains("TopNPartial"), distributedPlan);
                    List<MaterializedRow> want = runner.execute(single, sql).getMaterializedRows();
                    assertEquals(20, want.size());
                    assertEquals(want, runner.execute(distributed, sql).getMaterializedRows(), sql + " ef " + ef);
                    assertTrue(want.stream().noneMatch(r -> (Long) r.getField(0) % 10 == 5), "deleted rows stay deleted");
                    if (ef.equals("0")) {
                        LongPredicate keep = where.isEmpty() ? id -> id % 10 != 5 : id -> (id % 10 == 3 || id % 10 == 7) && id >= 300;
                        assertAnswer(sql, reference(q[0], keep, !q[1].isEmpty(), 20));
                    }
                }
            }
        }
        String sql = "SELECT id FROM spread ORDER BY euclidean_distance(embedding, " + literal + ") LIMIT 3";
        assertTrue(explain(runner.getDefaultSession(), sql).contains("plan=single"), "a small table is searched by one split (auto)");
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(Session.builder(runner.getDefaultSession())
                .setCatalogSessionProperty("lake", "vector_search_plan", "everywhere").build(), sql));
        assertTrue(e.getMessage().contains("vector_search_plan must be one of [auto, single, distributed], got 'everywhere'"),
                e.getMessage());
    }

    /**
     * A similarity join of 1,000 queries returns, for each, exactly the k nearest rows the filter
     * passes (a Java reference over the same vectors), with the query's columns passed through;
     * through HNSW graphs it keeps its recall.
     */
    @Test
    void theVectorJoinTableFunctionAnswersEveryQueryWithItsNearestRows() {
        runner.execute("CREATE TABLE queries AS SELECT q AS qid, transform(sequence(1, " + DIM + "), "
                + "j -> CAST(sin(q * 1.7 + j * 0.37) * 2 AS real)) AS qvec FROM UNNEST(sequence(1, 1000)) AS t(q)");
        runner.execute("INSERT INTO queries VALUES (0, NULL)");
        Map<Long, float[]> queries = new java.util.HashMap<>();
        for (MaterializedRow row : runner.execute("SELECT qid, qvec FROM queries WHERE qvec IS NOT NULL").getMaterializedRows()) {
            @SuppressWarnings("unchecked")
            List<Float> v = (List<Float>) row.getField(1);
            float[] q = new float[DIM];
            for (int j = 0; j < DIM; j++) {
                q[j] = v.get(j);
            }
            queries.put(((Number) row.getField(0)).longValue(), q);
        }
        String join = "SELECT qid, id, category, _distance FROM TABLE(lake.system.vector_join(input => TABLE(SELECT qid, qvec FROM queries), "
                + "query_column => 'qvec', schema_name => 'db', table_name => 'docs', column_name => 'embedding', k => 5, "
                + "metric => 'l2', filter => 'category IN (''c3'', ''c7'') AND id >= 100')) ORDER BY qid, _distance";
        Map<Long, List<MaterializedRow>> byQuery = new java.util.TreeMap<>();
        for (MaterializedRow row : runner.execute(join).getMaterializedRows()) {
            byQuery.computeIfAbsent(((Number) row.getField(0)).longValue(), q -> new ArrayList<>()).add(row);
        }
        assertEquals(queries.keySet(), byQuery.keySet(), "every query with a vector, and only those");
        for (Map.Entry<Long, float[]> entry : queries.entrySet()) {
            float[] q = entry.getValue();
            List<Hit> want = new ArrayList<>();
            for (int id = 100; id < vectors.length; id++) {
                if (id % 10 == 3 || id % 10 == 7) {
                    double sum = 0;
                    for (int j = 0; j < DIM; j++) {
                        sum += Math.pow((double) vectors[id][j] - q[j], 2);
                    }
                    want.add(new Hit(id, Math.sqrt(sum)));
                }
            }
            want.sort(Comparator.comparingDouble(Hit::value));
            List<MaterializedRow> got = byQuery.get(entry.getKey());
            assertEquals(5, got.size(), "query " + entry.getKey());
            for (int i = 0; i < 5; i++) {
                assertEquals(want.get(i).id(), got.get(i).getField(1), "query " + entry.getKey() + " rank " + i);
                assertEquals(category(want.get(i).id()), got.get(i).getField(2));
                assertEquals(want.get(i).value(), (Double) got.get(i).getField(3), 1e-4);
            }
        }
        // Through HNSW graphs, with a short candidate list that keeps them in use on these small files.
        writeTable(root.resolve("db").resolve("joined").toString());
        runner.execute("CALL lake.system.create_vector_index('db', 'joined', 'embedding', '{\"metric\":\"l2\",\"m\":12}')");
        String graphJoin = "SELECT qid, id FROM TABLE(lake.system.vector_join(input => TABLE(queries), query_column => 'qvec', "
                + "schema_name => 'db', table_name => 'joined', column_name => 'embedding', k => 10))";
        Session graph = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", "16").build();
        Session exact = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_ef", "-1").build();
        java.util.Set<List<Object>> truth = new java.util.HashSet<>();
        runner.execute(exact, graphJoin).getMaterializedRows().forEach(r -> truth.add(r.getFields()));
        List<MaterializedRow> approximate = runner.execute(graph, graphJoin).getMaterializedRows();
        assertEquals(10_000, approximate.size());
        long found = approximate.stream().filter(r -> truth.contains(r.getFields())).count();
        assertTrue(found >= 9_000, "recall@10 of the graphs: " + found / 10_000.0);
        // What it refuses, by name.
        for (String[] bad : new String[][] {
            {"query_column => 'qid'", "query column 'qid' is bigint, not array(real) or array(double)"},
            {"query_column => 'nope'", "query column 'nope' is not a column of the input"},
            {"query_column => 'qvec', filter => 'category ='", "expected a number, a 'string', TRUE or FALSE"},
            {"query_column => 'qvec', k => 0", "k must be between 1 and"},
        }) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute("SELECT * FROM TABLE(lake.system.vector_join("
                    + "input => TABLE(queries), " + bad[0] + ", schema_name => 'db', table_name => 'docs', column_name => 'embedding'))"));
            assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
        }
    }

    private String explain(Session session, String sql) {
        return (String) runner.execute(session, "EXPLAIN " + sql).getOnlyValue();
    }

    @Test
    void theBackendSessionPropertySaysWhereATopKComparesVectors() {
        String sql = "SELECT id, cosine_distance(embedding, " + literal + ") AS d FROM docs ORDER BY d LIMIT 10";
        Session cpu = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_backend", "CPU").build();
        assertThat(assertions.query(cpu, sql)).isFullyPushedDown();
        List<Hit> want = reference("cosine_distance", id -> true, false, 10);
        List<MaterializedRow> rows = runner.execute(cpu, sql).getMaterializedRows();
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i).id(), rows.get(i).getField(0), "rank " + i);
        }
        // The library the tests load has no GPU backend compiled in (or no device answers): a top-k
        // that insists on one fails, naming it, where auto stays on the CPU.
        if (!io.hyperstream.jni.NativeLibrary.gpuBackends().contains("wgpu: available")) {
            Session wgpu = Session.builder(runner.getDefaultSession()).setCatalogSessionProperty("lake", "vector_search_backend", "wgpu").build();
            RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(wgpu, sql));
            assertTrue(e.getMessage().contains("wgpu"), e.getMessage());
        }
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(Session.builder(runner.getDefaultSession())
                .setCatalogSessionProperty("lake", "vector_search_backend", "tpu").build(), sql));
        assertTrue(e.getMessage().contains("vector_search_backend must be one of [auto, cpu, cuda, wgpu], got 'tpu'"), e.getMessage());
    }

    @Test
    void aQueryOfTheWrongDimensionFailsClearly() {
        RuntimeException e = assertThrows(RuntimeException.class, () -> runner.execute(
                "SELECT id FROM docs ORDER BY cosine_distance(embedding, ARRAY[1.0, 2.0]) LIMIT 3"));
        assertTrue(e.getMessage().contains("2 dimensions but the column has 16"), e.getMessage());
    }
}
