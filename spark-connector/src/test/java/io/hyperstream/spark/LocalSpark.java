package io.hyperstream.spark;

import org.apache.spark.sql.SparkSession;

/**
 * The local SparkSession of the tests and the demo: two cores, loopback only, no UI, and the
 * HyperStream catalog (its vector distance functions) as {@code hyperstream}, and the session
 * extension that reads pgvector's operators.
 */
final class LocalSpark {
    private LocalSpark() {}

    static SparkSession start(String appName) {
        return start(appName, java.util.Map.of());
    }

    /** As {@link #start(String)}, with more settings given at start (an event log, a catalog's credentials). */
    static SparkSession start(String appName, java.util.Map<String, String> settings) {
        SparkSession.Builder builder = SparkSession.builder();
        settings.forEach(builder::config);
        return builder
                .master("local[2]")
                .appName(appName)
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.catalog.hyperstream", HyperStreamCatalog.class.getName())
                .config("spark.sql.extensions", HyperStreamSparkExtensions.class.getName())
                .getOrCreate();
    }

    /** The messages of an exception and its causes, joined (Spark wraps the native one). */
    static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            all.append(t.getClass().getName()).append(": ").append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
