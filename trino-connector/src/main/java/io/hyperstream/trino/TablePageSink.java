package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.BatchListReader;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.Page;
import io.trino.spi.connector.ConnectorPageSink;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One writer of an INSERT into a stored table: pages into Arrow batches in the table's schema,
 * written as native data files when the writer finishes (one, or one per partition); their
 * descriptions are the fragments that {@code finishInsert} commits.
 */
final class TablePageSink implements ConnectorPageSink {
    private final HyperStreamTableInsertHandle insert;
    private final BufferAllocator allocator;
    private final NativeTable table;
    private final Schema schema;
    private final BatchListReader batches;
    private boolean handedOver;
    private boolean closed;

    TablePageSink(HyperStreamTableInsertHandle insert) {
        this.insert = insert;
        this.allocator = Allocators.child("trino-table-sink");
        try {
            this.table = nativeCall(() -> NativeTable.load(insert.location(), java.util.Map.of()));
            this.schema = nativeCall(() -> table.schema(allocator));
        } catch (RuntimeException e) {
            allocator.close();
            throw e;
        }
        this.batches = new BatchListReader(allocator, schema);
    }

    @Override
    public CompletableFuture<?> appendPage(Page page) {
        int rows = page.getPositionCount();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            root.allocateNew();
            List<FieldVector> vectors = root.getFieldVectors();
            for (int c = 0; c < vectors.size(); c++) {
                FieldVector vector = vectors.get(c);
                String what = "column '" + vector.getName() + "'";
                for (int row = 0; row < rows; row++) {
                    TrinoArrowWriter.set(vector, row, insert.types().get(c), page.getBlock(c), row, what);
                }
            }
            root.setRowCount(rows);
            batches.add(root);
        }
        return NOT_BLOCKED;
    }

    @Override
    public CompletableFuture<Collection<Slice>> finish() {
        try {
            if (batches.batchCount() == 0) {
                return CompletableFuture.completedFuture(List.of());
            }
            handedOver = true; // native code closes the reader
            String[] files = nativeCall(() -> table.writeDataFiles(allocator, batches));
            return CompletableFuture.completedFuture(java.util.Arrays.stream(files).map(Slices::utf8Slice).toList());
        } finally {
            close();
        }
    }

    @Override
    public void abort() {
        close();
    }

    private void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (!handedOver) {
                io.hyperstream.jni.ArrowStreams.closeQuietly(batches);
            }
            table.close();
        } finally {
            allocator.close();
        }
    }
}
