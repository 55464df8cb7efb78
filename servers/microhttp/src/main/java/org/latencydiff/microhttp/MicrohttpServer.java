package org.latencydiff.microhttp;

import java.util.ArrayList;
import java.util.List;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;
import org.microhttp.EventLoop;
import org.microhttp.Handler;
import org.microhttp.Header;
import org.microhttp.Options;
import org.microhttp.Response;

/** Microhttp's EventLoop with one Handler that answers on the event loop thread, as its README shows. */
public final class MicrohttpServer {

    public static void main(String[] args) {
        Launcher.run("microhttp", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Header> constant = ref.constantHeaders().stream()
                    .map(h -> new Header(h.getKey(), h.getValue()))
                    .toList();
            String reason = ref.statusLine().split(" ", 3)[2];
            byte[] body = ref.bodyBytes();
            String name = options.name();
            Handler handler = (request, callback) -> {
                List<Header> headers = new ArrayList<>(constant.size() + 2);
                headers.addAll(constant);
                headers.add(new Header("Server", name));
                headers.add(new Header("Date", HttpDate.now()));
                // Microhttp adds Content-Length, and Connection: Keep-Alive for an HTTP/1.0 keep-alive request.
                callback.accept(new Response(ref.status(), reason, headers, body));
            };
            EventLoop eventLoop = new EventLoop(
                    Options.builder().withHost(options.host()).withPort(options.port()).build(), handler);
            eventLoop.start();
            return eventLoop.getPort();
        });
    }
}
