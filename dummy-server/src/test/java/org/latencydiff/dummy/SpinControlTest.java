package org.latencydiff.dummy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.latencydiff.HttpDate;
import org.latencydiff.ReferenceResponse;
import org.latencydiff.ServerOptions;

class SpinControlTest {

    private static final byte[] REQUEST =
            "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    @Test
    void spinLastsAtLeastItsDurationByTheCallersOwnClock() {
        for (int i = 0; i < 1000; i++) {
            long before = System.nanoTime();
            long spun = SpinControl.spin(2000);
            long after = System.nanoTime();
            assertTrue(spun >= 2000, "spun " + spun);
            assertTrue(after - before >= 2000, "the caller saw " + (after - before));
            assertTrue(spun <= after - before, "spun " + spun + " in " + (after - before));
        }
        assertEquals(0, SpinControl.spin(0));
    }

    @Test
    void truthLineFormat() {
        assertEquals("TRUTH control-spin mode=fixed requests=3 spin_ns_total=6150 spin_ns_median=2040 "
                        + "configured_ns=2000 expected_ns=2000",
                SpinControl.truthLine("control-spin", "fixed", 3, 6150, "2040", 2000, 2000.0));
        assertEquals("TRUTH x mode=slow requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=3000 "
                        + "expected_ns=1437.5",
                SpinControl.truthLine("x", "slow", 0, 0, "none", 3000, 1437.5));
        assertEquals("0", SpinControl.decimal(0.0));
    }

    @Test
    void medianOfTheSpinsCountedByNanosecondsOver() {
        long[] over = new long[8];
        over[1] = 2; // two spins of 1 ns over
        over[5] = 1;
        // Five spins: 1, 1, 5 ns over and two beyond the histogram; the third is the median.
        assertEquals(5, SpinControl.medianOver(over, 5));
        // Four: 1, 1, 5 and one beyond; the lower median is the second.
        assertEquals(1, SpinControl.medianOver(over, 4));
        // Seven: 1, 1, 5 and four beyond: the median is beyond the histogram.
        assertEquals(-1, SpinControl.medianOver(over, 7));
        assertEquals(-1, SpinControl.medianOver(new long[8], 0));
    }

    @Test
    void modesDrawsSlowWithProbabilityPAndExpectsTheMeanOverProcesses() {
        // (1 - 0.25) * 1000 + 0.25 * 3000 = 750 + 750 = 1500
        assertEquals("TRUTH c mode=slow requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=3000 expected_ns=1500",
                SpinControl.modes("c", 0.0).truthLine());
        assertEquals("TRUTH c mode=slow requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=3000 expected_ns=1500",
                SpinControl.modes("c", 0.2499).truthLine());
        assertEquals("TRUTH c mode=fast requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=1000 expected_ns=1500",
                SpinControl.modes("c", 0.25).truthLine());
        assertEquals("TRUTH c mode=fixed requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=2000 expected_ns=2000",
                SpinControl.fixed("c").truthLine());
    }

    @Test
    void everyResponseOnEveryConnectionIsSpunAndCounted() throws Exception {
        SpinControl control = SpinControl.fixed("control-spin");
        int port = control.listen(ServerOptions.parse("dummy", "--port", "0", "--name", "control-spin"));
        int length = ReferenceResponse.get().render(HttpDate.now(), "control-spin").length();
        for (int connection = 0; connection < 2; connection++) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(5000);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                out.write(REQUEST);
                out.write(REQUEST); // two in one read, maybe: one spin each all the same
                for (int i = 0; i < 2; i++) {
                    String response = new String(in.readNBytes(length), StandardCharsets.US_ASCII);
                    assertTrue(response.endsWith("\r\nServer: control-spin\r\n\r\nHelloWorld"), response);
                }
            }
        }
        Matcher m = Pattern.compile("TRUTH control-spin mode=fixed requests=4 spin_ns_total=(\\d+) "
                + "spin_ns_median=(\\d+) configured_ns=2000 expected_ns=2000").matcher(control.truthLine());
        assertTrue(m.matches(), control.truthLine());
        long total = Long.parseLong(m.group(1));
        assertTrue(total >= 4 * 2000 && total < 4 * 1_000_000, control.truthLine());
        // The lower median of four spins is at most their total less the three others' least (3 x 2000).
        long median = Long.parseLong(m.group(2));
        assertTrue(median >= 2000 && median <= total - 3 * 2000, control.truthLine());
    }
}
