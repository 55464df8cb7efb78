package org.latencydiff.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LatencyDiffAgentTest {

    private static final List<String> KEYS = List.of(
            "allocated_bytes", "gc_count", "gc_time_ms", "compile_time_ms", "threads", "uptime_ms");
    private static final Pattern REPLY = Pattern.compile(
            "\\{\"format\":\"latency-diff/agent/1\""
                    + ",\"allocated_bytes\":(-?\\d+),\"gc_count\":(-?\\d+),\"gc_time_ms\":(-?\\d+)"
                    + ",\"compile_time_ms\":(-?\\d+),\"threads\":(-?\\d+),\"uptime_ms\":(-?\\d+)}");
    private static final long MB = 1024 * 1024;

    /** Keeps the test's arrays reachable, so that the JIT cannot prove them dead and drop them. */
    static volatile Object sink;

    @TempDir
    Path dir;
    private LatencyDiffAgent.Running agent;

    @BeforeEach
    void startAgent() {
        agent = LatencyDiffAgent.start(dir.resolve("agent.sock").toString());
    }

    @AfterEach
    void stopAgent() throws InterruptedException {
        agent.close();
    }

    @Test
    void repliesWithOneJsonLinePerLineInOrder() throws IOException {
        try (SocketChannel client = connect()) {
            // Two lines in one write, then one more: three replies on one connection.
            write(client, "stats\nstats\n");
            Map<String, Long> first = parse(readLine(client));
            Map<String, Long> second = parse(readLine(client));
            write(client, "anything\n");
            Map<String, Long> third = parse(readLine(client));
            for (Map<String, Long> reply : List.of(first, second, third)) {
                assertEquals(KEYS, List.copyOf(reply.keySet()));
                assertTrue(reply.get("gc_count") >= 0, "gc_count " + reply.get("gc_count"));
                assertTrue(reply.get("gc_time_ms") >= 0);
                assertTrue(reply.get("threads") >= 2, "main and the agent's thread at least");
                assertTrue(reply.get("uptime_ms") > 0);
            }
            assertTrue(second.get("allocated_bytes") >= first.get("allocated_bytes"));
            assertTrue(third.get("uptime_ms") >= first.get("uptime_ms"));
        }
        // A new connection after the first ended is served too.
        try (SocketChannel client = connect()) {
            write(client, "stats\n");
            assertTrue(REPLY.matcher(readLine(client)).matches());
        }
    }

    @Test
    void theLineJitGetsTheCompileQueueAndOnlyThatLine() throws IOException {
        try (SocketChannel client = connect()) {
            write(client, "jit\njitter\nji\n");
            String jit = readLine(client);
            assertTrue(jit.matches("\\{\"format\":\"latency-diff/agent-jit/1\",\"compiling\":\\d+,\"queued\":\\d+}"),
                    jit);
            assertTrue(REPLY.matcher(readLine(client)).matches(), "jitter: the counters");
            assertTrue(REPLY.matcher(readLine(client)).matches(), "ji: the counters");
        }
    }

    @Test
    void agentThreadIsOneDaemonPlatformThread() {
        assertEquals(LatencyDiffAgent.THREAD_NAME, agent.thread().getName());
        assertTrue(agent.thread().isDaemon());
        assertFalse(agent.thread().isVirtual());
        assertTrue(Files.exists(agent.path()));
    }

    @Test
    void countsAllocationsOfATerminatedPlatformThread() throws Exception {
        long before = allocatedBytes();
        Thread t = Thread.ofPlatform().start(LatencyDiffAgentTest::allocate64MegabytesInSmallArrays);
        t.join();
        // A sum of getThreadAllocatedBytes over live threads would lose these bytes now.
        long grown = allocatedBytes() - before;
        assertTrue(grown >= 50 * MB, "allocated_bytes grew by " + grown + " bytes, expected >= 50 MB");
    }

    @Test
    void countsAllocationsOfAVirtualThread() throws Exception {
        long before = allocatedBytes();
        Thread t = Thread.ofVirtual().start(LatencyDiffAgentTest::allocate64MegabytesInSmallArrays);
        t.join();
        long grown = allocatedBytes() - before;
        assertTrue(grown >= 50 * MB, "allocated_bytes grew by " + grown + " bytes, expected >= 50 MB");
    }

    @Test
    void aQueryAllocatesLittleEvenTheFirst() throws Exception {
        // The first query of a fresh agent once allocated about 300 KB (a string concatenation's
        // bootstrap), all of it counted into the driver's first difference.
        long first = allocatedBytes();
        long second = allocatedBytes();
        long third = allocatedBytes();
        assertTrue(second - first < 64 * 1024, "first query: " + (second - first) + " bytes");
        assertTrue(third - second < 64 * 1024, "second query: " + (third - second) + " bytes");
    }

    @Test
    void missingSocketPathFailsClearly() {
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            for (String arg : new String[] {null, "", " "}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> LatencyDiffAgent.premain(arg));
                assertTrue(e.getMessage().startsWith("no socket path given; usage: -javaagent:"), e.getMessage());
            }
        } finally {
            System.setErr(stderr);
        }
        // One line per failed start, on stderr, above the JVM's own "processing of -javaagent failed".
        String line = "latency-diff-agent: no socket path given; usage: "
                + "-javaagent:latency-diff-agent.jar=<unix-socket-path>" + System.lineSeparator();
        assertEquals(line.repeat(3), captured.toString(StandardCharsets.UTF_8));
    }

    @Test
    void staleSocketIsReplacedButAnOrdinaryFileIsNot() throws Exception {
        // Closing a bound unix socket leaves its file, as a killed JVM does.
        Path stale = dir.resolve("stale.sock");
        ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(stale)).close();
        assertTrue(Files.exists(stale));
        try (LatencyDiffAgent.Running second = LatencyDiffAgent.start(stale.toString());
                SocketChannel client = SocketChannel.open(UnixDomainSocketAddress.of(stale))) {
            write(client, "stats\n");
            assertTrue(REPLY.matcher(readLine(client)).matches());
        }
        Path file = Files.writeString(dir.resolve("not-a-socket"), "keep me");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> LatencyDiffAgent.start(file.toString()));
        assertTrue(e.getMessage().contains("not a socket"), e.getMessage());
        assertEquals("keep me", Files.readString(file));
    }

    private static void allocate64MegabytesInSmallArrays() {
        // 65,536 arrays of 1 KB; a small ring keeps the last few alive and lets the rest be collected.
        Object[] ring = new Object[16];
        for (int i = 0; i < 64 * 1024; i++) {
            ring[i & 15] = new byte[1024];
        }
        sink = ring;
    }

    private long allocatedBytes() throws IOException {
        try (SocketChannel client = connect()) {
            write(client, "stats\n");
            long allocated = parse(readLine(client)).get("allocated_bytes");
            assertTrue(allocated > 0, "allocated_bytes " + allocated + ": not supported by this JVM?");
            return allocated;
        }
    }

    private SocketChannel connect() throws IOException {
        SocketChannel client = SocketChannel.open(StandardProtocolFamily.UNIX);
        client.connect(UnixDomainSocketAddress.of(agent.path()));
        return client;
    }

    private static void write(SocketChannel client, String text) throws IOException {
        ByteBuffer out = ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
        while (out.hasRemaining()) {
            client.write(out);
        }
    }

    /** One reply line, read a byte at a time so that the next reply stays in the socket. */
    private static String readLine(SocketChannel client) throws IOException {
        StringBuilder line = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            one.clear();
            if (client.read(one) < 0) {
                throw new IOException("EOF after '" + line + "'");
            }
            char c = (char) one.get(0);
            if (c == '\n') {
                return line.toString();
            }
            line.append(c);
        }
    }

    private static Map<String, Long> parse(String line) {
        Matcher m = REPLY.matcher(line);
        assertTrue(m.matches(), "not an agent reply: " + line);
        Map<String, Long> values = new LinkedHashMap<>();
        for (int i = 0; i < KEYS.size(); i++) {
            values.put(KEYS.get(i), Long.parseLong(m.group(i + 1)));
        }
        return values;
    }
}
