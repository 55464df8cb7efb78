package org.latencydiff.nanohttpd;

import fi.iki.elonen.NanoHTTPD;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketException;
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

    /**
     * NanoHTTPD writes and flushes the headers, then writes the body: two segments per response. Without
     * TCP_NODELAY, Nagle's algorithm holds the body until the client acknowledges the headers, which a
     * client with delayed ACKs does only after about 40 ms. Most servers here set TCP_NODELAY by default;
     * NanoHTTPD has no option for it, so it is set on each accepted socket.
     */
    @Override
    protected ClientHandler createClientHandler(Socket socket, InputStream in) {
        try {
            socket.setTcpNoDelay(true);
        } catch (SocketException e) {
            throw new UncheckedIOException(e);
        }
        return super.createClientHandler(socket, in);
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
