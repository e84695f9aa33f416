package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * Vector index build progress of a write, shown on the write node of the Spark UI (and in
 * {@code executedPlan().metrics()}): HNSW graphs the write tasks built for the files they wrote
 * (reported by each task as it goes), and those the driver built at commit for the files already
 * there when the write declared an index ({@code vector.<column>.index}; reported on Spark 4, whose
 * writes take driver metrics). Spark instantiates each metric class by name, so each is public with
 * a public constructor.
 */
public final class WriteMetrics {
    private WriteMetrics() {}

    /** Data files the write tasks gave an HNSW graph as they wrote them. */
    public static final class IndexedFiles extends ScanMetrics.Sum {
        public IndexedFiles() {
            super("vectorIndexFiles", "data files indexed (HNSW) as written");
        }
    }

    /** Vectors in those graphs. */
    public static final class IndexedVectors extends ScanMetrics.Sum {
        public IndexedVectors() {
            super("vectorIndexVectors", "vectors indexed as written");
        }
    }

    /** Time the write tasks spent building graphs. */
    public static final class IndexBuildMillis extends ScanMetrics.Sum {
        public IndexBuildMillis() {
            super("vectorIndexBuildMs", "HNSW build time as written (ms)");
        }
    }

    /** Data files already in the table that the driver indexed at commit for a declared index. */
    public static final class DeclaredFiles extends ScanMetrics.Sum {
        public DeclaredFiles() {
            super("declaredIndexFiles", "existing data files indexed at commit");
        }
    }

    /** Vectors in those graphs. */
    public static final class DeclaredVectors extends ScanMetrics.Sum {
        public DeclaredVectors() {
            super("declaredIndexVectors", "vectors indexed at commit");
        }
    }

    /** Time the driver spent building them. */
    public static final class DeclaredMillis extends ScanMetrics.Sum {
        public DeclaredMillis() {
            super("declaredIndexBuildMs", "HNSW build time at commit (ms)");
        }
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {new IndexedFiles(), new IndexedVectors(), new IndexBuildMillis(), new DeclaredFiles(),
                new DeclaredVectors(), new DeclaredMillis()};
    }

    /** A write task's values: the graphs its table handle built. */
    static CustomTaskMetric[] task(NativeTable.IndexBuilds built) {
        return new CustomTaskMetric[] {ScanMetrics.value("vectorIndexFiles", built.files()),
                ScanMetrics.value("vectorIndexVectors", built.vectors()), ScanMetrics.value("vectorIndexBuildMs", built.millis())};
    }

    /** The driver's values: the graphs its commit built. */
    static CustomTaskMetric[] driver(NativeTable.IndexBuilds built) {
        return new CustomTaskMetric[] {ScanMetrics.value("declaredIndexFiles", built.files()),
                ScanMetrics.value("declaredIndexVectors", built.vectors()), ScanMetrics.value("declaredIndexBuildMs", built.millis())};
    }
}
