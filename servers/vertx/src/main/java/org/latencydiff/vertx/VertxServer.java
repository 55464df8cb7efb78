package org.latencydiff.vertx;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServer;
import java.util.List;
import java.util.Map;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** One Vertx instance and an HTTP server whose request handler runs on its event loop, as Vert.x's docs show. */
public final class VertxServer {

    public static void main(String[] args) {
        Launcher.run("vertx", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            Buffer body = Buffer.buffer(ref.bodyBytes());
            String name = options.name();
            Vertx vertx = Vertx.vertx();
            HttpServer server = vertx.createHttpServer().requestHandler(req -> {
                var response = req.response();
                for (Map.Entry<String, String> h : headers) {
                    response.putHeader(h.getKey(), h.getValue());
                }
                response.putHeader(HttpHeaders.SERVER, name);
                // Vert.x writes no Date header of its own; it writes Content-Length and Connection itself.
                response.putHeader(HttpHeaders.DATE, HttpDate.now());
                response.end(body);
            });
            // await() rethrows a failed listen (e.g. a BindException) so that Launcher reports it.
            return server.listen(options.port(), options.host()).await().actualPort();
        });
    }
}
