package io.hyperstream.jni;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fields of the native library's data file descriptions: the JSON of a manifest's data file, as
 * {@link NativeTable#dataFiles} returns them, with the delete files that apply to it last.
 */
public final class DataFiles {
    private static final Pattern RECORD_COUNT = Pattern.compile("\"record_count\"\\s*:\\s*(\\d+)");
    private static final Pattern SIZE = Pattern.compile("\"file_size_in_bytes\"\\s*:\\s*(\\d+)");
    // A quote inside a JSON string is escaped, so this only matches the field itself.
    private static final Pattern DELETES = Pattern.compile("\"deletes\"\\s*:\\s*\\[\\s*\\{");

    private DataFiles() {}

    /** The rows the data file holds, deleted ones included (the first count is the data file's own). */
    public static long recordCount(String description) {
        return number(RECORD_COUNT, description);
    }

    public static long sizeInBytes(String description) {
        return number(SIZE, description);
    }

    /** The rows the file surely still holds: all of them, or none known when delete files apply to it. */
    public static long undeletedRows(String description) {
        return DELETES.matcher(description).find() ? 0 : recordCount(description);
    }

    private static long number(Pattern field, String description) {
        Matcher m = field.matcher(description);
        if (!m.find()) {
            throw new IllegalStateException("a data file description without " + field.pattern() + ": " + description);
        }
        return Long.parseLong(m.group(1));
    }
}
