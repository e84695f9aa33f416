package io.hyperstream.trino;

import static io.trino.spi.StandardErrorCode.CONFIGURATION_INVALID;

import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.CatalogRoot;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.Limits;
import io.hyperstream.jni.RestCatalog;
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
 *   <tr><td>hyperstream.catalog.type</td><td>filesystem</td><td>{@code rest}: schemas and tables are an Iceberg REST
 *       catalog's (the {@code hyperstream.rest-catalog.*} properties)</td></tr>
 *   <tr><td>hyperstream.rest-catalog.uri</td><td>(none)</td><td>the REST catalog's base URI</td></tr>
 *   <tr><td>hyperstream.rest-catalog.warehouse</td><td>(none)</td><td>the warehouse asked for</td></tr>
 *   <tr><td>hyperstream.rest-catalog.prefix</td><td>(none)</td><td>a path prefix (else the catalog's own)</td></tr>
 *   <tr><td>hyperstream.rest-catalog.oauth2.credential</td><td>(none)</td><td>{@code <client id>:<secret>}</td></tr>
 *   <tr><td>hyperstream.rest-catalog.oauth2.token</td><td>(none)</td><td>a bearer token</td></tr>
 *   <tr><td>hyperstream.rest-catalog.oauth2.server-uri</td><td>{@code <uri>/v1/oauth/tokens}</td><td>the token endpoint</td></tr>
 *   <tr><td>hyperstream.rest-catalog.oauth2.scope</td><td>catalog</td><td>the scope asked for</td></tr>
 *   <tr><td>hyperstream.write.memory-limit</td><td>1073741824</td><td>bytes the catalog's table writers on a node
 *       together buffer before each rolls what it holds into data files (at least 16 MiB)</td></tr>
 * </table>
 */
record HyperStreamConfig(long sampleRows, int sampleDimension, long sampleSeed, long splitRows, int batchRows,
        Optional<CatalogRoot> root, Optional<Catalog> tables, java.util.OptionalLong writeMemoryLimit) {
    static final String SAMPLE_ROWS = "hyperstream.sample.rows";
    static final String SAMPLE_DIMENSION = "hyperstream.sample.dimension";
    static final String SAMPLE_SEED = "hyperstream.sample.seed";
    static final String SPLIT_ROWS = "hyperstream.split-rows";
    static final String BATCH_ROWS = "hyperstream.batch-rows";
    static final String ROOT = "hyperstream.root";
    static final String WRITE_MEMORY_LIMIT = "hyperstream.write.memory-limit";
    static final String CATALOG_TYPE = "hyperstream.catalog.type";
    static final String REST = "hyperstream.rest-catalog.";
    /** Trino's Iceberg connector names beside the settings {@link RestCatalog} takes. */
    private static final Map<String, String> REST_SETTINGS = Map.of(REST + "uri", "uri", REST + "warehouse", "warehouse",
            REST + "prefix", "prefix", REST + "oauth2.credential", "credential", REST + "oauth2.token", "token",
            REST + "oauth2.server-uri", "oauth2-server-uri", REST + "oauth2.scope", "scope");
    private static final Set<String> KNOWN = known();

    private static Set<String> known() {
        Set<String> known = new TreeSet<>(Set.of(SAMPLE_ROWS, SAMPLE_DIMENSION, SAMPLE_SEED, SPLIT_ROWS, BATCH_ROWS, ROOT,
                WRITE_MEMORY_LIMIT, CATALOG_TYPE));
        known.addAll(REST_SETTINGS.keySet());
        return known;
    }

    static HyperStreamConfig from(Map<String, String> properties) {
        return from("hyperstream", properties);
    }

    /** The properties of catalog {@code catalogName} (which errors of its REST catalog name). */
    static HyperStreamConfig from(String catalogName, Map<String, String> properties) {
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
        Optional<CatalogRoot> directories = root.map(CatalogRoot::new);
        String type = properties.getOrDefault(CATALOG_TYPE, "filesystem").trim().toLowerCase(java.util.Locale.ROOT);
        Optional<Catalog> tables = switch (type) {
            case "filesystem" -> directories.map(Catalog.class::cast);
            case "rest" -> {
                if (root.isPresent()) {
                    throw new TrinoException(CONFIGURATION_INVALID, ROOT + " and " + CATALOG_TYPE + "=rest exclude each other: "
                            + "a REST catalog keeps its tables where it chooses");
                }
                Map<String, String> settings = new java.util.HashMap<>();
                REST_SETTINGS.forEach((key, setting) -> {
                    if (properties.containsKey(key)) {
                        settings.put(setting, properties.get(key));
                    }
                });
                try {
                    yield Optional.of(new RestCatalog(catalogName, settings));
                } catch (InvalidArgumentException e) {
                    throw new TrinoException(CONFIGURATION_INVALID, REST + "uri must be set with " + CATALOG_TYPE + "=rest: "
                            + e.getMessage(), e);
                }
            }
            default -> throw new TrinoException(CONFIGURATION_INVALID, CATALOG_TYPE + " must be 'filesystem' or 'rest', got '"
                    + properties.get(CATALOG_TYPE) + "'");
        };
        return new HyperStreamConfig(parse(properties, SAMPLE_ROWS, 100_000), (int) dimension,
                parse(properties, SAMPLE_SEED, 0), splitRows, (int) batchRows, directories, tables, writeMemoryLimit);
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

    /** Stored table {@code name} when it exists. */
    /**
     * The stored table {@code name}, as handles carry it: without the catalog's secrets, which stay in
     * this node's catalog ({@link io.hyperstream.jni.CatalogSecrets}) and are put back where the table opens.
     */
    Optional<Catalog.TableRef> storedTable(SchemaTableName name) {
        return tables.flatMap(t -> HyperStreamErrorCode.named(() -> t.tableRef(name.getSchemaName(), name.getTableName())))
                .map(ref -> new Catalog.TableRef(ref.location(), io.hyperstream.jni.CatalogSecrets.withoutSecrets(ref.options())));
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
