package io.hyperstream.jni;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * Bridge micro-benchmark (not a test): moves a batch stream of (bigint, double, float[dim]) rows
 * from native code into Java Arrow vectors through the C stream interface, beside a plain native
 * memcpy of the same bytes in the same process.
 *
 * <p>Run with {@code ./build-connectors.sh bench} (options: {@code --rows N --dim D --batch-rows B
 * --pool P --repeat R}).
 */
public final class BridgeBenchmark {
    private BridgeBenchmark() {}

    public static void main(String[] args) throws Exception {
        // Consumers that read hot loops (Spark's own Arrow readers do) turn off Arrow's per-access
        // bounds checks; it must be set before Arrow's classes load.
        System.setProperty("arrow.enable_unsafe_memory_access", "true");
        long rows = 10_000_000;
        int dim = 768;
        int batchRows = 8192;
        int pool = 8;
        int repeat = 3;
        for (int i = 0; i < args.length; i += 2) {
            String value = args[i + 1];
            switch (args[i]) {
                case "--rows" -> rows = Long.parseLong(value);
                case "--dim" -> dim = Integer.parseInt(value);
                case "--batch-rows" -> batchRows = Integer.parseInt(value);
                case "--pool" -> pool = Integer.parseInt(value);
                case "--repeat" -> repeat = Integer.parseInt(value);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        int[] projection = {0, 1, 4}; // id bigint, value double, embedding float[dim]
        long bytesPerRow = 8 + 8 + 4L * dim;
        long totalBytes = rows * bytesPerRow;
        System.out.printf("bridge benchmark: %,d rows x (bigint, double, float[%d]) = %.2f GB per pass, "
                + "batches of %,d rows, %d-batch native pool, best of %d%n",
                rows, dim, totalBytes / 1e9, batchRows, pool, repeat);
        try (SampleTable table = SampleTable.open((long) batchRows * pool, dim, 0);
                BatchReplay replay = table.replay(batchRows, pool, projection);
                BufferAllocator allocator = Allocators.child("bridge-bench")) {
            // Warm up both paths (JIT, page faults of the destination buffer).
            replay.copyBytes(Math.min(rows, (long) batchRows * pool * 2));
            importOnly(replay, allocator, Math.min(rows, (long) batchRows * pool * 2));

            List<Long> copy = new ArrayList<>();
            List<Long> bridge = new ArrayList<>();
            List<Long> bridgeRead = new ArrayList<>();
            long copied = 0;
            long checksum = 0;
            for (int r = 0; r < repeat; r++) {
                long t0 = System.nanoTime();
                copied = replay.copyBytes(rows);
                copy.add(System.nanoTime() - t0);

                t0 = System.nanoTime();
                long imported = importOnly(replay, allocator, rows);
                bridge.add(System.nanoTime() - t0);
                if (imported != rows) {
                    throw new IllegalStateException("bridge delivered " + imported + " rows, expected " + rows);
                }

                t0 = System.nanoTime();
                checksum += importAndRead(replay, allocator, rows, dim);
                bridgeRead.add(System.nanoTime() - t0);
            }
            if (copied != totalBytes) {
                System.out.printf("(native copy moved %,d bytes; rows x row width is %,d)%n", copied, totalBytes);
            }
            double copyS = Collections.min(copy) / 1e9;
            double bridgeS = Collections.min(bridge) / 1e9;
            double readS = Collections.min(bridgeRead) / 1e9;
            System.out.println();
            System.out.printf("| %-44s | %12s | %12s | %10s | %10s |%n", "workload", "time (s)", "rows/s", "GB/s", "vs memcpy");
            System.out.printf("|%s|%s|%s|%s|%s|%n", "-".repeat(46), "-".repeat(14), "-".repeat(14), "-".repeat(12), "-".repeat(12));
            row("native memcpy of the same bytes (peer)", copyS, rows, copied, copyS);
            row("bridge: native stream -> Java vectors", bridgeS, rows, totalBytes, copyS);
            row("bridge + Java reads every value", readS, rows, totalBytes, copyS);
            System.out.printf("%nratio bridge/memcpy = %.3f (target <= 1.5); checksum %d%n", bridgeS / copyS, checksum);
            System.out.println("command: ./build-connectors.sh bench");
        }
    }

    private static void row(String name, double seconds, long rows, long bytes, double copySeconds) {
        System.out.printf("| %-44s | %12.3f | %12.3e | %10.2f | %9.2fx |%n",
                name, seconds, rows / seconds, bytes / seconds / 1e9, seconds / copySeconds);
    }

    /** Imports every batch into Java vectors and touches each vector's buffers once. */
    private static long importOnly(BatchReplay replay, BufferAllocator allocator, long rows) throws Exception {
        long seen = 0;
        try (ArrowReader reader = replay.stream(allocator, rows)) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                FixedSizeListVector embedding = (FixedSizeListVector) root.getVector(2);
                if (embedding.getDataVector().getDataBuffer().memoryAddress() == 0) {
                    throw new IllegalStateException("empty vector buffer");
                }
                seen += root.getRowCount();
            }
        }
        return seen;
    }

    /** Imports every batch and reads every value from Java (a sum), as a consumer would. */
    private static long importAndRead(BatchReplay replay, BufferAllocator allocator, long rows, int dim) throws Exception {
        long longs = 0;
        double doubles = 0;
        float floats = 0;
        try (ArrowReader reader = replay.stream(allocator, rows)) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                int n = root.getRowCount();
                ArrowBuf ids = ((BigIntVector) root.getVector(0)).getDataBuffer();
                ArrowBuf values = ((Float8Vector) root.getVector(1)).getDataBuffer();
                ArrowBuf vectors = ((FixedSizeListVector) root.getVector(2)).getDataVector().getDataBuffer();
                for (int i = 0; i < n; i++) {
                    longs += ids.getLong((long) i * 8);
                    doubles += values.getDouble((long) i * 8);
                }
                long count = (long) n * dim;
                float acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
                long j = 0;
                for (; j + 4 <= count; j += 4) {
                    acc0 += vectors.getFloat(j * 4);
                    acc1 += vectors.getFloat(j * 4 + 4);
                    acc2 += vectors.getFloat(j * 4 + 8);
                    acc3 += vectors.getFloat(j * 4 + 12);
                }
                for (; j < count; j++) {
                    acc0 += vectors.getFloat(j * 4);
                }
                floats += acc0 + acc1 + acc2 + acc3;
            }
        }
        return longs + (long) doubles + (long) floats;
    }
}
