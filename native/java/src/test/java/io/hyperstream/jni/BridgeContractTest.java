package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.junit.jupiter.api.Test;

/**
 * The named contract of what the native library hands over: the explain counts bind to {@link
 * NativeTable.ScanExplain} by name (an Arrow row, a column per count), and a count missing or unknown
 * on either side fails instead of reading as zero; data file descriptions are read by the library.
 * The Rust side's twin, {@code scan_explain_crosses_the_bridge_by_name}, holds the same names.
 */
class BridgeContractTest {
    /** The counts of the library's {@code ScanExplain}, in its declaration order. */
    static final List<String> EXPLAIN_COUNTS = List.of("files", "files_pruned", "row_groups",
            "row_groups_pruned_by_stats", "row_groups_pruned_by_bloom", "row_groups_pruned_by_index", "rows",
            "rows_deleted", "rows_pruned_by_index", "rows_read", "pages", "pages_read", "bytes_read", "files_by_graph",
            "files_exact");

    /** One explain row with {@code counts} (the i-th holding i + 1) and one description. */
    private static NativeTable.ExplainedFiles read(BufferAllocator allocator, List<String> counts) {
        List<org.apache.arrow.vector.FieldVector> vectors = new java.util.ArrayList<>();
        for (int i = 0; i < counts.size(); i++) {
            BigIntVector count = new BigIntVector(counts.get(i), allocator);
            count.allocateNew(1);
            count.set(0, i + 1);
            count.setValueCount(1);
            vectors.add(count);
        }
        ListVector reading = ListVector.empty(NativeTable.ExplainedFiles.READING, allocator);
        UnionListWriter writer = reading.getWriter();
        writer.startList();
        writer.writeVarChar("{}");
        writer.endList();
        writer.setValueCount(1);
        reading.setValueCount(1);
        vectors.add(reading);
        try (VectorSchemaRoot row = new VectorSchemaRoot(vectors)) {
            row.setRowCount(1);
            return NativeTable.ExplainedFiles.of(row);
        }
    }

    @Test
    void explainCountsBindByName() {
        List<String> components = Arrays.stream(NativeTable.ScanExplain.class.getRecordComponents())
                .map(c -> Records.snakeCase(c.getName()))
                .toList();
        assertEquals(EXPLAIN_COUNTS, components);
        try (BufferAllocator allocator = Allocators.child("bridge-contract")) {
            List<String> shuffled = new java.util.ArrayList<>(EXPLAIN_COUNTS);
            java.util.Collections.reverse(shuffled);
            NativeTable.ExplainedFiles read = read(allocator, shuffled);
            assertEquals(shuffled.indexOf("files") + 1, read.explain().files());
            assertEquals(shuffled.indexOf("row_groups_pruned_by_stats") + 1, read.explain().rowGroupsPrunedByStats());
            assertEquals(shuffled.indexOf("bytes_read") + 1, read.explain().bytesRead());
            assertEquals(shuffled.indexOf("files_exact") + 1, read.explain().filesExact());
            assertEquals(List.of("{}"), List.of(read.files()));
        }
    }

    @Test
    void aCountMissingOrUnknownFailsInsteadOfReadingAsZero() {
        try (BufferAllocator allocator = Allocators.child("bridge-contract")) {
            InternalException e = assertThrows(InternalException.class,
                    () -> read(allocator, EXPLAIN_COUNTS.subList(0, EXPLAIN_COUNTS.size() - 1)));
            assertTrue(e.getMessage().contains(EXPLAIN_COUNTS.get(EXPLAIN_COUNTS.size() - 1)), e.getMessage());
            List<String> unknown = new java.util.ArrayList<>(EXPLAIN_COUNTS);
            unknown.add("rows_invented");
            e = assertThrows(InternalException.class, () -> read(allocator, unknown));
            assertTrue(e.getMessage().contains("rows_invented"), e.getMessage());
        }
    }

    @Test
    void dataFileDescriptionsAreReadByTheLibrary() {
        String maps = "\"column_sizes\": {}, \"value_counts\": {}, \"null_value_counts\": {}, \"lower_bounds\": {}, "
                + "\"upper_bounds\": {}";
        String plain = "{\"content\": 0, \"file_path\": \"file:///t/data/a \\\"record_count\\\": 9.parquet\", "
                + "\"file_format\": \"PARQUET\", \"record_count\": 12, \"file_size_in_bytes\": 345, " + maps + "}";
        String deleted = plain.substring(0, plain.length() - 1) + ", \"deletes\": [" + plain + "]}";
        assertEquals(12, DataFiles.recordCount(plain));
        assertEquals(345, DataFiles.sizeInBytes(plain));
        assertEquals(12, DataFiles.undeletedRows(plain));
        assertEquals(0, DataFiles.undeletedRows(deleted));
        assertThrows(InvalidArgumentException.class, () -> DataFiles.recordCount("{\"file_size_in_bytes\": 1}"));
    }
}
