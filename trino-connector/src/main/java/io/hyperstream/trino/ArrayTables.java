package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;
import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.Limits;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ColumnHandle;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Arrays of an array store as Trino tables: {@code index bigint} (the row's position) and {@code
 * value} (the element, or an array of the row's elements in row-major order), in the types Trino
 * has (uint8/16/32 widen to smallint/integer/bigint, uint64 to decimal(20, 0), float16 to real).
 * Trino names tables in lower case, so only arrays whose names are lower case are reachable.
 */
final class ArrayTables {
    /** The file that makes a directory an array store. */
    static final String CATALOG = "arrays.json";

    private ArrayTables() {}

    static boolean isStore(Path dir) {
        return Files.isRegularFile(dir.resolve(CATALOG));
    }

    static List<String> names(Path store) {
        return nativeCall(() -> {
            try (ArrayStore arrays = ArrayStore.open(store.toString(), false, true)) {
                return arrays.names();
            }
        });
    }

    static List<HyperStreamColumnHandle> columns(HyperStreamArrayHandle array) {
        Schema schema = nativeCall(() -> {
            try (ArrayStore store = ArrayStore.open(array.store(), false, true);
                    BufferAllocator allocator = Allocators.child("trino-array-schema");
                    ArrowReader empty = store.scan(allocator, array.tableName(), 0, 0, 1, true)) {
                return empty.getVectorSchemaRoot().getSchema();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        List<HyperStreamColumnHandle> columns = new ArrayList<>();
        for (int i = 0; i < schema.getFields().size(); i++) {
            Field field = schema.getFields().get(i);
            // An INSERT leaves index out (appended rows take the next positions), so it may be null there.
            columns.add(new HyperStreamColumnHandle(field.getName(), TrinoTypes.toTrinoType(field), i, i == 0));
        }
        return columns;
    }

    /** Rows planned now, in ranges of at most {@code splitRows}. */
    static List<HyperStreamSplit> splits(HyperStreamArrayHandle array, long splitRows) {
        long rows = nativeCall(() -> {
            try (ArrayStore store = ArrayStore.open(array.store(), false, true)) {
                return store.info(array.tableName()).rows();
            }
        });
        return Arrays.stream(nativeCall(() -> Limits.rowRanges(rows, splitRows)))
                .map(range -> new HyperStreamSplit(range[0], range[1], null)).toList();
    }

    static HyperStreamArrayInsertHandle beginInsert(HyperStreamArrayHandle array, List<ColumnHandle> columns) {
        int channel = -1;
        for (int i = 0; i < columns.size(); i++) {
            HyperStreamColumnHandle column = (HyperStreamColumnHandle) columns.get(i);
            if (column.name().equals("value")) {
                channel = i;
                ArrayPageSink.check(column.type());
            }
        }
        if (channel < 0) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "an INSERT into an array needs its value column");
        }
        ArrayStore.ArrayInfo info = nativeCall(() -> {
            try (ArrayStore store = ArrayStore.open(array.store(), false, true)) {
                return store.info(array.tableName());
            }
        });
        List<Long> rowShape = Arrays.stream(info.shape()).skip(1).boxed().toList();
        String staging = ArrayStore.newStaging(array.store());
        // Made here, before any writer: a writer finding it gone knows the query was cleaned up.
        nativeCall(() -> {
            ArrayStore.open(staging).close();
            return null;
        });
        return new HyperStreamArrayInsertHandle(array, staging, channel, info.dtype(), rowShape);
    }

    /** Appends every sink's part as one change, then removes the staging store. */
    static void finishInsert(HyperStreamArrayInsertHandle insert, Collection<Slice> fragments) {
        List<String> parts = fragments.stream().map(Slice::toStringUtf8).sorted().toList();
        try {
            if (!parts.isEmpty()) {
                nativeCall(() -> {
                    try (ArrayStore store = ArrayStore.open(insert.array().store(), false, false)) {
                        return store.commitParts(insert.array().tableName(), insert.staging(), parts, false);
                    }
                });
            }
        } finally {
            ArrayStore.discardStaging(insert.staging());
        }
    }
}
