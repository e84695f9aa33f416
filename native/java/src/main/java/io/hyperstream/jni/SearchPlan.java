package io.hyperstream.jni;

import java.util.Arrays;
import java.util.Locale;

/**
 * How a vector top-k ({@code ORDER BY distance LIMIT k}) is divided among an engine's tasks.
 *
 * <ul>
 *   <li>{@link #SINGLE}: one task searches every file, natively in parallel on its node's cores, and
 *       returns exactly the k nearest; the engine sorts nothing.</li>
 *   <li>{@link #DISTRIBUTED}: a task per data file (or per run of small files); each returns the k
 *       nearest of its files with their distances, and the engine keeps its own top-k over the
 *       k x splits rows (Spark: a TakeOrderedAndProject; Trino: a partial and a final TopN), so the
 *       search uses every executor or worker.</li>
 *   <li>{@link #AUTO} (the default): distributed when the files searched make at least two runs
 *       of {@link #AUTO_SPLIT_ROWS} rows, each split then such a run; single otherwise, where an engine task's start and the second merge cost more than a
 *       node's cores save.</li>
 * </ul>
 *
 * Both plans give the same rows: each file is searched the same way (the same index use, the same
 * filter, the same deletes) whichever task searches it, and the k nearest of the whole are among the
 * k nearest of some split. Rows at exactly the same distance may come in another order.
 */
public enum SearchPlan {
    AUTO,
    SINGLE,
    DISTRIBUTED;

    /**
     * {@link #AUTO}: the fewest rows a split of a distributed top-k searches. Dividing a top-k costs
     * about 50 ms on one machine (the tasks' starts and the engine's top-k over their rows; measured by
     * {@code ./build-connectors.sh bench topk}, docs/benchmarks.md), the time of an exact search of some
     * 350,000 768-dimension vectors on two cores; a split of this many rows searches for at least 150 ms
     * on two cores, so the cost stays under a third of what each added node saves.
     */
    public static final long AUTO_SPLIT_ROWS = 1L << 20;

    /** The option and session-property value of this plan. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The plan {@code value} names ({@code auto}, {@code single} or {@code distributed}; {@code where} names its source in errors). */
    public static SearchPlan of(String where, String value) {
        String name = value == null ? "" : value.trim().toUpperCase(Locale.ROOT);
        for (SearchPlan plan : values()) {
            if (plan.name().equals(name)) {
                return plan;
            }
        }
        throw new IllegalArgumentException(where + " must be one of "
                + Arrays.stream(values()).map(SearchPlan::value).toList() + ", got '" + value + "'");
    }

    /**
     * {@code dataFiles} (from {@link NativeTable#dataFiles}) as the splits of a top-k under this plan:
     * one split of them all, or runs of whole files in their order, each of at least as many
     * rows as the plan asks ({@link #AUTO_SPLIT_ROWS}, or one file for {@link #DISTRIBUTED}),
     * the last run's rest joined to the run before it. A split of one run, for few rows, is the
     * single plan.
     */
    public String[][] splits(String[] dataFiles) {
        if (this == SINGLE || dataFiles.length <= 1) {
            return new String[][] {dataFiles};
        }
        long least = this == DISTRIBUTED ? 1 : AUTO_SPLIT_ROWS;
        java.util.List<java.util.List<String>> runs = new java.util.ArrayList<>();
        java.util.List<String> run = new java.util.ArrayList<>();
        long rows = 0;
        for (String file : dataFiles) {
            run.add(file);
            rows += DataFiles.recordCount(file);
            if (rows >= least) {
                runs.add(run);
                run = new java.util.ArrayList<>();
                rows = 0;
            }
        }
        if (!run.isEmpty()) {
            if (runs.isEmpty()) {
                runs.add(run);
            } else {
                runs.get(runs.size() - 1).addAll(run);
            }
        }
        return runs.stream().map(r -> r.toArray(String[]::new)).toArray(String[][]::new);
    }
}
