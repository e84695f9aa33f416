package io.hyperstream.jni;

/** An argument can never work: a bad option, a wrong shape, a value out of range. Thrown by native code. */
public class InvalidArgumentException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message) {
        super(message);
    }
}
