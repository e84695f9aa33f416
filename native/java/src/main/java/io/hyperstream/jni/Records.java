package io.hyperstream.jni;

import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongConsumer;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * Results with fields, as the native library hands them over: Arrow rows, a column per field,
 * named as the record component it binds to (in snake case: {@code distinctValues} is {@code
 * distinct_values}). A column without a component, or a component without a column, fails the call:
 * a field added on one side never reads as zero on the other. Components are {@code long},
 * {@code String} or {@code String[]}.
 */
final class Records {
    private Records() {}

    /** Every row the library exports into the stream at the address {@code exporter} is given. */
    static <R extends Record> List<R> read(LongConsumer exporter, Class<R> type) {
        try (BufferAllocator allocator = Allocators.child("records");
                ArrowReader reader = ArrowStreams.importStream(allocator, exporter)) {
            List<R> rows = new ArrayList<>();
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                for (int i = 0; i < batch.getRowCount(); i++) {
                    rows.add(bind(batch, i, type, Set.of()));
                }
            }
            return rows;
        } catch (IOException e) {
            throw new HyperStreamIOException("reading the native library's " + type.getSimpleName() + ": " + e.getMessage(), e);
        }
    }

    /** The one row the library exports (see {@link #read}). */
    static <R extends Record> R one(LongConsumer exporter, Class<R> type) {
        List<R> rows = read(exporter, type);
        if (rows.size() != 1) {
            throw new InternalException("the native library handed over " + rows.size() + " " + type.getSimpleName()
                    + " rows, not one");
        }
        return rows.get(0);
    }

    /** Row {@code row} of {@code batch} as a {@code type}, leaving the columns {@code ignored} for the caller. */
    static <R extends Record> R bind(VectorSchemaRoot batch, int row, Class<R> type, Set<String> ignored) {
        RecordComponent[] components = type.getRecordComponents();
        Set<String> unbound = new TreeSet<>();
        batch.getSchema().getFields().forEach(f -> unbound.add(f.getName()));
        unbound.removeAll(ignored);
        Object[] values = new Object[components.length];
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            String name = snakeCase(components[i].getName());
            FieldVector column = batch.getVector(name);
            types[i] = components[i].getType();
            values[i] = value(column, row, types[i], type, name);
            unbound.remove(name);
        }
        if (!unbound.isEmpty()) {
            throw new InternalException("the native library's " + type.getSimpleName() + " has fields the record lacks: "
                    + unbound);
        }
        try {
            return type.getDeclaredConstructor(types).newInstance(values);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object value(FieldVector column, int row, Class<?> want, Class<?> type, String name) {
        if (want == long.class && column instanceof BigIntVector longs) {
            return longs.get(row);
        }
        if (want == String.class && column instanceof VarCharVector strings) {
            return strings.getObject(row).toString();
        }
        if (want == String[].class && column instanceof ListVector list) {
            return list.getObject(row).stream().map(String::valueOf).toArray(String[]::new);
        }
        throw new InternalException("the native library's " + type.getSimpleName() + " has no " + want.getSimpleName()
                + " field " + name + (column == null ? "" : " (a " + column.getField().getType() + " column)"));
    }

    static String snakeCase(String camelCase) {
        return camelCase.replaceAll("([A-Z])", "_$1").toLowerCase(Locale.ROOT);
    }
}
