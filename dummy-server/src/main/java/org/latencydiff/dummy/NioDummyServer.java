package org.latencydiff.dummy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.latencydiff.HttpDate;
import org.latencydiff.ReferenceResponse;
import org.latencydiff.ServerOptions;

/**
 * The second rung of the baseline ladder ({@code dummy-nio}): what an event-loop design costs with no
 * HTTP library. One selector thread serves every connection with non-blocking channels, TCP_NODELAY,
 * direct buffers and the blocking dummy's CRLFCRLF matcher ({@link DummyServer#next}), so split and
 * pipelined requests get one response each. Its round trip minus the blocking dummy's is the price of
 * the selector (an epoll_wait and a wake-up per request) that every event-loop library pays too.
 *
 * <p>The hot path allocates nothing: the read buffer is shared (one thread), and responses are written
 * straight from the pre-encoded direct buffer, re-encoded only when the Date second changes.
 */
final class NioDummyServer {

    private static final int BUFFER_SIZE = 2048;

    /** The wire bytes for one Date value; a new one per second, never changed once made. */
    private record Encoded(String date, ByteBuffer bytes) {}

    /**
     * Per connection: the matcher state, and what is left of a write the socket did not take at once.
     * While a write is pending the connection is not read (interest OP_WRITE only), so the client's
     * further requests wait in the kernel and responses leave in request order.
     */
    private static final class Connection {
        int matched;
        /** The response being written when the socket buffer filled up (an Encoded's buffer). */
        ByteBuffer pending;
        /** Where the rest of {@link #pending} starts. */
        int pendingOffset;
        /** Whole responses still owed after the rest of {@link #pending}. */
        int pendingMore;
    }

    private final String name;
    private final Selector selector;
    private final ServerSocketChannel listener;
    private final ByteBuffer in = ByteBuffer.allocateDirect(BUFFER_SIZE);
    /** Made once: {@code selector.select(this::handle)} would allocate a method reference per loop. */
    private final Consumer<SelectionKey> handler = this::handle;
    private Encoded encoded = new Encoded("", ByteBuffer.allocateDirect(0));

    private NioDummyServer(String name, Selector selector, ServerSocketChannel listener) {
        this.name = name;
        this.selector = selector;
        this.listener = listener;
    }

    /** Binds, starts the selector thread and returns the port it listens on. */
    static int start(ServerOptions options) throws IOException {
        ServerSocketChannel listener = ServerSocketChannel.open();
        listener.bind(new InetSocketAddress(InetAddress.getByName(options.host()), options.port()));
        listener.configureBlocking(false);
        Selector selector = Selector.open();
        listener.register(selector, SelectionKey.OP_ACCEPT);
        NioDummyServer server = new NioDummyServer(options.name(), selector, listener);
        // Not a daemon, like the blocking dummy's acceptor: it keeps the JVM alive after main returns.
        Thread loop = new Thread(server::run, "dummy-nio-selector");
        loop.start();
        return ((InetSocketAddress) listener.getLocalAddress()).getPort();
    }

    private void run() {
        while (true) {
            try {
                selector.select(handler);
            } catch (IOException e) {
                // The selector itself failed (not one connection): nothing can be served any more.
                System.err.println(name + ": selector failed, exiting: " + e);
                System.exit(1);
            }
        }
    }

    private void handle(SelectionKey key) {
        if (key.channel() == listener) {
            accept();
            return;
        }
        SocketChannel channel = (SocketChannel) key.channel();
        Connection connection = (Connection) key.attachment();
        try {
            if (key.isWritable()) {
                drain(key, channel, connection);
            } else if (key.isReadable()) {
                read(key, channel, connection);
            }
        } catch (IOException e) {
            // The client went away mid-request or mid-response: nothing to answer.
            close(channel);
        }
    }

    private void accept() {
        while (true) {
            SocketChannel channel;
            try {
                channel = listener.accept();
                if (channel == null) {
                    return; // every pending connection accepted
                }
            } catch (IOException e) {
                System.err.println(name + ": accept failed: " + e);
                return;
            }
            try {
                channel.configureBlocking(false);
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                channel.register(selector, SelectionKey.OP_READ, new Connection());
            } catch (IOException e) {
                // Reset before we could set it up: drop it.
                close(channel);
            }
        }
    }

    private void read(SelectionKey key, SocketChannel channel, Connection connection) throws IOException {
        in.clear();
        int n = channel.read(in);
        if (n < 0) {
            close(channel);
            return;
        }
        int requests = 0;
        int matched = connection.matched;
        for (int i = 0; i < n; i++) {
            matched = DummyServer.next(matched, in.get(i));
            if (matched == 4) {
                requests++;
                matched = 0;
            }
        }
        connection.matched = matched;
        if (requests > 0) {
            write(key, channel, connection, response(), 0, requests);
        }
    }

    /**
     * Writes the rest of {@code response} from {@code offset}, then {@code more} whole copies; if the
     * socket takes less, remembers where it stopped and waits for OP_WRITE instead of OP_READ.
     */
    private void write(SelectionKey key, SocketChannel channel, Connection connection,
                       ByteBuffer response, int offset, int count) throws IOException {
        for (int r = 0; r < count; r++) {
            // The buffer is shared by every connection; one thread, so position and limit are ours.
            response.limit(response.capacity()).position(r == 0 ? offset : 0);
            channel.write(response);
            if (response.hasRemaining()) {
                connection.pending = response;
                connection.pendingOffset = response.position();
                connection.pendingMore = count - r - 1;
                key.interestOps(SelectionKey.OP_WRITE);
                return;
            }
        }
        if (connection.pending != null) {
            connection.pending = null;
            key.interestOps(SelectionKey.OP_READ);
        }
    }

    private void drain(SelectionKey key, SocketChannel channel, Connection connection) throws IOException {
        // The rest and the copies still owed keep the Date they were made with.
        write(key, channel, connection, connection.pending, connection.pendingOffset, connection.pendingMore + 1);
    }

    private ByteBuffer response() {
        String date = HttpDate.now();
        Encoded e = encoded;
        if (!e.date.equals(date)) {
            byte[] wire = ReferenceResponse.get().render(date, name).getBytes(StandardCharsets.US_ASCII);
            // Exactly the response's size: writing it is position 0 to capacity.
            ByteBuffer bytes = ByteBuffer.allocateDirect(wire.length).put(wire).flip();
            e = new Encoded(date, bytes);
            encoded = e;
        }
        return e.bytes;
    }

    private static void close(SocketChannel channel) {
        try {
            channel.close(); // also cancels its key
        } catch (IOException e) {
            // Already broken: closing it is all we wanted.
        }
    }
}
