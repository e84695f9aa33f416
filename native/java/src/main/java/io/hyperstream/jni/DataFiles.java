package io.hyperstream.jni;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Fields of the native library's data file descriptions: the JSON of a manifest's data file, as
 * {@link NativeTable#dataFiles} returns them, with the delete files that apply to it last. Read by
 * field name; a description without the field asked for fails.
 */
public final class DataFiles {
    private DataFiles() {}

    /** The rows the data file holds, deleted ones included. */
    public static long recordCount(String description) {
        return number(Json.tree(description), "record_count", description);
    }

    public static long sizeInBytes(String description) {
        return number(Json.tree(description), "file_size_in_bytes", description);
    }

    /** The rows the file surely still holds: all of them, or none known when delete files apply to it. */
    public static long undeletedRows(String description) {
        JsonNode file = Json.tree(description);
        JsonNode deletes = file.path("deletes");
        return deletes.isArray() && !deletes.isEmpty() ? 0 : number(file, "record_count", description);
    }

    private static long number(JsonNode file, String field, String description) {
        JsonNode value = file.get(field);
        if (value == null || !value.canConvertToLong()) {
            throw new InternalException("a data file description without " + field + ": " + description);
        }
        return value.asLong();
    }
}
