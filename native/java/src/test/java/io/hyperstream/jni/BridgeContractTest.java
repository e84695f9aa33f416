package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The named contract of what the native library hands over as JSON: the explain counts bind to
 * {@link NativeTable.ScanExplain} by name, and a count missing or unknown on either side fails the
 * call. The Rust side's twin, {@code scan_explain_crosses_the_bridge_by_name}, holds the same names.
 */
class BridgeContractTest {
    /** The counts of the library's {@code ScanExplain}, in its declaration order. */
    static final List<String> EXPLAIN_COUNTS = List.of("files", "files_pruned", "row_groups",
            "row_groups_pruned_by_stats", "row_groups_pruned_by_bloom", "row_groups_pruned_by_index", "rows",
            "rows_deleted", "rows_pruned_by_index", "rows_read", "pages", "pages_read", "bytes_read");

    private static String explainJson(List<String> counts) {
        StringBuilder json = new StringBuilder("{\"explain\": {");
        for (int i = 0; i < counts.size(); i++) {
            json.append(i == 0 ? "" : ", ").append('"').append(counts.get(i)).append("\": ").append(i + 1);
        }
        return json.append("}, \"files\": [\"{}\"]}").toString();
    }

    @Test
    void explainCountsBindByName() {
        List<String> components = Arrays.stream(NativeTable.ScanExplain.class.getRecordComponents())
                .map(c -> c.getName().replaceAll("([A-Z])", "_$1").toLowerCase())
                .toList();
        assertEquals(EXPLAIN_COUNTS, components);

        NativeTable.ExplainedFiles read = Json.read(explainJson(EXPLAIN_COUNTS), NativeTable.ExplainedFiles.class);
        assertEquals(1, read.explain().files());
        assertEquals(4, read.explain().rowGroupsPrunedByStats());
        assertEquals(13, read.explain().bytesRead());
        assertEquals(List.of("{}"), List.of(read.files()));
    }

    @Test
    void aCountMissingOrUnknownFailsInsteadOfReadingAsZero() {
        List<String> missing = EXPLAIN_COUNTS.subList(0, EXPLAIN_COUNTS.size() - 1);
        InternalException e = assertThrows(InternalException.class,
                () -> Json.read(explainJson(missing), NativeTable.ExplainedFiles.class));
        assertTrue(e.getMessage().contains("bytes_read") || e.getMessage().contains("bytesRead"), e.getMessage());

        List<String> unknown = new java.util.ArrayList<>(EXPLAIN_COUNTS);
        unknown.add("rows_invented");
        e = assertThrows(InternalException.class,
                () -> Json.read(explainJson(unknown), NativeTable.ExplainedFiles.class));
        assertTrue(e.getMessage().contains("rows_invented"), e.getMessage());
    }

    @Test
    void dataFileDescriptionsAreReadByFieldName() {
        String plain = "{\"file_path\": \"a \\\"record_count\\\": 9\", \"record_count\": 12, \"file_size_in_bytes\": 345,"
                + " \"deletes\": []}";
        assertEquals(12, DataFiles.recordCount(plain));
        assertEquals(345, DataFiles.sizeInBytes(plain));
        assertEquals(12, DataFiles.undeletedRows(plain));
        String deleted = "{\"record_count\": 12, \"file_size_in_bytes\": 345, \"deletes\": [{\"record_count\": 2}]}";
        assertEquals(0, DataFiles.undeletedRows(deleted));
        assertThrows(InternalException.class, () -> DataFiles.recordCount("{\"file_size_in_bytes\": 1}"));
    }
}
