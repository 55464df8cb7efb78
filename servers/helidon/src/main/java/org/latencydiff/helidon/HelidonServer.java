package org.latencydiff.helidon;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.webserver.WebServer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** Helidon SE's WebServer builder with one handler, as Helidon's SE quickstart does; no config file. */
public final class HelidonServer {

    public static void main(String[] args) {
        Launcher.run("helidon", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Header> headers = ref.constantHeaders().stream()
                    .map(h -> HeaderValues.create(h.getKey(), h.getValue()))
                    .toList();
            Header server = HeaderValues.create(HeaderNames.SERVER, options.name());
            byte[] body = ref.bodyBytes();
            WebServer webServer = WebServer.builder()
                    .host(options.host())
                    .port(options.port())
                    .routing(routing -> routing.any((req, res) -> {
                        headers.forEach(res::header);
                        res.header(server);
                        // Helidon writes Date, Content-Length and Connection: keep-alive itself.
                        res.send(body);
                    }))
                    .build()
                    .start();
            if (!webServer.isRunning()) {
                // start() does not throw when a listener cannot bind: it logs the cause and returns stopped.
                // Bind the address once more to learn whether a busy port is the cause (then a BindException
                // reaches Launcher, which reports it as such).
                try (ServerSocket probe = new ServerSocket()) {
                    probe.bind(new InetSocketAddress(options.host(), options.port()));
                }
                throw new IllegalStateException("Helidon WebServer did not start on " + options.host() + ":"
                        + options.port() + " (its log above says why)");
            }
            return webServer.port();
        });
    }
}
