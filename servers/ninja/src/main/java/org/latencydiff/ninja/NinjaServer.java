package org.latencydiff.ninja;

import java.util.Map;
import ninja.standalone.NinjaJetty;
import org.eclipse.jetty.server.ServerConnector;
import org.latencydiff.Launcher;

/**
 * Ninja's standalone start (NinjaJetty, production mode by default). The application is found by Ninja's
 * conventions under this package (application.modules.package in conf/application.conf): conf.Routes
 * maps GET / to controllers.HelloController, conf.Filters adds filters.ReferenceHeadersFilter to every route.
 */
public final class NinjaServer {

    /** The Ninja property that carries the kit's --name to the filter (the Server header). */
    public static final String SERVER_NAME_KEY = "latencydiff.server.name";

    public static void main(String[] args) {
        Launcher.run("ninja", args, options -> {
            LocalPortNinjaJetty ninja = new LocalPortNinjaJetty();
            ninja.host(options.host())
                    .port(options.port())
                    .overrideProperties(Map.of(SERVER_NAME_KEY, options.name()))
                    .start();
            // NinjaJetty stops Jetty in its own shutdown hook only from run(); start() is used here so that a
            // failed start reaches the Launcher instead of Ninja's System.exit(1).
            Runtime.getRuntime().addShutdownHook(new Thread(ninja::shutdown));
            return ninja.localPort();
        });
    }

    /** NinjaJetty reports the port it was given; with --port 0 its Jetty connector knows the real one. */
    static final class LocalPortNinjaJetty extends NinjaJetty {
        int localPort() {
            return ((ServerConnector) jetty.getConnectors()[0]).getLocalPort();
        }
    }
}
