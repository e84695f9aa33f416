package io.hyperstream.jni;

/** A table, column, snapshot or file that was named does not exist. Thrown by native code. */
public class NotFoundException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public NotFoundException(String message) {
        super(message);
    }
}
