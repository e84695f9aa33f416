package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import static io.trino.spi.type.BigintType.BIGINT;
import static io.trino.spi.type.VarcharType.VARCHAR;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.NativeTable;
import io.hyperstream.jni.RowDeletes;
import io.trino.spi.Page;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.block.RowBlock;
import io.trino.spi.connector.ConnectorMergeSink;
import io.trino.spi.connector.MergePage;
import io.trino.spi.type.RowType;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * UPDATE, MERGE and the DELETEs the scan cannot answer alone, merge-on-read: Trino reads each
 * target row with its row id ({@code _file}, {@code _pos}), decides what happens to it (a row
 * matched twice is Trino's error), and hands the merge sinks the rows to delete and the rows to
 * insert (an updated row is both: {@code DELETE_ROW_AND_INSERT_ROW}). The sinks write new data
 * files natively (with their indexes) and gather the deleted positions per data file; the commit
 * lands both as one snapshot of position deletes (deletion vectors in format version 3) and data
 * files, or fails cleanly when another writer changed rows of a file the query read.
 */
final class TableMerge {
    /** Its ordinal: no column of the table. */
    static final int ROW_ID_ORDINAL = -2;
    /** The row id a MERGE plan reads: the data file of a row and its position in it. */
    static final HyperStreamColumnHandle ROW_ID = new HyperStreamColumnHandle("$row_id",
            RowType.from(List.of(RowType.field("file", VARCHAR), RowType.field("pos", BIGINT))), ROW_ID_ORDINAL, false);
    /**
     * In a format version 3 table, also the row's {@code _row_id}: Trino hands it on with the new
     * row of an update, which keeps it (row lineage).
     */
    static final HyperStreamColumnHandle LINEAGE_ROW_ID = new HyperStreamColumnHandle("$row_id",
            RowType.from(List.of(RowType.field("file", VARCHAR), RowType.field("pos", BIGINT), RowType.field("row_id", BIGINT))),
            ROW_ID_ORDINAL, false);

    /** Fragments of a merge sink: an added data file ("+" and its description) or deleted rows ("-" and a fragment). */
    private static final char ADDED = '+';
    private static final char DELETED = '-';

    private TableMerge() {}

    static boolean isRowId(HyperStreamColumnHandle column) {
        return column.ordinal() == ROW_ID_ORDINAL;
    }

    /** Whether a row id column carries the row's {@code _row_id} too ({@link #LINEAGE_ROW_ID}). */
    static boolean carriesLineage(HyperStreamColumnHandle rowId) {
        return ((RowType) rowId.type()).getFields().size() == 3;
    }

    /** The native columns a row id is read from: {@code _file}, {@code _pos} and, with lineage, {@code _row_id}. */
    static List<String> nativeColumns(HyperStreamColumnHandle rowId) {
        return carriesLineage(rowId) ? List.of(NativeTable.FILE_PATH, NativeTable.ROW_POSITION, NativeTable.ROW_ID)
                : List.of(NativeTable.FILE_PATH, NativeTable.ROW_POSITION);
    }

    /** The row id block of a page, of its fields' blocks. */
    static Block rowIdBlock(Block[] fields) {
        return RowBlock.fromFieldBlocks(fields[0].getPositionCount(), fields);
    }

    static HyperStreamMergeTableHandle begin(HyperStreamTableHandle table, List<io.trino.spi.type.Type> types, boolean lineage) {
        if (!table.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "the sample table is generated: it takes no UPDATE, MERGE or DELETE");
        }
        if (table.travel()) {
            throw new TrinoException(NOT_SUPPORTED, "a table read FOR VERSION AS OF cannot be changed");
        }
        HyperStreamTableInsertHandle insert = new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                table.schemaName(), table.tableName()), table.location(), table.storage(), types);
        return new HyperStreamMergeTableHandle(table, insert, lineage);
    }

    /**
     * Commits what the sinks wrote and deleted as one snapshot on top of the one the query read,
     * checked against the commits since with the query's pushed filter under the table's
     * {@code write.delete.isolation-level}, the property Trino's Iceberg connector applies to
     * every row-level statement (Trino's merge API does not say which statement it runs).
     */
    static void finish(HyperStreamMergeTableHandle merge, Collection<Slice> fragments) {
        List<String> added = new ArrayList<>();
        List<String> deleted = new ArrayList<>();
        for (Slice fragment : fragments) {
            String text = fragment.toStringUtf8();
            (text.charAt(0) == ADDED ? added : deleted).add(text.substring(1));
        }
        String[] files = added.toArray(String[]::new);
        nativeCall(() -> {
            try (NativeTable table = merge.insert().target().open()) {
                return table.commitRowChanges(merge.table().snapshotId(), "delete", merge.table().filter(),
                        deleted.toArray(String[]::new), files);
            }
        });
    }

    /** One merge sink: new rows to a native writer, deleted rows gathered by data file. */
    static final class Sink implements ConnectorMergeSink {
        private final TablePageSink inserts;
        private final RowDeletes deletes = new RowDeletes();
        private final int columns;

        private final boolean lineage;

        Sink(HyperStreamMergeTableHandle merge) {
            this.inserts = new TablePageSink(merge.insert(), merge.lineage());
            this.columns = merge.insert().types().size();
            this.lineage = merge.lineage();
        }

        @Override
        public void storeMergedRows(Page page) {
            MergePage merge = MergePage.createDeleteAndInsertPages(page, columns);
            merge.getInsertionsPage().ifPresent(insertions -> inserts.appendPage(insertions, lineage ? keptRowIds(page) : null));
            merge.getDeletionsPage().ifPresent(deletions -> {
                List<Block> rowId = RowBlock.getRowFieldsFromBlock(deletions.getBlock(deletions.getChannelCount() - 1));
                Block files = rowId.get(0);
                Block positions = rowId.get(1);
                for (int i = 0; i < files.getPositionCount(); i++) {
                    deletes.add(VARCHAR.getSlice(files, i).toStringUtf8(), BIGINT.getLong(positions, i));
                }
            });
        }

        /**
         * For each row of the page's insertions, in order, the {@code _row_id} it keeps: an
         * update's new row keeps the id of the row it replaces, a new row's is null.
         */
        private Block keptRowIds(Page page) {
            Block operations = page.getBlock(columns);
            List<Block> rowId = RowBlock.getRowFieldsFromBlock(page.getBlock(page.getChannelCount() - 1));
            io.trino.spi.block.BlockBuilder kept = BIGINT.createBlockBuilder(null, page.getPositionCount());
            for (int i = 0; i < page.getPositionCount(); i++) {
                long operation = io.trino.spi.type.TinyintType.TINYINT.getLong(operations, i);
                if (operation == INSERT_OPERATION_NUMBER) {
                    kept.appendNull();
                } else if (operation == UPDATE_INSERT_OPERATION_NUMBER) {
                    Block ids = rowId.get(2);
                    if (ids.isNull(i)) {
                        kept.appendNull();
                    } else {
                        BIGINT.writeLong(kept, BIGINT.getLong(ids, i));
                    }
                }
            }
            return kept.build();
        }

        @Override
        public CompletableFuture<Collection<Slice>> finish() {
            List<Slice> fragments = new ArrayList<>();
            for (Slice file : inserts.finish().join()) {
                fragments.add(Slices.utf8Slice(ADDED + file.toStringUtf8()));
            }
            for (String fragment : nativeCall(deletes::fragments)) {
                fragments.add(Slices.utf8Slice(DELETED + fragment));
            }
            return CompletableFuture.completedFuture(fragments);
        }

        @Override
        public void abort() {
            inserts.abort();
        }
    }
}
