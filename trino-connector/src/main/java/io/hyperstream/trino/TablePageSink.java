package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeRun;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.TableWriter;
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
 * One writer of an INSERT into a stored table: each page becomes an Arrow batch in the table's
 * schema, handed at once to the native writer, which rolls its bounded buffer into data files (one
 * partition each in a partitioned table); their descriptions are the fragments that
 * {@code finishInsert} commits. What the native writer holds is reported to Trino's memory
 * accounting.
 */
final class TablePageSink implements ConnectorPageSink {
    private final HyperStreamTableInsertHandle insert;
    private final BufferAllocator allocator;
    private final NativeTable table;
    private final TableWriter writer;
    private final Schema schema;
    private boolean closed;

    TablePageSink(HyperStreamTableInsertHandle insert) {
        this.insert = insert;
        this.allocator = Allocators.child("trino-table-sink");
        NativeTable opened = null;
        try {
            opened = nativeCall(() -> insert.target().open());
            NativeTable loaded = opened;
            this.schema = nativeCall(() -> loaded.schema(allocator));
            this.writer = nativeCall(loaded::openWriter);
            this.table = opened;
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close();
            }
            allocator.close();
            throw e;
        }
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
            nativeRun(() -> writer.write(allocator, root));
        }
        return NOT_BLOCKED;
    }

    /** The native writer's buffer: the data file being built, or rows waiting to be partitioned. */
    @Override
    public long getMemoryUsage() {
        return closed ? 0 : writer.bufferedBytes() + allocator.getAllocatedMemory();
    }

    @Override
    public CompletableFuture<Collection<Slice>> finish() {
        try {
            String[] files = nativeCall(writer::finish);
            return CompletableFuture.completedFuture(java.util.Arrays.stream(files).map(Slices::utf8Slice).toList());
        } finally {
            close();
        }
    }

    @Override
    public void abort() {
        try {
            if (!closed) {
                nativeRun(writer::abort);
            }
        } finally {
            close();
        }
    }

    private void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            writer.close();
            table.close();
        } finally {
            allocator.close();
        }
    }
}
