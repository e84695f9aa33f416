package io.hyperstream.jni;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A native stream as Java reads it. The library ends a stream that fails (or that panicked while
 * producing a batch) with an error whose text starts with its kind in brackets; Arrow's importer
 * raises it as an {@link IOException}, which this reader raises as the exception class of that kind
 * ({@link CorruptDataException}, {@link InternalException}, ...), as every other native call does.
 */
final class NativeStreamReader extends ArrowReader {
    private static final Pattern TAGGED = Pattern.compile(
            "\\[(INVALID_ARGUMENT|NOT_FOUND|COMMIT_CONFLICT|COMMIT_STATE_UNKNOWN|CORRUPT|IO|INTERNAL)] (.*?)(?: \\(\\d+[^()]*\\))?$", Pattern.DOTALL);

    private final ArrowReader stream;

    NativeStreamReader(BufferAllocator allocator, ArrowReader stream) {
        super(allocator);
        this.stream = stream;
    }

    @Override
    public boolean loadNextBatch() throws IOException {
        try {
            return stream.loadNextBatch();
        } catch (IOException e) {
            throw translate(e);
        }
    }

    /** The native error {@code e} carries as the exception of its kind; {@code e} itself when it carries none. */
    static RuntimeException translate(IOException e) {
        Matcher tagged = TAGGED.matcher(e.getMessage() == null ? "" : e.getMessage());
        if (!tagged.find()) {
            return new HyperStreamIOException("reading a native stream: " + e.getMessage(), e);
        }
        String message = tagged.group(2);
        HyperStreamException error = switch (tagged.group(1)) {
            case "INVALID_ARGUMENT" -> new InvalidArgumentException(message);
            case "NOT_FOUND" -> new NotFoundException(message);
            case "COMMIT_CONFLICT" -> new CommitConflictException(message);
            case "COMMIT_STATE_UNKNOWN" -> new CommitStateUnknownException(message);
            case "CORRUPT" -> new CorruptDataException(message);
            case "IO" -> new HyperStreamIOException(message);
            default -> new InternalException(message);
        };
        error.addSuppressed(e);
        return error;
    }

    @Override
    public VectorSchemaRoot getVectorSchemaRoot() throws IOException {
        return stream.getVectorSchemaRoot();
    }

    @Override
    public Map<Long, Dictionary> getDictionaryVectors() throws IOException {
        return stream.getDictionaryVectors();
    }

    @Override
    public Dictionary lookup(long id) {
        return stream.lookup(id);
    }

    @Override
    public Set<Long> getDictionaryIds() {
        return stream.getDictionaryIds();
    }

    @Override
    public long bytesRead() {
        return stream.bytesRead();
    }

    @Override
    public void close() throws IOException {
        stream.close();
    }

    @Override
    public void close(boolean closeReadSource) throws IOException {
        stream.close(closeReadSource);
    }

    @Override
    protected void closeReadSource() throws IOException {
        stream.close();
    }

    @Override
    protected Schema readSchema() throws IOException {
        return stream.getVectorSchemaRoot().getSchema();
    }
}
