package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_IO_ERROR;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
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
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;

/** Reads one split: native Arrow batches in, Trino pages out. */
final class HyperStreamPageSource implements ConnectorPageSource {
    private final BufferAllocator allocator;
    private final AutoCloseable table;
    private final ArrowReader reader;
    private final boolean countOnly;
    private final int[] positions;
    /** For each requested column, how many native vectors a MERGE's row id is built of (0: not a row id). */
    private final int[] rowIds;
    private final boolean negateDistance;
    /** Rows this split may still return (a pushed LIMIT), or Long.MAX_VALUE. */
    private long remaining = Long.MAX_VALUE;
    private long completedBytes;
    private long completedPositions;
    private long readTimeNanos;
    private boolean finished;

    HyperStreamPageSource(HyperStreamTableHandle handle, HyperStreamSplit split, List<HyperStreamColumnHandle> columns,
            int batchRows, long efSearch, String backend, String filter) {
        this.countOnly = columns.isEmpty();
        this.allocator = Allocators.child("trino-split-" + split.start());
        AutoCloseable opened = null;
        try {
            if (handle.isStored()) {
                NativeTable stored = nativeCall(() -> handle.openRead());
                opened = stored;
                this.reader = nativeCall(() -> openStored(stored, handle, split, columns, batchRows, efSearch, backend,
                        filter));
                this.positions = blockPositions(columns);
                this.rowIds = rowIds(columns);
                this.negateDistance = handle.distance() != null && handle.distance().negated();
                this.remaining = handle.limit() > 0 ? handle.limit() : Long.MAX_VALUE;
            } else {
                int[] projection = columns.stream().mapToInt(HyperStreamColumnHandle::ordinal).toArray();
                SampleTable sample = nativeCall(() -> SampleTable.open(handle.rows(), handle.dimension(), handle.seed()));
                opened = sample;
                this.reader = nativeCall(() -> sample.scan(allocator, split.start(), split.end(), batchRows, projection));
                this.positions = java.util.stream.IntStream.range(0, columns.size()).toArray();
                this.rowIds = new int[columns.size()];
                this.negateDistance = false;
            }
            this.table = opened;
        } catch (RuntimeException e) {
            closeQuietly(opened);
            allocator.close();
            throw e;
        }
    }

    private HyperStreamPageSource(BufferAllocator allocator, AutoCloseable source, ArrowReader reader, int[] positions) {
        this.allocator = allocator;
        this.table = source;
        this.reader = reader;
        this.positions = positions;
        this.rowIds = new int[positions.length];
        this.countOnly = positions.length == 0;
        this.negateDistance = false;
    }

    /** Metadata table {@code name} of a stored table, every one of its {@code columns}. */
    static HyperStreamPageSource metadataTable(io.hyperstream.jni.Catalog.TableRef location, String name, int columns) {
        BufferAllocator allocator = Allocators.child("trino-metadata-" + name);
        NativeTable table = null;
        try {
            table = nativeCall(location::open);
            NativeTable opened = table;
            ArrowReader reader = nativeCall(() -> opened.metadataTable(allocator, name));
            return new HyperStreamPageSource(allocator, table, reader, java.util.stream.IntStream.range(0, columns).toArray());
        } catch (RuntimeException e) {
            closeQuietly(table);
            allocator.close();
            throw e;
        }
    }

    /** Rows {@code [start, end)} of an array; the columns are read by their position (index, value). */
    static HyperStreamPageSource array(HyperStreamArrayHandle array, HyperStreamSplit split,
            List<HyperStreamColumnHandle> columns, int batchRows) {
        BufferAllocator allocator = Allocators.child("trino-array-" + split.start());
        ArrayStore store = null;
        try {
            store = nativeCall(() -> ArrayStore.open(array.store(), false, true));
            ArrayStore opened = store;
            ArrowReader reader = nativeCall(() -> opened.scan(allocator, array.tableName(), split.start(), split.end(), batchRows, true));
            return new HyperStreamPageSource(allocator, store, reader,
                    columns.stream().mapToInt(HyperStreamColumnHandle::ordinal).toArray());
        } catch (RuntimeException e) {
            closeQuietly(store);
            allocator.close();
            throw e;
        }
    }

    /**
     * The native columns {@code columns} read, in order: the table columns, then {@code _file} and
     * {@code _pos} when a MERGE reads its row id; the distance column (if any) is not one.
     */
    private static String[] nativeColumns(List<HyperStreamColumnHandle> columns) {
        java.util.stream.Stream<String> table = columns.stream().filter(c -> c.ordinal() >= 0).map(HyperStreamColumnHandle::name);
        java.util.stream.Stream<String> rowId = columns.stream().filter(TableMerge::isRowId).findFirst()
                .map(c -> TableMerge.nativeColumns(c).stream()).orElse(java.util.stream.Stream.empty());
        return java.util.stream.Stream.concat(table, rowId).toArray(String[]::new);
    }

    /**
     * The native read for a stored split: the rows {@code filter} passes (the pushed constraint and
     * what a dynamic filter adds to it), with the pushed distance when Trino reads it, or only the
     * top k by it.
     */
    private ArrowReader openStored(NativeTable stored, HyperStreamTableHandle handle, HyperStreamSplit split,
            List<HyperStreamColumnHandle> columns, int batchRows, long efSearch, String backend, String filter) {
        String[] files = split.dataFiles().toArray(String[]::new);
        String[] names = nativeColumns(columns);
        VectorDistance distance = handle.distance();
        if (handle.topK() > 0) {
            return stored.search(allocator, files, names, filter, distance.search(handle.topK()).withEfSearch(efSearch)
                    .withBackend(backend).withNullsFirst(handle.nullsFirst()), batchRows);
        }
        if (distance != null && columns.stream().anyMatch(c -> c.ordinal() == VectorDistance.ORDINAL)) {
            return stored.scanWithDistances(allocator, files, names, filter, distance.search(1), batchRows);
        }
        return stored.scanFiles(allocator, files, names, filter, batchRows);
    }

    /**
     * For each requested column, its vector in the native batch: the table columns, then a MERGE's
     * row id (the first of its vectors: {@code _file}, {@code _pos} and maybe {@code _row_id}), then the distance.
     */
    private static int[] blockPositions(List<HyperStreamColumnHandle> columns) {
        int tableColumns = (int) columns.stream().filter(c -> c.ordinal() >= 0).count();
        int distance = tableColumns + columns.stream().filter(TableMerge::isRowId).findFirst()
                .map(c -> TableMerge.nativeColumns(c).size()).orElse(0);
        int[] positions = new int[columns.size()];
        int next = 0;
        for (int i = 0; i < positions.length; i++) {
            HyperStreamColumnHandle column = columns.get(i);
            positions[i] = column.ordinal() >= 0 ? next++ : TableMerge.isRowId(column) ? tableColumns : distance;
        }
        return positions;
    }

    private static int[] rowIds(List<HyperStreamColumnHandle> columns) {
        int[] rowIds = new int[columns.size()];
        for (int i = 0; i < rowIds.length; i++) {
            rowIds[i] = TableMerge.isRowId(columns.get(i)) ? TableMerge.nativeColumns(columns.get(i)).size() : 0;
        }
        return rowIds;
    }

    @Override
    public SourcePage getNextSourcePage() {
        if (finished || remaining <= 0) {
            finished = true;
            return null;
        }
        long start = System.nanoTime();
        try {
            if (!reader.loadNextBatch()) {
                finished = true;
                return null;
            }
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            int rows = (int) Math.min(root.getRowCount(), remaining);
            remaining -= rows;
            completedPositions += rows;
            if (countOnly) {
                return SourcePage.create(rows);
            }
            List<FieldVector> vectors = root.getFieldVectors();
            for (FieldVector vector : vectors) {
                completedBytes += vector.getBufferSize();
            }
            if (negateDistance) {
                // dot_product is the native inner_product distance negated back.
                Float8Vector distances = (Float8Vector) vectors.get(vectors.size() - 1);
                for (int i = 0; i < rows; i++) {
                    if (!distances.isNull(i)) {
                        distances.set(i, -distances.get(i));
                    }
                }
            }
            Block[] blocks = new Block[positions.length];
            for (int i = 0; i < blocks.length; i++) {
                Block block;
                if (rowIds[i] > 0) {
                    Block[] fields = new Block[rowIds[i]];
                    for (int f = 0; f < fields.length; f++) {
                        fields[f] = ArrowBlocks.toBlock(vectors.get(positions[i] + f));
                    }
                    block = TableMerge.rowIdBlock(fields);
                } else {
                    block = ArrowBlocks.toBlock(vectors.get(positions[i]));
                }
                blocks[i] = rows < block.getPositionCount() ? block.getRegion(0, rows) : block;
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
