package io.hyperstream.jni;

/** A bug in the native library, a Rust panic included; the library stays usable. Thrown by native code. */
public class InternalException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public InternalException(String message) {
        super(message);
    }

    public InternalException(String message, Throwable cause) {
        super(message, cause);
    }
}
