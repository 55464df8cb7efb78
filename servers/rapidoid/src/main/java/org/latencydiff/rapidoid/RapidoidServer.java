package org.latencydiff.rapidoid;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.LinkedHashMap;
import java.util.Map;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;
import org.rapidoid.http.HttpWrapper;
import org.rapidoid.http.MediaType;
import org.rapidoid.log.Log;
import org.rapidoid.log.LogLevel;
import org.rapidoid.setup.App;
import org.rapidoid.setup.On;

/**
 * Rapidoid's HelloWorld: App.run(args) then {@code On.get("/").plain("HelloWorld")}, the reference headers
 * added by an HttpWrapper (Rapidoid's interceptor) set as the default of every route.
 */
public final class RapidoidServer {

    public static void main(String[] args) {
        Launcher.run("rapidoid", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            Map<String, String> headers = new LinkedHashMap<>();
            ref.constantHeaders().forEach(h -> headers.put(h.getKey(), h.getValue()));
            // Rapidoid writes Content-Type from the route's media type, and Connection, Server
            // (http.serverName) and Content-Length itself.
            MediaType contentType = MediaType.of(headers.remove("Content-Type"));

            // Rapidoid's server thread logs a failed bind (a busy port) with its stack trace at ERROR before
            // the start fails; its logging stays off until the server listens, then warnings and errors only.
            Log.setLogLevel(LogLevel.NO_LOGS);
            // Rapidoid reports only the port it was given, so --port 0 becomes a free port chosen here first.
            int port = options.port() != 0 ? options.port() : freePort(options.host());
            // Rapidoid's configuration as command-line arguments, the way its docs show (on.port=8080).
            App.run(new String[0],
                    "on.address=" + options.host(),
                    "on.port=" + port,
                    "http.serverName=" + options.name(),
                    // Rapidoid's own Date is recomputed 1000 ms after its last computation, not at the next
                    // second, so it can lag the clock by nearly two seconds; the wrapper writes a live one.
                    "http.mandatoryHeaders.date=false",
                    "log.level=no_logs");

            HttpWrapper referenceHeaders = (req, invocation) -> {
                req.response().headers().putAll(headers);
                req.response().headers().put("Date", HttpDate.now());
                return invocation.invoke();
            };
            On.defaults().wrappers(referenceHeaders);
            try {
                On.get("/").contentType(contentType).plain(ref.body());
            } catch (RuntimeException e) {
                // Rapidoid binds on its server thread and reports only "Server start-up failed!"; a busy port
                // is told as one by trying to bind it here.
                new ServerSocket(port, 1, InetAddress.getByName(options.host())).close();
                throw e;
            }
            Log.setLogLevel(LogLevel.WARN);
            return port;
        });
    }

    private static int freePort(String host) throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host))) {
            return socket.getLocalPort();
        }
    }
}
