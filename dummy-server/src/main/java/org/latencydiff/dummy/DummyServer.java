package org.latencydiff.dummy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.function.UnaryOperator;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;
import org.latencydiff.ServerOptions;

/**
 * The baseline of the study: no HTTP library, just enough to answer ab. Blocking sockets, one thread
 * per connection, TCP_NODELAY, and the reference response pre-encoded (re-encoded when the Date
 * second changes). Unlike the 2014 dummy it does not assume one read is one request: it scans the
 * byte stream for the CRLFCRLF that ends each request (requests without a body, as ab sends), so a
 * request split across reads gets one response and two requests in one read get two.
 *
 * <p>The positive controls ({@code --variant spin} and {@code modes}, {@link SpinControl}) are this server with each
 * connection's output stream wrapped in one that spins before each response; the dummy writes to the socket's own.
 */
public final class DummyServer {

    private static final int BUFFER_SIZE = 2048;

    private record Encoded(String date, byte[] bytes) {}

    private final String name;
    /** What each connection writes its responses to, given the socket's stream (once per connection). */
    private final UnaryOperator<OutputStream> responses;
    private volatile Encoded encoded = new Encoded("", new byte[0]);

    private DummyServer(String name, UnaryOperator<OutputStream> responses) {
        this.name = name;
        this.responses = responses;
    }

    /**
     * {@code --variant nio} runs {@link NioDummyServer} instead (server.toml's dummy-nio); {@code spin} and
     * {@code modes} run the positive controls (control-spin, control-modes).
     */
    public static void main(String[] args) {
        Launcher.run("dummy", args, options -> switch (options.variantOneOf("", "nio", "spin", "modes")) {
            case "nio" -> NioDummyServer.start(options);
            case "spin", "modes" -> SpinControl.start(options);
            default -> start(options, UnaryOperator.identity()); // "": the blocking dummy, on the socket's stream
        });
    }

    /**
     * Binds, starts the acceptor thread and returns the port it listens on. {@code responses} wraps each connection's
     * output stream; the server writes each response with one {@code write(byte[])} call and flushes after the
     * responses to one read.
     */
    static int start(ServerOptions options, UnaryOperator<OutputStream> responses) throws IOException {
        ServerSocket listener = new ServerSocket();
        listener.bind(new InetSocketAddress(InetAddress.getByName(options.host()), options.port()));
        DummyServer server = new DummyServer(options.name(), responses);
        Thread acceptor = new Thread(() -> server.accept(listener), "dummy-acceptor");
        acceptor.start();
        return listener.getLocalPort();
    }

    private void accept(ServerSocket listener) {
        while (true) {
            try {
                Socket socket = listener.accept();
                socket.setTcpNoDelay(true);
                Thread worker = new Thread(() -> serve(socket), "dummy-connection");
                worker.setDaemon(true);
                worker.start();
            } catch (IOException e) {
                System.err.println(name + ": accept failed: " + e);
            }
        }
    }

    private void serve(Socket socket) {
        byte[] buffer = new byte[BUFFER_SIZE];
        int matched = 0; // how many bytes of CRLFCRLF end the bytes seen so far
        try (socket; InputStream in = socket.getInputStream();
             OutputStream out = responses.apply(socket.getOutputStream())) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                int requests = 0;
                for (int i = 0; i < n; i++) {
                    matched = next(matched, buffer[i]);
                    if (matched == 4) {
                        requests++;
                        matched = 0;
                    }
                }
                if (requests > 0) {
                    byte[] response = response();
                    for (int r = 0; r < requests; r++) {
                        out.write(response);
                    }
                    out.flush();
                }
            }
        } catch (IOException e) {
            // The client went away mid-request or mid-response: nothing to answer.
        }
    }

    /** One step of the CRLFCRLF matcher: bytes matched so far, then the next byte. */
    static int next(int matched, byte b) {
        boolean cr = b == '\r';
        boolean lf = b == '\n';
        return switch (matched) {
            case 0, 2 -> cr ? matched + 1 : 0;
            case 1, 3 -> lf ? matched + 1 : (cr ? 1 : 0);
            default -> throw new IllegalStateException("matched " + matched);
        };
    }

    private byte[] response() {
        String date = HttpDate.now();
        Encoded e = encoded;
        if (!e.date.equals(date)) {
            String wire = ReferenceResponse.get().render(date, name);
            e = new Encoded(date, wire.getBytes(StandardCharsets.US_ASCII));
            encoded = e;
        }
        return e.bytes;
    }
}
