package io.hyperstream.trino;

import com.google.inject.Key;
import io.trino.metadata.HandleResolver;
import io.trino.server.PluginClassLoader;
import io.trino.server.PluginManager;
import io.trino.server.testing.TestingTrinoServer;
import io.trino.spi.Plugin;
import io.trino.testing.DistributedQueryRunner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Stream;

/**
 * Loads {@code plugin/hyperstream/} the way a Trino server loads it: every JAR of the plugin directory
 * the build laid out, in Trino's own plugin class loader, which lends the plugin only Trino's SPI
 * packages. A class the directory lacks fails here as it would in a server, and the handles Trino
 * serializes between nodes are read through the plugin's class loader as a server reads them. Every
 * in-process query runner installs the plugin from here, never from the test class path.
 */
final class IsolatedPlugin {
    private IsolatedPlugin() {}

    /** The plugin directory ({@code plugin/hyperstream/} of the zip, unpacked by the build). */
    static Path directory() {
        String dir = System.getProperty("hyperstream.plugin.dir");
        if (dir == null) {
            throw new IllegalStateException("set -Dhyperstream.plugin.dir to the plugin directory (target/hyperstream-trino-plugin-*/hyperstream)");
        }
        return Path.of(dir);
    }

    /** The JARs of the plugin directory, sorted. */
    static List<Path> jars() {
        try (Stream<Path> files = Files.list(directory())) {
            return files.filter(f -> f.getFileName().toString().endsWith(".jar")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("listing " + directory(), e);
        }
    }

    /** The plugin, in a class loader of its own as {@code PluginManager} makes one for a plugin directory. */
    static Plugin load() {
        return plugin(classLoader());
    }

    /**
     * Installs the plugin into every node of {@code runner} as a server's {@code PluginManager} loads
     * a plugin directory: its class loader registered with the node's handle resolver (which then
     * reads our handles from task updates through that loader), then the plugin installed.
     */
    static Plugin install(DistributedQueryRunner runner) {
        PluginClassLoader loader = classLoader();
        for (TestingTrinoServer server : runner.getServers()) {
            server.getInstance(Key.get(HandleResolver.class)).registerClassLoader(loader);
        }
        Plugin plugin = plugin(loader);
        runner.installPlugin(plugin);
        return plugin;
    }

    private static PluginClassLoader classLoader() {
        List<URL> urls = new ArrayList<>();
        for (Path jar : jars()) {
            try {
                urls.add(jar.toUri().toURL());
            } catch (MalformedURLException e) {
                throw new IllegalStateException(e);
            }
        }
        return PluginManager.createClassLoader("hyperstream", urls);
    }

    private static Plugin plugin(ClassLoader loader) {
        return ServiceLoader.load(Plugin.class, loader).findFirst()
                .orElseThrow(() -> new IllegalStateException(directory() + " declares no io.trino.spi.Plugin"));
    }
}
