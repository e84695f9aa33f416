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
        return new HyperStreamPageSource((HyperStreamTableHandle) table, (HyperStreamSplit) split,
                columns.stream().map(HyperStreamColumnHandle.class::cast).toList(), config.batchRows(),
                session.getProperty(HyperStreamConnector.VECTOR_SEARCH_EF, Long.class));
    }
}
