package io.hyperstream.jni;

import java.io.Serializable;

/**
 * Which snapshot of a table a read sees: the current one ({@link #CURRENT}), one named by id
 * ({@code FOR VERSION AS OF}, {@link #snapshot}) or the one current at a time ({@code FOR TIMESTAMP
 * AS OF}, {@link #asOf}, epoch milliseconds, before 1970 too). Reading a snapshot that does not exist
 * fails with {@link NotFoundException}.
 *
 * @param snapshotId the snapshot's id, or null
 * @param asOfMillis the time, or null
 */
public record TableVersion(Long snapshotId, Long asOfMillis) implements Serializable {
    /** The table's current snapshot (none for a table without data). */
    public static final TableVersion CURRENT = new TableVersion(null, null);

    public TableVersion {
        if (snapshotId != null && asOfMillis != null) {
            throw new InvalidArgumentException("a read sees one snapshot: give a snapshot id or a time, not both");
        }
    }

    /** The snapshot {@code id}. */
    public static TableVersion snapshot(long id) {
        return new TableVersion(id, null);
    }

    /** The snapshot current at {@code epochMillis}. */
    public static TableVersion asOf(long epochMillis) {
        return new TableVersion(null, epochMillis);
    }

    /** Whether this is the current snapshot rather than one travelled to. */
    public boolean isCurrent() {
        return snapshotId == null && asOfMillis == null;
    }

    long snapshotIdOrZero() {
        return snapshotId == null ? 0 : snapshotId;
    }

    long asOfMillisOrZero() {
        return asOfMillis == null ? 0 : asOfMillis;
    }
}
