package org.latencydiff.jetty10;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
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
 * Jetty 10 without a servlet context: one ServerConnector and a plain AbstractHandler, on Jetty's default
 * QueuedThreadPool. The jetty9 module's server on the 10.0 line (javax servlets), whose response fields are an
 * HttpFields.Mutable.
 */
public final class Jetty10Server {

    public static void main(String[] args) {
        Launcher.run("jetty10", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            byte[] body = ref.bodyBytes();
            String name = options.name();

            Server server = new Server();
            HttpConfiguration config = new HttpConfiguration();
            // No "Server: Jetty(10...)" of Jetty's own: the reference's Server header is set below.
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
