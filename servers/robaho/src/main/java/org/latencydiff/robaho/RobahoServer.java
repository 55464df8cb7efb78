package org.latencydiff.robaho;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;
import robaho.net.httpserver.DefaultHttpServerProvider;

/**
 * robaho's httpserver (a rewrite of the JDK's com.sun.net.httpserver) with one context, used through
 * the standard com.sun.net.httpserver API, as for the JDK's own server.
 */
public final class RobahoServer {

    public static void main(String[] args) {
        Launcher.run("robaho", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            byte[] body = ref.bodyBytes();
            String name = options.name();
            // The provider class named in the README, rather than the service loader, so that the JDK's
            // built-in server can never be picked up by mistake.
            HttpServer server = new DefaultHttpServerProvider()
                    .createHttpServer(new InetSocketAddress(options.host(), options.port()), 0);
            server.createContext("/", exchange -> {
                Headers out = exchange.getResponseHeaders();
                // For an HTTP/1.0 keep-alive request the server pre-sets Connection: keep-alive (kept) and
                // Keep-Alive: timeout=N, which is not in the reference response.
                out.remove("Keep-Alive");
                for (Map.Entry<String, String> h : headers) {
                    out.set(h.getKey(), h.getValue());
                }
                out.set("Server", name);
                // The server writes Date (updated by its own timer) and Content-Length itself.
                exchange.sendResponseHeaders(ref.status(), body.length);
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(body);
                }
            });
            if (options.virtualThreads()) {
                // The README's advice: a virtual-thread executor (the library default is a cached thread pool).
                server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            }
            server.start();
            return server.getAddress().getPort();
        });
    }
}
