package io.hyperstream.jni;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Another writer's commit between a statement's read and its commit, in an engine's own process:
 * the statement calls a function of the engine's (a Spark UDF, a Trino scalar function) that runs
 * {@link #pause} once it has read the table; while it waits there, {@link #between} runs the other
 * writer's statement to its end, then lets the first go on to its commit.
 */
public final class ConcurrentCommit {
    private static final AtomicBoolean armed = new AtomicBoolean();
    private static volatile CountDownLatch paused;
    private static volatile CountDownLatch resume;

    private ConcurrentCommit() {}

    /** {@code value}; armed by {@link #between}, the first call waits until the other writer is done. */
    public static long pause(long value) {
        if (armed.compareAndSet(true, false)) {
            paused.countDown();
            try {
                if (!resume.await(120, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the other writer never finished");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return value;
    }

    /** Runs {@code statement} and, while it is paused in {@link #pause}, {@code other}; the statement's failure, or null. */
    public static Throwable between(Runnable statement, Runnable other) throws Exception {
        paused = new CountDownLatch(1);
        resume = new CountDownLatch(1);
        armed.set(true);
        CompletableFuture<Throwable> running = CompletableFuture.supplyAsync(() -> {
            try {
                statement.run();
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        try {
            if (!paused.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the statement never called pause");
            }
            other.run();
        } finally {
            resume.countDown();
        }
        return running.get(180, TimeUnit.SECONDS);
    }
}
