package io.hyperstream.jni;

/** Reading or writing storage failed. Thrown by native code. */
public class HyperStreamIOException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public HyperStreamIOException(String message) {
        super(message);
    }

    public HyperStreamIOException(String message, Throwable cause) {
        super(message, cause);
    }
}
