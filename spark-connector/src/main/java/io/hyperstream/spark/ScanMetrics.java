package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * What a filtered scan's pruning left out, shown on the scan node of the Spark UI (and in
 * {@code executedPlan().metrics()}): data files by their bounds, row groups by footer statistics and by
 * scalar indexes, rows by scalar indexes, and the rows read. Reported by the driver once it plans the
 * scan. Spark instantiates each metric class by name, so each is public with a public constructor.
 */
public final class ScanMetrics {
    private ScanMetrics() {}

    /** Data files left out by their manifest bounds. */
    public static final class FilesPruned extends Sum {
        public FilesPruned() {
            super("filesPruned", "data files pruned by bounds");
        }
    }

    /** Row groups left out by their footer statistics. */
    public static final class RowGroupsPrunedByStats extends Sum {
        public RowGroupsPrunedByStats() {
            super("rowGroupsPrunedByStats", "row groups pruned by statistics");
        }
    }

    /** Row groups left out because their Parquet bloom filters rule out every value looked up. */
    public static final class RowGroupsPrunedByBloom extends Sum {
        public RowGroupsPrunedByBloom() {
            super("rowGroupsPrunedByBloom", "row groups pruned by bloom filters");
        }
    }

    /** Row groups left out because their scalar indexes leave no row in them. */
    public static final class RowGroupsPrunedByIndex extends Sum {
        public RowGroupsPrunedByIndex() {
            super("rowGroupsPrunedByIndex", "row groups pruned by scalar indexes");
        }
    }

    /** Rows ruled out by scalar indexes. */
    public static final class RowsPrunedByIndex extends Sum {
        public RowsPrunedByIndex() {
            super("rowsPrunedByIndex", "rows pruned by scalar indexes");
        }
    }

    /** Rows the scan reads after every pruning level. */
    public static final class RowsRead extends Sum {
        public RowsRead() {
            super("rowsRead", "rows read after pruning");
        }
    }

    abstract static class Sum extends CustomSumMetric {
        private final String name;
        private final String description;

        Sum(String name, String description) {
            this.name = name;
            this.description = description;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return description;
        }
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {new FilesPruned(), new RowGroupsPrunedByStats(), new RowGroupsPrunedByBloom(), new RowGroupsPrunedByIndex(),
                new RowsPrunedByIndex(), new RowsRead()};
    }

    /** The driver's values for {@link #supported()}, from the native explain of the planned read. */
    static CustomTaskMetric[] values(NativeTable.ScanExplain e) {
        return new CustomTaskMetric[] {value("filesPruned", e.filesPruned()),
                value("rowGroupsPrunedByStats", e.rowGroupsPrunedByStats()), value("rowGroupsPrunedByBloom", e.rowGroupsPrunedByBloom()),
                value("rowGroupsPrunedByIndex", e.rowGroupsPrunedByIndex()), value("rowsPrunedByIndex", e.rowsPrunedByIndex()),
                value("rowsRead", e.rowsRead())};
    }

    static CustomTaskMetric value(String name, long value) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public long value() {
                return value;
            }
        };
    }
}
