package org.latencydiff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.BindException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommonTest {

    @Test
    void referenceResponseIsTheStudysBytes() {
        ReferenceResponse r = ReferenceResponse.get();
        assertEquals("HTTP/1.1 200 OK", r.statusLine());
        assertEquals(200, r.status());
        assertEquals("HelloWorld", r.body());
        String wire = r.render("Mon, 28 Jul 2014 05:27:28 GMT", "Dummy");
        // The study's dummy response is 296 bytes (original-study.md).
        assertEquals(296, wire.getBytes(StandardCharsets.US_ASCII).length);
        assertTrue(wire.endsWith("\r\nServer: Dummy\r\n\r\nHelloWorld"));
    }

    @Test
    void constantHeadersLeaveOutWhatALibraryWrites() {
        List<String> names = ReferenceResponse.get().constantHeaders().stream().map(Map.Entry::getKey).toList();
        assertEquals(List.of("Accept-Ranges", "Content-Type", "ETag", "Last-Modified", "Cache-Control"), names);
    }

    @Test
    void templateWithWrongContentLengthIsRejected() {
        String bad = "HTTP/1.1 200 OK\nContent-Length: 3\n\nHelloWorld";
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ReferenceResponse.parse(bad));
        assertTrue(e.getMessage().contains("Content-Length 3"));
    }

    @Test
    void httpDateHasTwoDigitDayAndFixedLength() {
        assertEquals("Tue, 01 Jul 2014 00:00:00 GMT", HttpDate.format(1404172800L));
        assertEquals("Mon, 28 Jul 2014 05:27:28 GMT", HttpDate.format(1406525248L));
        assertEquals(29, HttpDate.now().length());
    }

    @Test
    void optionsDefaultToLoopback() {
        ServerOptions o = ServerOptions.parse("jdk", "--port", "8080");
        assertEquals(new ServerOptions("127.0.0.1", 8080, "jdk", "", false), o);
        ServerOptions v = ServerOptions.parse("jdk", "--port", "0", "--name", "jdk-vt", "--virtual-threads", "--host", "::1", "--variant", "nio2");
        assertEquals(new ServerOptions("::1", 0, "jdk-vt", "nio2", true), v);
        assertEquals("nio2", v.variantOneOf("nio", "nio2"));
        assertThrows(IllegalArgumentException.class, () -> v.variantOneOf("nio"));
    }

    @Test
    void badOptionsSayWhatIsWrong() {
        assertEquals("--port is required",
                assertThrows(IllegalArgumentException.class, () -> ServerOptions.parse("x")).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> ServerOptions.parse("x", "--port", "99999")).getMessage().contains("99999"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> ServerOptions.parse("x", "--port", "1", "--bogus")).getMessage().contains("--bogus"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> ServerOptions.parse("x", "--port")).getMessage().contains("needs a value"));
    }

    @Test
    void bindFailureIsNamedAsABusyPort() {
        ServerOptions o = new ServerOptions("127.0.0.1", 8080, "x", "", false);
        String msg = Launcher.describe(new RuntimeException(new BindException("Address already in use")), o);
        assertTrue(msg.startsWith("cannot listen on 127.0.0.1:8080"), msg);
        assertFalse(Launcher.describe(new IllegalStateException("boom"), o).contains("port in use"));
    }
}
