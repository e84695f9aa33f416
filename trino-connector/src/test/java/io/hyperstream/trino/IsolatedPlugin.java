package io.hyperstream.trino;

import io.trino.server.PluginManager;
import io.trino.spi.Plugin;
import java.net.MalformedURLException;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Loads the plugin JAR the way a Trino server loads {@code plugin/hyperstream/}: in Trino's own
 * plugin class loader, which lends the plugin only Trino's SPI packages, so a class the JAR forgot
 * to bundle fails here as it would in a server.
 */
final class IsolatedPlugin {
    private IsolatedPlugin() {}

    static Path jar() {
        String jar = System.getProperty("hyperstream.connector.jar");
        if (jar == null) {
            throw new IllegalStateException("set -Dhyperstream.connector.jar to the plugin JAR");
        }
        return Path.of(jar);
    }

    static Plugin load() {
        try {
            ClassLoader loader = PluginManager.createClassLoader("hyperstream", List.of(jar().toUri().toURL()));
            return ServiceLoader.load(Plugin.class, loader).findFirst()
                    .orElseThrow(() -> new IllegalStateException(jar() + " declares no io.trino.spi.Plugin"));
        } catch (MalformedURLException e) {
            throw new IllegalStateException(e);
        }
    }
}
