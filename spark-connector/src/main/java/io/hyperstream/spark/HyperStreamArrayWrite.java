package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.ArrayStore;
import io.hyperstream.jni.BatchListReader;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A write to an array: each task stages its rows as an array of its own in a staging store beside
 * the target ({@link HyperStreamArrayDataWriter}); {@link #commit} moves every task's rows into the
 * array as one change (appended in partition order, or replacing it on overwrite), and the staging
 * store goes either way. An {@code index} column in the written data is ignored: appended rows take
 * the next positions, an overwrite numbers them from 0.
 */
final class HyperStreamArrayWrite implements Write, BatchWrite {
    private final ArrayOptions options;
    private final boolean overwrite;
    private final String staging;
    private final ArrayLayout layout;

    HyperStreamArrayWrite(ArrayOptions options, StructType schema, boolean overwrite) {
        this.options = options;
        this.overwrite = overwrite;
        this.staging = ArrayStore.newStaging(options.path());
        StructField value = valueField(schema);
        String dtype = options.dtype();
        long[] shape = options.shape();
        try (ArrayStore store = ArrayStore.open(options.path(), options.durable(), false)) {
            if (!overwrite && store.names().contains(options.array())) {
                ArrayStore.ArrayInfo info = store.info(options.array());
                if (dtype != null && !dtype.equals(info.dtype())) {
                    throw new IllegalArgumentException("option 'dtype' is " + dtype + " but array '" + options.array()
                            + "' holds " + info.dtype() + "; overwrite to change it");
                }
                dtype = info.dtype();
                shape = Arrays.copyOfRange(info.shape(), 1, info.shape().length);
            }
        }
        this.layout = new ArrayLayout(schema.fieldIndex(value.name()), value.dataType(), dtype, shape);
    }

    /** The column holding the rows: {@code value}, or the one column that is not {@code index}. */
    private static StructField valueField(StructType schema) {
        List<StructField> candidates = Arrays.stream(schema.fields()).filter(f -> !f.name().equals("index")).toList();
        return Arrays.stream(schema.fields()).filter(f -> f.name().equals("value")).findFirst()
                .or(() -> candidates.size() == 1 ? java.util.Optional.of(candidates.get(0)) : java.util.Optional.empty())
                .orElseThrow(() -> new IllegalArgumentException("rows written to an array need a 'value' column (or one column "
                        + "besides 'index'), got " + schema.simpleString()));
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new HyperStreamArrayDataWriter.Factory(options, staging, layout);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        List<String> parts = Arrays.stream(messages).filter(Objects::nonNull)
                .map(m -> ((HyperStreamArrayDataWriter.Staged) m).part()).filter(Objects::nonNull).toList();
        try (ArrayStore store = ArrayStore.open(options.path(), options.durable(), false)) {
            if (!parts.isEmpty()) {
                store.commitParts(options.array(), staging, parts, overwrite);
            } else if (overwrite || !store.names().contains(options.array())) {
                saveEmpty(store);
            }
        } finally {
            ArrayStore.discardStaging(staging);
        }
    }

    /** No task wrote a row: the array is made (or overwritten) with none, in the layout asked for. */
    private void saveEmpty(ArrayStore store) {
        try (BufferAllocator allocator = Allocators.child("spark-array-empty")) {
            var schema = layout.arrowSchema(layout.shape() == null ? 1 : layout.rowElements());
            BatchListReader none = new BatchListReader(allocator, schema);
            try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
                root.setRowCount(0);
                none.add(root);
            }
            store.save(allocator, options.array(), none);
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        ArrayStore.discardStaging(staging);
    }

    @Override
    public String description() {
        return "HyperStreamArray" + (overwrite ? "Overwrite " : "Append ") + options.path() + "#" + options.array();
    }
}
