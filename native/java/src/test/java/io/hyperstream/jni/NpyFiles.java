package io.hyperstream.jni;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** numpy {@code .npy} files for tests that fill an array store through {@link ArrayStore#importNpy}. */
public final class NpyFiles {
    private NpyFiles() {}

    /**
     * Writes a version 1 {@code .npy} file: the header dictionary (dtype {@code descr} such as
     * {@code "<f4"}, {@code shape} such as {@code "(100, 3)"}) padded to 64 bytes, then {@code data}.
     */
    public static Path write(Path path, String descr, String shape, byte[] data) throws IOException {
        String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
        int unpadded = 10 + dict.length() + 1;
        String header = dict + " ".repeat((64 - unpadded % 64) % 64) + "\n";
        ByteBuffer out = ByteBuffer.allocate(10 + header.length() + data.length).order(ByteOrder.LITTLE_ENDIAN);
        out.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        out.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII)).put(data);
        Files.write(path, out.array());
        return path;
    }
}
