package io.hyperstream.jni;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The JSON the native library hands over (data file descriptions, explain counts), read by name:
 * the library's snake_case field names bind to the records' components, and a field missing on
 * either side fails the call instead of reading as zero.
 */
final class Json {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES)
            .build();

    private Json() {}

    /** {@code json} bound to {@code type}; a field without a component or a component without a field fails. */
    static <T> T read(String json, Class<T> type) {
        try {
            return MAPPER.readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new InternalException("the native library's " + type.getSimpleName() + " does not read as one: "
                    + e.getOriginalMessage(), e);
        }
    }

    /** {@code json} as a tree, for the fields a caller looks up by name. */
    static JsonNode tree(String json) {
        try {
            return MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InternalException("the native library handed over JSON that does not parse: "
                    + e.getOriginalMessage(), e);
        }
    }
}
