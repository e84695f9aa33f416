package io.hyperstream.spark;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Fields of the native library's data file descriptions (the JSON of a manifest's data file). */
final class DataFiles {
    private static final Pattern RECORD_COUNT = Pattern.compile("\"record_count\"\\s*:\\s*(\\d+)");
    private static final Pattern SIZE = Pattern.compile("\"file_size_in_bytes\"\\s*:\\s*(\\d+)");

    private DataFiles() {}

    static long recordCount(String description) {
        return number(RECORD_COUNT, description);
    }

    static long sizeInBytes(String description) {
        return number(SIZE, description);
    }

    private static long number(Pattern field, String description) {
        Matcher m = field.matcher(description);
        if (!m.find()) {
            throw new IllegalStateException("a data file description without " + field.pattern() + ": " + description);
        }
        return Long.parseLong(m.group(1));
    }
}
