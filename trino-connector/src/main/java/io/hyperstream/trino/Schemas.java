package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.named;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import io.hyperstream.jni.CatalogRoot;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.SchemaTableName;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The catalog's schemas: {@code sample}, and with {@code hyperstream.root} set every directory
 * under it (a directory holding an array store is a schema of arrays), and the tables of each.
 */
final class Schemas {
    private final HyperStreamConfig config;

    Schemas(HyperStreamConfig config) {
        this.config = config;
    }

    List<String> names() {
        List<String> schemas = new ArrayList<>(List.of(HyperStreamMetadata.SAMPLE_SCHEMA));
        config.root().ifPresent(root -> root.namespaces().stream()
                .filter(name -> !name.equals(HyperStreamMetadata.SAMPLE_SCHEMA)).forEach(schemas::add));
        return schemas;
    }

    /** A schema name the catalog refuses fails here, before Trino plans anything on it. */
    boolean exists(String schemaName) {
        if (schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA)) {
            return true;
        }
        return config.root().isPresent() && named(() -> config.root().get().namespaceExists(schemaName));
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
            config.root().ifPresent(root -> named(() -> root.tables(schema)).stream()
                    .map(table -> new SchemaTableName(schema, table))
                    .forEach(tables::add));
        }
        return tables;
    }

    Path directory(String schema) {
        return config.schema(schema).orElseThrow(() -> new TrinoException(NOT_SUPPORTED,
                "this catalog has no hyperstream.root: it holds only the sample schema"));
    }

    void create(String schemaName) {
        Path dir = directory(schemaName);
        if (schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA) || Files.exists(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_ALREADY_EXISTS, "schema " + schemaName + " already exists");
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new TrinoException(HyperStreamErrorCode.HYPERSTREAM_IO_ERROR, "creating schema directory " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Without CASCADE, a schema directory that holds anything at all (a file too) is not dropped. */
    void drop(String schemaName, boolean cascade) {
        directory(schemaName); // a catalog without a root has only the sample schema
        Path dir = named(() -> config.root().orElseThrow().existingNamespace(schemaName))
                .filter(d -> !schemaName.equals(HyperStreamMetadata.SAMPLE_SCHEMA))
                .orElseThrow(() -> new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND,
                        "schema " + schemaName + " does not exist"));
        if (!cascade && !CatalogRoot.isEmpty(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_EMPTY, "schema " + schemaName + " is not empty");
        }
        TableChanges.deleteTree(dir);
    }

    /** Where a new table goes: its schema's directory, which must exist. */
    String newTableLocation(SchemaTableName name) {
        Path dir = directory(name.getSchemaName());
        if (name.getSchemaName().equals(HyperStreamMetadata.SAMPLE_SCHEMA) || !Files.isDirectory(dir)) {
            throw new TrinoException(io.trino.spi.StandardErrorCode.SCHEMA_NOT_FOUND, "schema " + name.getSchemaName() + " does not exist");
        }
        if (ArrayTables.isStore(dir)) {
            throw new TrinoException(NOT_SUPPORTED, "schema " + name.getSchemaName() + " is an array store: its tables are its arrays");
        }
        return named(() -> config.root().orElseThrow().table(name.getSchemaName(), name.getTableName())).toString();
    }
}
