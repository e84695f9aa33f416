package io.hyperstream.trino;

import static io.trino.testing.TestingConnectorSession.SESSION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;


import io.trino.spi.Plugin;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorFactory;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplit;
import io.trino.spi.connector.ConnectorSplitSource;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.DynamicFilter;
import io.trino.spi.connector.DynamicFilterSnapshot;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.SourcePage;
import io.trino.spi.transaction.IsolationLevel;
import io.trino.spi.type.BigintType;
import io.trino.testing.TestingConnectorContext;
import io.trino.testing.TestingConnectorSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The plugin JAR alone, in Trino's plugin class loader, driven through the SPI as the engine drives
 * it: catalog creation, metadata, split planning and page sources. Proves the JAR bundles all it
 * needs (binding, Arrow, its JNI library, libhyperstream) beside what Trino lends plugins.
 */
class TestPluginIsolation {
    @Test
    void thePluginJarServesQueriesFromItsOwnClassLoader() throws Exception {
        Plugin plugin = IsolatedPlugin.load();
        ClassLoader pluginLoader = plugin.getClass().getClassLoader();
        assertEquals("io.trino.server.PluginClassLoader", pluginLoader.getClass().getName());
        ConnectorFactory factory = plugin.getConnectorFactories().iterator().next();
        assertEquals("hyperstream", factory.getName());

        ClassLoader previous = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(pluginLoader); // as Trino does around plugin calls
        try {
            Connector connector = factory.create("isolated", Map.of(
                    "hyperstream.sample.rows", "5000", "hyperstream.split-rows", "2000"), new TestingConnectorContext());
            ConnectorTransactionHandle transaction = connector.beginTransaction(IsolationLevel.READ_COMMITTED, true, true);
            // A session that knows the catalog's session properties, as Trino's sessions do.
            ConnectorSession session = TestingConnectorSession.builder()
                    .setPropertyMetadata(connector.getSessionProperties()).build();
            ConnectorMetadata metadata = connector.getMetadata(SESSION, transaction);
            assertEquals(List.of(new SchemaTableName("sample", "items")), metadata.listTables(SESSION, Optional.empty()));
            ConnectorTableHandle table = metadata.getTableHandle(SESSION, new SchemaTableName("sample", "items"),
                    Optional.empty(), Optional.empty());
            ColumnHandle id = metadata.getColumnHandles(SESSION, table).get("id");

            ConnectorSplitSource source = connector.getSplitManager().getSplits(transaction, SESSION, table,
                    Set.of(id), Constraint.alwaysTrue());
            List<ConnectorSplit> splits = new ArrayList<>(source.getNextBatch(100, DynamicFilterSnapshot.EMPTY).get());
            assertEquals(3, splits.size());
            long rows = 0;
            long sum = 0;
            for (ConnectorSplit split : splits) {
                try (ConnectorPageSource pages = connector.getPageSourceProvider().createPageSource(transaction, session,
                        split, table, Optional.empty(), List.of(id), DynamicFilter.EMPTY)) {
                    while (!pages.isFinished()) {
                        SourcePage page = pages.getNextSourcePage();
                        if (page == null) {
                            continue;
                        }
                        Block ids = page.getBlock(0);
                        for (int i = 0; i < page.getPositionCount(); i++) {
                            sum += BigintType.BIGINT.getLong(ids, i);
                        }
                        rows += page.getPositionCount();
                    }
                }
            }
            assertEquals(5000, rows);
            assertEquals(5000L * 4999 / 2, sum);
            Class<?> nativeLibrary = pluginLoader.loadClass("io.hyperstream.jni.NativeLibrary");
            assertEquals(pluginLoader, nativeLibrary.getClassLoader());
            String loadedFrom = (String) nativeLibrary.getMethod("loadedFrom").invoke(null);
            assertTrue(loadedFrom.endsWith("!/native/linux-x86_64/libhyperstream.so"), loadedFrom);
            connector.shutdown();
        } finally {
            Thread.currentThread().setContextClassLoader(previous);
        }
    }
}
