package io.hyperstream.trino;

import io.trino.spi.Plugin;
import io.trino.spi.connector.ConnectorFactory;
import java.util.List;

/** The Trino plugin: one connector, {@code connector.name=hyperstream}. */
public final class HyperStreamPlugin implements Plugin {
    @Override
    public Iterable<ConnectorFactory> getConnectorFactories() {
        return List.of(new HyperStreamConnectorFactory());
    }
}
