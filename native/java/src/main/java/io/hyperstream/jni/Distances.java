package io.hyperstream.jni;

import java.util.Arrays;

/**
 * The distance functions' definitions in double precision, for the engines' own evaluation of a call
 * the native scan does not compute (an unpushed expression, a temporary view): the native metrics
 * ({@code l2}, {@code cosine}, {@code inner_product} (the negated dot product), {@code l1}) over dense
 * vectors, sparse vectors made dense, and {@code hamming} / {@code jaccard} over bit-packed ones. Bad
 * input is an {@link IllegalArgumentException} whose message the engines pass on as their own error.
 */
public final class Distances {
    private Distances() {}

    /** {@code metric}'s distance between two dense vectors of the same length. */
    public static double dense(String metric, double[] a, double[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("vectors of " + a.length + " and " + b.length + " dimensions");
        }
        double dot = 0, l2 = 0, l1 = 0, na = 0, nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += a[i] * b[i];
            l2 += (a[i] - b[i]) * (a[i] - b[i]);
            l1 += Math.abs(a[i] - b[i]);
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
        return switch (metric) {
            case "l2" -> Math.sqrt(l2);
            case "l1" -> l1;
            case "inner_product" -> -dot;
            // A zero vector is as far from every vector as an orthogonal one.
            case "cosine" -> na == 0 || nb == 0 ? 1.0 : Math.min(2.0, Math.max(0.0, 1 - dot / Math.sqrt(na * nb)));
            default -> throw new IllegalArgumentException("unknown distance metric '" + metric + "'");
        };
    }

    /**
     * {@code metric}'s distance between two sparse vectors (positions strictly increasing from 0,
     * and their values): compared as dense vectors as long as the longer one (trailing zeros change
     * no distance).
     */
    public static double sparse(String metric, int[] aPositions, double[] aValues, int[] bPositions, double[] bValues) {
        double[] a = dense(aPositions, aValues);
        double[] b = dense(bPositions, bValues);
        int length = Math.max(a.length, b.length);
        return dense(metric, Arrays.copyOf(a, length), Arrays.copyOf(b, length));
    }

    /** A sparse vector as a dense one as long as its last position. */
    private static double[] dense(int[] positions, double[] values) {
        if (positions.length != values.length) {
            throw new IllegalArgumentException("sparse vector has " + positions.length + " indices but " + values.length + " values");
        }
        for (int j = 0; j < positions.length; j++) {
            if (positions[j] < 0 || j > 0 && positions[j] <= positions[j - 1]) {
                throw new IllegalArgumentException("sparse vector indices must be non-negative and strictly increasing");
            }
        }
        double[] out = new double[positions.length == 0 ? 0 : positions[positions.length - 1] + 1];
        for (int j = 0; j < positions.length; j++) {
            out[positions[j]] = values[j];
        }
        return out;
    }

    /** {@code hamming} (bits that differ) or {@code jaccard} (1 − shared set bits / bits set in either, 0 when none is) distance. */
    public static double bits(String metric, byte[] a, byte[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("bit vectors of " + a.length + " and " + b.length + " bytes");
        }
        int differ = 0, both = 0, either = 0;
        for (int i = 0; i < a.length; i++) {
            differ += Integer.bitCount((a[i] ^ b[i]) & 0xff);
            both += Integer.bitCount(a[i] & b[i] & 0xff);
            either += Integer.bitCount((a[i] | b[i]) & 0xff);
        }
        return switch (metric) {
            case "hamming" -> differ;
            case "jaccard" -> either == 0 ? 0.0 : 1.0 - (double) both / either;
            default -> throw new IllegalArgumentException("unknown bit distance metric '" + metric + "'");
        };
    }
}
