package org.latencydiff.agent;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The java agent every Java server runs with:
 * {@code -javaagent:agent/target/latency-diff-agent.jar=<unix-socket-path>}. It serves the JVM's
 * allocation, GC and JIT counters ({@link Counters}) on that Unix domain socket: a client connects and
 * writes lines (any text ending in '\n', e.g. {@code stats}); each line gets one JSON line back;
 * EOF ends the connection. The line {@code jit} gets the JIT compilers' queue instead
 * ({@link CompileQueue}), which the driver asks for during a warm-up.
 *
 * <p>It must not change what it measures: one daemon platform thread with blocking I/O, no executor,
 * no timer. While nobody queries it, that thread sits in accept() or read() and neither runs nor
 * allocates; it never touches the server's request path. Clients are served one at a time (the driver
 * queries from one place, twice per trial).
 */
public final class LatencyDiffAgent {

    static final String THREAD_NAME = "latency-diff-agent";

    private static final String USAGE =
            "usage: -javaagent:latency-diff-agent.jar=<unix-socket-path>";

    /** The query line that asks for the compile queue instead of the counters. */
    private static final byte[] JIT = {'j', 'i', 't'};

    private LatencyDiffAgent() {}

    /**
     * Called by the JVM before the server's main. The socket is bound here, on the JVM's main thread,
     * so that it is there before the server prints READY, and a failure stops the JVM with a reason
     * (the JVM aborts when premain throws) instead of leaving a server that cannot be queried.
     */
    public static void premain(String arg) {
        try {
            start(arg);
        } catch (RuntimeException e) {
            // The JVM's own report is a stack trace and "processing of -javaagent failed"; this line
            // says why.
            System.err.println("latency-diff-agent: " + e.getMessage());
            throw e;
        }
    }

    /**
     * Binds the socket and starts the thread that answers on it; what {@link #premain} does, and what
     * the tests call. Throws {@link IllegalArgumentException} for a missing path and
     * {@link IllegalStateException} when the socket cannot be bound.
     */
    static Running start(String arg) {
        if (arg == null || arg.isBlank()) {
            throw new IllegalArgumentException("no socket path given; " + USAGE);
        }
        Path path = Path.of(arg);
        Counters counters = new Counters();
        ServerSocketChannel listener;
        try {
            deleteStaleSocket(path);
            listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        } catch (IOException e) {
            throw new IllegalStateException("cannot use socket path " + path + ": " + e, e);
        }
        try {
            listener.bind(UnixDomainSocketAddress.of(path));
        } catch (IOException | RuntimeException e) {
            closeQuietly(listener);
            // The JDK's message names the cause (no such directory, path too long for sun_path).
            throw new IllegalStateException("cannot listen on unix socket " + path + ": " + e, e);
        }
        // Not started until the JVM exits, so nothing runs meanwhile; a killed JVM leaves the file,
        // which the next start deletes as stale.
        Thread cleanup = new Thread(() -> deleteQuietly(path), THREAD_NAME + "-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        Thread thread = new Thread(() -> serve(listener, counters), THREAD_NAME);
        thread.setDaemon(true);
        thread.start();
        Running running = new Running(path, listener, thread, cleanup);
        try {
            warmUp(path);
        } catch (IOException e) {
            closeQuietly(listener);
            throw new IllegalStateException("the agent does not answer on " + path + ": " + e, e);
        }
        return running;
    }

    /**
     * One query to itself before the server's main runs. The first accept, reply and close load
     * classes and spin a lambda form (about 100 KB allocated on JDK 25), which would otherwise land
     * between the driver's two readings; and a socket that cannot answer fails the start here.
     */
    private static void warmUp(Path path) throws IOException {
        try (SocketChannel self = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            self.write(ByteBuffer.wrap(new byte[] {'\n'}));
            ByteBuffer reply = ByteBuffer.allocate(512);
            while (reply.position() == 0 || reply.get(reply.position() - 1) != '\n') {
                if (self.read(reply) < 0 || !reply.hasRemaining()) {
                    throw new IOException("no reply line");
                }
            }
        }
    }

    /** The agent's socket and thread; closing them is for tests (a server's agent lives as long as its JVM). */
    record Running(Path path, ServerSocketChannel listener, Thread thread, Thread cleanup) implements AutoCloseable {
        @Override
        public void close() throws InterruptedException {
            closeQuietly(listener);
            thread.join();
            Runtime.getRuntime().removeShutdownHook(cleanup);
            deleteQuietly(path);
        }
    }

    private static void serve(ServerSocketChannel listener, Counters counters) {
        // Allocated once: a query allocates only its reply.
        ByteBuffer in = ByteBuffer.allocate(256);
        while (listener.isOpen()) {
            try (SocketChannel client = listener.accept()) {
                answer(client, in, counters);
            } catch (IOException | RuntimeException e) {
                if (listener.isOpen()) {
                    // A client that went away mid-reply, or a counter that failed: the client gets EOF
                    // without a reply, the next one is served; and the server's log says why.
                    System.err.println("latency-diff-agent: query failed: " + e);
                }
            }
        }
    }

    /**
     * One JSON line per '\n' received, each read at the moment its line is complete: the compile queue
     * ({@link CompileQueue}) for the line {@code jit}, the counters ({@link Counters}) for any other.
     */
    private static void answer(SocketChannel client, ByteBuffer in, Counters counters) throws IOException {
        in.clear();
        // The line so far, as far as it can still be "jit": its length, or -1 once it cannot.
        int jitPrefix = 0;
        while (client.read(in) >= 0) {
            in.flip();
            while (in.hasRemaining()) {
                byte b = in.get();
                if (b == '\n') {
                    String text = jitPrefix == JIT.length ? CompileQueue.json() : counters.json();
                    ByteBuffer reply = ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
                    while (reply.hasRemaining()) {
                        client.write(reply);
                    }
                    jitPrefix = 0;
                } else if (jitPrefix >= 0 && jitPrefix < JIT.length && b == JIT[jitPrefix]) {
                    jitPrefix++;
                } else {
                    jitPrefix = -1;
                }
            }
            in.clear();
        }
    }

    /**
     * Deletes a socket file left by a JVM that was killed, but nothing else: a path that is a regular
     * file or a directory is a mistake on the command line, not ours to delete.
     */
    private static void deleteStaleSocket(Path path) throws IOException {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return;
        }
        if (!attributes.isOther()) {
            throw new IOException("it exists and is not a socket");
        }
        Files.deleteIfExists(path);
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // At exit, or in a test's clean-up: a file left behind is deleted by the next start.
        }
    }

    private static void closeQuietly(ServerSocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // Closing a listening socket does not fail in a way anyone could act on.
        }
    }
}
