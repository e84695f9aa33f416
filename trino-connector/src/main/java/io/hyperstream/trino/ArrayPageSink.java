package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.BatchListReader;
import io.trino.spi.Page;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorPageSink;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One writer of an INSERT into an array: each page's {@code value} block into Arrow (integers as
 * bigint, floats as themselves, whole decimals as decimals), appended to this sink's part in the
 * insert's staging store. The field names the array's dtype and row shape, so the native library
 * converts the values, refusing any the dtype cannot hold.
 */
final class ArrayPageSink implements ConnectorPageSink {
    private final HyperStreamArrayInsertHandle insert;
    private final Type type;
    private final String part;
    private final BufferAllocator allocator;
    private final ArrayStore staging;
    private final Schema schema;
    private boolean staged;

    ArrayPageSink(HyperStreamArrayInsertHandle insert, Type type, long sinkId) {
        this.insert = insert;
        this.type = type;
        this.part = "part-" + sinkId;
        if (!java.nio.file.Files.isDirectory(java.nio.file.Path.of(insert.staging()))) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "the INSERT into array '" + insert.array().tableName()
                    + "' was already cleaned up (the query failed)");
        }
        this.allocator = Allocators.child("trino-array-sink-" + sinkId);
        this.staging = nativeCall(() -> ArrayStore.open(insert.staging(), false, false));
        this.schema = schema(type, insert);
    }

    private static Schema schema(Type type, HyperStreamArrayInsertHandle insert) {
        Map<String, String> metadata = Map.of("hyperstream.dtype", insert.dtype(),
                "hyperstream.shape", insert.rowShape().toString());
        if (type instanceof ArrayType array) {
            Field item = new Field("item", FieldType.notNullable(arrowType(array.getElementType())), null);
            return new Schema(List.of(new Field("value",
                    new FieldType(false, new ArrowType.FixedSizeList(insert.rowElements()), null, metadata), List.of(item))));
        }
        return new Schema(List.of(new Field("value", new FieldType(false, arrowType(type), null, metadata), null)));
    }

    private static ArrowType arrowType(Type type) {
        if (type instanceof BooleanType) {
            return ArrowType.Bool.INSTANCE;
        }
        if (type instanceof TinyintType || type instanceof SmallintType || type instanceof IntegerType || type instanceof BigintType) {
            return new ArrowType.Int(64, true);
        }
        if (type instanceof RealType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        }
        if (type instanceof DoubleType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        }
        if (type instanceof DecimalType decimal && decimal.getScale() == 0) {
            return new ArrowType.Decimal(decimal.getPrecision(), 0, 128);
        }
        throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "array rows cannot hold " + type
                + " values: insert booleans, integers, whole decimals or floats (or arrays of them)");
    }

    /** Checks, before any page is written, that the array's rows can come from {@code type}. */
    static void check(Type type) {
        arrowType(type instanceof ArrayType array ? array.getElementType() : type);
    }

    @Override
    public CompletableFuture<?> appendPage(Page page) {
        Block block = page.getBlock(insert.valueChannel());
        int rows = page.getPositionCount();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            root.allocateNew();
            FieldVector value = root.getVector(0);
            for (int row = 0; row < rows; row++) {
                TrinoArrowWriter.set(value, row, type, block, row, "a row of array '" + insert.array().tableName() + "'");
            }
            root.setRowCount(rows);
            BatchListReader batch = new BatchListReader(allocator, schema);
            batch.add(root);
            nativeCall(() -> staged ? staging.append(allocator, part, batch) : staging.save(allocator, part, batch));
            staged = true;
        }
        return NOT_BLOCKED;
    }

    @Override
    public CompletableFuture<Collection<Slice>> finish() {
        close();
        return CompletableFuture.completedFuture(staged ? List.of(Slices.utf8Slice(part)) : List.of());
    }

    /** What the sink staged goes with the query's staging store ({@code cleanupQuery}). */
    @Override
    public void abort() {
        close();
    }

    private void close() {
        try {
            staging.close();
        } finally {
            allocator.close();
        }
    }
}
