package io.hyperstream.jni;

/** Another writer committed first and the change could not be rebased on top of it. Thrown by native code. */
public class CommitConflictException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public CommitConflictException(String message) {
        super(message);
    }
}
