package io.hyperstream.trino;

import io.hyperstream.jni.NativeLibrary;
import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorContext;
import io.trino.spi.connector.ConnectorFactory;
import java.util.Map;

/** Creates a HyperStream catalog from its properties file. */
public final class HyperStreamConnectorFactory implements ConnectorFactory {
    @Override
    public String getName() {
        return "hyperstream";
    }

    @Override
    public Connector create(String catalogName, Map<String, String> properties, ConnectorContext context) {
        HyperStreamConfig config = HyperStreamConfig.from(catalogName, properties);
        // Load now, in the plugin's class loader, so a missing library fails the catalog, not a query.
        NativeLibrary.load();
        config.applyWriteMemoryLimit();
        return new HyperStreamConnector(catalogName, config);
    }
}
