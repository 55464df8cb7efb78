/*
 * lean: the lean single-connection HTTP client of latency-diff.
 *
 * What it is for: the kit measures servers the way the 2014 study did, with `ab -k -c1`. ab only
 * reports a mean ("time per request") and does work of its own between requests. lean sends the
 * same request bytes over one keep-alive connection, strictly one request in flight, but times
 * every round trip on its own and keeps the whole distribution (histogram.h), while doing as
 * little as possible in between: no allocation, no printing, and only the HTTP parsing needed to
 * know where a response ends. Its elapsed_ns / requests is comparable with ab's time per request;
 * its per-request times show the spread ab hides.
 *
 * Usage: lean --host H --port P --request FILE --requests N [--warmup W] [--timeout-ms T]
 *        lean --histogram-selftest   (records stdin's integers, prints the histogram: for tests)
 *
 * Output: always exactly one JSON line on stdout (format "latency-diff/lean/1"), also after an
 * error, with what was counted up to it. Exit 0 when all N requests completed, 1 after an error
 * (which is also printed to stderr), 2 for a bad command line.
 *
 * Like ab, non-2xx statuses and responses whose length differs from the first measured one are
 * counted and the run goes on; anything that makes the byte stream untrustworthy (closed
 * connection, timeout, bytes after a response, a response we cannot delimit) ends the run.
 */
#define _GNU_SOURCE /* memmem */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "histogram.h"

#define FORMAT "latency-diff/lean/1"
/* The reference response is about 300 bytes; 64 KiB leaves room for any server's headers. */
#define RESPONSE_BUFFER (64 * 1024)
#define REQUEST_MAX (64 * 1024)
#define DEFAULT_TIMEOUT_MS 5000

struct options {
    const char *host;
    const char *port;
    const char *request_file;
    uint64_t requests;
    uint64_t warmup;
    int timeout_ms;
};

struct result {
    uint64_t completed;
    uint64_t non_2xx;
    uint64_t length_mismatch;
    uint64_t response_bytes; /* length of the first measured response */
    uint64_t elapsed_ns;
    bool failed;
};

/* Static, not on the stack or heap: allocated once, before anything is timed. */
static struct histogram hist;
static char response_buf[RESPONSE_BUFFER];
static char request_buf[REQUEST_MAX];
static size_t request_len;
static char error_msg[512];

static void usage(FILE *out) {
    fputs("usage: lean --host H --port P --request FILE --requests N [--warmup W] [--timeout-ms T]\n"
          "       lean --histogram-selftest\n"
          "\n"
          "Sends the bytes of FILE as one HTTP request over one keep-alive TCP connection, W times\n"
          "to warm up (default 0) and then N times measured, one request in flight, and prints one\n"
          "JSON line: counts, elapsed time and a histogram of the round trips in nanoseconds.\n"
          "  --timeout-ms T          give up when a read waits longer than T ms (default 5000)\n"
          "  --histogram-selftest    read integers (ns) from stdin, print their histogram as JSON\n"
          "Exit status: 0 all requests completed, 1 an error stopped the run, 2 bad arguments.\n",
          out);
}

static void bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lean: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    usage(stderr);
    exit(2);
}

/* The run's error, kept for the JSON line; the first one wins. */
static void set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_msg, sizeof error_msg, fmt, ap);
    va_end(ap);
}

/* A whole decimal string in [min, max]; no sign, no spaces, no suffix. */
static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (*s < '0' || *s > '9') {
        return false;
    }
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') {
            return false;
        }
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

/* Reading the request file is part of checking the arguments: nothing runs with a bad one. */
static void read_request_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        bad_usage("--request %s: %s", path, strerror(errno));
    }
    request_len = fread(request_buf, 1, sizeof request_buf, f);
    bool read_error = ferror(f);
    bool too_big = request_len == sizeof request_buf && fgetc(f) != EOF;
    fclose(f);
    if (read_error) {
        bad_usage("--request %s: read error", path);
    }
    if (too_big) {
        bad_usage("--request %s: larger than %d bytes", path, REQUEST_MAX);
    }
    if (request_len == 0) {
        bad_usage("--request %s: the file is empty", path);
    }
}

static void parse_args(int argc, char **argv, struct options *o) {
    *o = (struct options){.warmup = 0, .timeout_ms = DEFAULT_TIMEOUT_MS};
    bool have_requests = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(arg, "--histogram-selftest") == 0) {
            bad_usage("--histogram-selftest takes no other arguments");
        }
        if (strncmp(arg, "--", 2) != 0 || i + 1 >= argc) {
            bad_usage(strncmp(arg, "--", 2) == 0 ? "%s needs a value" : "unexpected argument '%s'", arg);
        }
        const char *val = argv[++i];
        uint64_t v;
        if (strcmp(arg, "--host") == 0) {
            o->host = val;
        } else if (strcmp(arg, "--port") == 0) {
            if (!parse_u64(val, 1, 65535, &v)) {
                bad_usage("--port must be a number from 1 to 65535, not '%s'", val);
            }
            o->port = val;
        } else if (strcmp(arg, "--request") == 0) {
            o->request_file = val;
        } else if (strcmp(arg, "--requests") == 0) {
            if (!parse_u64(val, 1, UINT64_MAX, &o->requests)) {
                bad_usage("--requests must be a positive integer, not '%s'", val);
            }
            have_requests = true;
        } else if (strcmp(arg, "--warmup") == 0) {
            if (!parse_u64(val, 0, UINT64_MAX, &o->warmup)) {
                bad_usage("--warmup must be a non-negative integer, not '%s'", val);
            }
        } else if (strcmp(arg, "--timeout-ms") == 0) {
            if (!parse_u64(val, 1, INT_MAX, &v)) {
                bad_usage("--timeout-ms must be a positive integer, not '%s'", val);
            }
            o->timeout_ms = (int)v;
        } else {
            bad_usage("unknown argument '%s'", arg);
        }
    }
    if (o->host == NULL) {
        bad_usage("--host is required");
    }
    if (o->port == NULL) {
        bad_usage("--port is required");
    }
    if (o->request_file == NULL) {
        bad_usage("--request is required");
    }
    if (!have_requests) {
        bad_usage("--requests is required");
    }
    read_request_file(o->request_file);
}

/* A connect that gives up after the read timeout too, so an unreachable host cannot hang a run. */
static int connect_to(const struct options *o) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *addrs;
    int rc = getaddrinfo(o->host, o->port, &hints, &addrs);
    if (rc != 0) {
        set_error("cannot resolve %s: %s", o->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = addrs; a != NULL; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            set_error("socket: %s", strerror(errno));
            continue;
        }
        int err = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            err = errno;
            if (err == EINPROGRESS) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int n = poll(&p, 1, o->timeout_ms);
                socklen_t len = sizeof err;
                if (n == 0) {
                    err = ETIMEDOUT;
                } else if (n < 0) {
                    err = errno;
                } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
                    err = errno;
                }
            }
        }
        if (err == 0) {
            break;
        }
        set_error("cannot connect to %s:%s: %s", o->host, o->port, strerror(err));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(addrs);
    if (fd < 0) {
        return -1;
    }
    /* Back to blocking: reads wait in poll() anyway, and a blocking send of a small request into
     * an empty socket buffer returns at once. TCP_NODELAY: each request is one segment, sent now. */
    int one = 1;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0
        || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) {
        set_error("cannot set up the socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    error_msg[0] = '\0';
    return fd;
}

static bool send_request(int fd) {
    size_t off = 0;
    while (off < request_len) {
        /* MSG_NOSIGNAL: a server that closed the connection is an error, not a SIGPIPE death. */
        ssize_t n = send(fd, request_buf + off, request_len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET) {
                set_error("the server closed the connection (cannot send the request: %s)", strerror(errno));
            } else {
                set_error("cannot send the request: %s", strerror(errno));
            }
            return false;
        }
        off += (size_t)n;
    }
    return true;
}

/* "HTTP/1.x NNN" followed by a space or the line end; the status code, or -1. */
static int parse_status(const char *p, size_t header_len) {
    if (header_len < 13 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ') {
        return -1;
    }
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return -1;
        }
        status = status * 10 + (p[i] - '0');
    }
    return (p[12] == ' ' || p[12] == '\r') ? status : -1;
}

/* The value of the first Content-Length header line (name case-insensitive), or -1. The header
 * block ends with CRLFCRLF, so every line found here ends with '\r'. */
static long long parse_content_length(const char *p, size_t header_len) {
    static const char name[] = "content-length:";
    const size_t name_len = sizeof name - 1;
    const char *end = p + header_len;
    const char *line = memchr(p, '\n', header_len); /* skip the status line */
    while (line != NULL && (line += 1) < end) {
        if ((size_t)(end - line) > name_len && strncasecmp(line, name, name_len) == 0) {
            const char *s = line + name_len;
            while (*s == ' ' || *s == '\t') {
                s++;
            }
            if (*s < '0' || *s > '9') {
                return -1;
            }
            long long v = 0;
            for (; *s >= '0' && *s <= '9'; s++) {
                if (v > RESPONSE_BUFFER) { /* too big for the buffer anyway; stop before overflow */
                    v = RESPONSE_BUFFER + 1;
                    continue;
                }
                v = v * 10 + (*s - '0');
            }
            while (*s == ' ' || *s == '\t') {
                s++;
            }
            return *s == '\r' ? v : -1;
        }
        line = memchr(line, '\n', (size_t)(end - line));
    }
    return -1;
}

/*
 * Reads one whole response into response_buf: up to CRLFCRLF, then exactly Content-Length more
 * bytes. Sets *length and *status. Any byte past the response end is an error: with one request in
 * flight there is nothing else the server may send.
 */
static bool read_response(int fd, int timeout_ms, size_t *length, int *status) {
    size_t have = 0;
    size_t header_len = 0;
    size_t total = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, timeout_ms);
        if (ready == 0) {
            set_error("no response within %d ms", timeout_ms);
            return false;
        }
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            set_error("poll: %s", strerror(errno));
            return false;
        }
        ssize_t n = recv(fd, response_buf + have, sizeof response_buf - have, 0);
        if (n == 0) {
            set_error(have == 0 ? "the server closed the connection"
                                : "the server closed the connection in the middle of a response");
            return false;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == ECONNRESET) { /* closed with our request unread: the kernel answers it with a reset */
                set_error(have == 0 ? "the server closed the connection (reset)"
                                    : "the server closed the connection in the middle of a response (reset)");
            } else {
                set_error("cannot read the response: %s", strerror(errno));
            }
            return false;
        }
        size_t before = have;
        have += (size_t)n;
        if (header_len == 0) {
            /* Only the new bytes, plus 3 before them in case CRLFCRLF straddles two reads. */
            size_t from = before >= 3 ? before - 3 : 0;
            const char *crlf2 = memmem(response_buf + from, have - from, "\r\n\r\n", 4);
            if (crlf2 == NULL) {
                if (have == sizeof response_buf) {
                    set_error("no end of the response header within %d bytes", RESPONSE_BUFFER);
                    return false;
                }
                continue;
            }
            header_len = (size_t)(crlf2 - response_buf) + 4;
            *status = parse_status(response_buf, header_len);
            if (*status < 0) {
                set_error("malformed status line (expected 'HTTP/1.x NNN ...')");
                return false;
            }
            long long content_length = parse_content_length(response_buf, header_len);
            if (content_length < 0) {
                set_error("the response has no valid Content-Length (status %d)", *status);
                return false;
            }
            total = header_len + (size_t)content_length;
            if (total > sizeof response_buf) {
                set_error("a response of %zu bytes is larger than the %d-byte buffer", total, RESPONSE_BUFFER);
                return false;
            }
        }
        if (have >= total) {
            if (have > total) {
                set_error("server sent bytes after the response (%zu beyond its %zu bytes)", have - total, total);
                return false;
            }
            *length = total;
            return true;
        }
    }
}

static uint64_t ns_between(const struct timespec *a, const struct timespec *b) {
    return (uint64_t)(b->tv_sec - a->tv_sec) * UINT64_C(1000000000) + (uint64_t)b->tv_nsec - (uint64_t)a->tv_nsec;
}

/* Warm-up, then the measured loop. Returns false on the first error (error_msg says which). */
static bool run(int fd, const struct options *o, struct result *r) {
    size_t length;
    int status;
    for (uint64_t i = 1; i <= o->warmup; i++) {
        if (!send_request(fd) || !read_response(fd, o->timeout_ms, &length, &status)) {
            char why[sizeof error_msg];
            memcpy(why, error_msg, sizeof why);
            set_error("warm-up request %" PRIu64 ": %s", i, why);
            return false;
        }
    }
    struct timespec first_start = {0}, start, end;
    for (uint64_t i = 1; i <= o->requests; i++) {
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (!send_request(fd) || !read_response(fd, o->timeout_ms, &length, &status)) {
            char why[sizeof error_msg];
            memcpy(why, error_msg, sizeof why);
            set_error("request %" PRIu64 ": %s", i, why);
            return false;
        }
        clock_gettime(CLOCK_MONOTONIC, &end);
        hist_record(&hist, ns_between(&start, &end));
        if (i == 1) {
            first_start = start;
            r->response_bytes = length;
        }
        r->completed = i;
        r->elapsed_ns = ns_between(&first_start, &end);
        if (status < 200 || status > 299) {
            r->non_2xx++;
        }
        if (length != r->response_bytes) {
            r->length_mismatch++;
        }
    }
    return true;
}

/* A JSON string. The messages are ours plus strerror/gai_strerror text, but escape them anyway so
 * the line always parses. */
static void print_json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(out, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

static void print_result(const struct options *o, const struct result *r) {
    printf("{\"format\": \"%s\", \"requests\": %" PRIu64 ", \"warmup\": %" PRIu64 ", \"completed\": %" PRIu64
           ", \"non_2xx\": %" PRIu64 ", \"length_mismatch\": %" PRIu64 ", \"request_bytes\": %zu"
           ", \"response_bytes\": %" PRIu64 ", \"elapsed_ns\": %" PRIu64 ", \"sum_ns\": ",
           FORMAT, o->requests, o->warmup, r->completed, r->non_2xx, r->length_mismatch, request_len,
           r->response_bytes, r->elapsed_ns);
    hist_print_u128(stdout, hist.sum);
    printf(", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"clamped\": %" PRIu64 ", \"error\": ",
           hist_min(&hist), hist_max(&hist), hist.clamped);
    if (r->failed) {
        print_json_string(stdout, error_msg);
    } else {
        fputs("null", stdout);
    }
    fputs(", ", stdout);
    hist_print_json(stdout, &hist);
    fputs("}\n", stdout);
    fflush(stdout);
}

/* --histogram-selftest: lets the Python tests check histogram.h against their own definition. */
static int histogram_selftest(void) {
    char token[32];
    size_t len = 0;
    bool in_token = false, valid = true;
    uint64_t v = 0;
    for (;;) {
        int c = getchar();
        bool space = c == EOF || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (!space) {
            if (len < sizeof token - 1) {
                token[len++] = (char)c;
            }
            in_token = true;
            if (c < '0' || c > '9' || v > (UINT64_MAX - (uint64_t)(c - '0')) / 10) {
                valid = false;
            } else {
                v = v * 10 + (uint64_t)(c - '0');
            }
            continue;
        }
        if (in_token) {
            token[len] = '\0';
            if (!valid) {
                fprintf(stderr, "lean: --histogram-selftest: '%s%s' is not a non-negative integer below 2^64\n",
                        token, len == sizeof token - 1 ? "..." : "");
                return 2;
            }
            hist_record(&hist, v);
        }
        if (c == EOF) {
            break;
        }
        len = 0;
        in_token = false;
        valid = true;
        v = 0;
    }
    printf("{\"count\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"sum_ns\": ", hist.count,
           hist_min(&hist), hist_max(&hist));
    hist_print_u128(stdout, hist.sum);
    printf(", \"clamped\": %" PRIu64 ", ", hist.clamped);
    hist_print_json(stdout, &hist);
    fputs("}\n", stdout);
    return 0;
}

int main(int argc, char **argv) {
    hist_init(&hist);
    if (argc == 2 && strcmp(argv[1], "--histogram-selftest") == 0) {
        return histogram_selftest();
    }
    struct options o;
    parse_args(argc, argv, &o);

    struct result r = {0};
    int fd = connect_to(&o);
    r.failed = fd < 0 || !run(fd, &o, &r);
    if (fd >= 0) {
        close(fd);
    }
    print_result(&o, &r);
    if (r.failed) {
        fprintf(stderr, "lean: %s\n", error_msg);
        return 1;
    }
    return 0;
}
