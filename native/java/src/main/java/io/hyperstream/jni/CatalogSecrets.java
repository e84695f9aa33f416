package io.hyperstream.jni;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The secrets of the REST catalogs this JVM opened (a bearer token, an OAuth2 client credential),
 * kept here, in the catalog instance's process: a table's options leave them out ({@link
 * #withoutSecrets}), so that a table handle, a split, a plan or a log line never holds them, and
 * {@link NativeTable#load} puts them back from here when it opens the table. Every node of an
 * engine opens its catalogs from the same catalog file, so each has them.
 */
public final class CatalogSecrets {
    /** The options that hold a REST catalog's secrets. */
    public static final Set<String> SECRET_OPTIONS = Set.of("catalog.credential", "catalog.token");

    private static final Map<String, Map<String, String>> SECRETS = new ConcurrentHashMap<>();

    private CatalogSecrets() {}

    /** The catalog that options name: its name and URI (never a secret). */
    private static String catalog(Map<String, String> options) {
        return options.get("catalog.name") + "\n" + options.get("catalog.uri");
    }

    /** Keeps the secrets among a catalog's options {@code options} for the tables it opens in this JVM. */
    static void register(Map<String, String> options) {
        Map<String, String> secrets = new HashMap<>();
        for (String key : SECRET_OPTIONS) {
            if (options.containsKey(key)) {
                secrets.put(key, options.get(key));
            }
        }
        SECRETS.put(catalog(options), Map.copyOf(secrets));
    }

    /** {@code options} without any secret: what may travel with a table. */
    public static Map<String, String> withoutSecrets(Map<String, String> options) {
        if (SECRET_OPTIONS.stream().noneMatch(options::containsKey)) {
            return options;
        }
        Map<String, String> out = new HashMap<>(options);
        out.keySet().removeAll(SECRET_OPTIONS);
        return out;
    }

    /** {@code options} of a REST catalog's table with the secrets this JVM keeps for its catalog put back. */
    static Map<String, String> withSecrets(Map<String, String> options) {
        if (!RestCatalog.isCatalogTable(options)) {
            return options;
        }
        Map<String, String> secrets = SECRETS.getOrDefault(catalog(options), Map.of());
        if (secrets.isEmpty() || options.keySet().containsAll(secrets.keySet())) {
            return options;
        }
        Map<String, String> out = new HashMap<>(secrets);
        out.putAll(options);
        return out;
    }
}
