package io.hyperstream.jni;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * The array store: a directory of named N-d arrays of numpy's fixed-width dtypes, changed in place
 * (append, replace, drop rows) without rewriting, crash safe, readable by other processes while one
 * writes, with exact vector top-k over its 2-d float arrays.
 *
 * <p>Rows cross as Arrow batches through the C Data Interface: an {@code index} column (bigint, the
 * row's position) and a {@code value} column, the element itself for a 1-d array, otherwise a
 * fixed-size list of the row's elements in row-major order (complex numbers as float pairs); the
 * {@code value} field's metadata {@code hyperstream.dtype} / {@code hyperstream.shape} names the
 * dtype and row shape. Writes take any stream with a {@code value} column (or a single column) of
 * that form; without the metadata, the element type decides the dtype and a list is one 1-d row.
 */
public final class ArrayStore extends NativeHandle {
    /** numpy's dtype names, in the native library's order. */
    private static final String[] DTYPES = {"bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
        "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"};
    /** Bytes per element of each of {@link #DTYPES}. */
    private static final int[] DTYPE_SIZES = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 8, 16};

    /** An array's dtype (numpy's name) and shape, rows first. */
    public record ArrayInfo(String name, String dtype, long[] shape) {
        public long rows() {
            return shape[0];
        }

        /** Bytes per row: the row shape's elements times the dtype's size. */
        public int rowBytes() {
            long elements = 1;
            for (int i = 1; i < shape.length; i++) {
                elements *= shape[i];
            }
            return Math.toIntExact(elements * DTYPE_SIZES[Arrays.asList(DTYPES).indexOf(dtype)]);
        }

        @Override
        public String toString() {
            return name + ": " + dtype + Arrays.toString(shape);
        }
    }

    /** One query's nearest rows, nearest first, with their distances. */
    public record Neighbors(long[] rows, float[] distances) {}

    /** A search's nearest rows per query and the backend that compared them ({@code cpu}, {@code cuda}, {@code wgpu}). */
    public record Search(String backend, List<Neighbors> neighbors) {}

    private static final String[] BACKENDS = {"cpu", "cuda", "wgpu"};

    private final String root;

    private ArrayStore(long handle, String root) {
        super("array store " + root, handle);
        this.root = root;
    }

    /**
     * Opens the store in directory {@code root}, creating it unless {@code readOnly}. In durable
     * mode every change is synced to the device before it returns.
     */
    public static ArrayStore open(String root, boolean durable, boolean readOnly) {
        NativeLibrary.load();
        return new ArrayStore(openNative(root, durable, readOnly), root);
    }

    public static ArrayStore open(String root) {
        return open(root, false, false);
    }

    public String root() {
        return root;
    }

    public List<String> names() {
        return List.of(call(ArrayStore::namesNative));
    }

    public ArrayInfo info(String name) {
        return infoOf(name, call(h -> infoNative(h, name)));
    }

    private static ArrayInfo infoOf(String name, long[] raw) {
        return new ArrayInfo(name, DTYPES[(int) raw[0]], Arrays.copyOfRange(raw, 1, raw.length));
    }

    /** Creates (or replaces) array {@code name} with the rows of {@code rows}; returns its row count. */
    public long save(BufferAllocator allocator, String name, ArrowReader rows) {
        return write(allocator, name, 0, null, rows);
    }

    /** Appends the rows of {@code rows} (the array's dtype and row shape); returns the new row count. */
    public long append(BufferAllocator allocator, String name, ArrowReader rows) {
        return write(allocator, name, 1, null, rows);
    }

    /** Replaces rows {@code indices} in place with the rows of {@code rows}, one per index, in order. */
    public void replace(BufferAllocator allocator, String name, long[] indices, ArrowReader rows) {
        write(allocator, name, 2, indices, rows);
    }

    private long write(BufferAllocator allocator, String name, int mode, long[] indices, ArrowReader rows) {
        return call(h -> exported(allocator, rows, address -> writeNative(h, name, mode, indices, address)));
    }

    /** What {@code write} returns for {@code rows} exported as a C stream at the address it gets. */
    private static long exported(BufferAllocator allocator, ArrowReader rows, java.util.function.LongUnaryOperator write) {
        long[] result = new long[1];
        ArrowStreams.exportStream(allocator, rows, address -> result[0] = write.applyAsLong(address));
        return result[0];
    }

    /**
     * Rows {@code start} (inclusive) to {@code end} (exclusive) in batches of up to {@code batchRows}
     * rows, each read when asked for: one split of an engine scan. With {@code engineTypes} the
     * values come in types Spark and Trino have: uint8, uint16 and uint32 widened to the next signed
     * integer, uint64 to decimal(20, 0), float16 to float32 (the field metadata still names the
     * stored dtype, and writes of such values convert back, refusing any the dtype cannot hold).
     */
    public ArrowReader scan(BufferAllocator allocator, String name, long start, long end, int batchRows,
            boolean engineTypes) {
        return call(h -> ArrowStreams.importStream(allocator,
                address -> scanNative(h, name, start, end, batchRows, engineTypes, address)));
    }

    /**
     * Commits parts that engine tasks staged (arrays {@code parts} of the store at {@code staging})
     * to array {@code name} as one change: appended in order, or making the array anew when {@code
     * overwrite} or when there is none. The parts must agree on dtype and row shape with each other
     * and with the array they join; nothing changes otherwise. Returns the array as it then is.
     */
    public ArrayInfo commitParts(String name, String staging, List<String> parts, boolean overwrite) {
        String[] names = parts.toArray(String[]::new);
        return infoOf(name, call(h -> commitNative(h, name, staging, names, overwrite)));
    }

    /** Where engine writers stage their parts (see {@link #commitParts}): beside the arrays, never among them. */
    public static final String STAGING_DIR = "_staging";

    /** A new, empty staging directory for one engine write to the store at {@code root}. */
    public static String newStaging(String root) {
        return java.nio.file.Path.of(root, STAGING_DIR, java.util.UUID.randomUUID().toString()).toString();
    }

    /** Removes a staging directory and every part in it (after a commit or an abort). */
    public static void discardStaging(String staging) {
        LocalFiles.deleteTree(java.nio.file.Path.of(staging));
    }


    /**
     * Elements in the Arrow list of one row of {@code rowShape}: complex numbers count two (a
     * {@code null} dtype counts one).
     */
    public static int listSize(String dtype, long[] rowShape) {
        long n = dtype != null && dtype.startsWith("complex") ? 2 : 1;
        for (long d : rowShape) {
            n *= d;
        }
        return Math.toIntExact(n);
    }

    /**
     * A batch of changes held in memory until {@link Batch#flush()}, which writes every array it
     * touched once and commits them all with one catalog change. Closing a batch discards what it
     * did not flush.
     */
    public Batch batch() {
        return new Batch(call(ArrayStore::batchNative), root);
    }

    /** Changes to a store held in memory (see {@link ArrayStore#batch()}). */
    public static final class Batch extends NativeHandle {
        private Batch(long handle, String root) {
            super("array batch of " + root, handle);
        }

        public ArrayInfo info(String name) {
            return infoOf(name, call(h -> infoNative(h, name)));
        }

        public long save(BufferAllocator allocator, String name, ArrowReader rows) {
            return write(allocator, name, 0, null, rows);
        }

        public long append(BufferAllocator allocator, String name, ArrowReader rows) {
            return write(allocator, name, 1, null, rows);
        }

        public void replace(BufferAllocator allocator, String name, long[] indices, ArrowReader rows) {
            write(allocator, name, 2, indices, rows);
        }

        private long write(BufferAllocator allocator, String name, int mode, long[] indices, ArrowReader rows) {
            return call(h -> exported(allocator, rows, address -> writeNative(h, name, mode, indices, address)));
        }

        /** A copy of the array with the batch's changes. */
        public ArrowReader load(BufferAllocator allocator, String name) {
            return call(h -> ArrowStreams.importStream(allocator, address -> loadNative(h, name, address)));
        }

        public long dropRows(String name, long[] indices) {
            if (indices == null) {
                throw new InvalidArgumentException("row indices are null");
            }
            return call(h -> dropNative(h, name, indices));
        }

        public void dropArray(String name) {
            run(h -> dropNative(h, name, null));
        }

        /** Writes the changes as one commit; the batch is empty afterwards. */
        public void flush() {
            run(Batch::flushNative);
        }

        private static native long[] infoNative(long handle, String name);

        private static native long writeNative(long handle, String name, int mode, long[] indices, long streamAddress);

        private static native void loadNative(long handle, String name, long streamAddress);

        private static native long dropNative(long handle, String name, long[] indices);

        private static native void flushNative(long handle);
    }

    /** A copy of the whole array, as one batch. */
    public ArrowReader load(BufferAllocator allocator, String name) {
        return read(allocator, name, null, -1, -1);
    }

    /** Copies of rows {@code indices}, in that order (repeats allowed). */
    public ArrowReader getRows(BufferAllocator allocator, String name, long[] indices) {
        return read(allocator, name, indices, -1, -1);
    }

    /** A copy of rows {@code start} (inclusive) to {@code end} (exclusive). */
    public ArrowReader slice(BufferAllocator allocator, String name, long start, long end) {
        if (start < 0) {
            throw new InvalidArgumentException("slice start " + start + " is negative");
        }
        return read(allocator, name, null, start, end);
    }

    private ArrowReader read(BufferAllocator allocator, String name, long[] indices, long start, long end) {
        return call(h -> ArrowStreams.importStream(allocator, address -> readNative(h, name, indices, start, end, address)));
    }

    /** The array in batches of up to {@code batchRows} rows, each read when it is asked for. */
    public ArrowReader stream(BufferAllocator allocator, String name, int batchRows) {
        return call(h -> ArrowStreams.importStream(allocator, address -> streamNative(h, name, batchRows, address)));
    }

    /** Drops rows {@code indices}; the rows after them move up. Returns the new row count. */
    public long dropRows(String name, long[] indices) {
        if (indices == null) {
            throw new InvalidArgumentException("row indices are null");
        }
        return call(h -> dropNative(h, name, indices));
    }

    public void dropArray(String name) {
        run(h -> dropNative(h, name, null));
    }

    /** Saves the numpy {@code .npy} file at {@code path} as array {@code name}. */
    public ArrayInfo importNpy(String name, String path) {
        return infoOf(name, call(h -> npyNative(h, name, path, false)));
    }

    /** Writes array {@code name} to {@code path} as a numpy {@code .npy} file. */
    public ArrayInfo exportNpy(String name, String path) {
        return infoOf(name, call(h -> npyNative(h, name, path, true)));
    }

    /**
     * The {@code k} rows of 2-d array {@code name} nearest to each query under {@code metric}
     * ({@code l2}, {@code cosine}, {@code inner_product}, {@code l1} over float arrays; {@code hamming},
     * {@code jaccard} over bit-packed uint8 rows, query bytes given as 0..255), read straight from the
     * mapped file in one pass for all queries.
     */
    public List<Neighbors> topK(String name, String metric, float[][] queries, int k) {
        return search(name, metric, queries, k, null).neighbors();
    }

    /**
     * As {@link #topK}, on {@code backend}: {@code auto} (or null: a GPU when one is compiled into the
     * library, answers, and the batch is large enough to pay for copying the rows over; the CPU
     * otherwise), {@code cpu}, {@code cuda} or {@code wgpu} (an error when that backend is not compiled
     * in or no device answers, and for the bit-packed metrics, which run on the CPU only). Every
     * backend gives the same rows, ties to the lower row; see {@link NativeLibrary#gpuBackends()}.
     */
    public Search search(String name, String metric, float[][] queries, int k, String backend) {
        long[] raw = call(h -> topKNative(h, name, metric, queries, k, backend));
        List<Neighbors> out = new ArrayList<>();
        int at = 1;
        while (at < raw.length) {
            int n = (int) raw[at++];
            long[] rows = new long[n];
            float[] distances = new float[n];
            for (int i = 0; i < n; i++) {
                rows[i] = raw[at++];
                distances[i] = Float.intBitsToFloat((int) raw[at++]);
            }
            out.add(new Neighbors(rows, distances));
        }
        return new Search(BACKENDS[(int) raw[0]], out);
    }

    /**
     * A memory-mapped view of the array's rows as counted now: no copy. Rows replaced in place later
     * show through; rows appended later do not.
     */
    public LazyView lazy(String name) {
        return new LazyView(call(h -> lazyNative(h, name)), name);
    }

    /** A memory-mapped view of an array; its buffers stay valid after it is closed, until collected. */
    public static final class LazyView extends NativeHandle {
        private final ArrayInfo info;

        private LazyView(long handle, String name) {
            super("lazy view of " + name, handle);
            this.info = infoOf(name, call(LazyView::infoNative));
        }

        public ArrayInfo info() {
            return info;
        }

        /** Bytes per row. */
        public int rowBytes() {
            return info.rowBytes();
        }

        /**
         * A read-only little-endian direct buffer over rows {@code first} to {@code first + rows}
         * of the mapping (no copy); at most 2 GiB, so ask for big arrays in parts.
         */
        public ByteBuffer rows(long first, long rows) {
            if (rows == 0) {
                return ByteBuffer.allocateDirect(0).order(ByteOrder.LITTLE_ENDIAN).asReadOnlyBuffer();
            }
            long[] keeper = new long[1];
            ByteBuffer buffer = call(h -> bufferNative(h, first, rows, keeper));
            // The mapping lives while the buffer is reachable, whatever happens to this view; the
            // read-only view returned keeps the buffer reachable (the mapping is read-only too).
            NativeHandle.releaseWhenUnreachable(buffer, keeper[0]);
            return buffer.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }

        private static native long[] infoNative(long handle);

        private static native ByteBuffer bufferNative(long handle, long first, long rows, long[] keeper);
    }

    private static native long openNative(String root, boolean durable, boolean readOnly);

    private static native String[] namesNative(long handle);

    private static native long[] infoNative(long handle, String name);

    private static native long writeNative(long handle, String name, int mode, long[] indices, long streamAddress);

    private static native void readNative(long handle, String name, long[] indices, long start, long end,
            long streamAddress);

    private static native void scanNative(long handle, String name, long start, long end, int batchRows,
            boolean engineTypes, long streamAddress);

    private static native long[] commitNative(long handle, String name, String staging, String[] parts, boolean overwrite);

    private static native long batchNative(long handle);

    private static native void streamNative(long handle, String name, int batchRows, long streamAddress);

    private static native long dropNative(long handle, String name, long[] indices);

    private static native long[] npyNative(long handle, String name, String path, boolean export);

    private static native long[] topKNative(long handle, String name, String metric, float[][] queries, int k,
            String backend);

    private static native long lazyNative(long handle, String name);
}
