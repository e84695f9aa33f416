package io.hyperstream.jni;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The local S3 server of the object-store tests ({@code tests/s3_server.py}, moto) in a process of
 * its own on a loopback port, for as long as the test holds it. Needs the test Python
 * ({@code hyperstream.test.python}, with {@code moto[server]}) and the repository root
 * ({@code hyperstream.repo.root}).
 */
public final class S3TestServer implements AutoCloseable {
    private final Process process;
    private final int port;

    private S3TestServer(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** Whether the test Python is configured (the tests needing the server skip without it). */
    public static boolean available() {
        return !System.getProperty("hyperstream.test.python", "").isBlank();
    }

    /** Starts the server with {@code args} ({@code --faults ...} first, then the buckets). */
    public static S3TestServer start(String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("hyperstream.test.python"));
        Path script = Path.of(System.getProperty("hyperstream.repo.root", "."), "tests", "s3_server.py");
        if (!java.nio.file.Files.isRegularFile(script)) {
            throw new IOException(script.toAbsolutePath() + " is not there: set hyperstream.repo.root to the repository");
        }
        command.add(script.toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.startsWith("READY")) {
            // moto's start-up lines
        }
        if (line == null) {
            process.destroyForcibly();
            throw new IOException("tests/s3_server.py stopped before it was ready");
        }
        return new S3TestServer(process, Integer.parseInt(line.substring("READY ".length()).trim()));
    }

    /** The native library's storage options for this server. */
    public Map<String, String> storageOptions() {
        return Map.of("aws_endpoint", "http://127.0.0.1:" + port, "aws_allow_http", "true",
                "aws_access_key_id", "hyperstream", "aws_secret_access_key", "hyperstream", "aws_region", "us-east-1");
    }

    @Override
    public void close() {
        process.destroy(); // its input closes too, which ends it as well
    }
}
