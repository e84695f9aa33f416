package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.named;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import io.hyperstream.jni.Catalog;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.SchemaTableName;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The catalog's schemas: {@code sample}, and with {@code hyperstream.root} set every directory
 * under it (a directory holding an array store is a schema of arrays), or with
 * {@code hyperstream.catalog.type=rest} every namespace of the REST catalog, and the tables of each.
 */
final class Schemas {
    private final HyperStreamConfig config;

    Schemas(HyperStreamConfig config) {
        this.config = config;
    }

    List<String> names() {
        List<String> schemas = new ArrayList<>(List.of(HyperStreamMetadata.SAMPLE_SCHEMA));
        config.tables().ifPresent(tables -> named(tables::namespaces).stream()
                .filter(name -> !name.equals(HyperStreamMetadata.SAMPLE_SCHEMA)).forEach(schemas::add));
        return schemas;
    }

    /** A schema name the catalog refuses fails here, before Trino plans anything on it. */
    boolean exists(String schemaName) {
        if (schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA)) {
            return true;
        }
        return config.tables().isPresent() && named(() -> config.tables().get().namespaceExists(schemaName));
    }

    /** The schema's directory when it holds an array store: its arrays are the schema's tables. */
    Optional<Path> arrayStore(String schema) {
        return config.schema(schema).filter(ArrayTables::isStore);
    }

    List<SchemaTableName> tables(Optional<String> schemaName) {
        List<SchemaTableName> tables = new ArrayList<>();
        for (String schema : schemaName.map(List::of).orElseGet(() -> names())) {
            if (schema.equals(HyperStreamMetadata.SAMPLE_SCHEMA)) {
                tables.add(new SchemaTableName(HyperStreamMetadata.SAMPLE_SCHEMA, HyperStreamMetadata.SAMPLE_TABLE));
                continue;
            }
            Optional<Path> arrays = arrayStore(schema);
            if (arrays.isPresent()) {
                ArrayTables.names(arrays.get()).forEach(array -> tables.add(new SchemaTableName(schema, array)));
                continue;
            }
            if (schemaName.isPresent() && !exists(schema)) {
                continue;
            }
            config.tables().ifPresent(catalog -> named(() -> catalog.tables(schema)).stream()
                    .map(table -> new SchemaTableName(schema, table))
                    .forEach(tables::add));
        }
        return tables;
    }

    private Catalog catalog() {
        return config.tables().orElseThrow(() -> new TrinoException(NOT_SUPPORTED,
                "this catalog has no hyperstream.root nor hyperstream.catalog.type=rest: it holds only the sample schema"));
    }

    void create(String schemaName) {
        Catalog catalog = catalog();
        if (schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA) || !named(() -> catalog.createNamespace(schemaName, java.util.Map.of()))) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_ALREADY_EXISTS, "schema " + schemaName + " already exists");
        }
    }

    /** Without CASCADE, a schema that holds anything at all (a file of a directory catalog too) is not dropped. */
    void drop(String schemaName, boolean cascade) {
        Catalog catalog = catalog();
        if (schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA) || !named(() -> catalog.namespaceExists(schemaName))) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND, "schema " + schemaName + " does not exist");
        }
        if (!cascade && !named(() -> catalog.namespaceIsEmpty(schemaName))) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_EMPTY, "schema " + schemaName + " is not empty");
        }
        named(() -> catalog.dropNamespace(schemaName));
    }

    /** Where a new table goes: in its schema, which must exist. */
    Catalog.TableRef newTable(SchemaTableName name) {
        Catalog catalog = catalog();
        if (name.getSchemaName().equals(HyperStreamMetadata.SAMPLE_SCHEMA) || !exists(name.getSchemaName())) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND, "schema " + name.getSchemaName() + " does not exist");
        }
        if (arrayStore(name.getSchemaName()).isPresent()) {
            throw new TrinoException(NOT_SUPPORTED, "schema " + name.getSchemaName() + " is an array store: its tables are its arrays");
        }
        return named(() -> catalog.newTable(name.getSchemaName(), name.getTableName())).orElseThrow(() -> new TrinoException(
                io.trino.spi.StandardErrorCode.TABLE_ALREADY_EXISTS, "table " + name + " already exists"));
    }
}
