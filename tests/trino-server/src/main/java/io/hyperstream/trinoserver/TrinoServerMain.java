package io.hyperstream.trinoserver;

import io.trino.server.Server;

/**
 * Starts a Trino server as the server tarball's {@code bin/launcher} does ({@code io.trino.server.TrinoServer}
 * of trino-server-main, which Maven Central does not serve for Trino 483): {@code new Server().start(version)},
 * configured by {@code -Dconfig=etc/config.properties} and the {@code -Dnode.*} properties the launcher
 * passes from {@code etc/node.properties}. The deployment tests run it with trino-main's class path.
 */
public final class TrinoServerMain {
    private TrinoServerMain() {}

    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: TrinoServerMain <trino version>");
            System.exit(2);
        }
        new Server().start(args[0]);
    }
}
