package io.hyperstream.trinoserver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * One Trino server process, laid out and started as the README's Trino deployment steps say:
 *
 * <ol>
 *   <li>the plugin zip unpacked under {@code plugin/}, which gives {@code plugin/hyperstream/};
 *   <li>{@code etc/jvm.config} from {@code trino-connector/src/deploy/etc/jvm.config} (only the heap
 *       sized down for a test machine);
 *   <li>a catalog file per catalog from {@code trino-connector/src/deploy/etc/catalog/lake.properties},
 *       with {@code hyperstream.root} set;
 *   <li>Trino's own {@code etc/config.properties} and {@code etc/node.properties};
 *   <li>the server started the way Trino's launcher starts it: {@code java} with the options of
 *       {@code jvm.config}, the {@code node.properties} as system properties, {@code -Dconfig=...}.
 * </ol>
 *
 * <p>Its own JVM, its own class path (trino-main and what it needs at run time, nothing of ours),
 * HTTP on loopback: the plugin is loaded only from {@code plugin/hyperstream/}, by Trino.
 */
final class TrinoNode implements AutoCloseable {
    /** What a node is in its cluster. */
    enum Role { SINGLE, COORDINATOR, WORKER }

    private static final Duration START_TIMEOUT = Duration.ofMinutes(4);

    final Role role;
    final Path home;
    final int port;
    private final Process process;
    private final Path log;

    private TrinoNode(Role role, Path home, int port, Process process, Path log) {
        this.role = role;
        this.home = home;
        this.port = port;
        this.process = process;
        this.log = log;
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + port);
    }

    String jdbcUrl() {
        return "jdbc:trino://127.0.0.1:" + port + "?user=hyperstream";
    }

    /**
     * Lays out a node under {@code home} and starts it; a worker finds its coordinator at {@code
     * coordinator}. {@code catalogs} maps catalog names to the HyperStream root each one keeps,
     * {@code restCatalogs} to the URI of the Iceberg REST catalog each one keeps its tables in.
     */
    static TrinoNode start(Path home, Role role, URI coordinator, Map<String, Path> catalogs, Map<String, String> restCatalogs,
            String heap) throws IOException {
        return start(home, role, coordinator, catalogs, restCatalogs, heap, List.of(), Map.of());
    }

    /**
     * As the other {@code start}, with {@code config} lines added to Trino's {@code config.properties}
     * (access control, say) and {@code restSettings} to each REST catalog's file (its credentials).
     */
    static TrinoNode start(Path home, Role role, URI coordinator, Map<String, Path> catalogs, Map<String, String> restCatalogs,
            String heap, List<String> moreConfig, Map<String, String> restSettings) throws IOException {
        return start(home, role, coordinator, catalogs, restCatalogs, heap, moreConfig, restSettings, Map.of());
    }

    /**
     * As the other {@code start}, with {@code otherCatalogs} (a catalog's name and its file's
     * properties) of other connectors beside ours; Trino's Iceberg connector ({@code
     * connector.name=iceberg}) is installed as a plugin of its own from {@code trino.iceberg.plugin.dir}.
     */
    static TrinoNode start(Path home, Role role, URI coordinator, Map<String, Path> catalogs, Map<String, String> restCatalogs,
            String heap, List<String> moreConfig, Map<String, String> restSettings, Map<String, String> otherCatalogs) throws IOException {
        int port = freePort();
        URI discovery = coordinator == null ? URI.create("http://127.0.0.1:" + port) : coordinator;
        Path etc = Files.createDirectories(home.resolve("etc"));
        unzip(Path.of(property("hyperstream.plugin.zip")), Files.createDirectories(home.resolve("plugin")));

        Path deploy = Path.of(property("hyperstream.deploy.dir")).resolve("etc");
        List<String> jvmConfig = new ArrayList<>();
        for (String line : Files.readAllLines(deploy.resolve("jvm.config"))) {
            jvmConfig.add(line.startsWith("-Xmx") ? "-Xmx" + heap : line);
        }
        Files.write(etc.resolve("jvm.config"), jvmConfig);

        Path catalogDir = Files.createDirectories(etc.resolve("catalog"));
        String template = Files.readString(deploy.resolve("catalog").resolve("lake.properties"));
        for (Map.Entry<String, Path> catalog : catalogs.entrySet()) {
            String properties = template.replaceAll("(?m)^hyperstream\\.root=.*$",
                    "hyperstream.root=" + catalog.getValue().toString().replace("\\", "\\\\"));
            Files.writeString(catalogDir.resolve(catalog.getKey() + ".properties"), properties);
        }
        String restTemplate = Files.readString(deploy.resolve("catalog").resolve("rest-lake.properties"));
        for (Map.Entry<String, String> catalog : restCatalogs.entrySet()) {
            StringBuilder properties = new StringBuilder(restTemplate.replaceAll("(?m)^hyperstream\\.rest-catalog\\.uri=.*$",
                    "hyperstream.rest-catalog.uri=" + catalog.getValue()));
            restSettings.forEach((key, value) -> properties.append('\n').append(key).append('=').append(value));
            Files.writeString(catalogDir.resolve(catalog.getKey() + ".properties"), properties.toString() + "\n");
        }

        for (Map.Entry<String, String> catalog : otherCatalogs.entrySet()) {
            Files.writeString(catalogDir.resolve(catalog.getKey() + ".properties"), catalog.getValue());
            if (catalog.getValue().contains("connector.name=iceberg") && !Files.exists(home.resolve("plugin").resolve("iceberg"))) {
                icebergPlugin(Files.createDirectories(home.resolve("plugin").resolve("iceberg")));
            }
        }

        List<String> config = new ArrayList<>();
        config.add("coordinator=" + (role != Role.WORKER));
        if (role != Role.WORKER) {
            config.add("node-scheduler.include-coordinator=" + (role == Role.SINGLE));
        }
        config.add("http-server.http.port=" + port);
        config.add("discovery.uri=" + discovery);
        config.add("plugin.dir=" + home.resolve("plugin"));
        config.add("catalog.config-dir=" + catalogDir);
        config.add("query.max-memory=1GB");
        config.addAll(moreConfig);
        Files.write(etc.resolve("config.properties"), config);

        Files.write(etc.resolve("node.properties"), List.of(
                "node.environment=test",
                "node.id=" + role.name().toLowerCase(java.util.Locale.ROOT) + "-" + UUID.randomUUID(),
                "node.data-dir=" + Files.createDirectories(home.resolve("data")),
                "node.internal-address=127.0.0.1"));

        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // As the launcher reads jvm.config: one option per line, blank lines and # comments skipped.
        for (String line : Files.readAllLines(etc.resolve("jvm.config"))) {
            String option = line.strip();
            if (!option.isEmpty() && !option.startsWith("#")) {
                command.add(option);
            }
        }
        for (String line : Files.readAllLines(etc.resolve("node.properties"))) {
            command.add("-D" + line);
        }
        command.add("-Dconfig=" + etc.resolve("config.properties"));
        command.add("-cp");
        command.add(serverClassPath());
        command.add(TrinoServerMain.class.getName());
        command.add(property("trino.version"));

        Path log = Files.createDirectories(home.resolve("var").resolve("log")).resolve("server.log");
        Process process = new ProcessBuilder(command).directory(home.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        TrinoNode node = new TrinoNode(role, home, port, process, log);
        try {
            node.awaitStarted();
        } catch (RuntimeException | Error e) {
            node.close();
            throw e;
        }
        return node;
    }

    /**
     * Trino's Iceberg connector as a plugin directory: links to the jars of {@code
     * trino.iceberg.plugin.dir}, and the service file naming its {@code Plugin} (Trino's plugin
     * packaging writes that file into the zip, which Maven Central does not serve; the jar lacks it).
     */
    private static void icebergPlugin(Path plugin) throws IOException {
        try (var jars = Files.list(Path.of(property("trino.iceberg.plugin.dir")))) {
            for (Path jar : jars.toList()) {
                Files.createSymbolicLink(plugin.resolve(jar.getFileName()), jar);
            }
        }
        try (var out = new java.util.jar.JarOutputStream(Files.newOutputStream(plugin.resolve("iceberg-plugin-service.jar")))) {
            out.putNextEntry(new java.util.jar.JarEntry("META-INF/services/io.trino.spi.Plugin"));
            out.write("io.trino.plugin.iceberg.IcebergPlugin\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            out.closeEntry();
        }
    }

    /** Polls {@code /v1/info} until the server says it is no longer starting. */
    private void awaitStarted() {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(role + " node exited with " + process.exitValue() + " while starting:\n" + logTail());
            }
            try {
                HttpResponse<String> info = http.send(HttpRequest.newBuilder(uri().resolve("/v1/info"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (info.statusCode() == 200 && info.body().replace(" ", "").contains("\"starting\":false")) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            sleep(500);
        }
        throw new IllegalStateException(role + " node did not start within " + START_TIMEOUT + ":\n" + logTail());
    }

    /** Waits until {@code nodes} nodes (this coordinator and its workers) are active in the cluster. */
    void awaitActive(int nodes, TrinoNode... workers) throws java.sql.SQLException {
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(jdbcUrl())) {
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (TrinoServerDeploymentTest.scalar(c, "SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'") < nodes) {
                if (System.nanoTime() > deadline) {
                    StringBuilder logs = new StringBuilder();
                    for (TrinoNode worker : workers) {
                        logs.append(worker.logTail()).append('\n');
                    }
                    throw new IllegalStateException("the workers never joined:\n" + logs);
                }
                sleep(500);
            }
        }
    }

    /** The last lines the server wrote, for failure messages. */
    String logTail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** The whole server log. */
    String log() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    boolean isAlive() {
        return process.isAlive();
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static String serverClassPath() throws IOException {
        String dependencies = Files.readString(Path.of(property("trino.server.classpath.file"))).strip();
        String ownMain = Path.of(TrinoServerMain.class.getProtectionDomain().getCodeSource().getLocation().getPath()).toString();
        return ownMain + java.io.File.pathSeparator + dependencies;
    }

    private static void unzip(Path zip, Path into) throws IOException {
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
            for (ZipEntry entry; (entry = in.getNextEntry()) != null; ) {
                Path target = into.resolve(entry.getName()).normalize();
                if (!target.startsWith(into)) {
                    throw new IOException(zip + " holds an entry outside its folder: " + entry.getName());
                }
                if (entry.isDirectory()) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(in, target);
                }
            }
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String property(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("set -D" + name + " (the module's POM does)");
        }
        return value;
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
