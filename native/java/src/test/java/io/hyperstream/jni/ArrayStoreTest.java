package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
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

class ArrayStoreTest {
    private static final int DIM = 5;

    private BufferAllocator allocator;

    @TempDir
    Path dir;

    @BeforeEach
    void setUp() {
        allocator = Allocators.child("array-store-test");
    }

    @AfterEach
    void tearDown() {
        allocator.close();
    }

    private static Schema schema(int width) {
        Field item = new Field("item", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null);
        return new Schema(List.of(new Field("value", FieldType.notNullable(new ArrowType.FixedSizeList(width)), List.of(item))));
    }

    /** A reader of one batch holding {@code rows} as fixed-size float lists. */
    private ArrowReader rows(List<float[]> rows, int width) {
        BatchListReader reader = new BatchListReader(allocator, schema(width));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema(width), allocator)) {
            FixedSizeListVector list = (FixedSizeListVector) root.getVector("value");
            Float4Vector items = (Float4Vector) list.getDataVector();
            list.allocateNew();
            items.allocateNew(rows.size() * width);
            for (int r = 0; r < rows.size(); r++) {
                list.setNotNull(r);
                for (int j = 0; j < width; j++) {
                    items.setSafe(r * width + j, rows.get(r)[j]);
                }
            }
            items.setValueCount(rows.size() * width);
            root.setRowCount(rows.size());
            reader.add(root);
        }
        return reader;
    }

    /** Every row of every batch of {@code reader}, with the positions its index column gives. */
    private static List<float[]> read(ArrowReader reader, List<Long> positions) throws Exception {
        List<float[]> out = new ArrayList<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                BigIntVector index = (BigIntVector) root.getVector("index");
                FixedSizeListVector list = (FixedSizeListVector) root.getVector("value");
                Float4Vector items = (Float4Vector) list.getDataVector();
                assertEquals("float32", list.getField().getMetadata().get("hyperstream.dtype"));
                for (int r = 0; r < root.getRowCount(); r++) {
                    positions.add(index.get(r));
                    float[] row = new float[list.getListSize()];
                    for (int j = 0; j < row.length; j++) {
                        row[j] = items.get(r * row.length + j);
                    }
                    out.add(row);
                }
            }
        }
        return out;
    }

    private static List<float[]> random(Random random, int n) {
        List<float[]> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            float[] row = new float[DIM];
            for (int j = 0; j < DIM; j++) {
                row[j] = random.nextFloat() * 2 - 1;
            }
            out.add(row);
        }
        return out;
    }

    private static void assertRows(List<float[]> want, List<float[]> got) {
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            assertArrayEquals(want.get(i), got.get(i), "row " + i);
        }
    }

    @Test
    void everyOperationMatchesAPlainListOfRows() throws Exception {
        Random random = new Random(7);
        List<float[]> model = random(random, 1000);
        try (ArrayStore store = ArrayStore.open(dir.resolve("s").toString())) {
            assertEquals(1000, store.save(allocator, "emb", rows(model, DIM)));
            assertEquals("float32", store.info("emb").dtype());
            assertArrayEquals(new long[] {1000, DIM}, store.info("emb").shape());

            List<float[]> more = random(random, 37);
            assertEquals(1037, store.append(allocator, "emb", rows(more, DIM)));
            model.addAll(more);
            long[] at = {3, 999, 3, 1036};
            List<float[]> replacement = random(random, at.length);
            store.replace(allocator, "emb", at, rows(replacement, DIM));
            for (int i = 0; i < at.length; i++) {
                model.set((int) at[i], replacement.get(i));
            }
            List<Long> positions = new ArrayList<>();
            assertRows(model, read(store.load(allocator, "emb"), positions));
            assertEquals(range(1037), positions);

            long[] wanted = {1036, 0, 500, 500};
            positions.clear();
            assertRows(List.of(model.get(1036), model.get(0), model.get(500), model.get(500)),
                    read(store.getRows(allocator, "emb", wanted), positions));
            assertEquals(List.of(1036L, 0L, 500L, 500L), positions);
            positions.clear();
            assertRows(model.subList(100, 250), read(store.slice(allocator, "emb", 100, 250), positions));
            assertEquals(100L, positions.get(0));

            positions.clear();
            assertRows(model, read(store.stream(allocator, "emb", 100), positions));

            // The lazy view reads the mapped file in place; its buffers outlive the view.
            ByteBuffer bytes;
            try (ArrayStore.LazyView view = store.lazy("emb")) {
                assertEquals(DIM * 4, view.rowBytes());
                bytes = view.rows(10, 5);
            }
            for (int r = 0; r < 5; r++) {
                for (int j = 0; j < DIM; j++) {
                    assertEquals(model.get(10 + r)[j], bytes.getFloat((r * DIM + j) * 4));
                }
            }
            assertTrue(bytes.isReadOnly());

            assertEquals(1034, store.dropRows("emb", new long[] {0, 1, 1, 2}));
            model.subList(0, 3).clear();
            assertRows(model, read(store.load(allocator, "emb"), new ArrayList<>()));

            String npy = dir.resolve("emb.npy").toString();
            store.exportNpy("emb", npy);
            assertArrayEquals(new long[] {1034, DIM}, store.importNpy("copy", npy).shape());
            assertRows(model, read(store.load(allocator, "copy"), new ArrayList<>()));
            assertEquals(List.of("copy", "emb"), store.names());
            store.dropArray("copy");
            assertEquals(List.of("emb"), store.names());
        }
    }

    @Test
    void topKEqualsABruteForceSort() {
        Random random = new Random(11);
        List<float[]> model = random(random, 3000);
        try (ArrayStore store = ArrayStore.open(dir.resolve("s").toString())) {
            store.save(allocator, "emb", rows(model, DIM));
            float[][] queries = random(random, 3).toArray(new float[0][]);
            List<ArrayStore.Neighbors> found = store.topK("emb", "l2", queries, 10);
            assertEquals(3, found.size());
            for (int q = 0; q < queries.length; q++) {
                float[] query = queries[q];
                int[] want = IntStream.range(0, model.size()).boxed()
                        .sorted(Comparator.comparingDouble((Integer i) -> l2(query, model.get(i))).thenComparing(i -> i))
                        .limit(10).mapToInt(Integer::intValue).toArray();
                assertArrayEquals(want, java.util.Arrays.stream(found.get(q).rows()).mapToInt(r -> (int) r).toArray());
                assertEquals(l2(query, model.get(want[0])), found.get(q).distances()[0], 1e-5);
            }
            // Named backends: the CPU gives the same answer and says so; auto stays on the CPU for a
            // batch this small; a backend this library lacks is refused by name.
            ArrayStore.Search cpu = store.search("emb", "l2", queries, 10, "cpu");
            assertEquals("cpu", cpu.backend());
            assertEquals("cpu", store.search("emb", "l2", queries, 10, "auto").backend());
            for (int q = 0; q < queries.length; q++) {
                assertArrayEquals(found.get(q).rows(), cpu.neighbors().get(q).rows());
            }
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> store.search("emb", "l2", queries, 10, "tpu"));
            assertTrue(e.getMessage().contains("unknown search backend 'tpu'"), e.getMessage());
            if (!NativeLibrary.gpuBackends().contains("cuda: available")) {
                HyperStreamException missing = assertThrows(HyperStreamException.class,
                        () -> store.search("emb", "l2", queries, 10, "cuda"));
                assertTrue(missing.getMessage().contains("cuda"), missing.getMessage());
            }
        }
    }

    private static double l2(float[] a, float[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += (double) (a[i] - b[i]) * (a[i] - b[i]);
        }
        return Math.sqrt(sum);
    }

    @Test
    void badInputNamesTheProblemAndChangesNothing() throws Exception {
        Random random = new Random(3);
        List<float[]> model = random(random, 10);
        try (ArrayStore store = ArrayStore.open(dir.resolve("s").toString())) {
            store.save(allocator, "emb", rows(model, DIM));
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> store.append(allocator, "emb", rows(List.of(new float[3]), 3)));
            assertTrue(e.getMessage().contains("do not fit array 'emb' of float32 [5]"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> store.replace(allocator, "emb", new long[] {10}, rows(random(random, 1), DIM)));
            assertTrue(e.getMessage().contains("row 10 is out of range for array 'emb' of 10 rows"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> store.getRows(allocator, "emb", new long[] {-1}));
            assertTrue(e.getMessage().contains("row index -1 is negative"), e.getMessage());
            NotFoundException missing = assertThrows(NotFoundException.class, () -> store.dropArray("nope"));
            assertTrue(missing.getMessage().contains("array 'nope'"), missing.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> store.topK("emb", "l2", new float[][] {new float[4]}, 3));
            assertTrue(e.getMessage().contains("query vector has 4 dimensions"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> store.topK("emb", "l2", new float[][] {new float[DIM]}, 0));
            assertTrue(e.getMessage().contains("k must be between 1 and 100000"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> store.topK("emb", "nearest", new float[][] {new float[DIM]}, 3));
            assertTrue(e.getMessage().contains("unknown distance metric 'nearest'"), e.getMessage());
            try (ArrayStore.LazyView view = store.lazy("emb")) {
                e = assertThrows(InvalidArgumentException.class, () -> view.rows(8, 5));
                assertTrue(e.getMessage().contains("out of range for a view of 10 rows"), e.getMessage());
            }
            assertRows(model, read(store.load(allocator, "emb"), new ArrayList<>()));
        }
        try (ArrayStore readOnly = ArrayStore.open(dir.resolve("s").toString(), false, true)) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> readOnly.dropArray("emb"));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
        }
    }

    @Test
    void aBatchHoldsChangesUntilFlushAndStagedPartsCommitTogether() throws Exception {
        Random random = new Random(5);
        List<float[]> model = random(random, 20);
        try (ArrayStore store = ArrayStore.open(dir.resolve("s").toString());
                ArrayStore other = ArrayStore.open(dir.resolve("s").toString(), false, true)) {
            store.save(allocator, "emb", rows(model, DIM));
            try (ArrayStore.Batch batch = store.batch()) {
                for (int i = 0; i < 50; i++) {
                    List<float[]> row = random(random, 1);
                    batch.append(allocator, "emb", rows(row, DIM));
                    model.add(row.get(0));
                }
                List<float[]> replacement = random(random, 1);
                batch.replace(allocator, "emb", new long[] {4}, rows(replacement, DIM));
                model.set(4, replacement.get(0));
                assertEquals(69, batch.dropRows("emb", new long[] {0}));
                model.remove(0);
                assertArrayEquals(new long[] {69, DIM}, batch.info("emb").shape());
                assertRows(model, read(batch.load(allocator, "emb"), new ArrayList<>()));
                // Nothing is visible to other readers before the flush.
                assertArrayEquals(new long[] {20, DIM}, other.info("emb").shape());
                batch.flush();
            }
            assertRows(model, read(other.load(allocator, "emb"), new ArrayList<>()));

            // Staged parts (one per engine task) commit as one append.
            String staging = dir.resolve("staging").toString();
            List<float[]> first = random(random, 7);
            List<float[]> second = random(random, 3);
            try (ArrayStore parts = ArrayStore.open(staging)) {
                parts.save(allocator, "p1", rows(first, DIM));
                parts.save(allocator, "p0", rows(second, DIM));
            }
            assertArrayEquals(new long[] {79, DIM}, store.commitParts("emb", staging, List.of("p1", "p0"), false).shape());
            model.addAll(first);
            model.addAll(second);
            List<Long> positions = new ArrayList<>();
            assertRows(model.subList(60, 79), read(store.scan(allocator, "emb", 60, 79, 4, true), positions));
            assertEquals(range(79).subList(60, 79), positions);
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> store.scan(allocator, "emb", 60, 80, 4, true));
            assertTrue(e.getMessage().contains("rows 60..80 are out of range"), e.getMessage());
        }
    }

    /** Positions 0..n as a list. */
    private static List<Long> range(long n) {
        List<Long> out = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            out.add(i);
        }
        return out;
    }
}
