package io.hyperstream.jni;

import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * An engine task's writer of one table ({@link NativeTable#openWriter}): batches go to native code
 * one at a time, which keeps a bounded buffer and rolls it into data files at the table's target
 * size ({@code write.target-file-size-bytes}) or when the process's writers together pass the write
 * memory limit ({@link NativeLibrary#setWriteMemoryLimit}). {@link #finish} returns the descriptions
 * of every file written, which {@link NativeTable#commitAppend} / {@link NativeTable#commitOverwrite}
 * commit; {@link #abort} deletes them. Not for use by several threads at once.
 */
public final class TableWriter extends NativeHandle {
    private long bufferedBytes;

    TableWriter(long handle, String location) {
        super("writer of table " + location, handle);
    }

    /**
     * Hands the rows of {@code root} to the writer (the table's columns by name, castable types);
     * the writer copies what it keeps, so {@code root} may be cleared or closed afterwards.
     */
    public void write(BufferAllocator allocator, VectorSchemaRoot root) {
        if (root.getRowCount() == 0) {
            return;
        }
        bufferedBytes = call(h -> {
            try (ArrowArray array = ArrowArray.allocateNew(allocator); ArrowSchema schema = ArrowSchema.allocateNew(allocator)) {
                Data.exportVectorSchemaRoot(allocator, root, null, array, schema);
                return writeNative(h, array.memoryAddress(), schema.memoryAddress());
            }
        });
    }

    /** What the writer held after the last {@link #write} (bytes of native memory). */
    public long bufferedBytes() {
        return bufferedBytes;
    }

    /** Writes what the writer still holds; returns the descriptions of every file it wrote. */
    public String[] finish() {
        String[] files = call(TableWriter::finishNative);
        bufferedBytes = 0;
        return files;
    }

    /** Drops what the writer holds and deletes every file it wrote (an aborted task's). */
    public void abort() {
        bufferedBytes = 0;
        run(TableWriter::abortNative);
    }

    private static native long writeNative(long handle, long arrayAddress, long schemaAddress);

    private static native String[] finishNative(long handle);

    private static native void abortNative(long handle);
}
