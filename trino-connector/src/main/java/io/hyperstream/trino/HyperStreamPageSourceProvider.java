package io.hyperstream.trino;

import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.ConnectorPageSourceProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplit;
import io.trino.spi.connector.ConnectorTableCredentials;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.DynamicFilter;
import java.util.List;
import java.util.Optional;

final class HyperStreamPageSourceProvider implements ConnectorPageSourceProvider {
    private final HyperStreamConfig config;

    HyperStreamPageSourceProvider(HyperStreamConfig config) {
        this.config = config;
    }

    @Override
    public ConnectorPageSource createPageSource(ConnectorTransactionHandle transaction, ConnectorSession session,
            ConnectorSplit split, ConnectorTableHandle table, Optional<ConnectorTableCredentials> credentials,
            List<ColumnHandle> columns, DynamicFilter dynamicFilter) {
        if (table instanceof HyperStreamArrayHandle array) {
            return HyperStreamPageSource.array(array, (HyperStreamSplit) split,
                    columns.stream().map(HyperStreamColumnHandle.class::cast).toList(), config.batchRows());
        }
        if (table instanceof HyperStreamTableHandle handle && handle.countStar()) {
            // One row: the snapshot's row count, from its manifests and delete files.
            long rows = HyperStreamErrorCode.nativeCall(() -> {
                try (io.hyperstream.jni.NativeTable stored = handle.table().open()) {
                    return stored.rowCount(handle.version());
                }
            });
            io.trino.spi.block.Block count = new io.trino.spi.block.LongArrayBlock(1, Optional.empty(), new long[] {rows});
            return new io.trino.spi.connector.FixedPageSource(List.of(new io.trino.spi.Page(count)));
        }
        HyperStreamTableHandle handle = (HyperStreamTableHandle) table;
        String filter = !TrinoFilters.takesDynamicFilter(handle) ? handle.filter()
                : TrinoFilters.withDynamicFilter(handle.filter(), dynamicFilter.getCurrentPredicate());
        return new HyperStreamPageSource(handle, (HyperStreamSplit) split,
                columns.stream().map(HyperStreamColumnHandle.class::cast).toList(), config.batchRows(),
                session.getProperty(HyperStreamConnector.VECTOR_SEARCH_EF, Long.class),
                session.getProperty(HyperStreamConnector.VECTOR_SEARCH_BACKEND, String.class).toLowerCase(java.util.Locale.ROOT),
                filter);
    }
}
