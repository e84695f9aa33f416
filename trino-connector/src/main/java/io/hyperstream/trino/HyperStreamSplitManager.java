package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.SampleTable;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplit;
import io.trino.spi.connector.ConnectorSplitManager;
import io.trino.spi.connector.ConnectorSplitSource;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.DynamicFilterSnapshot;
import io.trino.spi.connector.FixedSplitSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/** Asks the native library how to divide a table; Trino schedules the splits. */
final class HyperStreamSplitManager implements ConnectorSplitManager {
    private final HyperStreamConfig config;

    HyperStreamSplitManager(HyperStreamConfig config) {
        this.config = config;
    }

    @Override
    public ConnectorSplitSource getSplits(ConnectorTransactionHandle transaction, ConnectorSession session,
            ConnectorTableHandle table, Set<ColumnHandle> dynamicFilterColumns, Constraint constraint) {
        if (table instanceof HyperStreamArrayHandle array) {
            return new FixedSplitSource(ArrayTables.splits(array, config.splitRows()));
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        if (handle.isStored() && handle.countStar()) {
            return new FixedSplitSource(List.of(new HyperStreamSplit(0, 0, List.of()))); // the count comes from metadata
        }
        if (handle.isStored()) {
            long waitMillis = session.getProperty(HyperStreamConnector.DYNAMIC_FILTERING_WAIT_TIMEOUT, Long.class);
            if (!dynamicFilterColumns.isEmpty() && waitMillis > 0 && TrinoFilters.takesDynamicFilter(handle)) {
                return new DynamicallyFilteredSplits(handle, waitMillis, config.splitRows());
            }
            return new FixedSplitSource(storedSplits(handle, handle.filter(), config.splitRows()));
        }
        long[][] ranges = nativeCall(() -> {
            try (SampleTable sample = SampleTable.open(handle.rows(), handle.dimension(), handle.seed())) {
                return sample.planSplits(config.splitRows());
            }
        });
        List<ConnectorSplit> splits = new ArrayList<>(ranges.length);
        for (long[] range : ranges) {
            splits.add(new HyperStreamSplit(range[0], range[1], null));
        }
        return new FixedSplitSource(splits);
    }

    /**
     * One split per data file whose statistics do not rule {@code filter} out, a big file one per run
     * of its row groups of about {@code splitRows} rows (a top-k: as its {@link io.hyperstream.jni.SearchPlan} divides it).
     */
    private static List<ConnectorSplit> storedSplits(HyperStreamTableHandle handle, String filter, long splitRows) {
        String[][] splits = nativeCall(() -> {
            try (NativeTable stored = handle.table().open()) {
                if (handle.snapshotId() < 0) {
                    return new String[0][];
                }
                String[] files = stored.dataFiles(handle.version(), filter);
                return handle.topK() > 0 ? handle.searchPlan().splits(files)
                        : stored.planSplits(files, handle.limit(), handle.isFiltered(), splitRows);
            }
        });
        List<ConnectorSplit> planned = new ArrayList<>(splits.length);
        for (String[] files : splits) {
            planned.add(new HyperStreamSplit(0, 0, List.of(files)));
        }
        return planned;
    }

    /**
     * The splits of a scan a join may narrow: Trino holds the first batch until the join's build
     * side has finished (or the wait runs out), so files the dynamic filter rules out by their
     * statistics get no split. The page source applies the filter again to the rows it reads.
     */
    private static final class DynamicallyFilteredSplits implements ConnectorSplitSource {
        private final HyperStreamTableHandle handle;
        private final long waitMillis;
        private final long splitRows;
        private FixedSplitSource planned;

        DynamicallyFilteredSplits(HyperStreamTableHandle handle, long waitMillis, long splitRows) {
            this.handle = handle;
            this.waitMillis = waitMillis;
            this.splitRows = splitRows;
        }

        @Override
        public long getRequestedDynamicFilterWaitTimeoutMillis() {
            return waitMillis;
        }

        @Override
        public CompletableFuture<List<ConnectorSplit>> getNextBatch(int maxSize, DynamicFilterSnapshot dynamicFilter) {
            if (planned == null) {
                planned = new FixedSplitSource(storedSplits(handle,
                        TrinoFilters.withDynamicFilter(handle.filter(), dynamicFilter.currentPredicate()), splitRows));
            }
            return planned.getNextBatch(maxSize, dynamicFilter);
        }

        @Override
        public boolean isFinished() {
            return planned != null && planned.isFinished();
        }

        @Override
        public void close() {
            if (planned != null) {
                planned.close();
            }
        }
    }
}
