package io.hyperstream.spark;

import java.util.function.Function;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/**
 * A write that appends, or with {@code truncate()} (mode "overwrite", INSERT OVERWRITE) replaces
 * everything: {@code build} gets whether it overwrites.
 */
final class TruncatableWrite implements WriteBuilder, SupportsTruncate {
    private final Function<Boolean, Write> build;
    private boolean overwrite;

    TruncatableWrite(Function<Boolean, Write> build) {
        this.build = build;
    }

    @Override
    public WriteBuilder truncate() {
        overwrite = true;
        return this;
    }

    @Override
    public Write build() {
        return build.apply(overwrite);
    }
}
