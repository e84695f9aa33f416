package io.hyperstream.jni;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Apache Iceberg's own REST catalog server ({@code org.apache.iceberg.rest.RESTCatalogServer} from
 * {@code iceberg-open-api}'s test fixtures, a JDBC catalog on SQLite) in a JVM of its own on a loopback
 * port, for as long as the test holds it. Its class path is the JNI module's test class path, which
 * that module writes to {@code target/test.classpath} ({@code hyperstream.rest.classpath.file}).
 */
public final class RestCatalogTestServer implements AutoCloseable {
    private final Process process;
    private final int port;
    private final Path warehouse;

    private RestCatalogTestServer(Process process, int port, Path warehouse) {
        this.process = process;
        this.port = port;
        this.warehouse = warehouse;
    }

    /** Starts a server keeping its catalog database and the tables' files under {@code dir}. */
    public static RestCatalogTestServer start(Path dir) throws IOException, InterruptedException {
        return start(dir, dir.resolve("warehouse").toString(), Map.of());
    }

    /**
     * Starts a server whose warehouse is {@code warehouse} (a local directory or an {@code s3://}
     * location) with more catalog settings {@code extra} (Iceberg catalog property names, such as
     * {@code io-impl} or {@code s3.endpoint}).
     */
    public static RestCatalogTestServer start(Path dir, String warehouse, Map<String, String> extra)
            throws IOException, InterruptedException {
        String file = System.getProperty("hyperstream.rest.classpath.file", "");
        if (file.isBlank() || !Files.isRegularFile(Path.of(file))) {
            throw new IOException("the REST catalog server's class path file '" + file
                    + "' is not there: build native/java first (it writes target/test.classpath)");
        }
        Files.createDirectories(dir);
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        // Hadoop's FileIO, which the server writes metadata with, needs a JDK before 23 (Subject.getSubject).
        String javaHome = System.getProperty("hyperstream.java17.home", "");
        javaHome = javaHome.isBlank() ? System.getProperty("java.home") : javaHome;
        List<String> command = new ArrayList<>(List.of(Path.of(javaHome, "bin", "java").toString(),
                "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", Files.readString(Path.of(file)).trim(),
                "org.apache.iceberg.rest.RESTCatalogServer"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("rest-server.log").toFile());
        Map<String, String> env = builder.environment();
        env.put("CATALOG_REST_PORT", Integer.toString(port));
        env.put("CATALOG_WAREHOUSE", warehouse);
        env.put("CATALOG_URI", "jdbc:sqlite:file:" + dir.resolve("catalog.db"));
        env.put("CATALOG_JDBC_USER", "user");
        env.put("CATALOG_JDBC_PASSWORD", "password");
        // The server reads CATALOG_<KEY>: "__" stands for "-" and "_" for ".".
        extra.forEach((key, value) -> env.put("CATALOG_" + key.replace("-", "__").replace('.', '_').toUpperCase(java.util.Locale.ROOT), value));
        Process process = builder.start();
        RestCatalogTestServer server = new RestCatalogTestServer(process, port, Path.of(warehouse.replaceFirst("^file:", "")));
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!server.answers()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new IOException("the REST catalog server did not start; its log: "
                        + Files.readString(dir.resolve("rest-server.log")));
            }
            Thread.sleep(100);
        }
        return server;
    }

    private boolean answers() {
        try {
            HttpURLConnection connection = (HttpURLConnection) URI.create(uri() + "/v1/config").toURL().openConnection();
            connection.setConnectTimeout(1000);
            return connection.getResponseCode() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    public String uri() {
        return "http://127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** The warehouse directory (for a local warehouse). */
    public Path warehouse() {
        return warehouse;
    }

    /** The settings that reach this server, by the names {@link RestCatalog} takes them. */
    public Map<String, String> settings() {
        return Map.of("uri", uri());
    }

    @Override
    public void close() {
        process.destroy();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
