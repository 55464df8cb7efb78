package org.latencydiff.fluenthttp;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.net.ssl.SSLContext;
import net.codestory.http.WebServer;
import net.codestory.http.filters.Filter;
import net.codestory.http.internal.Handler;
import net.codestory.http.internal.HttpServerWrapper;
import net.codestory.http.internal.SimpleServerWrapper;
import net.codestory.http.payload.Payload;
import net.codestory.http.websockets.WebSocketHandler;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;
import org.simpleframework.http.core.ContainerSocketProcessor;
import org.simpleframework.http.socket.service.DirectRouter;
import org.simpleframework.http.socket.service.RouterContainer;
import org.simpleframework.transport.connect.SocketConnection;

/**
 * fluent-http's HelloWorld: {@code new WebServer().configure(routes -> routes.get("/", ...)).start(port)},
 * the reference headers added by a route Filter to the Payload.
 */
public final class FluentHttpServer {

    public static void main(String[] args) {
        // fluent-http's production mode (its README: "-DPROD_MODE=true"): no file watcher, no live reload,
        // and its start-up lines go to SLF4J (set to warn) instead of stdout.
        System.setProperty("PROD_MODE", "true");
        Launcher.run("fluent-http", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            Map<String, String> headers = new LinkedHashMap<>();
            ref.constantHeaders().forEach(h -> headers.put(h.getKey(), h.getValue()));
            String contentType = headers.remove("Content-Type");
            headers.put("Server", options.name());
            String body = ref.body();

            // Payload headers are written as given; fluent-http keeps an ETag the Payload already has, and
            // Simple writes Content-Length and Connection. Simple writes no Date, so the Filter adds it.
            Filter referenceHeaders = (uri, context, next) ->
                    next.get().withHeaders(headers).withHeader("Date", HttpDate.now());

            WebServer server = new LoopbackWebServer(options.host()).configure(routes -> routes
                    .filter(referenceHeaders)
                    .get("/", () -> new Payload(contentType, body)));
            server.start(options.port());
            return server.port();
        });
    }

    /**
     * fluent-http's WebServer binds every interface (new InetSocketAddress(port)); its createHttpServer
     * hook gives it the same Simple server bound to the given host, with WebServer's default thread counts.
     */
    static final class LoopbackWebServer extends WebServer {
        private final String host;

        LoopbackWebServer(String host) {
            this.host = host;
        }

        @Override
        protected HttpServerWrapper createHttpServer(Handler httpHandler, WebSocketHandler webSocketHandler) {
            return new SimpleServerWrapper(httpHandler, webSocketHandler, threadCount, selectThreads, webSocketThreads) {
                private SocketConnection connection;

                @Override
                public int start(int port, SSLContext context, boolean authReq) throws IOException {
                    RouterContainer container = new RouterContainer(this, new DirectRouter(this), webSocketThreads);
                    connection = new SocketConnection(new ContainerSocketProcessor(container, threadCount, selectThreads));
                    try {
                        return ((InetSocketAddress) connection.connect(new InetSocketAddress(host, port), context)).getPort();
                    } catch (IOException e) {
                        // fluent-http turns a failed bind into a message without its cause ("Port already in use
                        // -1") but passes unchecked exceptions on, so the BindException reaches the Launcher.
                        throw new UncheckedIOException(e);
                    }
                }

                @Override
                public void stop() throws IOException {
                    connection.close();
                }
            };
        }
    }
}
