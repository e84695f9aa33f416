package io.hyperstream.jni;

/**
 * Base class of every exception the native library throws. Each native error kind has its own
 * subclass: {@link InvalidArgumentException}, {@link NotFoundException}, {@link
 * CommitConflictException}, {@link CorruptDataException}, {@link HyperStreamIOException} and
 * {@link InternalException} (which Rust panics become).
 */
public class HyperStreamException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public HyperStreamException(String message) {
        super(message);
    }

    public HyperStreamException(String message, Throwable cause) {
        super(message, cause);
    }
}
