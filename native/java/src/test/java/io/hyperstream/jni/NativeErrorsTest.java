package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;

class NativeErrorsTest {
    @Test
    void everyNativeErrorKindArrivesAsItsExceptionClassWithTheMessageIntact() {
        Map<String, Class<? extends HyperStreamException>> kinds = Map.of(
                "INVALID_ARGUMENT", InvalidArgumentException.class,
                "NOT_FOUND", NotFoundException.class,
                "COMMIT_CONFLICT", CommitConflictException.class,
                "COMMIT_STATE_UNKNOWN", CommitStateUnknownException.class,
                "CORRUPT", CorruptDataException.class,
                "IO", HyperStreamIOException.class,
                "INTERNAL", InternalException.class);
        kinds.forEach((kind, type) -> {
            String message = "table t1 snapshot 42 — ünïcødé ✓ " + kind;
            HyperStreamException e = assertThrows(type, () -> NativeLibrary.failWith(kind, message));
            assertTrue(e.getMessage().contains(message), e.getMessage());
        });
    }

    @Test
    void anUnknownErrorKindIsItselfAnInvalidArgument() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> NativeLibrary.failWith("NO_SUCH_KIND", "x"));
        assertTrue(e.getMessage().contains("NO_SUCH_KIND"), e.getMessage());
    }

    @Test
    void nullStringsAreRejectedNotDereferenced() {
        assertThrows(InvalidArgumentException.class, () -> NativeLibrary.failWith(null, "x"));
        assertThrows(InvalidArgumentException.class, () -> NativeLibrary.panicWith(null));
    }

    @Test
    void aPanicBecomesAnInternalExceptionAndTheLibraryKeepsServing() {
        for (int i = 0; i < 50; i++) {
            String message = "boom " + i;
            InternalException e = assertThrows(InternalException.class, () -> NativeLibrary.panicWith(message));
            assertEquals("native panic: " + message, e.getMessage());
        }
        assertEquals(NativeLibrary.version(), NativeLibrary.version());
        try (SampleTable table = SampleTable.open(10, 2, 0)) {
            assertEquals(1, table.planSplits(100).length);
        }
    }

    @Test
    void aPanicInsideAStreamEndsItWithAnInternalExceptionAndTheNextStreamIsWhole() throws Exception {
        try (BufferAllocator allocator = Allocators.child("stream-panic-test"); SampleTable table = SampleTable.open(1000, 4, 0)) {
            NativeLibrary.armStreamPanic(2);
            try (ArrowReader reader = table.scan(allocator, 0, 1000, 100, null)) {
                assertTrue(reader.loadNextBatch());
                assertTrue(reader.loadNextBatch());
                InternalException e = assertThrows(InternalException.class, reader::loadNextBatch);
                assertTrue(e.getMessage().contains("native panic while reading a batch"), e.getMessage());
            }
            long rows = 0;
            try (ArrowReader reader = table.scan(allocator, 0, 1000, 100, null)) {
                while (reader.loadNextBatch()) {
                    rows += reader.getVectorSchemaRoot().getRowCount();
                }
            }
            assertEquals(1000, rows);
        }
    }

    @Test
    void badArgumentsNameWhatWasWrong() {
        InvalidArgumentException rows = assertThrows(InvalidArgumentException.class,
                () -> SampleTable.open(-5, 4, 0));
        assertTrue(rows.getMessage().contains("-5"), rows.getMessage());
        InvalidArgumentException dim = assertThrows(InvalidArgumentException.class,
                () -> SampleTable.open(5, 0, 0));
        assertTrue(dim.getMessage().contains("dimension"), dim.getMessage());
        try (SampleTable table = SampleTable.open(100, 4, 0);
                BufferAllocator allocator = Allocators.child("errors")) {
            InvalidArgumentException range = assertThrows(InvalidArgumentException.class,
                    () -> table.scan(allocator, 50, 101, 10, null));
            assertTrue(range.getMessage().contains("50..101"), range.getMessage());
            InvalidArgumentException column = assertThrows(InvalidArgumentException.class,
                    () -> table.scan(allocator, 0, 10, 10, new int[] {0, 9}));
            assertTrue(column.getMessage().contains("column index 9"), column.getMessage());
            assertThrows(InvalidArgumentException.class, () -> table.scan(allocator, 0, 10, 10, new int[] {-1}));
            assertThrows(InvalidArgumentException.class, () -> table.scan(allocator, 0, 10, 0, null));
            assertThrows(InvalidArgumentException.class, () -> table.planSplits(0));
            assertThrows(InvalidArgumentException.class, () -> table.replay(0, 1, null));
        }
    }
}
