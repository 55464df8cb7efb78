package org.latencydiff.jdk;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** The JDK's built-in com.sun.net.httpserver with one HttpHandler, as its package documentation shows. */
public final class JdkServer {

    public static void main(String[] args) {
        // TCP_NODELAY on accepted connections (off by default), as the 2014 study set it; the server
        // reads this documented property once, so it must be set before the server is created.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        Launcher.run("jdk", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            byte[] body = ref.bodyBytes();
            String name = options.name();
            HttpServer server = HttpServer.create(new InetSocketAddress(options.host(), options.port()), 0);
            server.createContext("/", exchange -> {
                Headers out = exchange.getResponseHeaders();
                // The server answers ab's HTTP/1.0 keep-alive request with Connection: keep-alive plus a
                // Keep-Alive: timeout=N header that no option turns off; the reference has no such header.
                out.remove("Keep-Alive");
                for (Map.Entry<String, String> h : headers) {
                    out.set(h.getKey(), h.getValue());
                }
                out.set("Server", name);
                // The server writes Date and Content-Length itself; a fixed length means no chunked encoding.
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(body);
                }
            });
            if (options.virtualThreads()) {
                server.setExecutor(virtualThreadPerTask());
            }
            // Otherwise no executor: the dispatcher thread runs the handler, as in the 2014 study.
            server.start();
            return server.getAddress().getPort();
        });
    }

    /**
     * Executors.newVirtualThreadPerTaskExecutor() of JDK 21, looked up when it is asked for: the module is built for
     * release 17, so that the JDK matrix can run it on JDK 17 with platform threads.
     */
    private static Executor virtualThreadPerTask() {
        try {
            return (Executor) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("--virtual-threads needs JDK 21 or newer; this is JDK "
                    + Runtime.version(), e);
        }
    }
}
