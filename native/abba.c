/*
 * abba: the independent client of latency-diff's `independent` benchmark.
 *
 * What it is for: a second, separately written measurement of a server's round trip against the dummy's,
 * to check the kit's ratio from outside its own design (docs/benchmarks.md, "independent"). It shares no
 * code with the kit's lean client (lean.c, http1.h, histogram.h): its own connection handling, its own
 * response parsing, and it times whole runs of requests, not each request, so that the client does even
 * less between two requests.
 *
 * It holds two keep-alive connections, A and B, one request in flight at a time. First W requests to
 * each, alternating runs of R (the warm-up, on the CPU this runs on). Then N quads of four runs of R
 * requests in the order A B B A; each run is timed from before its first request to after its last
 * response (CLOCK_MONOTONIC).
 *
 * Every response is checked: status 2xx, a Content-Length, the same total length as the first response
 * on that connection, nothing after it. A non-2xx status or a changed length is counted and the run goes
 * on; a closed connection, a timeout, a response without Content-Length or bytes after a response end it.
 *
 * Usage: abba --host H --port-a A --port-b B --request FILE --run R --quads N [--warmup W]
 *             [--timeout-ms T]
 * Output: one JSON line ("latency-diff/abba/1"), also after an error: per side the run times in ns, and
 * the responses completed, non-2xx and changed in length, warm-up included (a bad warm-up response makes
 * the measurement as invalid as a bad measured one), and the first response's length. Exit 0 when every request
 * completed, 1 after an error (also on stderr), 2 for a bad command line.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FORMAT "latency-diff/abba/1"
#define BUF_MAX 65536
#define QUADS_MAX 1000000

struct conn {
    int fd;
    char buf[BUF_MAX];
    size_t have;
    uint64_t completed, non_2xx, length_changed, length;
    uint64_t *run_ns;
    size_t runs;
};

static struct conn side[2];
static char request[BUF_MAX];
static size_t request_len;
static char error[512];

static void fail(const char *fmt, ...) {
    if (error[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, sizeof error, fmt, ap);
    va_end(ap);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int open_conn(struct conn *c, const char *host, const char *port, int timeout_ms) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fail("cannot resolve %s:%s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    c->fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int one = 1;
    if (c->fd < 0 || setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0
        || setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0
        || connect(c->fd, res->ai_addr, res->ai_addrlen) < 0
        || setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) {
        fail("cannot connect to %s:%s: %s", host, port, strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    return 0;
}

/* The length of the response's head (up to and with the blank line) and its Content-Length; 0 while the
 * head is incomplete, -1 (with the error set) for a response that cannot be delimited. */
static long head_end(struct conn *c, uint64_t *content_length, int *status) {
    char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
    if (end == NULL) {
        if (c->have == sizeof c->buf) {
            fail("a response head longer than %d bytes", BUF_MAX);
            return -1;
        }
        return 0;
    }
    size_t head = (size_t)(end - c->buf) + 4;
    if (c->have < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0) {
        fail("not an HTTP/1.x status line");
        return -1;
    }
    *status = atoi(c->buf + 9);
    int found = 0;
    for (char *line = memchr(c->buf, '\n', head); line && line + 1 < c->buf + head; line = memchr(line + 1, '\n',
         (size_t)(c->buf + head - line - 1))) {
        if (strncasecmp(line + 1, "Content-Length:", 15) == 0) {
            *content_length = strtoull(line + 16, NULL, 10);
            found = 1;
        }
    }
    if (!found) {
        fail("a response without Content-Length (this client delimits responses by it only)");
        return -1;
    }
    return (long)head;
}

/* One request and its whole response. 0, or -1 with the error set. */
static int exchange(struct conn *c) {
    ssize_t sent = send(c->fd, request, request_len, MSG_NOSIGNAL);
    if (sent != (ssize_t)request_len) {
        fail("cannot send the request: %s", sent < 0 ? strerror(errno) : "short send");
        return -1;
    }
    uint64_t content_length = 0;
    int status = 0;
    long head = 0;
    for (;;) {
        if (head == 0 && c->have > 0) {
            head = head_end(c, &content_length, &status);
            if (head < 0) {
                return -1;
            }
        }
        if (head > 0 && c->have >= (size_t)head + content_length) {
            break;
        }
        if (c->have == sizeof c->buf) {
            fail("a response longer than %d bytes", BUF_MAX);
            return -1;
        }
        ssize_t n = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            fail("the server closed the connection");
            return -1;
        }
        if (n < 0) {
            fail(errno == EAGAIN || errno == EWOULDBLOCK ? "no response within the timeout"
                                                         : "cannot read the response: %s", strerror(errno));
            return -1;
        }
        c->have += (size_t)n;
    }
    uint64_t total = (uint64_t)head + content_length;
    if (c->have != total) {
        fail("%zu bytes after a response (one request is in flight at a time)", c->have - (size_t)total);
        return -1;
    }
    c->have = 0;
    if (c->completed == 0) {
        c->length = total;
    } else if (total != c->length) {
        c->length_changed++;
    }
    if (status < 200 || status > 299) {
        c->non_2xx++;
    }
    c->completed++;
    return 0;
}

static int run(struct conn *c, uint64_t requests, int timed) {
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < requests; i++) {
        if (exchange(c) < 0) {
            return -1;
        }
    }
    if (timed) {
        c->run_ns[c->runs++] = now_ns() - t0;
    }
    return 0;
}

static void print_side(const struct conn *c) {
    printf("{\"completed\":%" PRIu64 ",\"non_2xx\":%" PRIu64 ",\"length_changed\":%" PRIu64
           ",\"response_bytes\":%" PRIu64 ",\"run_ns\":[", c->completed, c->non_2xx, c->length_changed, c->length);
    for (size_t i = 0; i < c->runs; i++) {
        printf(i ? ",%" PRIu64 : "%" PRIu64, c->run_ns[i]);
    }
    printf("]}");
}

static void print_json(uint64_t run_len, uint64_t warmup) {
    printf("{\"format\":\"" FORMAT "\",\"run\":%" PRIu64 ",\"warmup\":%" PRIu64 ",\"a\":", run_len, warmup);
    print_side(&side[0]);
    printf(",\"b\":");
    print_side(&side[1]);
    printf(",\"error\":");
    if (error[0]) {
        putchar('"');
        for (const char *p = error; *p; p++) {
            if (*p == '"' || *p == '\\') {
                putchar('\\');
            }
            putchar((unsigned char)*p >= 0x20 ? *p : ' ');
        }
        putchar('"');
    } else {
        printf("null");
    }
    printf("}\n");
}

static int usage(const char *why) {
    fprintf(stderr, "abba: %s\nusage: abba --host H --port-a A --port-b B --request FILE --run R --quads N "
                    "[--warmup W] [--timeout-ms T]\n", why);
    return 2;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || *s == '-') {
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *port[2] = {NULL, NULL}, *file = NULL;
    uint64_t run_len = 0, quads = 0, warmup = 0, timeout_ms = 5000;
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("abba: times runs of R requests to two keep-alive HTTP servers, A and B, in the order A B B A\n"
               "usage: abba --host H --port-a A --port-b B --request FILE --run R --quads N [--warmup W] "
               "[--timeout-ms T]\n");
        return 0;
    }
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            return usage("every option takes a value");
        }
        const char *o = argv[i], *v = argv[i + 1];
        int bad = 0;
        if (strcmp(o, "--host") == 0) {
            host = v;
        } else if (strcmp(o, "--port-a") == 0) {
            port[0] = v;
        } else if (strcmp(o, "--port-b") == 0) {
            port[1] = v;
        } else if (strcmp(o, "--request") == 0) {
            file = v;
        } else if (strcmp(o, "--run") == 0) {
            bad = parse_u64(v, &run_len);
        } else if (strcmp(o, "--quads") == 0) {
            bad = parse_u64(v, &quads);
        } else if (strcmp(o, "--warmup") == 0) {
            bad = parse_u64(v, &warmup);
        } else if (strcmp(o, "--timeout-ms") == 0) {
            bad = parse_u64(v, &timeout_ms);
        } else {
            return usage("unknown option");
        }
        if (bad) {
            return usage("a count must be a whole number");
        }
    }
    if (!port[0] || !port[1] || !file || run_len == 0 || quads == 0 || quads > QUADS_MAX || timeout_ms == 0) {
        return usage("--port-a, --port-b, --request, --run >= 1 and --quads 1..1000000 are required");
    }
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "abba: cannot read %s: %s\n", file, strerror(errno));
        return 2;
    }
    request_len = fread(request, 1, sizeof request, f);
    fclose(f);
    if (request_len == 0) {
        return usage("the request file is empty");
    }
    for (int s = 0; s < 2; s++) {
        side[s].run_ns = calloc(2 * quads, sizeof(uint64_t));
        if (!side[s].run_ns) {
            fprintf(stderr, "abba: out of memory\n");
            return 2;
        }
    }
    int rc = 0;
    if (open_conn(&side[0], host, port[0], (int)timeout_ms) < 0 || open_conn(&side[1], host, port[1],
                                                                              (int)timeout_ms) < 0) {
        rc = 1;
    }
    /* The warm-up: runs of R to each side in turn, W requests to each. */
    for (uint64_t done = 0; rc == 0 && done < warmup; done += run_len) {
        uint64_t n = warmup - done < run_len ? warmup - done : run_len;
        if (run(&side[0], n, 0) < 0 || run(&side[1], n, 0) < 0) {
            rc = 1;
        }
    }
    static const int order[4] = {0, 1, 1, 0};
    for (uint64_t q = 0; rc == 0 && q < quads; q++) {
        for (int k = 0; k < 4 && rc == 0; k++) {
            if (run(&side[order[k]], run_len, 1) < 0) {
                rc = 1;
            }
        }
    }
    print_json(run_len, warmup);
    if (rc) {
        fprintf(stderr, "abba: %s\n", error);
    }
    return rc;
}
