package io.hyperstream.jni;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where an engine's HyperStream catalog keeps its namespaces and tables: a local directory
 * ({@link CatalogRoot}, each namespace a directory under the root) or an Iceberg REST catalog
 * service ({@link RestCatalog}). Both engines go through this one face, so that a table found,
 * created or dropped in either is the same thing. Namespaces are one level deep (a Spark namespace
 * of one part, a Trino schema).
 */
public interface Catalog {
    /** Where a table is and the storage options that open it ({@link NativeTable#load}, {@link NativeTable#create}). */
    record TableRef(String location, Map<String, String> options) {
        public TableRef {
            options = Map.copyOf(options);
        }

        /** The table's latest version. */
        public NativeTable open() {
            return NativeTable.load(location, options);
        }

        /** The table as {@code version} sees it. */
        public NativeTable open(TableVersion version) {
            return NativeTable.loadAt(location, options, version);
        }
    }

    List<String> namespaces();

    boolean namespaceExists(String namespace);

    /** The namespace's properties ({@code location}, ...); {@link NotFoundException} when there is none. */
    Map<String, String> namespaceProperties(String namespace);

    /** Creates the namespace; false when it exists. */
    boolean createNamespace(String namespace, Map<String, String> properties);

    /** Whether the namespace holds nothing (no table, nor anything else the catalog keeps there). */
    boolean namespaceIsEmpty(String namespace);

    /** Drops the namespace with everything in it; false when there is none. */
    boolean dropNamespace(String namespace);

    /** The tables of the namespace (none when it does not exist). */
    List<String> tables(String namespace);

    /** The table when the catalog has it. */
    Optional<TableRef> tableRef(String namespace, String table);

    /**
     * Where a new table of this name is created ({@link NativeTable#create} with these options); empty
     * when something is there already. The namespace must exist.
     */
    Optional<TableRef> newTable(String namespace, String table);

    /** Drops the table and its files; false when there is none. */
    boolean dropTable(String namespace, String table);

    /**
     * Drops the table; its files go only with {@code purge} where the catalog does not own them (a
     * REST catalog's tables), as Iceberg's catalogs do. A directory catalog's table is its folder,
     * which goes either way.
     */
    default boolean dropTable(String namespace, String table, boolean purge) {
        return dropTable(namespace, table);
    }

    void renameTable(String namespace, String table, String toNamespace, String toTable);
}
