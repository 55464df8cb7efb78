package org.latencydiff;

/**
 * The command line every server takes:
 * {@code --port P [--host H] [--name N] [--variant V] [--virtual-threads]}.
 *
 * @param host the address to bind, 127.0.0.1 unless told otherwise
 * @param port the port to bind; 0 picks a free one (the READY line says which)
 * @param name the name in the READY line and the Server header (a variant such as jdk-vt passes its own)
 * @param variant a module-specific configuration word (e.g. Tomcat's connector {@code nio2}); "" if none
 * @param virtualThreads run request handling on virtual threads, for libraries that offer it
 */
public record ServerOptions(String host, int port, String name, String variant, boolean virtualThreads) {

    public static final String DEFAULT_HOST = "127.0.0.1";

    static final String USAGE =
            "usage: java -jar <server>.jar --port P [--host H] [--name N] [--variant V] [--virtual-threads]";

    /** Parses the arguments; throws {@link IllegalArgumentException} with a one-line reason. */
    public static ServerOptions parse(String defaultName, String... args) {
        String host = DEFAULT_HOST;
        Integer port = null;
        String name = defaultName;
        String variant = "";
        boolean virtualThreads = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> port = parsePort(value(args, ++i, arg));
                case "--host" -> host = value(args, ++i, arg);
                case "--name" -> name = value(args, ++i, arg);
                case "--variant" -> variant = value(args, ++i, arg);
                case "--virtual-threads" -> virtualThreads = true;
                default -> throw new IllegalArgumentException("unknown argument '" + arg + "'");
            }
        }
        if (port == null) {
            throw new IllegalArgumentException("--port is required");
        }
        if (name.isBlank() || !name.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException("--name must be letters, digits, '.', '_' or '-'");
        }
        return new ServerOptions(host, port, name, variant, virtualThreads);
    }

    /**
     * The variant, checked against those a module knows; throws {@link IllegalArgumentException}
     * (a clear start failure) for any other.
     */
    public String variantOneOf(String... known) {
        for (String k : known) {
            if (k.equals(variant)) {
                return variant;
            }
        }
        throw new IllegalArgumentException("unknown --variant '" + variant + "'; known: " + String.join(", ", known));
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return args[i];
    }

    private static int parsePort(String s) {
        try {
            int p = Integer.parseInt(s);
            if (p < 0 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--port must be a number from 0 to 65535, not '" + s + "'");
        }
    }
}
