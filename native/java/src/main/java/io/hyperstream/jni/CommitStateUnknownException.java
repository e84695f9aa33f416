package io.hyperstream.jni;

/**
 * A commit failed in a way that leaves open whether it took effect: the store failed after it may
 * have stored the new table version, and reading that version back failed too. Reload the table to
 * see; until then keep every file the commit named (never delete them as an aborted write's), as
 * they may be committed. Thrown by native code.
 */
public class CommitStateUnknownException extends HyperStreamException {
    private static final long serialVersionUID = 1L;

    public CommitStateUnknownException(String message) {
        super(message);
    }
}
