package io.hyperstream.trino;

import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorPageSourceProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplitManager;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.transaction.IsolationLevel;

/** A HyperStream catalog. */
final class HyperStreamConnector implements Connector {
    private final HyperStreamMetadata metadata;
    private final HyperStreamSplitManager splitManager;
    private final HyperStreamPageSourceProvider pageSourceProvider;

    HyperStreamConnector(HyperStreamConfig config) {
        this.metadata = new HyperStreamMetadata(config);
        this.splitManager = new HyperStreamSplitManager(config);
        this.pageSourceProvider = new HyperStreamPageSourceProvider(config);
    }

    @Override
    public ConnectorTransactionHandle beginTransaction(IsolationLevel isolationLevel, boolean readOnly, boolean autoCommit) {
        return HyperStreamTransactionHandle.INSTANCE;
    }

    @Override
    public ConnectorMetadata getMetadata(ConnectorSession session, ConnectorTransactionHandle transaction) {
        return metadata;
    }

    @Override
    public ConnectorSplitManager getSplitManager() {
        return splitManager;
    }

    @Override
    public ConnectorPageSourceProvider getPageSourceProvider() {
        return pageSourceProvider;
    }

    @Override
    public void shutdown() {}
}
