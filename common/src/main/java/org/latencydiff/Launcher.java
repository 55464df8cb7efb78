package org.latencydiff;

import java.net.BindException;

/**
 * Runs a server main the same way for every server: parse the options, start, print
 * {@code READY <name> <port>} once it accepts connections, or one clear line on stderr and a
 * non-zero exit. The JVM's default SIGTERM handling stops the server.
 */
public final class Launcher {

    /** Exit status for a bad command line. */
    public static final int EXIT_USAGE = 2;
    /** Exit status for a server that could not start (busy port included). */
    public static final int EXIT_START_FAILED = 1;

    /** Starts the server and returns the port it actually listens on. */
    @FunctionalInterface
    public interface Starter {
        int start(ServerOptions options) throws Exception;
    }

    private Launcher() {}

    /**
     * @param defaultName the server's name unless {@code --name} says otherwise
     * @param args        the main arguments
     * @param starter     binds and starts the server; returns once it is accepting
     */
    public static void run(String defaultName, String[] args, Starter starter) {
        ServerOptions options;
        try {
            options = ServerOptions.parse(defaultName, args);
        } catch (IllegalArgumentException e) {
            System.err.println(defaultName + ": " + e.getMessage() + "; " + ServerOptions.USAGE);
            System.exit(EXIT_USAGE);
            return;
        }
        int port;
        try {
            port = starter.start(options);
        } catch (Throwable t) {
            System.err.println(options.name() + ": " + describe(t, options));
            System.exit(EXIT_START_FAILED);
            return;
        }
        System.out.println("READY " + options.name() + " " + port);
        System.out.flush();
    }

    static String describe(Throwable t, ServerOptions options) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof BindException) {
                return "cannot listen on " + options.host() + ":" + options.port()
                        + " (" + c.getMessage() + "): is the port in use?";
            }
        }
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return "failed to start: " + root;
    }
}
