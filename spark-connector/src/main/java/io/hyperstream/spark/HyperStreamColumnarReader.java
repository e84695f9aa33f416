package io.hyperstream.spark;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.SampleTable;
import java.io.IOException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one split as Spark {@link ColumnarBatch}es whose columns are views over the Arrow vectors
 * imported from native code; no value is copied on the way.
 */
final class HyperStreamColumnarReader implements PartitionReader<ColumnarBatch> {
    private final BufferAllocator allocator;
    private final SampleTable table;
    private final ArrowReader reader;
    private ColumnarBatch batch;

    HyperStreamColumnarReader(HyperStreamInputPartition split) {
        this.allocator = Allocators.child("spark-split-" + split.start());
        SampleTable opened = null;
        try {
            opened = split.options().open();
            this.reader = opened.scan(allocator, split.start(), split.end(), split.options().batchRows(),
                    split.projection());
            this.table = opened;
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close();
            }
            allocator.close();
            throw e;
        }
    }

    @Override
    public boolean next() throws IOException {
        if (!reader.loadNextBatch()) {
            return false;
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        ColumnVector[] columns = new ColumnVector[root.getFieldVectors().size()];
        for (int i = 0; i < columns.length; i++) {
            FieldVector vector = root.getVector(i);
            columns[i] = HyperStreamColumnVector.of(vector);
        }
        batch = new ColumnarBatch(columns, root.getRowCount());
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() throws IOException {
        try {
            reader.close();
        } finally {
            table.close();
            allocator.close();
        }
    }
}
