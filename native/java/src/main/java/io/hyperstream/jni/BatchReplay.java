package io.hyperstream.jni;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * A fixed pool of native batches replayed through the C stream interface, and the plain copy of the
 * same bytes it is measured against: the bridge benchmark's source.
 */
public final class BatchReplay extends NativeHandle {
    BatchReplay(long handle) {
        super("batch replay", handle);
    }

    /** A stream of {@code totalRows} rows cycling through the pool. */
    public ArrowReader stream(BufferAllocator allocator, long totalRows) {
        return call(h -> ArrowStreams.importStream(allocator, address -> streamNative(h, totalRows, address)));
    }

    /** Copies the bytes {@link #stream} would hand over, natively, and returns how many there were. */
    public long copyBytes(long totalRows) {
        return call(h -> copyNative(h, totalRows));
    }

    static native long openNative(long table, int batchRows, int poolBatches, int[] projection);

    private static native void streamNative(long handle, long totalRows, long streamAddress);

    private static native long copyNative(long handle, long totalRows);
}
