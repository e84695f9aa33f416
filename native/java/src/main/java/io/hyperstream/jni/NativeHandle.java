package io.hyperstream.jni;

import java.lang.ref.Cleaner;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongConsumer;

/**
 * A native object held by its {@code long} handle.
 *
 * <p>Calls run under a read lock and {@link #close()} takes the write lock, so the native object is
 * freed only after every call in flight has returned, and never twice. A handle that is never
 * closed is freed by a {@link Cleaner} once it becomes unreachable. Using a closed handle throws
 * {@link IllegalStateException}.
 */
public abstract class NativeHandle implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create(runnable -> {
        Thread thread = new Thread(runnable, "hyperstream-cleaner");
        thread.setDaemon(true);
        return thread;
    });

    /** A native call that receives the open handle. */
    @FunctionalInterface
    protected interface HandleCall<T> {
        T apply(long handle);
    }

    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String description;
    private final long handle;
    private final Cleaner.Cleanable cleanable;
    private boolean closed;

    /**
     * @param description what the handle is, for error messages
     * @param handle the native handle, non-zero; every native object is freed the same way
     */
    protected NativeHandle(String description, long handle) {
        if (handle == 0) {
            throw new InternalException("native code returned a null handle for " + description);
        }
        this.description = description;
        this.handle = handle;
        this.cleanable = CLEANER.register(this, new Release(handle));
    }

    /** Runs {@code call} with the open handle; throws if the handle is closed. */
    protected final <T> T call(HandleCall<T> call) {
        lock.readLock().lock();
        try {
            if (closed) {
                throw new IllegalStateException(description + " is closed");
            }
            return call.apply(handle);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Like {@link #call} for calls that return nothing. */
    protected final void run(LongConsumer call) {
        call(h -> {
            call.accept(h);
            return null;
        });
    }

    public final boolean isClosed() {
        lock.readLock().lock();
        try {
            return closed;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Frees the native object once calls in flight return; later calls to close do nothing. */
    @Override
    public final void close() {
        lock.writeLock().lock();
        try {
            if (!closed) {
                closed = true;
                cleanable.clean();
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Frees native handle {@code handle} once {@code owner} is unreachable: for objects that hold
     * native memory without being handles themselves (buffers over a mapping).
     */
    static void releaseWhenUnreachable(Object owner, long handle) {
        CLEANER.register(owner, new Release(handle));
    }

    @Override
    public String toString() {
        return description + (isClosed() ? " (closed)" : "");
    }

    /** The cleaning action: holds only the handle value, never the owner. */
    private record Release(long handle) implements Runnable {
        @Override
        public void run() {
            releaseNative(handle);
        }
    }

    private static native void releaseNative(long handle);
}
