package io.hyperstream.jni;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The rows a writer task of a row-level change (UPDATE, MERGE, DELETE by row) deletes, by the
 * {@code _file} and {@code _pos} its scan gave them, gathered per data file and handed to the
 * commit as {@link NativeTable#rowDeletes} fragments. One per task; not thread-safe.
 */
public final class RowDeletes {
    private final Map<String, long[]> positions = new LinkedHashMap<>();
    private final Map<String, Integer> counts = new LinkedHashMap<>();
    private long rows;

    /** Deletes the row at {@code position} of data file {@code dataFile}. */
    public void add(String dataFile, long position) {
        if (dataFile == null) {
            throw new InvalidArgumentException("a row to delete has no data file (_file is null)");
        }
        long[] held = positions.computeIfAbsent(dataFile, f -> new long[16]);
        int count = counts.getOrDefault(dataFile, 0);
        if (count == held.length) {
            held = Arrays.copyOf(held, held.length * 2);
            positions.put(dataFile, held);
        }
        held[count] = position;
        counts.put(dataFile, count + 1);
        rows++;
    }

    /** The rows added so far. */
    public long rows() {
        return rows;
    }

    /** Bytes held for the rows added so far. */
    public long retainedBytes() {
        return positions.values().stream().mapToLong(p -> 8L * p.length).sum();
    }

    /** The fragments of every data file's deleted rows (one per file), for the commit. */
    public List<String> fragments() {
        List<String> fragments = new ArrayList<>(positions.size());
        positions.forEach((file, held) -> fragments.add(NativeTable.rowDeletes(file, Arrays.copyOf(held, counts.get(file)))));
        return fragments;
    }
}
