package org.latencydiff.dummy;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.security.SecureRandom;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.latencydiff.ServerOptions;

/**
 * The positive controls: the blocking dummy plus, before each response, a busy-wait to a {@link System#nanoTime()}
 * deadline, timed by the process itself. Their true diff over the dummy is known without the client, so the kit's
 * intervals can be checked against it.
 *
 * <ul>
 *   <li>{@code --variant spin} (control-spin): every request spins {@link #SPIN_NS}.
 *   <li>{@code --variant modes} (control-modes): each fresh process draws its mode once at start: slow
 *       ({@link #SLOW_NS}) with probability {@link #P_SLOW}, else fast ({@link #FAST_NS}). Its true mean over fresh
 *       processes is (1 - P) * fast + P * slow (1500 ns), a two-mode server like the JVMs that fall into speed modes.
 * </ul>
 *
 * <p>It prints {@code MODE <name> <fixed|fast|slow>} before its READY line, and on SIGTERM (a shutdown hook) one
 * line that the analysis reads from its log (latency_diff/controls.py):
 * {@code TRUTH <name> mode=<m> requests=<n> spin_ns_total=<ns> spin_ns_median=<ns|none> configured_ns=<ns>
 * expected_ns=<ns>}: the responses it wrote, the spin it timed over all of them, their median spin, this process's
 * configured spin, and the mean configured spin over fresh processes (a decimal for a probability that does not make
 * it whole).
 *
 * <p>The median is the figure to compare with the kit's robust round trips: the total also holds the spins that a
 * JIT thread or another process preempted, on the one CPU they share while it warms up, and the warm-up is more than
 * half of a process's requests (a fresh process pinned to one CPU, with the kit's agent: over 5,000 requests of a
 * 1,000 ns spin a mean of 1,064 ns and a median of 1,012 ns; over 50,000 of 2,000 ns, 2,054 and 2,023 ns). It is exact
 * to the nanosecond up to {@link #MEDIAN_RANGE_NS} over the configured spin; "none" above that, or with no requests.
 *
 * <p>The durations are constants: the server contract's options ({@link ServerOptions}) take no module-specific
 * values besides the {@code --variant} word.
 */
final class SpinControl {

    /** control-spin's spin per request. */
    static final long SPIN_NS = 2_000;
    /** control-modes' spin per request in its fast mode. */
    static final long FAST_NS = 1_000;
    /** control-modes' spin per request in its slow mode. */
    static final long SLOW_NS = 3_000;
    /** The probability that a fresh control-modes process is in its slow mode. */
    static final double P_SLOW = 0.25;
    /** How far over the configured spin the median is resolved, in 1 ns steps (a 16 KB histogram a connection). */
    static final int MEDIAN_RANGE_NS = 4096;

    private final String name;
    private final String mode;
    private final long configuredNs;
    private final double expectedNs;
    /** Every connection's spins, including closed ones': the TRUTH line sums them all. */
    private final Queue<Spinning> connections = new ConcurrentLinkedQueue<>();

    SpinControl(String name, String mode, long configuredNs, double expectedNs) {
        this.name = name;
        this.mode = mode;
        this.configuredNs = configuredNs;
        this.expectedNs = expectedNs;
    }

    /** control-spin: the same spin in every process. */
    static SpinControl fixed(String name) {
        return new SpinControl(name, "fixed", SPIN_NS, SPIN_NS);
    }

    /** control-modes, given a uniform draw {@code u} in [0, 1): slow when {@code u < P_SLOW}. */
    static SpinControl modes(String name, double u) {
        boolean slow = u < P_SLOW;
        return new SpinControl(name, slow ? "slow" : "fast", slow ? SLOW_NS : FAST_NS,
                (1 - P_SLOW) * FAST_NS + P_SLOW * SLOW_NS);
    }

    /** Binds and starts the control named by {@code options.variant()} ("spin" or "modes"); returns its port. */
    static int start(ServerOptions options) throws IOException {
        SpinControl control = options.variant().equals("spin")
                ? fixed(options.name())
                // SecureRandom: each fresh process draws independently of its start time and of the others.
                : modes(options.name(), new SecureRandom().nextDouble());
        int port = control.listen(options);
        System.out.println("MODE " + control.name + " " + control.mode);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println(control.truthLine());
            System.out.flush();
        }, "control-truth"));
        return port;
    }

    /** Starts the blocking dummy with this control's spin before each response; returns its port. */
    int listen(ServerOptions options) throws IOException {
        return DummyServer.start(options, this::connection);
    }

    /** A new connection's stream: its own counts, so that the request path updates no shared counter. */
    private OutputStream connection(OutputStream socket) {
        Spinning spinning = new Spinning(socket, configuredNs);
        connections.add(spinning);
        return spinning;
    }

    /** The TRUTH line for the responses written so far. */
    String truthLine() {
        long requests = 0;
        long spunNs = 0;
        long[] over = new long[MEDIAN_RANGE_NS];
        for (Spinning t : connections) {
            long n = t.requests.get(); // acquire: the connection's earlier stores are visible after it
            requests += n;
            spunNs += t.spunNs.get();
            int[] own = t.over;
            if (n > 0 && own != null) {
                for (int i = 0; i < own.length; i++) {
                    over[i] += own[i];
                }
            }
        }
        long median = medianOver(over, requests);
        return truthLine(name, mode, requests, spunNs, median < 0 ? "none" : Long.toString(configuredNs + median),
                configuredNs, expectedNs);
    }

    /**
     * The lower median of {@code requests} spins, as nanoseconds over the configured spin, from the counts of each
     * whole nanosecond over it (the spins not counted there lasted longer); -1 if it lies beyond them or there are
     * no spins.
     */
    static long medianOver(long[] over, long requests) {
        long rank = (requests + 1) / 2; // the lower median's rank, from 1
        long seen = 0;
        for (int i = 0; i < over.length && requests > 0; i++) {
            seen += over[i];
            if (seen >= rank) {
                return i;
            }
        }
        return -1;
    }

    static String truthLine(String name, String mode, long requests, long spunNs, String medianNs,
                            long configuredNs, double expectedNs) {
        return "TRUTH " + name + " mode=" + mode + " requests=" + requests + " spin_ns_total=" + spunNs
                + " spin_ns_median=" + medianNs + " configured_ns=" + configuredNs
                + " expected_ns=" + decimal(expectedNs);
    }

    /** 1500.0 as "1500", 1437.5 as "1437.5": no exponent, no trailing zeros. */
    static String decimal(double x) {
        return BigDecimal.valueOf(x).stripTrailingZeros().toPlainString();
    }

    /**
     * Busy-waits until {@code ns} have passed on {@link System#nanoTime()}; returns the time it spun, from the clock
     * read before to the read that ended it (at least {@code ns}; 0 for 0).
     */
    static long spin(long ns) {
        long start = System.nanoTime();
        long now = start;
        while (now - start < ns) {
            Thread.onSpinWait();
            now = System.nanoTime();
        }
        return now - start;
    }

    /**
     * One connection's output stream: spins before each response, then writes it to the socket's stream. The dummy
     * writes each response whole, with one call, so a call is a response. Written by the connection's thread only;
     * the shutdown hook reads its counts.
     */
    static final class Spinning extends OutputStream {
        private final OutputStream socket;
        private final long ns;
        private final AtomicLong requests = new AtomicLong();
        private final AtomicLong spunNs = new AtomicLong();
        /** Spins by whole nanoseconds over {@link #ns}; made at the first response (a hostile client gets none). */
        private int[] over;

        Spinning(OutputStream socket, long ns) {
            this.socket = socket;
            this.ns = ns;
        }

        @Override
        public void write(byte[] response, int offset, int length) throws IOException {
            long spun = spin(ns);
            if (over == null) {
                over = new int[MEDIAN_RANGE_NS];
            }
            long excess = spun - ns;
            if (excess < MEDIAN_RANGE_NS) {
                over[(int) excess]++;
            }
            // One writer: release stores (plain stores on x86), not an atomic read-modify-write per request; the last
            // one publishes the histogram's count with it.
            spunNs.setRelease(spunNs.getPlain() + spun);
            requests.setRelease(requests.getPlain() + 1);
            socket.write(response, offset, length);
        }

        @Override
        public void write(int b) throws IOException {
            socket.write(b); // not called: responses are written whole
        }

        @Override
        public void flush() throws IOException {
            socket.flush();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
