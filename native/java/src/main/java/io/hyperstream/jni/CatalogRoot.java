package io.hyperstream.jni;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A catalog of stored tables in a local directory, as both engines keep one: each directory under the
 * root is a namespace (a Trino schema) and each table directory in it (one holding {@code metadata/})
 * a table.
 *
 * <p>Every name that comes from SQL, a procedure or a table function goes through {@link #namespace}
 * or {@link #table} before it becomes a path. They check it by the library's one rule for names (one
 * path component: not empty, at most 255 bytes, no {@code /}, {@code \} or control characters, not
 * {@code .} or {@code ..}) and check that the directory it names, once symbolic links are followed,
 * is still under the root; a refused name raises {@link InvalidArgumentException} naming what was
 * wrong, before anything on disk changes. Path-based access (a table location the user gives) does
 * not come through here: that path is the user's own choice.
 */
public final class CatalogRoot implements Catalog {
    /** The directory that makes a table directory a table. */
    private static final String METADATA = "metadata";

    private final Path root;

    /** The catalog under {@code root} (made absolute); the directory need not exist yet. */
    public CatalogRoot(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    public Path root() {
        return root;
    }

    /** Checks a name by the library's rule; {@code kind} ("schema", "table", "array") goes into the message. */
    public static void checkName(String kind, String name) {
        NativeLibrary.load();
        checkNameNative(kind, name);
    }

    private static native void checkNameNative(String kind, String name);

    /** The directory of namespace {@code name} (which may not exist), checked. */
    public Path namespace(String name) {
        checkName("schema", name);
        return confined(root.resolve(name), "schema " + name);
    }

    /** The directory of table {@code table} in namespace {@code namespace} (either may not exist), checked. */
    public Path table(String namespace, String table) {
        checkName("schema", namespace);
        checkName("table", table);
        return confined(root.resolve(namespace).resolve(table), "table " + namespace + "." + table);
    }

    /** The table's directory when that table exists. */
    public Optional<Path> existingTable(String namespace, String table) {
        return Optional.of(table(namespace, table)).filter(CatalogRoot::isTable);
    }

    /** The directory of namespace {@code name} when it exists: a directory under the root that is not a table. */
    public Optional<Path> existingNamespace(String name) {
        return Optional.of(namespace(name)).filter(dir -> Files.isDirectory(dir) && !isTable(dir));
    }

    @Override
    public boolean namespaceExists(String name) {
        return existingNamespace(name).isPresent();
    }

    @Override
    public Map<String, String> namespaceProperties(String name) {
        return Map.of("location", existingNamespace(name)
                .orElseThrow(() -> new NotFoundException("schema " + name + " does not exist under " + root)).toString());
    }

    @Override
    public boolean createNamespace(String name, Map<String, String> properties) {
        Path dir = namespace(name);
        if (Files.exists(dir)) {
            return false;
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new HyperStreamIOException("creating namespace directory " + dir + ": " + e.getMessage(), e);
        }
        return true;
    }

    /** Whether the namespace's directory holds nothing at all, files included. */
    @Override
    public boolean namespaceIsEmpty(String name) {
        return isEmpty(namespace(name));
    }

    @Override
    public boolean dropNamespace(String name) {
        Optional<Path> dir = existingNamespace(name);
        dir.ifPresent(LocalFiles::deleteTree);
        return dir.isPresent();
    }

    @Override
    public Optional<TableRef> tableRef(String namespace, String table) {
        return existingTable(namespace, table).map(dir -> new TableRef(dir.toString(), Map.of()));
    }

    @Override
    public Optional<TableRef> newTable(String namespace, String table) {
        Path dir = table(namespace, table);
        return isTable(dir) ? Optional.empty() : Optional.of(new TableRef(dir.toString(), Map.of()));
    }

    @Override
    public boolean dropTable(String namespace, String table) {
        Optional<Path> dir = existingTable(namespace, table);
        dir.ifPresent(LocalFiles::deleteTree);
        return dir.isPresent();
    }

    /** Not supported: table metadata names its files by absolute path, which a moved directory breaks. */
    @Override
    public void renameTable(String namespace, String table, String toNamespace, String toTable) {
        throw new UnsupportedOperationException("renaming tables of a directory catalog is not supported: their "
                + "metadata names files by absolute path; keep tables in a REST catalog to rename them");
    }

    /**
     * Whether {@code dir} is a table: its {@code metadata/} holds the version hint or a metadata
     * version ({@code vN.metadata.json}), as Iceberg's file-system tables do. A folder name alone
     * never decides it, so {@code metadata} and {@code data} are table names like any other (a
     * namespace holding a table named {@code metadata} stays a namespace).
     */
    public static boolean isTable(Path dir) {
        Path metadata = dir.resolve(METADATA);
        if (Files.isRegularFile(metadata.resolve("version-hint.text"))) {
            return true;
        }
        if (!Files.isDirectory(metadata)) {
            return false;
        }
        try (var files = Files.list(metadata)) {
            return files.anyMatch(p -> Files.isRegularFile(p) && p.getFileName().toString().matches("v\\d+\\.metadata\\.json"));
        } catch (java.io.IOException e) {
            return false;
        }
    }

    /** The namespaces: directories under the root that are not tables and whose names pass the rule. */
    @Override
    public List<String> namespaces() {
        return children(root).stream().filter(p -> !isTable(p)).map(CatalogRoot::name)
                .filter(CatalogRoot::allowed).toList();
    }

    /** The tables of namespace {@code name} (none when it does not exist). */
    @Override
    public List<String> tables(String name) {
        return children(namespace(name)).stream().filter(CatalogRoot::isTable).map(CatalogRoot::name)
                .filter(CatalogRoot::allowed).toList();
    }

    /** Whether {@code dir} holds nothing at all, files included (a missing directory holds nothing). */
    public static boolean isEmpty(Path dir) {
        if (!Files.isDirectory(dir)) {
            return true;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isEmpty();
        } catch (IOException e) {
            throw new HyperStreamIOException("listing " + dir + ": " + e.getMessage(), e);
        }
    }

    /** {@code path}, or the refusal of {@link #escape} as an exception naming {@code what}. */
    private Path confined(Path path, String what) {
        Optional<String> escape = escape(path);
        if (escape.isPresent()) {
            throw new InvalidArgumentException(what + " is not allowed: " + escape.get());
        }
        return path;
    }

    /**
     * Why {@code path} leads outside the root once every symbolic link on the way is followed, if it
     * does: the deepest part of it that exists is resolved, and what does not exist yet cannot lead
     * elsewhere, as names hold no separators.
     */
    private Optional<String> escape(Path path) {
        Path realRoot;
        try {
            realRoot = root.toRealPath();
        } catch (IOException e) {
            return Optional.empty(); // no root yet: nothing under it exists to lead out of it
        }
        Path existing = path;
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return Optional.empty();
        }
        try {
            return existing.toRealPath().startsWith(realRoot) ? Optional.empty()
                    : Optional.of(existing + " leads outside the catalog root " + root + " through a symbolic link");
        } catch (IOException e) {
            return Optional.of(existing + " is a symbolic link that leads nowhere (" + e.getMessage() + ")");
        }
    }

    /** The directories in {@code dir} that stay under the root. */
    private List<Path> children(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> paths = Files.list(dir)) {
            return paths.filter(Files::isDirectory).filter(p -> escape(p).isEmpty()).sorted().toList();
        } catch (IOException e) {
            throw new HyperStreamIOException("listing " + dir + ": " + e.getMessage(), e);
        }
    }

    private static String name(Path path) {
        return path.getFileName().toString();
    }

    private static boolean allowed(String name) {
        try {
            checkName("name", name);
            return true;
        } catch (InvalidArgumentException e) {
            return false;
        }
    }

    @Override
    public String toString() {
        return "CatalogRoot(" + root + ")";
    }
}
