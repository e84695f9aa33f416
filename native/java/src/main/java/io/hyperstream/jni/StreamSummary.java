package io.hyperstream.jni;

/**
 * What a stream held when native code read it: counts and sums over its values (see the native
 * {@code scan::StreamSummary}).
 *
 * @param rows rows across all batches
 * @param batches batches in the stream
 * @param nulls null slots across all columns, list children included
 * @param intSum wrapping sum of every non-null int and bigint value
 * @param floatSum sum of every non-null float and double value, list children included
 * @param utf8Bytes total UTF-8 bytes of every non-null string
 */
public record StreamSummary(long rows, long batches, long nulls, long intSum, double floatSum, long utf8Bytes) {
    static StreamSummary fromNative(long[] values) {
        if (values == null || values.length != 6) {
            throw new InternalException("native stream summary has an unexpected shape");
        }
        return new StreamSummary(values[0], values[1], values[2], values[3],
                Double.longBitsToDouble(values[4]), values[5]);
    }
}
