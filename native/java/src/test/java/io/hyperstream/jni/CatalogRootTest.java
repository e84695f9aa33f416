package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Names from SQL become paths only under the catalog root, by one rule for both engines. */
class CatalogRootTest {
    @TempDir
    Path dir;

    @Test
    void everyNameThatWouldLeaveItsDirectoryIsRefusedByName() throws Exception {
        CatalogRoot catalog = new CatalogRoot(Files.createDirectories(dir.resolve("root")));
        for (String bad : List.of("", ".", "..", "../x", "a/b", "/abs", dir.toString(), "a\\b", "a\u0000b", "a\nb", "n".repeat(256))) {
            InvalidArgumentException schema = assertThrows(InvalidArgumentException.class, () -> catalog.namespace(bad), bad);
            assertTrue(schema.getMessage().contains("schema name") && schema.getMessage().contains("is not allowed"), schema.getMessage());
            InvalidArgumentException table = assertThrows(InvalidArgumentException.class, () -> catalog.table("db", bad), bad);
            assertTrue(table.getMessage().contains("table name"), table.getMessage());
            assertThrows(InvalidArgumentException.class, () -> catalog.existingTable(bad, "t"), bad);
        }
        assertEquals(dir.resolve("root").resolve("db").resolve("my-table.v2"), catalog.table("db", "my-table.v2"));
        assertEquals(dir.resolve("root").resolve("..db"), catalog.namespace("..db"));
        assertThrows(InvalidArgumentException.class, () -> CatalogRoot.checkName("array", null));
    }

    @Test
    void symbolicLinksOutOfTheRootAreRefusedAndLinksInsideItAreNot() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Files.writeString(Files.createDirectories(root.resolve("db").resolve("t").resolve("metadata")).resolve("version-hint.text"), "1");
        Files.createSymbolicLink(root.resolve("out"), outside);
        Files.createSymbolicLink(root.resolve("alias"), Path.of("db"));
        Files.createSymbolicLink(root.resolve("db").resolve("escape"), Path.of("..", "..", "outside"));
        Files.createSymbolicLink(root.resolve("dangling"), dir.resolve("nowhere"));
        CatalogRoot catalog = new CatalogRoot(root);

        InvalidArgumentException out = assertThrows(InvalidArgumentException.class, () -> catalog.namespace("out"));
        assertTrue(out.getMessage().contains("leads outside the catalog root"), out.getMessage());
        assertThrows(InvalidArgumentException.class, () -> catalog.table("out", "t"));
        assertThrows(InvalidArgumentException.class, () -> catalog.table("db", "escape"));
        assertTrue(assertThrows(InvalidArgumentException.class, () -> catalog.namespace("dangling")).getMessage().contains("leads nowhere"));
        assertEquals(Optional.of(root.resolve("alias").resolve("t")), catalog.existingTable("alias", "t"));
        assertTrue(catalog.namespaceExists("db"));
        assertFalse(catalog.namespaceExists("missing"));
        // Listings leave out what leads elsewhere, tables directly under the root, and names the rule refuses.
        Files.writeString(Files.createDirectories(root.resolve("stray-table").resolve("metadata")).resolve("v1.metadata.json"), "{}");
        assertEquals(List.of("alias", "db"), catalog.namespaces());
        assertEquals(List.of("t"), catalog.tables("db"));
        assertEquals(List.of(), catalog.tables("missing"));
    }

    /** A table is known by its metadata, never by a folder's name: tables named metadata and data live in a namespace like others. */
    @Test
    void tablesNamedMetadataOrDataLeaveTheirNamespaceANamespace() throws Exception {
        Path root = Files.createDirectories(dir.resolve("named"));
        CatalogRoot catalog = new CatalogRoot(root);
        for (String name : List.of("metadata", "data", "t")) {
            Files.writeString(Files.createDirectories(catalog.table("ns", name).resolve("metadata")).resolve("version-hint.text"), "1");
        }
        Files.createDirectories(root.resolve("ns").resolve("empty").resolve("metadata"));
        assertTrue(catalog.namespaceExists("ns"));
        assertEquals(List.of("ns"), catalog.namespaces());
        assertEquals(List.of("data", "metadata", "t"), catalog.tables("ns"));
        assertEquals(Optional.of(root.resolve("ns").resolve("metadata")), catalog.existingTable("ns", "metadata"));
        assertEquals(Optional.empty(), catalog.existingTable("ns", "empty"), "a folder named metadata is not a table");
    }

    @Test
    void aDirectoryHoldingOnlyAFileIsNotEmpty() throws Exception {
        Path ns = Files.createDirectories(dir.resolve("ns"));
        assertTrue(CatalogRoot.isEmpty(ns));
        assertTrue(CatalogRoot.isEmpty(dir.resolve("missing")));
        Files.writeString(ns.resolve("notes.txt"), "x");
        assertFalse(CatalogRoot.isEmpty(ns));
    }
}
