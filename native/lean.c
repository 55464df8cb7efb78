/*
 * lean: the lean HTTP client of latency-diff.
 *
 * What it is for: the kit measures servers the way the 2014 study did, with `ab -k -c1`. ab only
 * reports a mean ("time per request") and does work of its own between requests. lean sends the
 * same request bytes over a keep-alive connection, strictly one request in flight, but times every
 * round trip on its own and keeps the whole distribution (histogram.h), while doing as little as
 * possible in between: no allocation, no printing, and only the HTTP parsing needed to know where a
 * response ends (http1.h).
 *
 * Two modes:
 * - one connection (--port): W untimed requests, then N timed ones into one histogram. Used for
 *   warm-ups and for single blocks. Its elapsed_ns / requests is comparable with ab's time per request.
 * - interleaved (--port A --interleave B): two connections, A and B, held at once. After W untimed
 *   requests to each, N timed requests go to each in runs of R requests, in ABBA order (A B B A, then
 *   B A A B, ...), so that a drift of the machine lands on both alike and cancels in B - A. Every S
 *   requests per side close a *segment*: one histogram per side, written out at the end.
 *
 * Usage: lean --host H --port P --request FILE --requests N [--warmup W] [--timeout-ms T]
 *        lean --host H --port A --interleave B --request FILE --requests N --run R --segment S
 *             [--warmup W] [--timeout-ms T]
 *        lean --histogram-selftest   (records stdin's integers, prints the histogram: for tests)
 *
 * Output: always exactly one JSON line on stdout ("latency-diff/lean/1", interleaved:
 * "latency-diff/lean-pair/1"), also after an error, with what was counted up to it. Exit 0 when all
 * requests completed, 1 after an error (which is also printed to stderr), 2 for a bad command line.
 *
 * Like ab, non-2xx statuses and responses whose length differs from the first measured one are
 * counted and the run goes on; anything that makes the byte stream untrustworthy (closed
 * connection, timeout, bytes after a response, a response we cannot delimit) ends the run.
 */
#define _GNU_SOURCE /* memmem */

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "histogram.h"
#include "http1.h"

#define FORMAT "latency-diff/lean/1"
#define PAIR_FORMAT "latency-diff/lean-pair/1"
#define REQUEST_MAX (64 * 1024)
#define DEFAULT_TIMEOUT_MS 5000
/* A segment's sum of round trips must fit 64 bits: at most 2^40 ns each, so at most 2^23 of them. */
#define SEGMENT_MAX (UINT64_C(1) << 23)

struct options {
    const char *host;
    const char *port;
    const char *port_b; /* interleaved mode: the second connection's port */
    const char *request_file;
    uint64_t requests;
    uint64_t warmup;
    uint64_t run;     /* interleaved: requests in a row to one side */
    uint64_t segment; /* interleaved: requests per side in one segment */
    int timeout_ms;
};

/* What one connection has seen. */
struct side {
    uint64_t completed;
    uint64_t non_2xx;
    uint64_t length_mismatch;
    uint64_t response_bytes; /* length of the first measured response */
};

/* One side's histogram of one segment, compacted: its buckets are entries[first .. first + n). */
struct segment_hist {
    uint64_t count, sum_ns, min_ns, max_ns, clamped;
    size_t first, n;
};

/* Static, not on the stack or heap: allocated once, before anything is timed. */
static struct histogram hist[2];
static char request_buf[REQUEST_MAX];
static size_t request_len;
static char error_msg[sizeof http1_error + 64];
/* Interleaved mode: every finished segment's two histograms, and their buckets (index, count). */
static struct segment_hist *segments;
static uint32_t (*entries)[2];
static size_t entries_used;

static void usage(FILE *out) {
    fputs("usage: lean --host H --port P --request FILE --requests N [--warmup W] [--timeout-ms T]\n"
          "       lean --host H --port A --interleave B --request FILE --requests N --run R --segment S\n"
          "            [--warmup W] [--timeout-ms T]\n"
          "       lean --histogram-selftest\n"
          "\n"
          "Sends the bytes of FILE as one HTTP request over one keep-alive TCP connection, W times\n"
          "to warm up (default 0) and then N times measured, one request in flight, and prints one\n"
          "JSON line: counts, elapsed time and a histogram of the round trips in nanoseconds.\n"
          "  --interleave B          hold a second connection, to port B, and alternate: W untimed\n"
          "                          requests to each, then N timed ones to each in runs of R in\n"
          "                          ABBA order, with one histogram per side every S requests per\n"
          "                          side (S a multiple of 2R, N a multiple of S)\n"
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

static const char *port_value(const char *arg, const char *val) {
    uint64_t v;
    if (!parse_u64(val, 1, 65535, &v)) {
        bad_usage("%s must be a number from 1 to 65535, not '%s'", arg, val);
    }
    return val;
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
            o->port = port_value(arg, val);
        } else if (strcmp(arg, "--interleave") == 0) {
            o->port_b = port_value(arg, val);
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
        } else if (strcmp(arg, "--run") == 0) {
            if (!parse_u64(val, 1, SEGMENT_MAX, &o->run)) {
                bad_usage("--run must be a positive integer up to %" PRIu64 ", not '%s'", SEGMENT_MAX, val);
            }
        } else if (strcmp(arg, "--segment") == 0) {
            if (!parse_u64(val, 2, SEGMENT_MAX, &o->segment)) {
                bad_usage("--segment must be an integer from 2 to %" PRIu64 ", not '%s'", SEGMENT_MAX, val);
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
    if (o->port_b == NULL && (o->run || o->segment)) {
        bad_usage("--run and --segment go with --interleave");
    }
    if (o->port_b != NULL) {
        if (!o->run || !o->segment) {
            bad_usage("--interleave needs --run and --segment");
        }
        if (o->segment % (2 * o->run) != 0) {
            bad_usage("--segment %" PRIu64 " is not a multiple of 2 x --run (%" PRIu64 "): an ABBA quad sends 2R "
                      "requests to each side", o->segment, 2 * o->run);
        }
        if (o->requests % o->segment != 0) {
            bad_usage("--requests %" PRIu64 " is not a multiple of --segment %" PRIu64, o->requests, o->segment);
        }
    }
    read_request_file(o->request_file);
}

/* One request and its whole response on fd. */
static bool exchange(int fd, int timeout_ms, size_t *length, int *status) {
    return http1_send(fd, request_buf, request_len) && http1_read_response(fd, timeout_ms, length, status);
}

/* Counts one measured response of a side. */
static void count_response(struct side *s, size_t length, int status) {
    s->completed++;
    if (s->completed == 1) {
        s->response_bytes = length;
    }
    if (status < 200 || status > 299) {
        s->non_2xx++;
    }
    if (length != s->response_bytes) {
        s->length_mismatch++;
    }
}

/* The failed request's place in front of http1's reason: "request 7 to b: the server closed the connection". */
static void fail(const char *what, const char *side, uint64_t i) {
    snprintf(error_msg, sizeof error_msg, "%s %" PRIu64 "%s%s: %s", what, i, *side ? " to " : "", side, http1_error);
}

/* One connection: warm-up, then the measured loop. Returns false on the first error (error_msg says which). */
static bool run_single(int fd, const struct options *o, struct side *r, uint64_t *elapsed_ns) {
    size_t length;
    int status;
    for (uint64_t i = 1; i <= o->warmup; i++) {
        if (!exchange(fd, o->timeout_ms, &length, &status)) {
            fail("warm-up request", "", i);
            return false;
        }
    }
    struct timespec first_start = {0}, start, end;
    for (uint64_t i = 1; i <= o->requests; i++) {
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (!exchange(fd, o->timeout_ms, &length, &status)) {
            fail("request", "", i);
            return false;
        }
        clock_gettime(CLOCK_MONOTONIC, &end);
        hist_record(&hist[0], http1_ns_between(&start, &end));
        if (i == 1) {
            first_start = start;
        }
        count_response(r, length, status);
        *elapsed_ns = http1_ns_between(&first_start, &end);
    }
    return true;
}

/* Moves a side's segment histogram into the compact store and empties it for the next segment. */
static void close_segment_side(struct histogram *h, struct segment_hist *out) {
    *out = (struct segment_hist){.count = h->count, .sum_ns = (uint64_t)h->sum, .min_ns = hist_min(h),
                                 .max_ns = hist_max(h), .clamped = h->clamped, .first = entries_used};
    if (h->count) {
        /* Only the index range between min and max can hold values: no scan of the whole array. */
        for (unsigned i = hist_index(h->min); i <= hist_index(h->max); i++) {
            if (h->counts[i]) {
                entries[entries_used][0] = i;
                entries[entries_used][1] = (uint32_t)h->counts[i];
                entries_used++;
                h->counts[i] = 0;
            }
        }
    }
    out->n = entries_used - out->first;
    h->count = 0;
    h->sum = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->clamped = 0;
}

static const char *const SIDE_NAME[2] = {"a", "b"};

/* Two connections: warm-up, then runs of R requests in ABBA order, a segment closed every S per side. */
static bool run_interleaved(const int fd[2], const struct options *o, struct side r[2], uint64_t *elapsed_ns,
                            size_t *segments_done) {
    static const int quad[2][4] = {{0, 1, 1, 0}, {1, 0, 0, 1}};
    size_t length;
    int status;
    for (uint64_t i = 1; i <= o->warmup; i++) {
        for (int s = 0; s < 2; s++) {
            if (!exchange(fd[s], o->timeout_ms, &length, &status)) {
                fail("warm-up request", SIDE_NAME[s], i);
                return false;
            }
        }
    }
    struct timespec first_start, start, end;
    clock_gettime(CLOCK_MONOTONIC, &first_start);
    uint64_t quads = o->requests / (2 * o->run);
    uint64_t quads_per_segment = o->segment / (2 * o->run);
    for (uint64_t q = 0; q < quads; q++) {
        for (int slot = 0; slot < 4; slot++) {
            int s = quad[q % 2][slot];
            for (uint64_t k = 0; k < o->run; k++) {
                clock_gettime(CLOCK_MONOTONIC, &start);
                if (!exchange(fd[s], o->timeout_ms, &length, &status)) {
                    fail("request", SIDE_NAME[s], r[s].completed + 1);
                    return false;
                }
                clock_gettime(CLOCK_MONOTONIC, &end);
                hist_record(&hist[s], http1_ns_between(&start, &end));
                count_response(&r[s], length, status);
            }
        }
        *elapsed_ns = http1_ns_between(&first_start, &end);
        if ((q + 1) % quads_per_segment == 0) {
            for (int s = 0; s < 2; s++) {
                close_segment_side(&hist[s], &segments[2 * *segments_done + (size_t)s]);
            }
            ++*segments_done;
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

static void print_error(bool failed) {
    fputs(", \"error\": ", stdout);
    if (failed) {
        print_json_string(stdout, error_msg);
    } else {
        fputs("null", stdout);
    }
}

static void print_single(const struct options *o, const struct side *r, uint64_t elapsed_ns, bool failed) {
    printf("{\"format\": \"%s\", \"requests\": %" PRIu64 ", \"warmup\": %" PRIu64 ", \"completed\": %" PRIu64
           ", \"non_2xx\": %" PRIu64 ", \"length_mismatch\": %" PRIu64 ", \"request_bytes\": %zu"
           ", \"response_bytes\": %" PRIu64 ", \"elapsed_ns\": %" PRIu64 ", \"sum_ns\": ",
           FORMAT, o->requests, o->warmup, r->completed, r->non_2xx, r->length_mismatch, request_len,
           r->response_bytes, elapsed_ns);
    hist_print_u128(stdout, hist[0].sum);
    printf(", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"clamped\": %" PRIu64, hist_min(&hist[0]),
           hist_max(&hist[0]), hist[0].clamped);
    print_error(failed);
    fputs(", ", stdout);
    hist_print_json(stdout, &hist[0]);
    fputs("}\n", stdout);
    fflush(stdout);
}

static void print_segment_side(const struct segment_hist *h) {
    printf("{\"count\": %" PRIu64 ", \"sum_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
           ", \"clamped\": %" PRIu64 ", \"buckets\": [", h->count, h->sum_ns, h->min_ns, h->max_ns, h->clamped);
    for (size_t e = h->first; e < h->first + h->n; e++) {
        uint64_t lo, hi;
        hist_bounds(entries[e][0], &lo, &hi);
        printf("%s[%" PRIu64 ", %" PRIu64 ", %" PRIu32 "]", e == h->first ? "" : ", ", lo, hi, entries[e][1]);
    }
    fputs("]}", stdout);
}

static void print_interleaved(const struct options *o, const struct side r[2], uint64_t elapsed_ns,
                              size_t segments_done, bool failed) {
    printf("{\"format\": \"%s\", \"requests\": %" PRIu64 ", \"warmup\": %" PRIu64 ", \"run\": %" PRIu64
           ", \"segment\": %" PRIu64 ", \"request_bytes\": %zu, \"elapsed_ns\": %" PRIu64,
           PAIR_FORMAT, o->requests, o->warmup, o->run, o->segment, request_len, elapsed_ns);
    const char *ports[2] = {o->port, o->port_b};
    for (int s = 0; s < 2; s++) {
        printf(", \"%s\": {\"port\": %s, \"completed\": %" PRIu64 ", \"non_2xx\": %" PRIu64
               ", \"length_mismatch\": %" PRIu64 ", \"response_bytes\": %" PRIu64 "}",
               SIDE_NAME[s], ports[s], r[s].completed, r[s].non_2xx, r[s].length_mismatch, r[s].response_bytes);
    }
    print_error(failed);
    fputs(", \"segments\": [", stdout);
    for (size_t g = 0; g < segments_done; g++) {
        fputs(g ? ", {\"a\": " : "{\"a\": ", stdout);
        print_segment_side(&segments[2 * g]);
        fputs(", \"b\": ", stdout);
        print_segment_side(&segments[2 * g + 1]);
        fputc('}', stdout);
    }
    fputs("]}\n", stdout);
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
            hist_record(&hist[0], v);
        }
        if (c == EOF) {
            break;
        }
        len = 0;
        in_token = false;
        valid = true;
        v = 0;
    }
    printf("{\"count\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"sum_ns\": ", hist[0].count,
           hist_min(&hist[0]), hist_max(&hist[0]));
    hist_print_u128(stdout, hist[0].sum);
    printf(", \"clamped\": %" PRIu64 ", ", hist[0].clamped);
    hist_print_json(stdout, &hist[0]);
    fputs("}\n", stdout);
    return 0;
}

/* Opens a connection; on failure error_msg names the side (interleaved mode) and the reason. */
static int open_side(const struct options *o, const char *port, const char *side) {
    int fd = http1_connect(o->host, port, o->timeout_ms);
    if (fd < 0) {
        snprintf(error_msg, sizeof error_msg, "%s%s%s", side, *side ? ": " : "", http1_error);
    }
    return fd;
}

/* Interleaved mode's stores, allocated and touched before anything is timed. */
static void allocate_segments(const struct options *o) {
    size_t n = (size_t)(o->requests / o->segment);
    size_t per_side = o->segment < HIST_BUCKETS ? (size_t)o->segment : HIST_BUCKETS;
    segments = calloc(2 * n, sizeof *segments);
    entries = calloc(2 * n * per_side, sizeof *entries);
    if (segments == NULL || entries == NULL) {
        bad_usage("--requests %" PRIu64 " / --segment %" PRIu64 ": too many segments to keep in memory",
                  o->requests, o->segment);
    }
    memset(entries, 0, 2 * n * per_side * sizeof *entries); /* fault the pages in now, not while timing */
}

int main(int argc, char **argv) {
    hist_init(&hist[0]);
    hist_init(&hist[1]);
    if (argc == 2 && strcmp(argv[1], "--histogram-selftest") == 0) {
        return histogram_selftest();
    }
    struct options o;
    parse_args(argc, argv, &o);
    struct side r[2] = {{0}, {0}};
    uint64_t elapsed_ns = 0;
    bool failed;
    if (o.port_b == NULL) {
        int fd = open_side(&o, o.port, "");
        failed = fd < 0 || !run_single(fd, &o, &r[0], &elapsed_ns);
        if (fd >= 0) {
            close(fd);
        }
        print_single(&o, &r[0], elapsed_ns, failed);
    } else {
        allocate_segments(&o);
        size_t done = 0;
        int fd[2] = {open_side(&o, o.port, "a"), -1};
        if (fd[0] >= 0) {
            fd[1] = open_side(&o, o.port_b, "b");
        }
        failed = fd[0] < 0 || fd[1] < 0 || !run_interleaved(fd, &o, r, &elapsed_ns, &done);
        for (int s = 0; s < 2; s++) {
            if (fd[s] >= 0) {
                close(fd[s]);
            }
        }
        print_interleaved(&o, r, elapsed_ns, done, failed);
    }
    if (failed) {
        fprintf(stderr, "lean: %s\n", error_msg);
        return 1;
    }
    return 0;
}
