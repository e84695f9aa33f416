package io.hyperstream.jni;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Deque;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A proxy on a loopback port in front of a REST catalog server that fails commits on purpose, for
 * the commit-state rules. Each commit (a POST to a table) takes the next of {@link #faults}, if any:
 * <ul>
 *   <li>{@link Fault#UNAVAILABLE}: 503, the commit never reaches the server;</li>
 *   <li>{@link Fault#REFUSED}: 500, the commit never reaches the server;</li>
 *   <li>{@link Fault#LOST}: the server applies the commit, the client gets a 500;</li>
 *   <li>{@link Fault#LOST_AND_RACED}: as LOST, and {@link #racer} (another writer's commit) runs first;</li>
 *   <li>{@link Fault#LOST_UNREADABLE}: as LOST, and the table's next read answers 500 too, so that
 *       the client cannot tell whether its commit landed.</li>
 * </ul>
 * Everything else is passed through.
 */
public final class RestFaultProxy implements AutoCloseable {
    public enum Fault { UNAVAILABLE, REFUSED, LOST, LOST_AND_RACED, LOST_UNREADABLE }

    /** The faults the next commits take, in order. */
    public final Deque<Fault> faults = new ConcurrentLinkedDeque<>();
    /** What another writer commits for {@link Fault#LOST_AND_RACED}. */
    public final AtomicReference<Runnable> racer = new AtomicReference<>();
    private final AtomicInteger failedReads = new AtomicInteger();
    private final HttpServer server;

    private RestFaultProxy(HttpServer server) {
        this.server = server;
    }

    /** Starts a proxy in front of the catalog server at {@code target}. */
    public static RestFaultProxy start(String target) throws IOException {
        HttpClient forward = HttpClient.newHttpClient();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        RestFaultProxy proxy = new RestFaultProxy(server);
        server.createContext("/", exchange -> {
            byte[] body = exchange.getRequestBody().readAllBytes();
            boolean table = exchange.getRequestURI().getPath().contains("/tables/");
            boolean commit = exchange.getRequestMethod().equals("POST") && table;
            Fault fault = commit ? proxy.faults.poll() : null;
            if (fault == Fault.UNAVAILABLE || fault == Fault.REFUSED
                    || (!commit && table && proxy.failedReads.getAndUpdate(n -> Math.max(0, n - 1)) > 0)) {
                exchange.sendResponseHeaders(fault == Fault.UNAVAILABLE ? 503 : 500, -1);
                exchange.close();
                return;
            }
            try {
                HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(target + exchange.getRequestURI()))
                        .method(exchange.getRequestMethod(), HttpRequest.BodyPublishers.ofByteArray(body));
                exchange.getRequestHeaders().forEach((name, values) -> {
                    if (name.equalsIgnoreCase("Content-Type") || name.equalsIgnoreCase("Authorization")) {
                        values.forEach(value -> request.header(name, value));
                    }
                });
                HttpResponse<byte[]> response = forward.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
                if (fault != null) {
                    if (fault == Fault.LOST_AND_RACED) {
                        proxy.racer.get().run();
                    } else if (fault == Fault.LOST_UNREADABLE) {
                        proxy.failedReads.set(1);
                    }
                    exchange.sendResponseHeaders(500, -1); // applied, but the answer never arrives
                } else {
                    exchange.sendResponseHeaders(response.statusCode(), response.body().length == 0 ? -1 : response.body().length);
                    exchange.getResponseBody().write(response.body());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(502, -1);
            }
            exchange.close();
        });
        server.start();
        return proxy;
    }

    /** The proxy's URI, as a catalog's {@code uri} setting takes it. */
    public String uri() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
