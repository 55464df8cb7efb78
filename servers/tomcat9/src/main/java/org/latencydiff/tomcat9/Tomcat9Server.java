package org.latencydiff.tomcat9;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.coyote.http11.Http11NioProtocol;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Embedded Tomcat 9 (javax servlets) with one plain HttpServlet on the NIO connector: the tomcat module's
 * server on the 9.0 line, as Tomcat's embedding examples show.
 */
public final class Tomcat9Server {

    /** Answers every request with the reference response. */
    static final class HelloServlet extends HttpServlet {
        private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders();
        private final byte[] body = ReferenceResponse.get().bodyBytes();
        private final String name;

        HelloServlet(String name) {
            this.name = name;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            for (Map.Entry<String, String> h : headers) {
                resp.setHeader(h.getKey(), h.getValue());
            }
            resp.setHeader("Server", name);
            // Tomcat writes Date and, for ab's HTTP/1.0 keep-alive request, Connection: keep-alive itself.
            resp.setContentLength(body.length);
            resp.getOutputStream().write(body);
        }
    }

    public static void main(String[] args) {
        Tomcat tomcat = new Tomcat();
        Launcher.run("tomcat9-nio", args, options -> {
            if (!options.variant().isEmpty()) {
                options.variantOneOf("nio"); // the NIO connector only, Tomcat's default
            }
            // Tomcat's work files go to a temporary folder, not into the working directory.
            Path baseDir = Files.createTempDirectory("latency-diff-tomcat9-");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(baseDir)));
            tomcat.setBaseDir(baseDir.toString());
            tomcat.setSilent(true); // no INFO lines on start-up
            Connector connector = new Connector(Http11NioProtocol.class.getName());
            connector.setPort(options.port());
            // Tomcat logs a failed bind and starts without the connector unless told to throw.
            connector.setThrowOnFailure(true);
            AbstractHttp11Protocol<?> http = (AbstractHttp11Protocol<?>) connector.getProtocolHandler();
            http.setAddress(InetAddress.getByName(options.host()));
            // ab keeps one connection for the whole run; Tomcat closes it after 100 requests by default.
            http.setMaxKeepAliveRequests(-1);
            // The reference has no Keep-Alive: timeout=N header, which Tomcat adds to keep-alive answers.
            http.setUseKeepAliveResponseHeader(false);
            tomcat.setConnector(connector);
            Context context = tomcat.addContext("", null);
            Tomcat.addServlet(context, "hello", new HelloServlet(options.name()));
            context.addServletMappingDecoded("/*", "hello");
            tomcat.start();
            return connector.getLocalPort();
        });
        // The connector's threads are daemons: wait here, as embedded Tomcat does (no shutdown port: -1).
        tomcat.getServer().await();
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            System.err.println("cannot delete " + dir + ": " + e.getMessage());
        }
    }
}
