package io.hyperstream.jni;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Apache Iceberg Java's generic reader (HadoopTables, IcebergGenerics) over a table's current
 * snapshot, in a JVM of its own with the JNI module's test class path (as {@link
 * RestCatalogTestServer} runs), so that the engines' tests can check that Iceberg Java reads the
 * rows they wrote without Iceberg on their own class paths. {@link #read} gives each row as its
 * columns' values joined by {@code |}, sorted.
 */
public final class IcebergJavaReader {
    private IcebergJavaReader() {}

    /** The rows of the table at {@code location} as Iceberg Java reads them, with {@code columns}. */
    public static List<String> read(Path location, String... columns) throws IOException, InterruptedException {
        String file = System.getProperty("hyperstream.rest.classpath.file", "");
        if (file.isBlank() || !Files.isRegularFile(Path.of(file))) {
            throw new IOException("the JNI module's test class path file '" + file + "' is not there: build native/java first");
        }
        String classpath = Path.of(file).getParent().resolve("test-classes") + java.io.File.pathSeparator
                + Files.readString(Path.of(file)).trim();
        String javaHome = System.getProperty("hyperstream.java17.home", "");
        javaHome = javaHome.isBlank() ? System.getProperty("java.home") : javaHome;
        List<String> command = new ArrayList<>(List.of(Path.of(javaHome, "bin", "java").toString(), "-Xmx512m",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath, "io.hyperstream.jni.IcebergJavaReaderMain",
                location.toString()));
        command.addAll(List.of(columns));
        Path out = Files.createTempFile("iceberg-read", ".txt");
        try {
            Process process = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            if (process.waitFor() != 0) {
                throw new IOException("Iceberg Java's read of " + location + " failed: " + Files.readString(out));
            }
            return Files.readAllLines(out);
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
