package io.hyperstream.jni;

/** The sample table's documented formulas, computed independently of the native code. */
final class SampleRows {
    private SampleRows() {}

    static double value(long id) {
        return id * 0.5;
    }

    static String category(long id) {
        return id % 10 == 9 ? null : "cat-" + (id % 7);
    }

    static boolean flag(long id) {
        return id % 3 == 0;
    }

    static float embedding(long id, int j, long seed) {
        return (float) ((id * 31 + j * 17L + seed) % 1000) / 1000.0f;
    }
}
