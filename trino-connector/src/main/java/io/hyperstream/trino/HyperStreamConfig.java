package io.hyperstream.trino;

import static io.trino.spi.StandardErrorCode.CONFIGURATION_INVALID;

import io.hyperstream.jni.CatalogRoot;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.Limits;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.SchemaTableName;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Catalog properties.
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><th>property</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>hyperstream.sample.rows</td><td>100000</td><td>rows of {@code sample.items}</td></tr>
 *   <tr><td>hyperstream.sample.dimension</td><td>8</td><td>length of its {@code embedding} vectors</td></tr>
 *   <tr><td>hyperstream.sample.seed</td><td>0</td><td>seed of the vector values</td></tr>
 *   <tr><td>hyperstream.split-rows</td><td>1048576</td><td>most rows one split reads</td></tr>
 *   <tr><td>hyperstream.batch-rows</td><td>8192</td><td>rows per page</td></tr>
 *   <tr><td>hyperstream.root</td><td>(none)</td><td>local directory of stored tables: {@code <root>/<schema>/<table>}</td></tr>
 *   <tr><td>hyperstream.write.memory-limit</td><td>1073741824</td><td>bytes the catalog's table writers on a node
 *       together buffer before each rolls what it holds into data files (at least 16 MiB)</td></tr>
 * </table>
 */
record HyperStreamConfig(long sampleRows, int sampleDimension, long sampleSeed, long splitRows, int batchRows,
        Optional<CatalogRoot> root, java.util.OptionalLong writeMemoryLimit) {
    static final String SAMPLE_ROWS = "hyperstream.sample.rows";
    static final String SAMPLE_DIMENSION = "hyperstream.sample.dimension";
    static final String SAMPLE_SEED = "hyperstream.sample.seed";
    static final String SPLIT_ROWS = "hyperstream.split-rows";
    static final String BATCH_ROWS = "hyperstream.batch-rows";
    static final String ROOT = "hyperstream.root";
    static final String WRITE_MEMORY_LIMIT = "hyperstream.write.memory-limit";
    private static final Set<String> KNOWN =
            new TreeSet<>(Set.of(SAMPLE_ROWS, SAMPLE_DIMENSION, SAMPLE_SEED, SPLIT_ROWS, BATCH_ROWS, ROOT, WRITE_MEMORY_LIMIT));

    static HyperStreamConfig from(Map<String, String> properties) {
        for (String key : properties.keySet()) {
            if (!KNOWN.contains(key)) {
                throw new TrinoException(CONFIGURATION_INVALID,
                        "unknown HyperStream catalog property '" + key + "'; known properties: " + String.join(", ", KNOWN));
            }
        }
        long splitRows = parse(properties, SPLIT_ROWS, 1 << 20);
        long batchRows = parse(properties, BATCH_ROWS, 8192);
        if (splitRows <= 0) {
            throw new TrinoException(CONFIGURATION_INVALID, SPLIT_ROWS + " must be positive, got " + splitRows);
        }
        try {
            Limits.batchRows(BATCH_ROWS, batchRows);
        } catch (InvalidArgumentException e) {
            throw new TrinoException(CONFIGURATION_INVALID, e.getMessage(), e);
        }
        long dimension = parse(properties, SAMPLE_DIMENSION, 8);
        if (dimension < 1 || dimension > Integer.MAX_VALUE) {
            throw new TrinoException(CONFIGURATION_INVALID, SAMPLE_DIMENSION + " must be positive, got " + dimension);
        }
        Optional<Path> root = Optional.ofNullable(properties.get(ROOT)).map(String::trim).filter(r -> !r.isEmpty()).map(Path::of);
        if (root.isPresent() && !java.nio.file.Files.isDirectory(root.get())) {
            throw new TrinoException(CONFIGURATION_INVALID, ROOT + " is not a directory: " + root.get());
        }
        java.util.OptionalLong writeMemoryLimit = properties.containsKey(WRITE_MEMORY_LIMIT)
                ? java.util.OptionalLong.of(parse(properties, WRITE_MEMORY_LIMIT, 0))
                : java.util.OptionalLong.empty();
        return new HyperStreamConfig(parse(properties, SAMPLE_ROWS, 100_000), (int) dimension,
                parse(properties, SAMPLE_SEED, 0), splitRows, (int) batchRows, root.map(CatalogRoot::new), writeMemoryLimit);
    }

    /**
     * Sets the write memory limit this catalog asks for in its copy of the native library (each
     * catalog loads its own, so each has its own budget).
     */
    void applyWriteMemoryLimit() {
        if (writeMemoryLimit.isPresent()) {
            try {
                io.hyperstream.jni.NativeLibrary.setWriteMemoryLimit(writeMemoryLimit.getAsLong());
            } catch (InvalidArgumentException e) {
                throw new TrinoException(CONFIGURATION_INVALID, WRITE_MEMORY_LIMIT + ": " + e.getMessage(), e);
            }
        }
    }

    /** The directory of schema {@code schema} (which may not exist), when this catalog has a root. */
    Optional<Path> schema(String schema) {
        return root.map(r -> HyperStreamErrorCode.named(() -> r.namespace(schema)));
    }

    /** The directory of stored table {@code name} when it exists. */
    Optional<Path> storedTable(SchemaTableName name) {
        return root.flatMap(r -> HyperStreamErrorCode.named(() -> r.existingTable(name.getSchemaName(), name.getTableName())));
    }

    private static long parse(Map<String, String> properties, String key, long fallback) {
        String value = properties.get(key);
        if (value == null) {
            return fallback;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new TrinoException(CONFIGURATION_INVALID, key + " must be an integer, got '" + value + "'", e);
        }
    }
}
