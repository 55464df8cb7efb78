package org.latencydiff.tomcat;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.coyote.http11.Http11Nio2Protocol;
import org.apache.coyote.http11.Http11NioProtocol;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** Embedded Tomcat with one plain HttpServlet, as Tomcat's embedding examples show. */
public final class TomcatServer {

    /** Tomcat.setSilent quiets the NIO connector's logger but not NIO2's; held here so its level sticks. */
    private static final Logger NIO2_LOG = Logger.getLogger(Http11Nio2Protocol.class.getName());

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
        Launcher.run("tomcat-nio", args, options -> {
            // No --variant: the NIO connector, Tomcat's default.
            String variant = options.variant().isEmpty() ? "nio" : options.variantOneOf("nio", "nio2");
            // Tomcat's work files go to a temporary folder, not into the working directory.
            Path baseDir = Files.createTempDirectory("latency-diff-tomcat-");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(baseDir)));
            tomcat.setBaseDir(baseDir.toString());
            tomcat.setSilent(true); // no INFO lines on start-up
            NIO2_LOG.setLevel(Level.WARNING);
            Connector connector = new Connector(variant.equals("nio2")
                    ? Http11Nio2Protocol.class.getName() : Http11NioProtocol.class.getName());
            connector.setPort(options.port());
            // Tomcat logs a failed bind and starts without the connector unless told to throw.
            connector.setThrowOnFailure(true);
            AbstractHttp11Protocol<?> http = (AbstractHttp11Protocol<?>) connector.getProtocolHandler();
            http.setAddress(InetAddress.getByName(options.host()));
            // ab keeps one connection for the whole run; Tomcat closes it after 100 requests by default.
            http.setMaxKeepAliveRequests(-1);
            // The reference has no Keep-Alive: timeout=N header, which Tomcat adds to keep-alive answers.
            http.setUseKeepAliveResponseHeader(false);
            if (options.virtualThreads()) {
                // The connector's documented useVirtualThreads attribute: its executor starts a virtual thread per task.
                connector.setProperty("useVirtualThreads", "true");
            }
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
