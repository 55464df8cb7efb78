package org.latencydiff.undertow;

import io.undertow.Undertow;
import io.undertow.util.HeaderMap;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** Undertow's builder with one handler that runs on the I/O thread, as Undertow's HelloWorld does. */
public final class UndertowServer {

    public static void main(String[] args) {
        Launcher.run("undertow", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<HttpString, String>> headers = ref.constantHeaders().stream()
                    .map(h -> Map.entry(HttpString.tryFromString(h.getKey()), h.getValue()))
                    .toList();
            ByteBuffer body = ByteBuffer.allocateDirect(ref.bodyBytes().length).put(ref.bodyBytes()).flip();
            String name = options.name();
            int port = options.port() != 0 ? options.port() : freePort(options.host());
            Undertow server = Undertow.builder()
                    .addHttpListener(port, options.host())
                    .setHandler(exchange -> {
                        HeaderMap out = exchange.getResponseHeaders();
                        for (Map.Entry<HttpString, String> h : headers) {
                            out.put(h.getKey(), h.getValue());
                        }
                        out.put(Headers.SERVER, name);
                        // Undertow writes Date (cached per second), Content-Length and Connection itself.
                        exchange.getResponseSender().send(body.duplicate());
                    })
                    .build();
            server.start();
            return port;
        });
    }

    /**
     * A free port for --port 0, found before the listener binds: Undertow 1.0 (the study's release, which this module
     * also builds against) cannot tell which port its listener got; getListenerInfo() came with 1.4.
     */
    private static int freePort(String host) throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName(host))) {
            return probe.getLocalPort();
        }
    }
}
