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
import io.trino.spi.connector.FixedSplitSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** Asks the native library how to divide a table; Trino schedules the splits. */
final class HyperStreamSplitManager implements ConnectorSplitManager {
    private final HyperStreamConfig config;

    HyperStreamSplitManager(HyperStreamConfig config) {
        this.config = config;
    }

    @Override
    public ConnectorSplitSource getSplits(ConnectorTransactionHandle transaction, ConnectorSession session,
            ConnectorTableHandle table, Set<ColumnHandle> columns, Constraint constraint) {
        if (table instanceof HyperStreamArrayHandle array) {
            return new FixedSplitSource(ArrayTables.splits(array, config.splitRows()));
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        if (handle.isStored() && handle.countStar()) {
            return new FixedSplitSource(List.of(new HyperStreamSplit(0, 0, List.of()))); // the count comes from metadata
        }
        if (handle.isStored()) {
            String[] files = nativeCall(() -> {
                try (NativeTable stored = NativeTable.load(handle.location(), java.util.Map.of())) {
                    // Files whose statistics rule the pushed filter out get no split.
                    return handle.snapshotId() < 0 ? new String[0]
                            : stored.dataFiles(handle.snapshotId(), -1, handle.filter());
                }
            });
            if (handle.topK() > 0) {
                // The top-k is global: one split searches every file (in parallel, natively).
                return new FixedSplitSource(List.of(new HyperStreamSplit(0, 0, List.of(files))));
            }
            List<ConnectorSplit> splits = new ArrayList<>(files.length);
            long planned = 0;
            for (String file : files) {
                if (handle.limit() > 0 && !handle.isFiltered() && planned >= handle.limit()) {
                    break; // without a filter, the files so far hold the limit's rows (deleted rows not counted)
                }
                splits.add(new HyperStreamSplit(0, 0, List.of(file)));
                planned += io.hyperstream.jni.DataFiles.undeletedRows(file);
            }
            return new FixedSplitSource(splits);
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
}
