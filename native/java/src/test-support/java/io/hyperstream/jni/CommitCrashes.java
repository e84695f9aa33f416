package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What the engines' commit crash tests share: a writer JVM (a main class of the test class path,
 * started with this JVM's options and {@code hyperstream.*} properties) killed after it says {@code ready}, and the checks of a table of
 * {@code id} rows that the writer fills with whole INSERTs of consecutive ids. No Arrow type appears
 * here: the Spark tests compile this against the shaded JAR, whose Arrow is relocated.
 */
public final class CommitCrashes {
    private CommitCrashes() {}

    /**
     * Runs {@code main} with {@code args} in a JVM of its own, waits until it prints {@code ready},
     * lets it run for {@code millis}, then kills it (SIGKILL); returns the lines it printed.
     */
    public static List<String> killAfter(Class<?> main, List<String> args, long millis) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        // The build's settings (the plugin directory, the library path) reach the fork as properties.
        System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("hyperstream."))
                .forEach(k -> command.add("-D" + k + "=" + System.getProperty(k)));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(args);
        // Output goes to a file: a pipe nobody reads while the writer runs would stall it.
        Path log = Files.createTempFile("hyperstream-crash-writer", ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            while (Files.readAllLines(log, StandardCharsets.UTF_8).stream().noneMatch(l -> l.contains("ready"))) {
                if (!process.isAlive()) {
                    throw new AssertionError("the writer stopped before it was ready:\n" + Files.readString(log));
                }
                Thread.sleep(20);
            }
            Thread.sleep(millis);
        } finally {
            process.destroyForcibly();
            process.waitFor(60, TimeUnit.SECONDS);
        }
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        Files.delete(log);
        return lines;
    }

    /** Reads the {@code id} column of every live row of the table, sorted. */
    @FunctionalInterface
    public interface Ids {
        long[] read() throws Exception;
    }

    /**
     * The crash loop: {@code kills} times, runs the writer {@code main} (which INSERTs whole runs of
     * {@code rowsPerInsert} consecutive ids into the table at {@code location}, from the count it
     * finds) and kills it at a point that moves from kill to kill, a reader reading the table the
     * while; every read and the table after each kill hold whole INSERTs, and orphan removal a day
     * later leaves only the live files and the same rows. Returns the whole INSERTs after each kill.
     */
    public static List<Integer> killRepeatedly(Class<?> main, List<String> args, String location, int kills,
            int rowsPerInsert, Ids ids) throws Exception {
        List<Integer> inserts = new ArrayList<>();
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        for (int kill = 0; kill < kills; kill++) {
            java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
            java.util.concurrent.atomic.AtomicReference<Throwable> readFailure = new java.util.concurrent.atomic.AtomicReference<>();
            String what = "kill " + kill;
            Thread reader = new Thread(() -> {
                try {
                    while (running.get()) {
                        wholeInserts(ids.read(), rowsPerInsert, what + ", a read while the writer ran");
                        reads.incrementAndGet();
                        Thread.sleep(10); // leave the writer the cores
                    }
                } catch (Throwable t) {
                    readFailure.set(t);
                }
            });
            reader.start();
            try {
                killAfter(main, args, 200 + (kill * 7919L) % 2500);
            } finally {
                running.set(false);
                reader.join();
            }
            if (readFailure.get() != null) {
                throw new AssertionError(readFailure.get());
            }
            inserts.add(wholeInserts(ids.read(), rowsPerInsert, what));
            removeOrphansADayLater(location);
            wholeInserts(ids.read(), rowsPerInsert, what + ", after orphan removal");
        }
        System.err.println("killed " + main.getSimpleName() + " writers left these numbers of whole INSERTs: " + inserts
                + " (" + reads + " reads meanwhile)");
        assertTrue(inserts.get(inserts.size() - 1) > inserts.get(0), "the writers committed between kills: " + inserts);
        return inserts;
    }

    /** How many whole INSERTs of {@code rowsPerInsert} consecutive ids {@code ids} hold; fails if not whole. */
    public static int wholeInserts(long[] ids, int rowsPerInsert, String what) {
        assertEquals(0, ids.length % rowsPerInsert, what + ": " + ids.length + " rows are not whole INSERTs");
        for (int i = 0; i < ids.length; i++) {
            assertEquals(i, ids[i], what + ": row " + i + " of a prefix of whole INSERTs");
        }
        return ids.length / rowsPerInsert;
    }

    /**
     * Ages every file of the table by two days (as if the killed writer had died that long ago) and
     * removes its orphan files; checks that only the live data files are left. Returns what went.
     */
    public static List<String> removeOrphansADayLater(String location) throws IOException {
        FileTime old = FileTime.fromMillis(System.currentTimeMillis() - 2 * 86_400_000L);
        try (Stream<Path> files = Files.walk(Path.of(location))) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                Files.setLastModifiedTime(file, old);
            }
        }
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            List<String> removed = table.removeOrphanFiles(System.currentTimeMillis() - 86_400_000L - 60_000);
            long live = table.dataFiles(TableVersion.CURRENT).length;
            try (Stream<Path> files = Files.walk(Path.of(location, "data"))) {
                long parquet = files.filter(p -> p.toString().endsWith(".parquet")).count();
                assertEquals(live, parquet, "after orphan removal only the live data files are left");
            } catch (java.nio.file.NoSuchFileException e) {
                assertEquals(0, live);
            }
            try (Stream<Path> files = Files.walk(Path.of(location))) {
                assertTrue(files.noneMatch(p -> p.getFileName().toString().matches(".*#[0-9]+")), "no staged file is left");
            }
            return removed;
        }
    }
}
