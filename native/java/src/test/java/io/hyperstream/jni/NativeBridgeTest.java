package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NativeBridgeTest {
    private BufferAllocator allocator;

    @BeforeEach
    void openAllocator() {
        allocator = Allocators.child("bridge-test");
    }

    @AfterEach
    void closeAllocator() {
        // Throws if any imported buffer was leaked.
        allocator.close();
    }

    @Test
    void nativeStreamArrivesAsSeveralBatchesOfEveryColumnType() throws Exception {
        long seed = 7;
        int dim = 16;
        try (SampleTable table = SampleTable.open(2_500, dim, seed);
                ArrowReader reader = table.scan(allocator, 0, 2_500, 1_000, null)) {
            List<Integer> batchSizes = new ArrayList<>();
            long expectedId = 0;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                batchSizes.add(root.getRowCount());
                BigIntVector ids = (BigIntVector) root.getVector("id");
                Float8Vector values = (Float8Vector) root.getVector("value");
                VarCharVector categories = (VarCharVector) root.getVector("category");
                BitVector flags = (BitVector) root.getVector("flag");
                FixedSizeListVector embeddings = (FixedSizeListVector) root.getVector("embedding");
                Float4Vector elements = (Float4Vector) embeddings.getDataVector();
                assertEquals(dim, embeddings.getListSize());
                for (int row = 0; row < root.getRowCount(); row++, expectedId++) {
                    long id = ids.get(row);
                    assertEquals(expectedId, id);
                    assertEquals(SampleRows.value(id), values.get(row));
                    String category = SampleRows.category(id);
                    if (category == null) {
                        assertTrue(categories.isNull(row), "category of id " + id + " should be null");
                    } else {
                        assertEquals(category, new String(categories.get(row), StandardCharsets.UTF_8));
                    }
                    assertEquals(SampleRows.flag(id), flags.get(row) == 1);
                    for (int j = 0; j < dim; j++) {
                        assertEquals(SampleRows.embedding(id, j, seed), elements.get(row * dim + j));
                    }
                }
            }
            assertEquals(List.of(1_000, 1_000, 500), batchSizes);
            assertEquals(2_500, expectedId);
        }
    }

    @Test
    void schemaComesFromNativeWithVectorColumnAsFixedSizeList() {
        try (SampleTable table = SampleTable.open(10, 768, 0)) {
            Schema schema = table.schema(allocator);
            assertEquals(List.of("id", "value", "category", "flag", "embedding"),
                    schema.getFields().stream().map(Field::getName).toList());
            assertEquals(new ArrowType.Int(64, true), schema.findField("id").getType());
            assertEquals(new ArrowType.FixedSizeList(768), schema.findField("embedding").getType());
            assertEquals(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE),
                    schema.findField("embedding").getChildren().get(0).getType());
            assertTrue(schema.findField("category").isNullable());
            assertFalse(schema.findField("id").isNullable());
        }
    }

    @Test
    void projectionKeepsOnlyTheRequestedColumnsInOrder() throws Exception {
        try (SampleTable table = SampleTable.open(100, 4, 0);
                ArrowReader reader = table.scan(allocator, 10, 20, 64, new int[] {4, 0})) {
            assertTrue(reader.loadNextBatch());
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            assertEquals(List.of("embedding", "id"),
                    root.getSchema().getFields().stream().map(Field::getName).toList());
            assertEquals(10, root.getRowCount());
            assertEquals(10L, ((BigIntVector) root.getVector(1)).get(0));
            assertFalse(reader.loadNextBatch());
        }
    }

    @Test
    void splitsArePlannedNativelyAndCoverEveryRow() {
        try (SampleTable table = SampleTable.open(1_001, 2, 0)) {
            long[][] splits = table.planSplits(250);
            assertEquals(5, splits.length);
            assertEquals(0, splits[0][0]);
            assertEquals(1_001, splits[4][1]);
            for (int i = 1; i < splits.length; i++) {
                assertEquals(splits[i - 1][1], splits[i][0]);
            }
            assertEquals(0, SampleTable.open(0, 2, 0).planSplits(10).length);
        }
    }

    @Test
    void batchesAreSharedNotCopied() throws Exception {
        // One pooled batch replayed twice: if either side copied, the second import would sit at
        // another address.
        try (SampleTable table = SampleTable.open(64, 8, 0);
                BatchReplay replay = table.replay(64, 1, null);
                ArrowReader reader = replay.stream(allocator, 128)) {
            assertTrue(reader.loadNextBatch());
            FixedSizeListVector first = (FixedSizeListVector) reader.getVectorSchemaRoot().getVector("embedding");
            long firstAddress = first.getDataVector().getDataBuffer().memoryAddress();
            long idAddress = reader.getVectorSchemaRoot().getVector("id").getDataBuffer().memoryAddress();
            assertTrue(reader.loadNextBatch());
            FixedSizeListVector second = (FixedSizeListVector) reader.getVectorSchemaRoot().getVector("embedding");
            assertEquals(firstAddress, second.getDataVector().getDataBuffer().memoryAddress());
            assertEquals(idAddress, reader.getVectorSchemaRoot().getVector("id").getDataBuffer().memoryAddress());
            assertFalse(reader.loadNextBatch());
        }
    }

    @Test
    void nativeStreamRoundTripsBackIntoNative() throws Exception {
        long rows = 3_000;
        try (SampleTable table = SampleTable.open(rows, 3, 1)) {
            // summarize hands the reader to native code, which closes it when done.
            ArrowReader reader = table.scan(allocator, 0, rows, 700, new int[] {0, 1, 2});
            StreamSummary summary = ArrowStreams.summarize(allocator, reader);
            assertEquals(rows, summary.rows());
            assertEquals(5, summary.batches());
            assertEquals(rows * (rows - 1) / 2, summary.intSum());
            assertEquals(rows / 10, summary.nulls());
            double expectedFloats = 0;
            long expectedBytes = 0;
            for (long id = 0; id < rows; id++) {
                expectedFloats += SampleRows.value(id);
                String category = SampleRows.category(id);
                expectedBytes += category == null ? 0 : category.length();
            }
            assertEquals(expectedFloats, summary.floatSum());
            assertEquals(expectedBytes, summary.utf8Bytes());
        }
    }

    @Test
    void javaStreamArrivesWholeInNative() throws Exception {
        Random random = new Random(42);
        int dim = 5;
        Field item = new Field("item", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null);
        Schema schema = new Schema(List.of(
                Field.nullable("k", new ArrowType.Int(64, true)),
                Field.nullable("x", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                Field.nullable("s", ArrowType.Utf8.INSTANCE),
                new Field("v", FieldType.notNullable(new ArrowType.FixedSizeList(dim)), List.of(item))));
        long intSum = 0;
        double floatSum = 0;
        long nulls = 0;
        long bytes = 0;
        long rows = 0;
        ByteArrayOutputStream ipc = new ByteArrayOutputStream();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
                ArrowStreamWriter writer = new ArrowStreamWriter(root, null, ipc)) {
            writer.start();
            for (int batch = 0; batch < 4; batch++) {
                int count = 100 + batch * 37;
                root.allocateNew();
                BigIntVector k = (BigIntVector) root.getVector("k");
                Float8Vector x = (Float8Vector) root.getVector("x");
                VarCharVector s = (VarCharVector) root.getVector("s");
                FixedSizeListVector v = (FixedSizeListVector) root.getVector("v");
                Float4Vector elements = (Float4Vector) v.getDataVector();
                for (int i = 0; i < count; i++) {
                    if (random.nextInt(5) == 0) {
                        k.setNull(i);
                        nulls++;
                    } else {
                        long value = random.nextLong();
                        k.setSafe(i, value);
                        intSum += value;
                    }
                    double d = random.nextInt(1000) / 8.0;
                    x.setSafe(i, d);
                    floatSum += d;
                    if (random.nextInt(4) == 0) {
                        s.setNull(i);
                        nulls++;
                    } else {
                        byte[] text = ("value-" + random.nextInt(100_000)).getBytes(StandardCharsets.UTF_8);
                        s.setSafe(i, text);
                        bytes += text.length;
                    }
                    v.setNotNull(i);
                    for (int j = 0; j < dim; j++) {
                        float f = random.nextInt(64) / 4.0f;
                        elements.setSafe(i * dim + j, f);
                        floatSum += f;
                    }
                }
                root.setRowCount(count);
                writer.writeBatch();
                rows += count;
            }
            writer.end();
        }
        ArrowReader reader = new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator);
        StreamSummary summary = ArrowStreams.summarize(allocator, reader);
        assertEquals(rows, summary.rows());
        assertEquals(4, summary.batches());
        assertEquals(nulls, summary.nulls());
        assertEquals(intSum, summary.intSum());
        assertEquals(floatSum, summary.floatSum(), 1e-9 * Math.abs(floatSum));
        assertEquals(bytes, summary.utf8Bytes());
    }

    @Test
    void emptyTablesGiveEmptyStreams() throws Exception {
        try (SampleTable table = SampleTable.open(0, 2, 0);
                ArrowReader reader = table.scan(allocator, 0, 0, 10, null)) {
            assertFalse(reader.loadNextBatch());
            assertArrayEquals(new long[0][], table.planSplits(5));
        }
    }
}
