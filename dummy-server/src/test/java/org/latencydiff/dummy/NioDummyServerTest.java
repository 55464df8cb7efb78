package org.latencydiff.dummy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.latencydiff.HttpDate;
import org.latencydiff.ReferenceResponse;
import org.latencydiff.ServerOptions;

class NioDummyServerTest {

    private static final byte[] REQUEST =
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    /** Every response has this length: the Date is always 29 characters. */
    private static final int RESPONSE_LENGTH =
            ReferenceResponse.get().render(HttpDate.now(), "dummy-nio").length();

    private static int port;

    @BeforeAll
    static void start() throws Exception {
        // One server for the class; its selector thread ends with the test JVM.
        port = NioDummyServer.start(ServerOptions.parse("dummy", "--port", "0", "--name", "dummy-nio"));
    }

    @Test
    void twoPipelinedRequestsInOneWriteGetTwoResponses() throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write(concat(REQUEST, REQUEST));
            assertResponses(s.getInputStream(), 2);
        }
    }

    @Test
    void requestSplitAcrossWritesGetsOneResponse() throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            for (byte b : REQUEST) {
                out.write(b);
                out.flush();
            }
            assertResponses(s.getInputStream(), 1);
            // Then it is still a keep-alive connection.
            out.write(REQUEST);
            assertResponses(s.getInputStream(), 1);
            s.shutdownOutput();
            assertEquals(-1, s.getInputStream().read(), "closes after the client's EOF, with nothing extra");
        }
    }

    @Test
    void responsesLargerThanTheSocketBufferArriveWholeAndInOrder() throws Exception {
        // About 6 MB of responses to 1 MB of requests sent without reading: the server's writes fill
        // the socket buffer and must resume on OP_WRITE without losing or reordering bytes.
        int count = 20_000;
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    OutputStream out = s.getOutputStream();
                    for (int i = 0; i < count; i++) {
                        out.write(REQUEST);
                    }
                    out.flush();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            assertResponses(s.getInputStream(), count);
            writer.join();
        }
    }

    @Test
    void manyConnectionsAreServedTogether() throws Exception {
        Socket[] sockets = new Socket[50];
        try {
            for (int i = 0; i < sockets.length; i++) {
                sockets[i] = new Socket("127.0.0.1", port);
                sockets[i].setSoTimeout(5000);
            }
            // In reverse order of connecting: no connection waits for another.
            for (int i = sockets.length - 1; i >= 0; i--) {
                sockets[i].getOutputStream().write(REQUEST);
                assertResponses(sockets[i].getInputStream(), 1);
            }
        } finally {
            for (Socket s : sockets) {
                if (s != null) {
                    s.close();
                }
            }
        }
    }

    private static void assertResponses(InputStream in, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            String response = new String(in.readNBytes(RESPONSE_LENGTH), StandardCharsets.US_ASCII);
            assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), "response " + i + ": " + response);
            assertTrue(response.endsWith("\r\nServer: dummy-nio\r\n\r\nHelloWorld"), "response " + i + ": " + response);
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
