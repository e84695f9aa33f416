package io.hyperstream.trino;

import io.trino.spi.connector.ConnectorTransactionHandle;

/** Reads need no transaction state yet. */
public enum HyperStreamTransactionHandle implements ConnectorTransactionHandle {
    INSTANCE
}
