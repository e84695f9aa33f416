package io.hyperstream.jni;

/** Stored data or metadata failed validation. Thrown by native code. */
public class CorruptDataException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public CorruptDataException(String message) {
        super(message);
    }
}
