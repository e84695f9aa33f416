package io.hyperstream.jni;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The in-memory model of the engines' row-level change property tests: a table of (id, grp, val,
 * tag, embedding [v, 1, -v, 0.5]), random changes applied to it (each engine's test renders the same
 * change in its own SQL and runs it on a real table), and what every read must then return.
 */
public final class RowChangeModel {
    /** A model row: the group, value and tag columns and the vector's first component. */
    public record Row(long grp, double val, String tag, float v) {}

    /** A change; the model has applied it when {@link #next} returns it. */
    public sealed interface Change permits Insert, Update, DeleteDigit, DeleteGroup, Merge {}

    /** INSERT these rows. */
    public record Insert(Map<Long, Row> rows) implements Change {}

    /** UPDATE the rows of group {@code grp}: val + 1, this tag, the vector of {@code v}. */
    public record Update(long grp, String tag, float v) implements Change {}

    /** DELETE the rows whose id ends in {@code digit} (a condition the native filter cannot take). */
    public record DeleteDigit(int digit) implements Change {}

    /** DELETE the rows of group {@code grp} with val below 500 (a condition it can). */
    public record DeleteGroup(long grp) implements Change {}

    /**
     * MERGE a source of (id, val): matched and val below 0: DELETE; matched: UPDATE SET val, tag;
     * not matched and val below 800: INSERT (id, 9, val, 'new', the vector of {@link #MERGED_V}).
     */
    public record Merge(Map<Long, Double> source, String tag) implements Change {}

    /** The vector component of the rows a MERGE inserts. */
    public static final float MERGED_V = 3000;

    private final TreeMap<Long, Row> rows = new TreeMap<>();
    private final Random random;
    private long nextId;

    public RowChangeModel(long seed) {
        this.random = new Random(seed);
    }

    /** The next random change of step {@code step} (the first two insert), applied to the model. */
    public Change next(int step) {
        switch (step < 2 ? 0 : random.nextInt(5)) {
            case 0 -> {
                TreeMap<Long, Row> added = new TreeMap<>();
                for (int i = 0, n = 50 + random.nextInt(100); i < n; i++) {
                    added.put(nextId++, new Row(random.nextInt(8), random.nextInt(1000),
                            random.nextBoolean() ? "t" + random.nextInt(5) : null, random.nextInt(2000)));
                }
                rows.putAll(added);
                return new Insert(added);
            }
            case 1 -> {
                long grp = random.nextInt(8);
                float v = random.nextInt(2000);
                String tag = "u" + step;
                rows.replaceAll((id, r) -> r.grp() == grp ? new Row(r.grp(), r.val() + 1, tag, v) : r);
                return new Update(grp, tag, v);
            }
            case 2 -> {
                int digit = random.nextInt(10);
                rows.keySet().removeIf(id -> id % 10 == digit);
                return new DeleteDigit(digit);
            }
            case 3 -> {
                long grp = random.nextInt(8);
                rows.values().removeIf(r -> r.grp() == grp && r.val() < 500);
                return new DeleteGroup(grp);
            }
            default -> {
                TreeMap<Long, Double> source = new TreeMap<>();
                for (int i = 0; i < 40; i++) {
                    long id = random.nextInt(4) == 0 ? 100_000 + 100L * step + i : random.nextInt((int) nextId);
                    source.put(id, (double) random.nextInt(1000) - 100);
                }
                String tag = "m" + step;
                source.forEach((id, val) -> {
                    Row r = rows.get(id);
                    if (r != null && val < 0) {
                        rows.remove(id);
                    } else if (r != null) {
                        rows.put(id, new Row(r.grp(), val, tag, r.v()));
                    } else if (val < 800) {
                        rows.put(id, new Row(9, val, "new", MERGED_V));
                    }
                });
                return new Merge(source, tag);
            }
        }
    }

    /** Every row as {@code id|grp|val|tag|v}, by id. */
    public List<String> rows() {
        return rows.entrySet().stream().map(e -> e.getKey() + "|" + e.getValue().grp() + "|" + e.getValue().val() + "|"
                + e.getValue().tag() + "|" + e.getValue().v()).toList();
    }

    /** Every row as {@code id|grp|val|tag}, sorted as text (what {@link IcebergJavaReader} gives). */
    public List<String> rowsAsText() {
        return rows.entrySet().stream().map(e -> e.getKey() + "|" + e.getValue().grp() + "|" + e.getValue().val() + "|"
                + e.getValue().tag()).sorted().toList();
    }

    /** The ids of group {@code grp}, ascending. */
    public List<Long> inGroup(long grp) {
        return rows.entrySet().stream().filter(e -> e.getValue().grp() == grp).map(Map.Entry::getKey).toList();
    }

    /** The L2 distances of the {@code k} rows nearest to the vector of {@code q} ([q, 1, -q, 0.5]), ascending. */
    public List<Double> nearestDistances(float q, int k) {
        return rows.values().stream().map(r -> distance(r.v(), q)).sorted(Comparator.naturalOrder()).limit(k).toList();
    }

    /** The distance between the vectors of {@code v} and {@code q}, as the tests compare them. */
    public static double distance(float v, float q) {
        return Math.abs(v - q);
    }

    /** The row of {@code id}, or null. */
    public Row get(long id) {
        return rows.get(id);
    }

    public int size() {
        return rows.size();
    }
}
