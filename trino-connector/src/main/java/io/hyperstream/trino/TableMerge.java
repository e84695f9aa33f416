package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import static io.trino.spi.type.BigintType.BIGINT;
import static io.trino.spi.type.VarcharType.VARCHAR;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.hyperstream.jni.CommitConflictException;
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
    /** The row id a MERGE plan reads: the data file of a row and its position in it. */
    static final RowType ROW_ID_TYPE = RowType.from(List.of(RowType.field("file", VARCHAR), RowType.field("pos", BIGINT)));
    /** Its ordinal: no column of the table. */
    static final int ROW_ID_ORDINAL = -2;
    static final HyperStreamColumnHandle ROW_ID = new HyperStreamColumnHandle("$row_id", ROW_ID_TYPE, ROW_ID_ORDINAL, false);

    /** Fragments of a merge sink: an added data file ("+" and its description) or deleted rows ("-" and a fragment). */
    private static final char ADDED = '+';
    private static final char DELETED = '-';

    private TableMerge() {}

    static boolean isRowId(HyperStreamColumnHandle column) {
        return column.ordinal() == ROW_ID_ORDINAL;
    }

    /** The row id block of a page: {@code _file} and {@code _pos} as one row. */
    static Block rowIdBlock(Block files, Block positions) {
        return RowBlock.fromFieldBlocks(files.getPositionCount(), new Block[] {files, positions});
    }

    static HyperStreamMergeTableHandle begin(HyperStreamTableHandle table, List<io.trino.spi.type.Type> types) {
        if (!table.isStored()) {
            throw new TrinoException(NOT_SUPPORTED, "the sample table is generated: it takes no UPDATE, MERGE or DELETE");
        }
        if (table.travel()) {
            throw new TrinoException(NOT_SUPPORTED, "a table read FOR VERSION AS OF cannot be changed");
        }
        HyperStreamTableInsertHandle insert = new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord(
                table.schemaName(), table.tableName()), table.location(), table.storage(), types);
        return new HyperStreamMergeTableHandle(table, insert);
    }

    /** Commits what the sinks wrote and deleted as one snapshot on top of the one the query read. */
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
                try {
                    return table.commitRowChanges(merge.table().snapshotId(), deleted.toArray(String[]::new), files);
                } catch (CommitConflictException | io.hyperstream.jni.InvalidArgumentException e) {
                    // Nothing was committed: the files written for it go.
                    table.deleteFiles(files);
                    throw e;
                }
            }
        });
    }

    /** One merge sink: new rows to a native writer, deleted rows gathered by data file. */
    static final class Sink implements ConnectorMergeSink {
        private final TablePageSink inserts;
        private final RowDeletes deletes = new RowDeletes();
        private final int columns;

        Sink(HyperStreamMergeTableHandle merge) {
            this.inserts = new TablePageSink(merge.insert());
            this.columns = merge.insert().types().size();
        }

        @Override
        public void storeMergedRows(Page page) {
            MergePage merge = MergePage.createDeleteAndInsertPages(page, columns);
            merge.getInsertionsPage().ifPresent(inserts::appendPage);
            merge.getDeletionsPage().ifPresent(deletions -> {
                List<Block> rowId = RowBlock.getRowFieldsFromBlock(deletions.getBlock(deletions.getChannelCount() - 1));
                Block files = rowId.get(0);
                Block positions = rowId.get(1);
                for (int i = 0; i < files.getPositionCount(); i++) {
                    deletes.add(VARCHAR.getSlice(files, i).toStringUtf8(), BIGINT.getLong(positions, i));
                }
            });
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
