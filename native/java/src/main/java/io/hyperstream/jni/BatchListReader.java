package io.hyperstream.jni;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * An {@link ArrowReader} over batches built in memory (a write task's rows), handed to native code
 * through {@link ArrowStreams#exportStream}. Each added root's buffers move into the reader; no
 * value is copied.
 */
public final class BatchListReader extends ArrowReader {
    private final Schema schema;
    private final Deque<ArrowRecordBatch> batches = new ArrayDeque<>();
    private long bytes;

    public BatchListReader(BufferAllocator allocator, Schema schema) {
        super(allocator);
        this.schema = schema;
    }

    /** Takes the current contents of {@code root} (its buffers are retained by the reader). */
    public void add(VectorSchemaRoot root) {
        ArrowRecordBatch batch = new VectorUnloader(root).getRecordBatch();
        bytes += batch.computeBodyLength();
        batches.add(batch);
    }

    public int batchCount() {
        return batches.size();
    }

    @Override
    public boolean loadNextBatch() throws IOException {
        ArrowRecordBatch batch = batches.poll();
        if (batch == null) {
            return false;
        }
        try (batch) {
            new VectorLoader(getVectorSchemaRoot()).load(batch);
        }
        return true;
    }

    @Override
    public long bytesRead() {
        return bytes;
    }

    @Override
    protected void closeReadSource() {
        ArrowRecordBatch batch;
        while ((batch = batches.poll()) != null) {
            batch.close();
        }
    }

    @Override
    protected Schema readSchema() {
        return schema;
    }
}
