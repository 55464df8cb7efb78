package org.latencydiff.jetty;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.VirtualThreadPool;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Jetty 12 core (no servlets): one ServerConnector and a plain Handler.Abstract, on Jetty's default
 * QueuedThreadPool, or with --virtual-threads the handler on virtual threads as Jetty's docs recommend.
 */
public final class JettyServer {

    public static void main(String[] args) {
        Launcher.run("jetty", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            ByteBuffer body = ByteBuffer.allocateDirect(ref.bodyBytes().length).put(ref.bodyBytes()).flip();
            String name = options.name();

            QueuedThreadPool threadPool = new QueuedThreadPool();
            if (options.virtualThreads()) {
                // Jetty's preferred setup: selectors on platform threads, blocking handlers on virtual threads.
                threadPool.setVirtualThreadsExecutor(new VirtualThreadPool());
            }
            Server server = new Server(threadPool);
            HttpConfiguration config = new HttpConfiguration();
            // No "Server: Jetty(12...)" of Jetty's own: the reference's Server header is set below.
            config.setSendServerVersion(false);
            ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(config));
            connector.setHost(options.host());
            connector.setPort(options.port());
            server.addConnector(connector);

            server.setHandler(new Handler.Abstract() {
                @Override
                public boolean handle(Request request, Response response, Callback callback) {
                    response.setStatus(200);
                    HttpFields.Mutable out = response.getHeaders();
                    for (Map.Entry<String, String> h : headers) {
                        out.put(h.getKey(), h.getValue());
                    }
                    out.put(HttpHeader.SERVER, name);
                    // Jetty writes Date (cached per second), Content-Length and Connection itself.
                    response.write(true, body.slice(), callback);
                    return true;
                }
            });
            server.start();
            return connector.getLocalPort();
        });
    }
}
