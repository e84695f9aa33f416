package io.hyperstream.jni;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * An Apache Iceberg REST catalog (Polaris, Nessie, Unity Catalog, Gravitino, Lakekeeper, Glue, S3
 * Tables, Iceberg's own server) as both engines keep HyperStream tables in one: namespaces and tables
 * come from the catalog service, tables are created, committed and dropped through it, and their
 * locations and storage settings are the catalog's.
 *
 * <p>The engines give the settings under the names Iceberg's own connectors use ({@link #SETTINGS}):
 * {@code uri}, {@code warehouse}, {@code prefix}, {@code credential} ({@code <client id>:<secret>},
 * exchanged for an OAuth2 token), {@code token} (a bearer token), {@code oauth2-server-uri},
 * {@code scope}. A table's storage options ({@link #tableOptions}) carry them, so that every task that
 * opens the table, on any node, reaches the same catalog. Namespaces here are one level deep, as a
 * Spark namespace or a Trino schema of this catalog.
 */
public final class RestCatalog implements Catalog {
    /** The settings an engine passes, by the names Iceberg's REST catalog takes them. */
    public static final Set<String> SETTINGS = Set.of("uri", "warehouse", "prefix", "credential", "token",
            "oauth2-server-uri", "scope");

    private final String name;
    /** The native library's {@code catalog.*} options. */
    private final Map<String, String> options;
    /** The engine's own object-store options, beside the catalog's storage settings for each table. */
    private final Map<String, String> storage;

    /**
     * The catalog the engine calls {@code name}, with {@code settings} (keys of {@link #SETTINGS};
     * {@code uri} is required). Unknown keys fail by name; nothing is contacted until first use.
     */
    public RestCatalog(String name, Map<String, String> settings) {
        this(name, settings, Map.of());
    }

    /** As above, with the engine's own object-store options {@code storage} for every table. */
    public RestCatalog(String name, Map<String, String> settings, Map<String, String> storage) {
        this.name = name;
        this.storage = Map.copyOf(storage);
        Map<String, String> options = new TreeMap<>();
        options.put("catalog.type", "rest");
        options.put("catalog.name", name);
        settings.forEach((key, value) -> {
            String k = key.toLowerCase(Locale.ROOT);
            if (!SETTINGS.contains(k)) {
                throw new InvalidArgumentException("REST catalog " + name + ": unknown setting '" + key + "'; known: "
                        + String.join(", ", new java.util.TreeSet<>(SETTINGS)));
            }
            if (value != null && !value.isBlank()) {
                options.put("catalog." + k, value.trim());
            }
        });
        if (!options.containsKey("catalog.uri")) {
            throw new InvalidArgumentException("REST catalog " + name + ": its uri is not set");
        }
        this.options = Map.copyOf(options);
        CatalogSecrets.register(this.options);
    }

    public String name() {
        return name;
    }

    /** The top-level namespaces (those of one level). */
    @Override
    public List<String> namespaces() {
        NativeLibrary.load();
        return Arrays.stream(namespacesNative(settings(), new String[0])).filter(n -> n.indexOf('\u001f') < 0).toList();
    }

    @Override
    public boolean namespaceExists(String namespace) {
        NativeLibrary.load();
        return namespaceExistsNative(settings(), levels(namespace));
    }

    /** The namespace's properties ({@code location}, ...); {@link NotFoundException} when there is none. */
    @Override
    public Map<String, String> namespaceProperties(String namespace) {
        NativeLibrary.load();
        return NativeTable.unflatten(namespacePropertiesNative(settings(), levels(namespace)), new LinkedHashMap<>());
    }

    /** Creates the namespace; false when it exists. */
    @Override
    public boolean createNamespace(String namespace, Map<String, String> properties) {
        NativeLibrary.load();
        return createNamespaceNative(settings(), levels(namespace), NativeTable.flatten(properties));
    }

    @Override
    public boolean namespaceIsEmpty(String namespace) {
        return tables(namespace).isEmpty();
    }

    /** Drops the namespace with its tables (their files too); false when there is none. */
    @Override
    public boolean dropNamespace(String namespace) {
        if (!namespaceExists(namespace)) {
            return false;
        }
        tables(namespace).forEach(table -> dropTable(namespace, table));
        return dropNamespaceNative(settings(), levels(namespace));
    }

    /** The tables of the namespace; {@link NotFoundException} when there is no such namespace. */
    @Override
    public List<String> tables(String namespace) {
        NativeLibrary.load();
        return List.of(tablesNative(settings(), levels(namespace)));
    }

    /** The table's location when the catalog has it. */
    public Optional<String> tableLocation(String namespace, String table) {
        NativeLibrary.load();
        return Optional.ofNullable(tableLocationNative(settings(), levels(namespace), table));
    }

    @Override
    public Optional<TableRef> tableRef(String namespace, String table) {
        return tableLocation(namespace, table).map(location -> new TableRef(location, tableOptions(namespace, table, storage)));
    }

    /** A new table goes where the catalog puts it (an empty location asks the catalog for one). */
    @Override
    public Optional<TableRef> newTable(String namespace, String table) {
        if (!namespaceExists(namespace)) {
            throw new NotFoundException("REST catalog " + name + ": namespace " + namespace + " does not exist");
        }
        return tableLocation(namespace, table).isPresent() ? Optional.empty()
                : Optional.of(new TableRef("", tableOptions(namespace, table, storage)));
    }

    /** Drops the table with its files. */
    @Override
    public boolean dropTable(String namespace, String table) {
        return dropTable(namespace, table, true);
    }

    /**
     * Drops the table from the catalog; false when there is none. Without {@code purge} its files
     * stay (as Iceberg's catalogs keep them on DROP TABLE). With it the server is asked to purge
     * ({@code purgeRequested=true}), and the files the table's own metadata reaches are deleted
     * ({@link NativeTable#purgeFiles}): never a listing of the location the server gave.
     */
    @Override
    public boolean dropTable(String namespace, String table, boolean purge) {
        NativeLibrary.load();
        if (!purge) {
            return dropTableNative(settings(), levels(namespace), table, false);
        }
        Optional<TableRef> ref = tableRef(namespace, table);
        if (ref.isEmpty()) {
            return false;
        }
        try (NativeTable loaded = ref.get().open()) {
            boolean dropped = dropTableNative(settings(), levels(namespace), table, true);
            if (dropped) {
                loaded.purgeFiles();
            }
            return dropped;
        }
    }

    @Override
    public void renameTable(String namespace, String table, String toNamespace, String toTable) {
        NativeLibrary.load();
        renameTableNative(settings(), levels(namespace), table, levels(toNamespace), toTable);
    }

    /** Registers the table whose current metadata file is {@code metadataLocation}; returns its location. */
    public String registerTable(String namespace, String table, String metadataLocation) {
        NativeLibrary.load();
        return registerTableNative(settings(), levels(namespace), table, metadataLocation);
    }

    /**
     * The storage options that open (or, with {@link NativeTable#create}, create) table {@code table}
     * of {@code namespace} through this catalog, with {@code storage} (the engine's own object-store
     * options) beside them.
     */
    public Map<String, String> tableOptions(String namespace, String table, Map<String, String> storage) {
        Map<String, String> out = new HashMap<>(storage);
        out.putAll(options);
        out.put("catalog.namespace", namespace);
        out.put("catalog.table", table);
        return out;
    }

    /** Whether storage options name a table of a REST catalog. */
    public static boolean isCatalogTable(Map<String, String> storageOptions) {
        return "rest".equals(storageOptions.get("catalog.type"));
    }

    /** The catalog's options with the engine's storage options beside them (a purge reaches the table's files). */
    private String[] settings() {
        Map<String, String> all = new HashMap<>(storage);
        all.putAll(options);
        return NativeTable.flatten(all);
    }

    private static String[] levels(String namespace) {
        return new String[] {namespace};
    }

    @Override
    public String toString() {
        return "RestCatalog(" + name + " at " + options.get("catalog.uri") + ")";
    }

    private static native String[] namespacesNative(String[] settings, String[] parent);

    private static native boolean namespaceExistsNative(String[] settings, String[] namespace);

    private static native String[] namespacePropertiesNative(String[] settings, String[] namespace);

    private static native boolean createNamespaceNative(String[] settings, String[] namespace, String[] properties);

    private static native boolean dropNamespaceNative(String[] settings, String[] namespace);

    private static native String[] tablesNative(String[] settings, String[] namespace);

    private static native String tableLocationNative(String[] settings, String[] namespace, String table);

    private static native boolean dropTableNative(String[] settings, String[] namespace, String table, boolean purge);

    private static native void renameTableNative(String[] settings, String[] namespace, String table, String[] toNamespace,
            String toTable);

    private static native String registerTableNative(String[] settings, String[] namespace, String table,
            String metadataLocation);
}
