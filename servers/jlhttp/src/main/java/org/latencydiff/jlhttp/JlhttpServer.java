package org.latencydiff.jlhttp;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Map;
import net.freeutils.httpserver.HTTPServer;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** JLHTTP's HTTPServer with one context handler on the default virtual host, as its main() example does. */
public final class JlhttpServer {

    /** HTTPServer binds the wildcard address; createServerSocket() is its documented hook to bind one. */
    private static final class BoundServer extends HTTPServer {
        private final String host;

        BoundServer(String host, int port) {
            super(port);
            this.host = host;
        }

        @Override
        protected ServerSocket createServerSocket() throws IOException {
            ServerSocket socket = serverSocketFactory.createServerSocket();
            socket.setReuseAddress(true); // as HTTPServer's own createServerSocket does
            socket.bind(new InetSocketAddress(host, port));
            return socket;
        }

        int localPort() {
            return serv.getLocalPort();
        }
    }

    public static void main(String[] args) {
        Launcher.run("jlhttp", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            byte[] body = ref.bodyBytes();
            String length = Integer.toString(body.length);
            BoundServer server = new BoundServer(options.host(), options.port());
            server.getVirtualHost(null).addContext("/", (req, resp) -> {
                HTTPServer.Headers headers = resp.getHeaders();
                for (Map.Entry<String, String> h : ref.constantHeaders()) {
                    headers.add(h.getKey(), h.getValue());
                }
                headers.add("Content-Length", length);
                // sendHeaders(status) adds only Date and its own "Server: JLHTTP/3.2" (always; no way to replace
                // it), unlike send()/sendHeaders(status, length, ...), which would also add Vary and a weak ETag.
                resp.sendHeaders(200);
                resp.getBody().write(body);
                return 0; // the response has been sent
            });
            server.start();
            return server.localPort();
        });
    }
}
