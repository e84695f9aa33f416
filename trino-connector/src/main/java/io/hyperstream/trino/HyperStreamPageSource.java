package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_IO_ERROR;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import io.trino.spi.Page;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.SourcePage;
import java.io.IOException;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;

/** Reads one split: native Arrow batches in, Trino pages out. */
final class HyperStreamPageSource implements ConnectorPageSource {
    private final BufferAllocator allocator;
    private final AutoCloseable table;
    private final ArrowReader reader;
    private final boolean countOnly;
    private long completedBytes;
    private long completedPositions;
    private long readTimeNanos;
    private boolean finished;

    HyperStreamPageSource(HyperStreamTableHandle handle, HyperStreamSplit split, List<HyperStreamColumnHandle> columns,
            int batchRows) {
        int[] projection = columns.stream().mapToInt(HyperStreamColumnHandle::ordinal).toArray();
        this.countOnly = projection.length == 0;
        this.allocator = Allocators.child("trino-split-" + split.start());
        AutoCloseable opened = null;
        try {
            if (handle.isStored()) {
                NativeTable stored = nativeCall(() -> NativeTable.load(handle.location(), java.util.Map.of()));
                opened = stored;
                String[] names = columns.stream().map(HyperStreamColumnHandle::name).toArray(String[]::new);
                this.reader = nativeCall(() -> stored.scanFiles(allocator, new String[] {split.dataFile()}, names, batchRows));
            } else {
                SampleTable sample = nativeCall(() -> SampleTable.open(handle.rows(), handle.dimension(), handle.seed()));
                opened = sample;
                this.reader = nativeCall(() -> sample.scan(allocator, split.start(), split.end(), batchRows, projection));
            }
            this.table = opened;
        } catch (RuntimeException e) {
            closeQuietly(opened);
            allocator.close();
            throw e;
        }
    }

    @Override
    public SourcePage getNextSourcePage() {
        if (finished) {
            return null;
        }
        long start = System.nanoTime();
        try {
            if (!reader.loadNextBatch()) {
                finished = true;
                return null;
            }
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            int rows = root.getRowCount();
            completedPositions += rows;
            if (countOnly) {
                return SourcePage.create(rows);
            }
            List<FieldVector> vectors = root.getFieldVectors();
            Block[] blocks = new Block[vectors.size()];
            for (int i = 0; i < blocks.length; i++) {
                FieldVector vector = vectors.get(i);
                completedBytes += vector.getBufferSize();
                blocks[i] = ArrowBlocks.toBlock(vector);
            }
            return SourcePage.create(new Page(rows, blocks));
        } catch (IOException e) {
            throw new TrinoException(HYPERSTREAM_IO_ERROR, "reading a native batch failed: " + e.getMessage(), e);
        } finally {
            readTimeNanos += System.nanoTime() - start;
        }
    }

    @Override
    public long getCompletedBytes() {
        return completedBytes;
    }

    @Override
    public java.util.OptionalLong getCompletedPositions() {
        return java.util.OptionalLong.of(completedPositions);
    }

    @Override
    public long getReadTimeNanos() {
        return readTimeNanos;
    }

    @Override
    public boolean isFinished() {
        return finished;
    }

    @Override
    public long getMemoryUsage() {
        return allocator.getAllocatedMemory();
    }

    @Override
    public void close() throws IOException {
        try {
            reader.close();
        } finally {
            closeQuietly(table);
            allocator.close();
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
