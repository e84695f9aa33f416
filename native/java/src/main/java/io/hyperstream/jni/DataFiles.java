package io.hyperstream.jni;

/**
 * Fields of the native library's data file descriptions (the JSON of a manifest's data file, as
 * {@link NativeTable#dataFiles} returns them, with the delete files that apply to it), read by the
 * library that wrote them: a description it cannot read is an {@link InvalidArgumentException}.
 */
public final class DataFiles {
    private DataFiles() {}

    /** The rows the data file holds, deleted ones included. */
    public static long recordCount(String description) {
        NativeLibrary.load();
        return recordCountNative(description);
    }

    public static long sizeInBytes(String description) {
        NativeLibrary.load();
        return sizeInBytesNative(description);
    }

    /** The rows the file surely still holds: all of them, or none known when delete files apply to it. */
    public static long undeletedRows(String description) {
        NativeLibrary.load();
        return undeletedRowsNative(description);
    }

    private static native long recordCountNative(String description);

    private static native long sizeInBytesNative(String description);

    private static native long undeletedRowsNative(String description);
}
