package org.latencydiff.grizzly;

import java.util.List;
import java.util.Map;
import org.glassfish.grizzly.http.server.HttpHandler;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.grizzly.http.server.Request;
import org.glassfish.grizzly.http.server.Response;
import org.glassfish.grizzly.http.util.Header;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** Grizzly's HttpServer with one NetworkListener and one HttpHandler, as Grizzly's HTTP server docs show. */
public final class GrizzlyServer {

    public static void main(String[] args) throws InterruptedException {
        Launcher.run("grizzly", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            byte[] body = ref.bodyBytes();
            String name = options.name();
            HttpServer server = new HttpServer();
            NetworkListener listener = new NetworkListener("grizzly", options.host(), options.port());
            // Grizzly closes a keep-alive connection after 256 requests by default; ab uses one for the whole run.
            listener.getKeepAlive().setMaxRequestsCount(-1);
            server.addListener(listener);
            server.getServerConfiguration().addHttpHandler(new HttpHandler() {
                @Override
                public void service(Request request, Response response) throws Exception {
                    for (Map.Entry<String, String> h : headers) {
                        response.setHeader(h.getKey(), h.getValue());
                    }
                    response.setHeader(Header.Server, name);
                    // Grizzly 5.0.2 sends no Date of its own here (it adds one only after the headers are committed,
                    // when MimeHeaders refuses it as a trailer name), so the handler sets it.
                    response.setHeader(Header.Date, HttpDate.now());
                    response.setContentLength(body.length);
                    // Grizzly writes Connection: keep-alive itself for an HTTP/1.0 keep-alive request.
                    response.getOutputStream().write(body);
                }
            });
            server.start();
            return listener.getPort();
        });
        // Grizzly's threads are daemons: keep the JVM up until SIGTERM, as Grizzly's samples do.
        Thread.currentThread().join();
    }
}
