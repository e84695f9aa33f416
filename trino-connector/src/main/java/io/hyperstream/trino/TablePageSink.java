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
        this(insert, false);
    }

    /**
     * {@code lineage}: the new rows of a row-level change of a format version 3 table, each page
     * with the {@code _row_id}s its rows keep (see {@link #appendPage(Page, Block)}).
     */
    TablePageSink(HyperStreamTableInsertHandle insert, boolean lineage) {
        this.insert = insert;
        this.allocator = Allocators.child("trino-table-sink");
        NativeTable opened = null;
        try {
            opened = nativeCall(() -> insert.target().open());
            NativeTable loaded = opened;
            Schema columns = nativeCall(() -> loaded.schema(allocator));
            this.schema = lineage ? NativeTable.withRowId(columns) : columns;
            this.writer = nativeCall(() -> lineage ? loaded.openLineageWriter() : loaded.openWriter());
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
        return appendPage(page, null);
    }

    /** Writes {@code page}'s rows; a lineage sink's with the {@code _row_id}s they keep ({@code rowIds}, bigint, null: a new id). */
    CompletableFuture<?> appendPage(Page page, io.trino.spi.block.Block rowIds) {
        int rows = page.getPositionCount();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            root.allocateNew();
            List<FieldVector> vectors = root.getFieldVectors();
            int columns = insert.types().size();
            for (int c = 0; c < columns; c++) {
                FieldVector vector = vectors.get(c);
                String what = "column '" + vector.getName() + "'";
                for (int row = 0; row < rows; row++) {
                    TrinoArrowWriter.set(vector, row, insert.types().get(c), page.getBlock(c), row, what);
                }
            }
            if (vectors.size() > columns) {
                org.apache.arrow.vector.BigIntVector ids = (org.apache.arrow.vector.BigIntVector) vectors.get(columns);
                for (int row = 0; row < rows; row++) {
                    if (rowIds == null || rowIds.isNull(row)) {
                        ids.setNull(row);
                    } else {
                        ids.set(row, io.trino.spi.type.BigintType.BIGINT.getLong(rowIds, row));
                    }
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
