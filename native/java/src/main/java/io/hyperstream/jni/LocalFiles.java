package io.hyperstream.jni;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Local directories the connectors remove: dropped tables and schemas, staged parts. */
public final class LocalFiles {
    private LocalFiles() {}

    /** Removes {@code dir} with everything under it; nothing happens when it is not there. */
    public static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            throw new HyperStreamIOException("removing " + dir + ": " + e.getMessage(), e);
        }
    }
}
