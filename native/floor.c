/*
 * floor: the bottom rung of latency-diff's baseline ladder, a raw TCP ping-pong responder.
 *
 * What it is for: the Java dummy server is the baseline every HTTP server is compared with, but
 * the dummy itself costs something (a JVM, a byte-by-byte CRLFCRLF scan, Java socket streams).
 * floor answers with exactly the same response bytes as the dummy (rendered from the kit's one
 * reference-response template, with a live Date and the given Server name) and expects the same
 * request bytes, but does no HTTP work per request, so its round trip is what the client and the
 * kernel cost alone: the floor under every other number.
 *
 * How it delimits requests, and its LIMITATION: on each connection only the FIRST request is
 * parsed (scanned for the CRLFCRLF that ends it, within 4096 bytes, or the connection is closed).
 * Its length L is then taken as the length of every later request on that connection: the thread
 * only counts bytes and sends one whole response per L bytes received. This is true for ab and the
 * kit's lean client, which repeat the identical request, and for nothing else: requests of other
 * lengths, bodies or pipelined requests of varying size get wrong answers. Never put floor in
 * front of a general HTTP client.
 *
 * Usage: floor --port P [--host H] [--name NAME] --template FILE   (port 0: any free port)
 * Prints `READY NAME PORT` once it listens (the server contract of the Java servers), then serves
 * each connection on its own detached thread until it is killed (SIGTERM/SIGINT: default action).
 */
#define _GNU_SOURCE /* memmem, CLOCK_REALTIME_COARSE */

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
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

#define FIRST_REQUEST_MAX 4096
#define TEMPLATE_MAX (64 * 1024)
#define DATE_PLACEHOLDER "{date}"
#define SERVER_PLACEHOLDER "{server}"
#define HTTP_DATE_LEN 29 /* "Sun, 22 Nov 2026 06:30:01 GMT" */

struct options {
    const char *host;
    const char *port;
    const char *name;
    const char *template_file;
};

/* The rendered response, shared read-only; each connection copies it and owns its Date bytes. */
static char *response;
static size_t response_len;
static size_t date_offset = SIZE_MAX; /* where the 29 Date bytes are; SIZE_MAX: no {date} */

static void usage(FILE *out) {
    fputs("usage: floor --port P [--host H] [--name NAME] --template FILE\n"
          "\n"
          "Raw TCP responder: answers each request with the reference response rendered from FILE\n"
          "(reference-response.txt), with NAME in Server and a live Date. Only the first request on\n"
          "a connection is parsed; every later one is assumed to have the same length.\n"
          "  --port P        port to listen on, 0 for any free one (printed in the READY line)\n"
          "  --host H        address to bind (default 127.0.0.1)\n"
          "  --name NAME     name in the READY line and the Server header (default floor)\n"
          "  --template FILE the reference response template\n",
          out);
}

static void bad_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("floor: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    usage(stderr);
    exit(2);
}

/* The Java servers' start-failure line: "NAME: failed to start: reason", exit 1. */
static void start_failed(const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: failed to start: ", name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static bool valid_port(const char *s) {
    if (*s == '\0') {
        return false;
    }
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || (v = v * 10 + (*s - '0')) > 65535) {
            return false;
        }
    }
    return true;
}

/* Same rule as the Java ServerOptions: the name goes into a header and the READY line. */
static bool valid_name(const char *s) {
    if (*s == '\0') {
        return false;
    }
    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.'
              || *s == '_' || *s == '-')) {
            return false;
        }
    }
    return true;
}

static void parse_args(int argc, char **argv, struct options *o) {
    *o = (struct options){.host = "127.0.0.1", .name = "floor"};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0) {
            bad_usage("unexpected argument '%s'", arg);
        }
        if (i + 1 >= argc) {
            bad_usage("%s needs a value", arg);
        }
        const char *val = argv[++i];
        if (strcmp(arg, "--port") == 0) {
            if (!valid_port(val)) {
                bad_usage("--port must be a number from 0 to 65535, not '%s'", val);
            }
            o->port = val;
        } else if (strcmp(arg, "--host") == 0) {
            o->host = val;
        } else if (strcmp(arg, "--name") == 0) {
            if (!valid_name(val)) {
                bad_usage("--name must be letters, digits, '.', '_' or '-', not '%s'", val);
            }
            o->name = val;
        } else if (strcmp(arg, "--template") == 0) {
            o->template_file = val;
        } else {
            bad_usage("unknown argument '%s'", arg);
        }
    }
    if (o->port == NULL) {
        bad_usage("--port is required");
    }
    if (o->template_file == NULL) {
        bad_usage("--template is required");
    }
}

/* IMF-fixdate with C-locale names, whatever the process locale: always 29 bytes, no NUL. */
static void format_http_date(time_t t, char *out) {
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[HTTP_DATE_LEN + 16];
    snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    memcpy(out, buf, HTTP_DATE_LEN);
}

/* Appends n bytes to the response being rendered (sized generously from the template). */
static void append(char *dst, size_t cap, size_t *len, const char *src, size_t n) {
    if (*len + n <= cap) {
        memcpy(dst + *len, src, n);
    }
    *len += n; /* checked by the caller against cap */
}

/*
 * Renders the template once, the way ReferenceResponse.java does, so the bytes equal the Java
 * dummy's: leading '#' lines dropped, line ends normalised to CRLF, the status line and the header
 * lines (with {server} and {date} replaced in them) each ending in CRLF, the empty line, then the
 * body (the remaining lines joined with '\n' and trailing white space stripped, as Java's
 * stripTrailing(); the reference body is the one line HelloWorld). Content-Length is checked
 * against the body, as Java does. Returns NULL or a reason.
 */
static const char *render(const char *text, size_t text_len, const char *name) {
    size_t cap = text_len * 2 + strlen(name) * 8 + 256;
    response = malloc(cap);
    if (response == NULL) {
        return "out of memory";
    }
    response_len = 0;
    const char *p = text, *end = text + text_len;
    bool leading = true, in_body = false;
    size_t body_start = 0, lines = 0, body_lines = 0;
    long declared_length = -1;
    while (p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        size_t n = (size_t)(line_end - p);
        if (n > 0 && p[n - 1] == '\r') {
            n--;
        }
        if (leading && n > 0 && p[0] == '#') {
            p = line_end + 1;
            continue;
        }
        leading = false;
        if (in_body) {
            if (body_lines++ > 0) {
                append(response, cap, &response_len, "\n", 1);
            }
            append(response, cap, &response_len, p, n);
        } else if (n == 0) {
            if (lines == 0) {
                return "no status line";
            }
            append(response, cap, &response_len, "\r\n", 2);
            body_start = response_len;
            in_body = true;
        } else {
            if (lines++ == 0 && (n < 9 || memcmp(p, "HTTP/1.1 ", 9) != 0)) {
                return "the first line is not an HTTP/1.1 status line";
            }
            if (lines > 1 && (memmem(p, n, ": ", 2) == NULL || p[0] == ':')) {
                return "a header line without ': '";
            }
            if (n > 16 && strncasecmp(p, "Content-Length: ", 16) == 0) {
                declared_length = strtol(p + 16, NULL, 10);
            }
            /* Copy the line, replacing the placeholders (only in header lines, as Java does). */
            const char *s = p, *line_stop = p + n;
            while (s < line_stop) {
                const char *date = memmem(s, (size_t)(line_stop - s), DATE_PLACEHOLDER, strlen(DATE_PLACEHOLDER));
                const char *server = memmem(s, (size_t)(line_stop - s), SERVER_PLACEHOLDER, strlen(SERVER_PLACEHOLDER));
                const char *next = date && (!server || date < server) ? date : server;
                if (lines == 1 || next == NULL) {
                    append(response, cap, &response_len, s, (size_t)(line_stop - s));
                    break;
                }
                append(response, cap, &response_len, s, (size_t)(next - s));
                if (next == date) {
                    if (date_offset != SIZE_MAX) {
                        return "more than one {date}";
                    }
                    date_offset = response_len;
                    char now[HTTP_DATE_LEN];
                    format_http_date(time(NULL), now);
                    append(response, cap, &response_len, now, HTTP_DATE_LEN);
                    s = date + strlen(DATE_PLACEHOLDER);
                } else {
                    append(response, cap, &response_len, name, strlen(name));
                    s = server + strlen(SERVER_PLACEHOLDER);
                }
            }
            append(response, cap, &response_len, "\r\n", 2);
        }
        if (nl == NULL) {
            break;
        }
        p = nl + 1;
    }
    if (response_len > cap) {
        return "the rendered response is too large"; /* only with a huge --name in many {server} */
    }
    if (!in_body) {
        return "no empty line before the body";
    }
    while (response_len > body_start
           && (response[response_len - 1] == ' ' || response[response_len - 1] == '\t'
               || response[response_len - 1] == '\r' || response[response_len - 1] == '\n')) {
        response_len--;
    }
    if (declared_length < 0) {
        return "no Content-Length header";
    }
    if ((size_t)declared_length != response_len - body_start) {
        return "Content-Length does not match the body's length";
    }
    return NULL;
}

/* Reading and rendering the template is part of checking the arguments: a bad one is a usage error. */
static void load_template(const struct options *o) {
    FILE *f = fopen(o->template_file, "rb");
    if (f == NULL) {
        bad_usage("--template %s: %s", o->template_file, strerror(errno));
    }
    static char text[TEMPLATE_MAX];
    size_t n = fread(text, 1, sizeof text, f);
    bool too_big = n == sizeof text && fgetc(f) != EOF;
    bool read_error = ferror(f);
    fclose(f);
    if (read_error || too_big) {
        bad_usage("--template %s: %s", o->template_file, read_error ? "read error" : "too large");
    }
    const char *why = render(text, n, o->name);
    if (why != NULL) {
        bad_usage("--template %s: %s", o->template_file, why);
    }
}

/* Writes the whole buffer; false when the client has gone. */
static bool send_all(int fd, const char *p, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL); /* a gone client: EPIPE, not SIGPIPE */
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

struct connection {
    int fd;
    time_t date_second; /* the second the Date bytes of `out` show */
    char out[];         /* this thread's own copy of the response: its Date is rewritten in place */
};

/* Keeps the Date live: a coarse clock read (vDSO, no syscall) per response, a reformat per second. */
static bool respond(struct connection *c) {
    if (date_offset != SIZE_MAX) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec != c->date_second) {
            format_http_date(now.tv_sec, c->out + date_offset);
            c->date_second = now.tv_sec;
        }
    }
    return send_all(c->fd, c->out, response_len);
}

static ssize_t recv_retry(int fd, char *buf, size_t len) {
    ssize_t n;
    do {
        n = recv(fd, buf, len, 0);
    } while (n < 0 && errno == EINTR);
    return n;
}

static void serve(struct connection *c) {
    char buf[FIRST_REQUEST_MAX];
    size_t have = 0, request_len = 0;
    /* The first request: scan for CRLFCRLF (only the new bytes plus 3 before them). */
    while (request_len == 0) {
        if (have == sizeof buf) {
            return; /* no request end within 4096 bytes: not a client floor can serve */
        }
        ssize_t n = recv_retry(c->fd, buf + have, sizeof buf - have);
        if (n <= 0) {
            return;
        }
        size_t from = have >= 3 ? have - 3 : 0;
        have += (size_t)n;
        const char *end = memmem(buf + from, have - from, "\r\n\r\n", 4);
        if (end != NULL) {
            request_len = (size_t)(end - buf) + 4;
        }
    }
    /* From here on only bytes are counted: every request is request_len long (see the top). */
    size_t pending = have;
    for (;;) {
        while (pending >= request_len) {
            if (!respond(c)) {
                return;
            }
            pending -= request_len;
        }
        ssize_t n = recv_retry(c->fd, buf, sizeof buf);
        if (n <= 0) {
            return;
        }
        pending += (size_t)n;
    }
}

static void *connection_thread(void *arg) {
    struct connection *c = arg;
    serve(c);
    close(c->fd);
    free(c);
    return NULL;
}

static int listen_on(const struct options *o) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *addr;
    int rc = getaddrinfo(o->host, o->port, &hints, &addr);
    if (rc != 0) {
        start_failed(o->name, "cannot resolve %s: %s", o->host, gai_strerror(rc));
    }
    int fd = socket(addr->ai_family, addr->ai_socktype | SOCK_CLOEXEC, addr->ai_protocol);
    if (fd < 0) {
        start_failed(o->name, "socket: %s", strerror(errno));
    }
    /* SO_REUSEADDR: restarting on the port of a server just stopped (TIME_WAIT) must work. */
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) {
        start_failed(o->name, "SO_REUSEADDR: %s", strerror(errno));
    }
    if (bind(fd, addr->ai_addr, addr->ai_addrlen) < 0) {
        if (errno == EADDRINUSE) {
            /* Word for word what the Java servers print for a busy port (Launcher.describe). */
            fprintf(stderr, "%s: cannot listen on %s:%s (%s): is the port in use?\n", o->name, o->host, o->port,
                    strerror(errno));
            exit(1);
        }
        start_failed(o->name, "cannot bind %s:%s: %s", o->host, o->port, strerror(errno));
    }
    freeaddrinfo(addr);
    if (listen(fd, SOMAXCONN) < 0) {
        start_failed(o->name, "listen: %s", strerror(errno));
    }
    return fd;
}

static int bound_port(int fd, const char *name) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        start_failed(name, "getsockname: %s", strerror(errno));
    }
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

int main(int argc, char **argv) {
    struct options o;
    parse_args(argc, argv, &o);
    load_template(&o);

    int listener = listen_on(&o);
    pthread_attr_t detached;
    if (pthread_attr_init(&detached) != 0 || pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED) != 0) {
        start_failed(o.name, "pthread attributes");
    }
    printf("READY %s %d\n", o.name, bound_port(listener, o.name));
    fflush(stdout);

    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            /* E.g. out of file descriptors: say so, pause so this cannot spin, keep serving. */
            fprintf(stderr, "%s: accept failed: %s\n", o.name, strerror(errno));
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* each response one segment, now */
        struct connection *c = malloc(sizeof *c + response_len);
        pthread_t thread;
        int err = c == NULL ? ENOMEM : 0;
        if (c != NULL) {
            c->fd = fd;
            c->date_second = -1; /* rewrite the Date before the first response */
            memcpy(c->out, response, response_len);
            err = pthread_create(&thread, &detached, connection_thread, c);
        }
        if (err != 0) {
            fprintf(stderr, "%s: cannot serve a connection: %s\n", o.name, strerror(err));
            free(c);
            close(fd);
        }
    }
}
