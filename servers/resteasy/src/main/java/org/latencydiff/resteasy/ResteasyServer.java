package org.latencydiff.resteasy;

import io.undertow.Undertow;
import java.net.InetSocketAddress;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.jboss.resteasy.plugins.server.undertow.UndertowJaxrsServer;
import org.latencydiff.Launcher;

/**
 * RESTEasy's embedded Undertow server ({@link UndertowJaxrsServer}), as RESTEasy's documentation sets
 * it up: the JAX-RS {@link HelloApplication} deployed as a servlet deployment at the root, on an
 * Undertow listener bound to the kit's host and port.
 */
public final class ResteasyServer {

    /**
     * RESTEasy logs through JBoss Logging to java.util.logging; its deployment notices (one line per
     * resource and provider) are left out, warnings and errors still print. Held here so the level stays.
     */
    private static final Logger RESTEASY_LOG = Logger.getLogger("org.jboss.resteasy");

    private ResteasyServer() {}

    public static void main(String[] args) {
        RESTEASY_LOG.setLevel(Level.WARNING);
        Launcher.run("resteasy", args, options -> {
            Server server = new Server();
            server.deploy(new HelloApplication(options.name()), "/");
            // Undertow's start throws for a busy port (a BindException as its cause), which Launcher reports.
            server.start(Undertow.builder().addHttpListener(options.port(), options.host()));
            return server.port();
        });
    }

    /** {@link UndertowJaxrsServer} with the port its listener got (it keeps the Undertow instance protected). */
    private static final class Server extends UndertowJaxrsServer {
        int port() {
            return ((InetSocketAddress) server.getListenerInfo().get(0).getAddress()).getPort();
        }
    }
}
