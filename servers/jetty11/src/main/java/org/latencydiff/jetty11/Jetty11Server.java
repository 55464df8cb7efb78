package org.latencydiff.jetty11;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.AbstractHandler;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Jetty 11 without a servlet context: one ServerConnector and a plain AbstractHandler, on Jetty's default
 * QueuedThreadPool. The jetty10 module's server on the 11.0 line: the same API, with jakarta servlets for javax.
 */
public final class Jetty11Server {

    public static void main(String[] args) {
        Launcher.run("jetty11", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            byte[] body = ref.bodyBytes();
            String name = options.name();

            Server server = new Server();
            HttpConfiguration config = new HttpConfiguration();
            // No "Server: Jetty(11...)" of Jetty's own: the reference's Server header is set below.
            config.setSendServerVersion(false);
            ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(config));
            connector.setHost(options.host());
            connector.setPort(options.port());
            server.addConnector(connector);

            server.setHandler(new AbstractHandler() {
                @Override
                public void handle(String target, Request baseRequest, HttpServletRequest request,
                        HttpServletResponse response) throws IOException {
                    response.setStatus(200);
                    // Jetty's own Response fields, not response.setHeader: setHeader("Content-Type", ...) goes
                    // through setContentType, which rewrites a known type to Jetty's cached "charset=utf-8".
                    HttpFields.Mutable out = baseRequest.getResponse().getHttpFields();
                    for (Map.Entry<String, String> h : headers) {
                        out.put(h.getKey(), h.getValue());
                    }
                    out.put(HttpHeader.SERVER, name);
                    // Jetty writes Date (cached per second) and Connection itself.
                    response.setContentLength(body.length);
                    response.getOutputStream().write(body);
                    baseRequest.setHandled(true);
                }
            });
            server.start();
            return connector.getLocalPort();
        });
    }
}
