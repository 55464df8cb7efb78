package org.latencydiff.nanohttpd;

import fi.iki.elonen.NanoHTTPD;
import java.io.ByteArrayInputStream;
import java.util.List;
import java.util.Map;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/** A NanoHTTPD subclass whose serve() returns a fixed-length response, as NanoHTTPD's HelloServer does. */
public final class NanoHttpdServer extends NanoHTTPD {

    private final byte[] body = ReferenceResponse.get().bodyBytes();
    private final String contentType = ReferenceResponse.get().header("Content-Type");
    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders().stream()
            .filter(h -> !h.getKey().equalsIgnoreCase("Content-Type")) // given as the response's MIME type
            .toList();
    private final String name;

    private NanoHttpdServer(String host, int port, String name) {
        super(host, port);
        this.name = name;
    }

    @Override
    public Response serve(IHTTPSession session) {
        Response response = newFixedLengthResponse(
                Response.Status.OK, contentType, new ByteArrayInputStream(body), body.length);
        for (Map.Entry<String, String> h : headers) {
            response.addHeader(h.getKey(), h.getValue());
        }
        response.addHeader("Server", name);
        // NanoHTTPD's own Date ("E, d MMM yyyy") has a one-digit day on days 1-9, which is not an
        // IMF-fixdate; a Date set here replaces it. It writes Content-Length and Connection itself.
        response.addHeader("Date", HttpDate.now());
        return response;
    }

    public static void main(String[] args) {
        Launcher.run("nanohttpd", args, options -> {
            NanoHttpdServer server = new NanoHttpdServer(options.host(), options.port(), options.name());
            // daemon = false: the listener thread keeps the JVM running once main returns.
            server.start(NanoHTTPD.SOCKET_READ_TIMEOUT, false);
            return server.getListeningPort();
        });
    }
}
