package org.latencydiff.quarkus;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.QuarkusApplication;
import io.quarkus.runtime.annotations.QuarkusMain;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.eclipse.microprofile.config.ConfigProvider;
import org.latencydiff.Launcher;
import org.latencydiff.ServerOptions;

/**
 * The application's main (Quarkus's @QuarkusMain): the kit's options become Quarkus configuration, then
 * Quarkus starts as usual and its HTTP server (Vert.x) serves {@link HelloResource}.
 *
 * <p>Quarkus.run blocks until the application exits, while Launcher wants the port back once the server
 * listens. So Quarkus runs on a thread of its own and {@link Serve} (run by Quarkus once started)
 * hands the port over; Launcher prints READY, or the one-line reason if Quarkus failed to start.
 */
@QuarkusMain
public final class QuarkusServer {

    /** The configuration property that carries the Server header's value (--name). */
    static final String SERVER_NAME_PROPERTY = "latency-diff.server-name";

    private static final CompletableFuture<Integer> LISTENING = new CompletableFuture<>();

    private QuarkusServer() {}

    public static void main(String[] args) {
        Launcher.run("quarkus", args, QuarkusServer::start);
    }

    private static int start(ServerOptions options) throws Exception {
        // System properties are a configuration source Quarkus reads when it starts.
        System.setProperty("quarkus.http.host", options.host());
        System.setProperty("quarkus.http.port", Integer.toString(options.port()));
        System.setProperty(SERVER_NAME_PROPERTY, options.name());
        Thread quarkus = new Thread(() -> Quarkus.run(Serve.class, QuarkusServer::exited), "quarkus-main");
        quarkus.start();
        try {
            return LISTENING.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    /**
     * Quarkus's exit handler. Replacing the default one also keeps Quarkus from logging a start-up failure
     * (a busy port is several lines): Launcher reports it instead. After a normal start this runs only as
     * the JVM shuts down (SIGTERM), when there is nothing left to do.
     */
    private static void exited(int status, Throwable failure) {
        if (!LISTENING.isDone()) {
            LISTENING.completeExceptionally(failure != null ? failure
                    : new IllegalStateException("Quarkus exited with status " + status + " before listening"));
        }
    }

    /** Runs once Quarkus has started (its HTTP server listening) until the JVM is asked to stop. */
    public static final class Serve implements QuarkusApplication {
        @Override
        public int run(String... args) {
            // With port 0, Quarkus updates quarkus.http.port to the port it actually bound.
            LISTENING.complete(ConfigProvider.getConfig().getValue("quarkus.http.port", Integer.class));
            Quarkus.waitForExit();
            return 0;
        }
    }
}
