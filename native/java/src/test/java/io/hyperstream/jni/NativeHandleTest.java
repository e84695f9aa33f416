package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;

class NativeHandleTest {
    @Test
    void closingTwiceIsHarmlessAndUseAfterCloseThrows() {
        long before = NativeLibrary.openHandles();
        SampleTable table = SampleTable.open(10, 2, 0);
        assertEquals(before + 1, NativeLibrary.openHandles());
        table.close();
        table.close();
        assertTrue(table.isClosed());
        assertEquals(before, NativeLibrary.openHandles());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> table.planSplits(5));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void aStreamOutlivesTheTableHandleThatOpenedIt() throws Exception {
        try (BufferAllocator allocator = Allocators.child("outlive")) {
            ArrowReader reader;
            try (SampleTable table = SampleTable.open(1_000, 4, 0)) {
                reader = table.scan(allocator, 0, 1_000, 100, null);
            }
            int batches = 0;
            while (reader.loadNextBatch()) {
                batches++;
            }
            reader.close();
            assertEquals(10, batches);
        }
    }

    @Test
    void theCleanerFreesHandlesThatWereNeverClosed() throws Exception {
        long before = NativeLibrary.openHandles();
        leakTables(100);
        assertEquals(before + 100, NativeLibrary.openHandles());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (NativeLibrary.openHandles() > before && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        assertEquals(before, NativeLibrary.openHandles(), "the Cleaner should free every leaked handle");
    }

    private static void leakTables(int count) {
        for (int i = 0; i < count; i++) {
            SampleTable.open(10, 2, i);
        }
    }

    @Test
    void tenThousandOpenCloseCyclesLeaveNativeMemoryFlat() throws Exception {
        try (BufferAllocator allocator = Allocators.child("cycles")) {
            cycles(allocator, 2_000); // warm up allocator pools and JIT
            // Handles other tests left to their Cleaners (a collected buffer's mapping, say) go first,
            // so that only this test's handles are counted.
            long handlesBefore = NativeLibrary.openHandles();
            for (int i = 0; i < 40; i++) {
                System.gc();
                Thread.sleep(25);
                long now = NativeLibrary.openHandles();
                if (now == handlesBefore && i > 1) {
                    break;
                }
                handlesBefore = now;
            }
            long mallocBefore = NativeLibrary.nativeAllocatedBytes();
            long rssBefore = rssKiB();
            cycles(allocator, 10_000);
            System.gc();
            long mallocAfter = NativeLibrary.nativeAllocatedBytes();
            long rssAfter = rssKiB();
            long handlesAfter = NativeLibrary.openHandles();
            System.out.printf("10,000 open/scan/close cycles: native malloc in use %d KiB -> %d KiB (%+d KiB); "
                    + "process RSS %d KiB -> %d KiB (%+d KiB, Java heap included); native handles %d -> %d; "
                    + "Arrow allocator %d bytes outstanding%n",
                    mallocBefore / 1024, mallocAfter / 1024, (mallocAfter - mallocBefore) / 1024,
                    rssBefore, rssAfter, rssAfter - rssBefore, handlesBefore, handlesAfter,
                    allocator.getAllocatedMemory());
            assertEquals(handlesBefore, handlesAfter);
            assertEquals(0, allocator.getAllocatedMemory());
            // Each cycle moves a 64-row batch of about 5 KB; leaking it would add ~50 MB.
            assertTrue(mallocAfter - mallocBefore < 16L << 20,
                    "native memory grew by " + (mallocAfter - mallocBefore) + " bytes");
        }
    }

    private static void cycles(BufferAllocator allocator, int count) throws IOException {
        for (int i = 0; i < count; i++) {
            try (SampleTable table = SampleTable.open(64, 16, i);
                    ArrowReader reader = table.scan(allocator, 0, 64, 64, null)) {
                assertTrue(reader.loadNextBatch());
                assertFalse(reader.loadNextBatch());
            }
        }
    }

    private static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    @Test
    void closeWaitsForCallsInFlightAndLaterCallsFailCleanly() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            for (int round = 0; round < 50; round++) {
                SampleTable table = SampleTable.open(100_000, 2, round);
                AtomicInteger served = new AtomicInteger();
                AtomicInteger refused = new AtomicInteger();
                List<Future<?>> calls = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    calls.add(pool.submit(() -> {
                        for (int i = 0; i < 200; i++) {
                            try {
                                assertEquals(100, table.planSplits(1_000).length);
                                served.incrementAndGet();
                            } catch (IllegalStateException closed) {
                                refused.incrementAndGet();
                            }
                        }
                    }));
                }
                table.close();
                for (Future<?> call : calls) {
                    call.get(30, TimeUnit.SECONDS);
                }
                assertEquals(800, served.get() + refused.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
