package org.latencydiff;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The reference response of the 2014 study, read from {@code reference-response.txt}: the one
 * definition of status, header names, constant header values and body that every server sends.
 *
 * <p>Servers set {@link #constantHeaders()} through their own API, plus Content-Length,
 * Connection: keep-alive, a live Date ({@link HttpDate}) and Server ({@link ServerOptions#name()}).
 */
public final class ReferenceResponse {

    /** Placeholder in the template for the live HTTP date. */
    public static final String DATE_PLACEHOLDER = "{date}";
    /** Placeholder in the template for the server's name. */
    public static final String SERVER_PLACEHOLDER = "{server}";

    private static final ReferenceResponse INSTANCE = load();

    private final String statusLine;
    private final List<Map.Entry<String, String>> headers;
    private final String body;

    private ReferenceResponse(String statusLine, List<Map.Entry<String, String>> headers, String body) {
        this.statusLine = statusLine;
        this.headers = List.copyOf(headers);
        this.body = body;
    }

    public static ReferenceResponse get() {
        return INSTANCE;
    }

    /** {@code HTTP/1.1 200 OK}. */
    public String statusLine() {
        return statusLine;
    }

    /** 200. */
    public int status() {
        return Integer.parseInt(statusLine.split(" ")[1]);
    }

    /** All headers in order, with placeholders for Date and Server. */
    public List<Map.Entry<String, String>> headers() {
        return headers;
    }

    /**
     * The headers whose value is a constant a server sets as given: all but Content-Length,
     * Connection, Date and Server, which a library usually writes itself.
     */
    public List<Map.Entry<String, String>> constantHeaders() {
        List<Map.Entry<String, String>> constant = new ArrayList<>();
        for (Map.Entry<String, String> h : headers) {
            String name = h.getKey();
            if (!name.equals("Content-Length") && !name.equals("Connection")
                    && !name.equals("Date") && !name.equals("Server")) {
                constant.add(h);
            }
        }
        return constant;
    }

    /** The value of a header of the template, e.g. {@code Content-Type}. */
    public String header(String name) {
        for (Map.Entry<String, String> h : headers) {
            if (h.getKey().equalsIgnoreCase(name)) {
                return h.getValue();
            }
        }
        throw new IllegalArgumentException("no header " + name + " in the reference response");
    }

    /** {@code HelloWorld}. */
    public String body() {
        return body;
    }

    /** The body as UTF-8 bytes (a fresh copy; callers may pre-encode it once). */
    public byte[] bodyBytes() {
        return body.getBytes(StandardCharsets.UTF_8);
    }

    /** The whole response as it goes on the wire, with the given date and server name. */
    public String render(String date, String serverName) {
        StringBuilder sb = new StringBuilder(320);
        sb.append(statusLine).append("\r\n");
        for (Map.Entry<String, String> h : headers) {
            String value = h.getValue()
                    .replace(DATE_PLACEHOLDER, date)
                    .replace(SERVER_PLACEHOLDER, serverName);
            sb.append(h.getKey()).append(": ").append(value).append("\r\n");
        }
        return sb.append("\r\n").append(body).toString();
    }

    static ReferenceResponse parse(String text) {
        List<String> lines = new ArrayList<>();
        for (String line : text.split("\n", -1)) {
            if (lines.isEmpty() && line.startsWith("#")) {
                continue;
            }
            lines.add(line.endsWith("\r") ? line.substring(0, line.length() - 1) : line);
        }
        if (lines.isEmpty() || !lines.get(0).startsWith("HTTP/1.1 ")) {
            throw new IllegalStateException("reference response: no status line");
        }
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        int i = 1;
        for (; i < lines.size() && !lines.get(i).isEmpty(); i++) {
            String line = lines.get(i);
            int colon = line.indexOf(": ");
            if (colon <= 0) {
                throw new IllegalStateException("reference response: bad header line '" + line + "'");
            }
            headers.add(Map.entry(line.substring(0, colon), line.substring(colon + 2)));
        }
        if (i >= lines.size()) {
            throw new IllegalStateException("reference response: no empty line before the body");
        }
        String body = String.join("\n", lines.subList(i + 1, lines.size())).stripTrailing();
        ReferenceResponse r = new ReferenceResponse(lines.get(0), headers, body);
        int declared = Integer.parseInt(r.header("Content-Length"));
        if (declared != r.bodyBytes().length) {
            throw new IllegalStateException("reference response: Content-Length " + declared
                    + " but the body has " + r.bodyBytes().length + " bytes");
        }
        return r;
    }

    private static ReferenceResponse load() {
        try (InputStream in = ReferenceResponse.class.getResourceAsStream("reference-response.txt")) {
            if (in == null) {
                throw new IllegalStateException("reference-response.txt missing from the classpath");
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
