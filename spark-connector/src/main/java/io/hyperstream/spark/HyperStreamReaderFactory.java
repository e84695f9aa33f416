package io.hyperstream.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Creates columnar readers on the executors; rows are never produced one by one. */
final class HyperStreamReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("HyperStream scans are columnar only");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        if (partition instanceof HyperStreamArrayTable.ArrayInputPartition rows) {
            return HyperStreamColumnarReader.arrayRows(rows);
        }
        if (partition instanceof TableInputPartition file) {
            return HyperStreamColumnarReader.dataFile(file);
        }
        return HyperStreamColumnarReader.sample((SampleInputPartition) partition);
    }
}
