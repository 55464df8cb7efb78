package org.latencydiff.micronaut;

import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import java.util.Map;
import org.latencydiff.Launcher;

/**
 * Starts Micronaut's embedded Netty server with the kit's host, port and Server header as configuration
 * properties; the route is {@link HelloController}, the constant headers {@link ReferenceHeadersFilter}.
 */
public final class MicronautServer {

    private MicronautServer() {}

    public static void main(String[] args) {
        Launcher.run("micronaut", args, options -> {
            // ApplicationContext.run rather than Micronaut.run: Micronaut.run logs a start-up failure with its
            // stack trace and calls System.exit itself, where this throws, so Launcher reports a busy port in
            // one line. It prints no banner either.
            EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, Map.of(
                    "micronaut.server.host", options.host(),
                    "micronaut.server.port", options.port(),
                    "micronaut.server.server-header", options.name()));
            return server.getPort();
        });
    }
}
