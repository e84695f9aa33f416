package io.hyperstream.jni;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.LongConsumer;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Arrow data across the boundary through the C Data Interface: Java allocates the C structs and
 * passes their addresses; native code fills them (export) or takes them over (import). Batches are
 * never copied on either side.
 */
public final class ArrowStreams {
    private ArrowStreams() {}

    /**
     * Allocates an {@code ArrowArrayStream}, lets {@code exporter} fill it with a native stream, and
     * returns a reader over it. Closing the reader releases the native stream. A stream that fails
     * raises the exception class of its error's kind from {@code loadNextBatch} ({@link NativeStreamReader}).
     */
    public static ArrowReader importStream(BufferAllocator allocator, LongConsumer exporter) {
        try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            exporter.accept(stream.memoryAddress());
            // The reader moves the stream into a struct of its own; closing ours frees only the shell.
            return new NativeStreamReader(allocator, Data.importArrayStream(allocator, stream));
        }
    }

    /** Allocates an {@code ArrowSchema}, lets {@code exporter} fill it, and imports it. */
    public static Schema importSchema(BufferAllocator allocator, LongConsumer exporter) {
        try (ArrowSchema schema = ArrowSchema.allocateNew(allocator)) {
            exporter.accept(schema.memoryAddress());
            return Data.importSchema(allocator, schema, null);
        }
    }

    /**
     * Exports {@code reader} as a C stream and hands its address to {@code consumer}, which must
     * take the stream over before returning. The reader is closed when the native side releases it.
     */
    public static void exportStream(BufferAllocator allocator, ArrowReader reader, LongConsumer consumer) {
        try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            Data.exportArrayStream(allocator, reader, stream);
            consumer.accept(stream.memoryAddress());
        }
    }

    /** Streams {@code reader} into native code and returns what arrived there. */
    public static StreamSummary summarize(BufferAllocator allocator, ArrowReader reader) {
        NativeLibrary.load();
        long[][] result = new long[1][];
        exportStream(allocator, reader, address -> result[0] = NativeLibrary.summarizeStream(address));
        return StreamSummary.fromNative(result[0]);
    }

    /** Closes a reader, turning the checked exception into an unchecked one. */
    public static void closeQuietly(ArrowReader reader) {
        try {
            reader.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
