package io.hyperstream.spark;

import io.hyperstream.jni.DataFiles;
import io.hyperstream.jni.Filters;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SearchPlan;
import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.VectorSearch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.StructType;

/**
 * The planned read; it reports the rows and bytes of the files it reads to Spark's optimizer, and
 * takes runtime filters: the join keys a selective dimension side leaves (dynamic pruning) join
 * the native filter, so the fact table's files, row groups and rows are pruned by bounds and
 * scalar indexes like any other filter.
 */
final class TableScan implements Scan, Batch, org.apache.spark.sql.connector.read.SupportsReportStatistics,
        org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering {
    private final PathOptions options;
    /** The table's own columns (without the {@code _distance} a search option adds). */
    private final StructType tableColumns;
    private final StructType readSchema;
    private String filter;
    private final VectorOption search;
    /** How the search is divided among tasks ({@link SearchPlan#SINGLE} when Spark keeps no top-k over it). */
    private final SearchPlan searchPlan;
    private final int limit;
    /** The data files read, once asked for. */
    private String[] files;
    /** How the filtered read prunes, once asked for (null without a filter). */
    private NativeTable.ScanExplain explained;

    /** {@code files}: the data files the read covers, when its builder already planned them (else null). */
    TableScan(PathOptions options, StructType tableColumns, StructType readSchema, String filter, VectorOption search,
            SearchPlan searchPlan, int limit, String[] files) {
        this.options = options;
        this.tableColumns = tableColumns;
        this.readSchema = readSchema;
        this.filter = filter;
        this.search = search;
        this.searchPlan = searchPlan;
        this.limit = limit;
        this.files = files;
    }

    PathOptions options() {
        return options;
    }

    StructType tableColumns() {
        return tableColumns;
    }

    /** The native filter of every predicate pushed into the scan; null for none. */
    String pushedFilter() {
        return filter;
    }

    boolean isSearch() {
        return search != null;
    }

    /** The data files the read covers (see {@link #files()}). */
    String[] plannedFiles() {
        return files().clone();
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        TableVersion version = options.read().version();
        String at = version.snapshotId() != null ? " snapshot=" + version.snapshotId()
                : version.asOfMillis() != null ? " as-of=" + version.asOfMillis() : "";
        return "HyperStreamScan " + options.path() + at + " columns=" + Arrays.toString(readSchema.fieldNames())
                + (filter == null ? "" : " filter=" + filter) + (search == null ? "" : " " + search + " " + searchPlanShown())
                + (limit > 0 ? " limit=" + limit : "") + (filter == null ? "" : " pruning=[" + explained() + "]")
                + (search == null ? "" : " " + explained().searchChoice());
    }

    /** The search's plan as EXPLAIN shows it: single, or distributed over how many splits. */
    private String searchPlanShown() {
        int splits = searchPlan.splits(files()).length;
        return splits > 1 ? "plan=distributed splits=" + splits : "plan=single";
    }

    /**
     * What each pruning level leaves out of the filtered read (footers and indexes read, no data)
     * and, for a search, how many files it walks the HNSW graph of and how many it compares exactly.
     */
    private NativeTable.ScanExplain explained() {
        if (explained == null && (filter != null || search != null)) {
            if (search == null) {
                files(); // plans the files and explains in one pass
            } else {
                try (NativeTable table = options.openRead()) {
                    explained = table.explainSearch(table.dataFiles(options.read().version()), filter, search.toSearch());
                }
            }
        }
        return explained;
    }

    /**
     * Every scalar column the read returns (Spark resolves these against the read's output): a
     * runtime filter on any of them prunes by bounds, and by index where indexed.
     */
    @Override
    public NamedReference[] filterAttributes() {
        if (search != null) {
            return new NamedReference[0]; // a top-k's rows are not the filtered rows' nearest
        }
        List<String> table = Arrays.asList(tableColumns.fieldNames());
        return Arrays.stream(readSchema.fields())
                .filter(f -> table.contains(f.name()))
                .filter(f -> !(f.dataType() instanceof ArrayType) && !(f.dataType() instanceof StructType))
                .map(f -> org.apache.spark.sql.connector.expressions.Expressions.column(f.name()))
                .toArray(NamedReference[]::new);
    }

    @Override
    public void filter(Predicate[] predicates) {
        List<String> added = new ArrayList<>();
        for (Predicate predicate : predicates) {
            SparkFilters.translate(predicate, tableColumns).ifPresent(added::add);
        }
        if (added.isEmpty()) {
            return;
        }
        if (filter != null) {
            added.add(0, filter);
        }
        filter = Filters.and(added);
        files = null;
        explained = null;
    }

    @Override
    public org.apache.spark.sql.connector.metric.CustomMetric[] supportedCustomMetrics() {
        return ScanMetrics.supported();
    }

    @Override
    public org.apache.spark.sql.connector.metric.CustomTaskMetric[] reportDriverMetrics() {
        return filter == null || search != null ? new org.apache.spark.sql.connector.metric.CustomTaskMetric[0]
                : ScanMetrics.values(explained());
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        boolean distance = Arrays.asList(readSchema.fieldNames()).contains(VectorSearch.DISTANCE_COLUMN)
                && options.read().search() != null;
        String[] columns = Arrays.stream(readSchema.fieldNames())
                .filter(n -> !(distance && n.equals(VectorSearch.DISTANCE_COLUMN))).toArray(String[]::new);
        String[][] splits;
        PathOptions tasks;
        try (NativeTable table = options.openRead()) {
            splits = search != null ? searchPlan.splits(files())
                    : table.planSplits(files(), limit, filter != null, options.read().splitRows());
            tasks = options.forTasks(table);
        }
        return Arrays.stream(splits)
                .map(files -> search != null
                        ? new TableInputPartition(tasks, files, columns, filter, search, distance, 0)
                        : new TableInputPartition(tasks, files, columns, filter, null, false, limit))
                .toArray(InputPartition[]::new);
    }

    /**
     * The data files the read covers. With a filter, only the files holding a row to read: those
     * whose bounds, row-group statistics, scalar indexes or deletes rule out every row are never
     * planned (the same pass gives the pruning figures the plan shows).
     */
    private String[] files() {
        if (files == null) {
            try (NativeTable table = options.openRead()) {
                String[] all = table.dataFiles(options.read().version());
                if (filter == null || search != null) {
                    files = filter == null ? all : table.dataFiles(options.read().version(), filter);
                } else {
                    NativeTable.ExplainedFiles explainedFiles = table.explainFiles(all, filter);
                    explained = explainedFiles.explain();
                    files = explainedFiles.files();
                }
            }
        }
        return files;
    }

    @Override
    public org.apache.spark.sql.connector.read.Statistics estimateStatistics() {
        long rows = 0;
        long bytes = 0;
        for (String file : files()) {
            rows += DataFiles.recordCount(file);
            bytes += DataFiles.sizeInBytes(file);
        }
        long estimatedRows = search == null ? rows : Math.min(rows, search.k());
        long estimatedBytes = rows == 0 ? 0 : Math.max(1, (long) ((double) bytes * estimatedRows / rows));
        return new org.apache.spark.sql.connector.read.Statistics() {
            @Override
            public java.util.OptionalLong sizeInBytes() {
                return java.util.OptionalLong.of(estimatedBytes);
            }

            @Override
            public java.util.OptionalLong numRows() {
                return java.util.OptionalLong.of(estimatedRows);
            }

            @Override
            public Map<NamedReference, org.apache.spark.sql.connector.read.colstats.ColumnStatistics> columnStats() {
                return search == null && org.apache.spark.sql.internal.SQLConf.get().cboEnabled() ? columnStatistics() : Map.of();
            }
        };
    }

    /**
     * The table's distinct-value estimates and null counts of the columns read (for the
     * cost-based optimizer): the whole snapshot's, as Iceberg's own connector reports them.
     */
    private Map<NamedReference, org.apache.spark.sql.connector.read.colstats.ColumnStatistics> columnStatistics() {
        List<String> read = Arrays.asList(readSchema.fieldNames());
        Map<NamedReference, org.apache.spark.sql.connector.read.colstats.ColumnStatistics> stats = new java.util.HashMap<>();
        try (NativeTable table = options.openRead()) {
            for (NativeTable.ColumnStatistics c : table.columnStatistics(options.read().version())) {
                if (!read.contains(c.column())) {
                    continue;
                }
                stats.put(org.apache.spark.sql.connector.expressions.Expressions.column(c.column()),
                        new org.apache.spark.sql.connector.read.colstats.ColumnStatistics() {
                            @Override
                            public java.util.OptionalLong distinctCount() {
                                return c.distinctValues() < 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(c.distinctValues());
                            }

                            @Override
                            public java.util.OptionalLong nullCount() {
                                return c.nulls() < 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(c.nulls());
                            }
                        });
            }
        }
        return stats;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new HyperStreamReaderFactory();
    }
}
