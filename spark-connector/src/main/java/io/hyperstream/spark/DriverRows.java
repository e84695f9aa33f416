package io.hyperstream.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A split whose rows the driver already read from metadata (an aggregate answered from metadata,
 * a metadata table): the task hands them to Spark as they are.
 */
record DriverRows(InternalRow[] rows) implements InputPartition {
    /** Every row of a native stream, copied out of its Arrow buffers (the stream is closed). */
    static DriverRows read(ArrowReader reader) {
        List<InternalRow> rows = new ArrayList<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                ColumnVector[] vectors = root.getFieldVectors().stream().map(HyperStreamColumnVector::of).toArray(ColumnVector[]::new);
                ColumnarBatch batch = new ColumnarBatch(vectors, root.getRowCount());
                for (int i = 0; i < root.getRowCount(); i++) {
                    rows.add(batch.getRow(i).copy());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new DriverRows(rows.toArray(InternalRow[]::new));
    }

    /** Reads a {@link DriverRows} split. */
    static final class Factory implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            InternalRow[] rows = ((DriverRows) partition).rows();
            return new PartitionReader<>() {
                private int next = -1;

                @Override
                public boolean next() {
                    return ++next < rows.length;
                }

                @Override
                public InternalRow get() {
                    return rows[next];
                }

                @Override
                public void close() {}
            };
        }
    }
}
