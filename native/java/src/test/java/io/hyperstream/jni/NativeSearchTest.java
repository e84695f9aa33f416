package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.LongPredicate;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Native top-k and filtered scans through the binding, checked against a plain Java reference. */
class NativeSearchTest {
    private static final int DIM = 13;
    private static final int ROWS_PER_FILE = 700;
    private static final int FILES = 3;

    private BufferAllocator allocator;
    private float[][] vectors;

    @TempDir
    Path dir;

    @BeforeEach
    void open() {
        allocator = Allocators.child("search-test");
        Random random = new Random(42);
        vectors = new float[ROWS_PER_FILE * FILES][DIM];
        for (float[] v : vectors) {
            for (int j = 0; j < DIM; j++) {
                v[j] = (float) random.nextGaussian();
            }
        }
    }

    @AfterEach
    void close() {
        allocator.close();
    }

    private static Schema schema() {
        Field item = new Field("item", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null);
        return new Schema(List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                new Field("category", FieldType.notNullable(new ArrowType.Int(32, true)), null),
                new Field("embedding", FieldType.notNullable(new ArrowType.FixedSizeList(DIM)), List.of(item))));
    }

    private static int category(long id) {
        return (int) (id % 10);
    }

    private NativeTable table() {
        NativeTable table = NativeTable.create(dir.resolve("t").toString(), schema(), Map.of(), Map.of(), allocator);
        for (int f = 0; f < FILES; f++) {
            BatchListReader reader = new BatchListReader(allocator, schema());
            try (VectorSchemaRoot root = VectorSchemaRoot.create(schema(), allocator)) {
                root.allocateNew();
                FixedSizeListVector embeddings = (FixedSizeListVector) root.getVector("embedding");
                Float4Vector elements = (Float4Vector) embeddings.getDataVector();
                for (int i = 0; i < ROWS_PER_FILE; i++) {
                    int id = f * ROWS_PER_FILE + i;
                    ((BigIntVector) root.getVector("id")).setSafe(i, id);
                    ((IntVector) root.getVector("category")).setSafe(i, category(id));
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
        return table;
    }

    private static double reference(String metric, float[] q, float[] v) {
        double dot = 0, l2 = 0, l1 = 0, nq = 0, nv = 0;
        for (int j = 0; j < q.length; j++) {
            dot += (double) q[j] * v[j];
            l2 += Math.pow((double) q[j] - v[j], 2);
            l1 += Math.abs((double) q[j] - v[j]);
            nq += (double) q[j] * q[j];
            nv += (double) v[j] * v[j];
        }
        return switch (metric) {
            case "l2" -> Math.sqrt(l2);
            case "cosine" -> 1 - dot / Math.sqrt(nq * nv);
            case "inner_product" -> -dot;
            case "l1" -> l1;
            default -> throw new IllegalArgumentException(metric);
        };
    }

    private record Hit(long id, double distance) {}

    private List<Hit> search(NativeTable table, String filter, VectorSearch search) throws Exception {
        return search(table, table.dataFiles(TableVersion.CURRENT), filter, search);
    }

    private List<Hit> search(NativeTable table, String[] files, String filter, VectorSearch search) throws Exception {
        List<Hit> hits = new ArrayList<>();
        try (ArrowReader reader = table.search(allocator, files, new String[] {"id"}, filter, search, 7)) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                assertEquals(List.of("id", VectorSearch.DISTANCE_COLUMN),
                        root.getSchema().getFields().stream().map(Field::getName).toList());
                BigIntVector ids = (BigIntVector) root.getVector(0);
                Float8Vector distances = (Float8Vector) root.getVector(1);
                for (int i = 0; i < root.getRowCount(); i++) {
                    hits.add(new Hit(ids.get(i), distances.get(i)));
                }
            }
        }
        return hits;
    }

    private List<Hit> expected(String metric, float[] q, LongPredicate keep, int k) {
        List<Hit> all = new ArrayList<>();
        for (int id = 0; id < vectors.length; id++) {
            if (keep.test(id)) {
                all.add(new Hit(id, reference(metric, q, vectors[id])));
            }
        }
        all.sort(Comparator.comparingDouble(Hit::distance));
        return all.subList(0, Math.min(k, all.size()));
    }

    @Test
    void topKOverEveryFileEqualsAJavaReferenceForEveryMetricWithAndWithoutAFilter() throws Exception {
        float[] q = vectors[5].clone();
        q[0] += 0.5f;
        try (NativeTable table = table()) {
            for (String metric : List.of("l2", "cosine", "inner_product", "l1")) {
                for (int k : List.of(1, 10, 100)) {
                    List<Hit> got = search(table, null, new VectorSearch("embedding", q, metric, k));
                    assertSameHits(expected(metric, q, id -> true, k), got, metric);
                    String filter = Filters.in("category", List.of(3, 7));
                    got = search(table, filter, new VectorSearch("embedding", q, metric, k));
                    assertSameHits(expected(metric, q, id -> category(id) == 3 || category(id) == 7, k), got, metric);
                }
            }
        }
    }

    private static void assertSameHits(List<Hit> want, List<Hit> got, String metric) {
        assertEquals(want.size(), got.size(), metric);
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i).distance(), got.get(i).distance(), 1e-4 * (1 + Math.abs(want.get(i).distance())), metric);
            assertEquals(want.get(i).id(), got.get(i).id(), metric + " rank " + i);
        }
    }

    @Test
    void filteredScanKeepsExactlyThePassingRows() throws Exception {
        try (NativeTable table = table()) {
            String filter = Filters.and(Filters.ge("id", 100), Filters.lt("id", 1500), Filters.ne("category", 4));
            long count = 0;
            long sum = 0;
            try (ArrowReader reader = table.scanFiles(allocator, table.dataFiles(TableVersion.CURRENT), new String[] {"id"}, filter, 256)) {
                while (reader.loadNextBatch()) {
                    BigIntVector ids = (BigIntVector) reader.getVectorSchemaRoot().getVector(0);
                    for (int i = 0; i < ids.getValueCount(); i++) {
                        long id = ids.get(i);
                        assertTrue(id >= 100 && id < 1500 && category(id) != 4, "row " + id + " should be filtered out");
                        count++;
                        sum += id;
                    }
                }
            }
            long wantCount = 0;
            long wantSum = 0;
            for (long id = 100; id < 1500; id++) {
                if (category(id) != 4) {
                    wantCount++;
                    wantSum += id;
                }
            }
            assertEquals(wantCount, count);
            assertEquals(wantSum, sum);
        }
    }

    @Test
    void scanWithDistancesGivesEveryPassingRowItsDistance() throws Exception {
        float[] q = vectors[11].clone();
        try (NativeTable table = table();
                ArrowReader reader = table.scanWithDistances(allocator, table.dataFiles(TableVersion.CURRENT), new String[] {"id"},
                        Filters.eq("category", 1), new VectorSearch("embedding", q, "cosine", 1), 100)) {
            int rows = 0;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                BigIntVector ids = (BigIntVector) root.getVector(0);
                Float8Vector distances = (Float8Vector) root.getVector(1);
                for (int i = 0; i < root.getRowCount(); i++) {
                    long id = ids.get(i);
                    assertEquals(1, category(id));
                    assertEquals(reference("cosine", q, vectors[(int) id]), distances.get(i), 1e-5);
                    rows++;
                }
            }
            assertEquals(vectors.length / 10, rows);
        }
    }

    @Test
    void vectorIndexesAreBuiltOnExistingFilesSearchedAndDropped() throws Exception {
        try (NativeTable table = table()) {
            assertEquals(null, table.vectorIndex("embedding"));
            assertEquals(new NativeTable.IndexBuilds(0, 0, 0), table.indexBuilds());
            assertEquals(FILES, table.createVectorIndex("embedding", "{\"metric\":\"l2\",\"m\":12}"));
            NativeTable.IndexBuilds built = table.indexBuilds();
            assertEquals(FILES, built.files(), "one graph per file");
            assertEquals(vectors.length, built.vectors(), "every vector indexed");
            assertTrue(built.nanos() > 0, built.toString());
            assertTrue(table.vectorIndex("embedding").contains("\"m\":12"), table.vectorIndex("embedding"));
            Random random = new Random(7);
            double recall = 0;
            int queries = 20;
            for (int n = 0; n < queries; n++) {
                float[] q = vectors[random.nextInt(vectors.length)].clone();
                q[0] += 0.1f;
                List<Hit> want = expected("l2", q, id -> true, 10);
                // A short candidate list keeps the graph in use on these small files.
                VectorSearch graph = new VectorSearch("embedding", q, "l2", 10).withEfSearch(10);
                List<Hit> got = search(table, null, graph);
                assertEquals(10, got.size());
                for (int i = 0; i < got.size(); i++) {
                    Hit hit = got.get(i);
                    assertEquals(reference("l2", q, vectors[(int) hit.id()]), hit.distance(), 1e-4, "true distances");
                    assertTrue(i == 0 || got.get(i - 1).distance() <= hit.distance(), "nearest first");
                }
                recall += got.stream().filter(h -> want.stream().anyMatch(w -> w.id() == h.id())).count() / 10.0;
                assertSameHits(want, search(table, null, graph.withEfSearch(VectorSearch.EXACT)), "exact");
                assertSameHits(want, search(table, null, graph.withEfSearch(VectorSearch.EXACT).withBackend("cpu")),
                        "exact on the CPU");
                String filter = Filters.eq("category", 3);
                assertTrue(search(table, filter, graph).stream().allMatch(h -> category(h.id()) == 3), "filtered");
            }
            assertTrue(recall / queries >= 0.8, "recall@10 " + recall / queries);
            assertEquals(FILES, table.dropVectorIndex("embedding"));
            assertEquals(null, table.vectorIndex("embedding"));
            NotFoundException none = assertThrows(NotFoundException.class, () -> table.dropVectorIndex("embedding"));
            assertTrue(none.getMessage().contains("has no vector index"), none.getMessage());
            InvalidArgumentException bad = assertThrows(InvalidArgumentException.class,
                    () -> table.createVectorIndex("embedding", "{\"M\":16}"));
            assertTrue(bad.getMessage().contains("unknown vector index field 'M'"), bad.getMessage());
            bad = assertThrows(InvalidArgumentException.class, () -> table.createVectorIndex("category", "{}"));
            assertTrue(bad.getMessage().contains("not a float vector column"), bad.getMessage());
            bad = assertThrows(InvalidArgumentException.class, () -> search(table, null,
                    new VectorSearch("embedding", vectors[0], "l2", 5).withEfSearch(-7)));
            assertTrue(bad.getMessage().contains("ef"), bad.getMessage());
        }
    }

    /**
     * The distributed plan's twin check: every split searched on its own and the answers merged by
     * distance (what Spark's and Trino's final top-k do) give the single search's rows, for every
     * metric, with and without a filter, by graph and exactly, over files with deleted rows.
     */
    @Test
    void aTopKSearchedSplitBySplitAndMergedIsTheSingleSearch() throws Exception {
        try (NativeTable table = table()) {
            table.createVectorIndex("embedding", "{\"metric\":\"l2\",\"m\":8}");
            table.deleteWhere(Filters.eq("category", 5));
            String[] files = table.dataFiles(TableVersion.CURRENT);
            String[][] splits = SearchPlan.DISTRIBUTED.splits(files);
            assertEquals(FILES, splits.length, "a split per file");
            assertEquals(1, SearchPlan.AUTO.splits(files).length, "few rows: one split");
            assertEquals(1, SearchPlan.SINGLE.splits(files).length);
            Random random = new Random(11);
            for (String metric : List.of("l2", "cosine", "inner_product", "l1")) {
                for (String filter : java.util.Arrays.asList(null, Filters.in("category", List.of(3, 5, 7)))) {
                    for (long ef : List.of(VectorSearch.EF_DEFAULT, 10L, VectorSearch.EXACT)) {
                        float[] q = vectors[random.nextInt(vectors.length)].clone();
                        q[1] += 0.3f;
                        VectorSearch search = new VectorSearch("embedding", q, metric, 25).withEfSearch(ef);
                        List<Hit> single = search(table, files, filter, search);
                        List<Hit> merged = new ArrayList<>();
                        for (String[] split : splits) {
                            merged.addAll(search(table, split, filter, search));
                        }
                        merged.sort(Comparator.comparingDouble(Hit::distance));
                        String what = metric + " filter " + filter + " ef " + ef;
                        assertEquals(25, single.size(), what);
                        assertEquals(single, merged.subList(0, single.size()), what);
                        assertTrue(single.stream().noneMatch(h -> category(h.id()) == 5), "deleted rows stay deleted");
                    }
                }
            }
        }
    }

    /** A batched search answers each of its queries as that query's own search does. */
    @Test
    void aBatchedSearchAnswersEachQueryAsItsOwnSearch() throws Exception {
        try (NativeTable table = table()) {
            table.createVectorIndex("embedding", "{\"metric\":\"cosine\",\"m\":8}");
            String[] files = table.dataFiles(TableVersion.CURRENT);
            Random random = new Random(3);
            List<VectorSearch> searches = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                float[] q = vectors[random.nextInt(vectors.length)].clone();
                q[2] -= 0.2f;
                searches.add(new VectorSearch("embedding", q, "cosine", 6).withEfSearch(12));
            }
            String filter = Filters.in("category", List.of(1, 4, 8));
            List<List<Hit>> answers = new ArrayList<>();
            searches.forEach(s -> answers.add(new ArrayList<>()));
            try (ArrowReader reader = table.searchMany(allocator, files, new String[] {"id"}, filter, searches, 50)) {
                while (reader.loadNextBatch()) {
                    VectorSchemaRoot root = reader.getVectorSchemaRoot();
                    assertEquals(List.of(VectorSearch.QUERY_COLUMN, "id", VectorSearch.DISTANCE_COLUMN),
                            root.getSchema().getFields().stream().map(Field::getName).toList());
                    for (int r = 0; r < root.getRowCount(); r++) {
                        answers.get(((IntVector) root.getVector(0)).get(r)).add(
                                new Hit(((BigIntVector) root.getVector(1)).get(r), ((Float8Vector) root.getVector(2)).get(r)));
                    }
                }
            }
            for (int i = 0; i < searches.size(); i++) {
                assertEquals(search(table, files, filter, searches.get(i)), answers.get(i), "query " + i);
            }
            InvalidArgumentException mixed = assertThrows(InvalidArgumentException.class, () -> table.searchMany(allocator, files,
                    null, null, List.of(searches.get(0), searches.get(1).withEfSearch(3)), 50));
            assertTrue(mixed.getMessage().contains("search 1 of a batch differs from the first"), mixed.getMessage());
            InvalidArgumentException shorter = assertThrows(InvalidArgumentException.class, () -> table.searchMany(allocator,
                    files, null, null, List.of(searches.get(0), searches.get(1).withQuery(new float[] {1, 2})), 50));
            assertTrue(shorter.getMessage().contains("query 1 of a batch has 2 values"), shorter.getMessage());
            assertThrows(InvalidArgumentException.class, () -> table.searchMany(allocator, files, null, null, List.of(), 50));
        }
    }

    @Test
    void searchPlansAreNamedAndBadNamesRefused() {
        assertEquals(SearchPlan.DISTRIBUTED, SearchPlan.of("p", " Distributed "));
        assertEquals("auto", SearchPlan.AUTO.value());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> SearchPlan.of("vector_search_plan", "spread"));
        assertEquals("vector_search_plan must be one of [auto, single, distributed], got 'spread'", bad.getMessage());
    }

    @Test
    void badSearchesRaiseClearExceptions() {
        float[] q = new float[DIM];
        q[0] = 1;
        try (NativeTable table = table()) {
            String[] files = table.dataFiles(TableVersion.CURRENT);
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("embedding", new float[3], "l2", 5), 10));
            assertTrue(e.getMessage().contains("3 dimensions but the column has 13"), e.getMessage());
            float[] nan = q.clone();
            nan[2] = Float.NaN;
            e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("embedding", nan, "l2", 5), 10));
            assertTrue(e.getMessage().contains("NaN at position 2"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("embedding", q, "l2", 0), 10));
            assertTrue(e.getMessage().contains("k must be between 1 and 100000"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("embedding", q, "chebyshev", 5), 10));
            assertTrue(e.getMessage().contains("unknown distance metric 'chebyshev'"), e.getMessage());
            NotFoundException missing = assertThrows(NotFoundException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("vec", q, "l2", 5), 10));
            assertTrue(missing.getMessage().contains("'vec'"), missing.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, "{\"op\":\"like\"}", new VectorSearch("embedding", q, "l2", 5), 10));
            assertTrue(e.getMessage().contains("bad filter"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> table.search(allocator, files, null, null, new VectorSearch("category", new float[1], "l2", 5), 10));
            assertTrue(e.getMessage().contains("not a float vector column"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> table.search(allocator, files, null, null,
                    new VectorSearch("embedding", q, "l2", 5).withBackend("tpu"), 10));
            assertTrue(e.getMessage().contains("unknown search backend 'tpu'"), e.getMessage());
        }
    }
}
