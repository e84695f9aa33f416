package io.hyperstream.jni;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code libhyperstream} once per class loader and offers the library-wide calls.
 *
 * <p>The library travels inside the JAR under {@code native/<os>-<arch>/}; it is copied to a
 * private temporary file and loaded from there, so {@code java.library.path} plays no part and
 * two class loaders (two Spark sessions, a Trino plugin beside another) each get their own copy.
 * The system property {@code hyperstream.library.path} names a library file to load instead, for
 * development against a freshly built {@code target/release/libhyperstream.so}.
 */
public final class NativeLibrary {
    /** System property naming a library file to load instead of the bundled one. */
    public static final String LIBRARY_PATH_PROPERTY = "hyperstream.library.path";

    private static volatile String loadedFrom;

    private NativeLibrary() {}

    /** Loads the library if this class loader has not yet; safe to call from any thread. */
    public static void load() {
        if (loadedFrom == null) {
            loadOnce();
        }
    }

    private static synchronized void loadOnce() {
        if (loadedFrom != null) {
            return;
        }
        String override = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (override != null && !override.isBlank()) {
            System.load(Path.of(override).toAbsolutePath().toString());
            loadedFrom = "file:" + override;
            return;
        }
        String resource = "/native/" + platform() + "/" + System.mapLibraryName("hyperstream");
        URL url = NativeLibrary.class.getResource(resource);
        if (url == null) {
            throw new UnsatisfiedLinkError("this HyperStream JAR carries no native library for "
                    + platform() + " (looked for " + resource + "); set -D" + LIBRARY_PATH_PROPERTY
                    + " to a libhyperstream built for this platform");
        }
        Path file = extract(url);
        try {
            System.load(file.toString());
        } finally {
            // The loaded mapping stays valid after the file is unlinked (POSIX); nothing is left in /tmp.
            if (!isWindows()) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    file.toFile().deleteOnExit();
                }
            }
        }
        loadedFrom = url.toString();
    }

    private static Path extract(URL url) {
        try (InputStream in = url.openStream()) {
            Path file = Files.createTempFile("libhyperstream-", "-" + System.mapLibraryName("hyperstream"));
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("could not extract " + url + " to a temporary file", e);
        }
    }

    /** {@code <os>-<arch>} as the JAR's {@code native/} folders name it, e.g. {@code linux-x86_64}. */
    public static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osName = os.startsWith("linux") ? "linux"
                : os.startsWith("mac") || os.startsWith("darwin") ? "darwin"
                : os.startsWith("windows") ? "windows"
                : os.replaceAll("[^a-z0-9]", "");
        String archName = switch (arch) {
            case "amd64", "x86_64", "x64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch.replaceAll("[^a-z0-9_]", "");
        };
        return osName + "-" + archName;
    }

    private static boolean isWindows() {
        return platform().startsWith("windows");
    }

    /** Where the loaded library came from (a {@code jar:} or {@code file:} URL); null before load. */
    public static String loadedFrom() {
        return loadedFrom;
    }

    /** The native library's version. */
    public static String version() {
        load();
        return nativeVersion();
    }

    /** Native objects created and not yet freed, across every handle class. */
    public static long openHandles() {
        load();
        return liveHandles();
    }

    /**
     * Bytes the process's C allocator holds (native memory of every library, the JVM's included),
     * or -1 where the allocator cannot tell. Leak checks watch it stay flat.
     */
    public static long nativeAllocatedBytes() {
        load();
        return allocatedBytes();
    }

    /**
     * Sets what the process's table writers together may buffer in native memory (bytes, at least
     * 16 MiB; 1 GiB unless set): past it, a writer turns what it holds into data files early.
     */
    public static void setWriteMemoryLimit(long bytes) {
        load();
        setWriteMemoryLimitNative(bytes);
    }

    /** What the process's table writers buffer now (bytes of native memory). */
    public static long writeMemoryHeld() {
        load();
        return writeMemoryHeldNative();
    }

    /** One line per compute backend (cpu, cuda, wgpu): compiled in, and whether a device answered. */
    public static String gpuBackends() {
        load();
        return gpuBackendsNative();
    }

    /**
     * Diagnostic: makes native code fail with an error of {@code kind} ({@code INVALID_ARGUMENT},
     * {@code NOT_FOUND}, {@code COMMIT_CONFLICT}, {@code CORRUPT}, {@code IO}, {@code INTERNAL}),
     * which arrives as that kind's exception class.
     */
    public static void failWith(String kind, String message) {
        load();
        raiseError(kind, message);
    }

    /** Diagnostic: panics inside native code; the panic arrives as an {@link InternalException}. */
    public static void panicWith(String message) {
        load();
        raisePanic(message);
    }

    /**
     * Diagnostic: the next native stream handed to Java panics when asked for its batch {@code
     * afterBatches} (from 0), as a decoder meeting a damaged page would; the stream then ends with an
     * {@link InternalException} from {@code loadNextBatch}, and the JVM goes on. For tests of the engines'
     * handling of a stream that dies part way; -1 disarms it.
     */
    public static void armStreamPanic(int afterBatches) {
        load();
        armStreamPanicNative(afterBatches);
    }

    private static native void armStreamPanicNative(int afterBatches);

    private static native void setWriteMemoryLimitNative(long bytes);

    private static native long writeMemoryHeldNative();

    private static native String nativeVersion();

    private static native long liveHandles();

    private static native long allocatedBytes();

    private static native String gpuBackendsNative();

    private static native void raiseError(String kind, String message);

    private static native void raisePanic(String message);

    static native long[] summarizeStream(long streamAddress);
}
