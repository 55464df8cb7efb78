package org.latencydiff;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * The live value of the Date header (RFC 7231 IMF-fixdate), formatted at most once a second and
 * cached, as servers commonly do. Cheap enough to call on every request.
 */
public final class HttpDate {

    private static final DateTimeFormatter FORMAT = DateTimeFormatter.RFC_1123_DATE_TIME.withZone(ZoneOffset.UTC);

    private record Cached(long second, String value) {}

    private static volatile Cached cached = new Cached(Long.MIN_VALUE, "");

    private HttpDate() {}

    /** The current date, e.g. {@code Mon, 28 Jul 2014 05:27:28 GMT}. */
    public static String now() {
        long second = System.currentTimeMillis() / 1000;
        Cached c = cached;
        if (c.second != second) {
            c = new Cached(second, format(second));
            cached = c;
        }
        return c.value;
    }

    /** The IMF-fixdate of an epoch second (always two-digit day, so always 29 characters). */
    static String format(long epochSecond) {
        String s = FORMAT.format(Instant.ofEpochSecond(epochSecond));
        // RFC_1123_DATE_TIME prints a one-digit day as "Mon, 1 Jul"; HTTP wants "Mon, 01 Jul".
        return s.charAt(6) == ' ' ? s.substring(0, 5) + "0" + s.substring(5) : s;
    }
}
