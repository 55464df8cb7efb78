/*
 * http1.h: one keep-alive HTTP/1.x connection of the lean client, header-only.
 *
 * Connect (with a timeout), send a request's bytes, read exactly one whole response: up to CRLFCRLF,
 * then Content-Length more bytes. Nothing is allocated: the response lands in one static buffer.
 * Every failure writes why into http1_error and returns false or -1, so that the caller can print
 * one line saying what happened.
 *
 * Everything is `static inline`, as in histogram.h, so that a file using only part of it still
 * compiles warning-free.
 */
#ifndef LATENCY_DIFF_HTTP1_H
#define LATENCY_DIFF_HTTP1_H

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* The reference response is about 300 bytes; 64 KiB leaves room for any server's headers. */
#define HTTP1_RESPONSE_MAX (64 * 1024)

static char http1_response[HTTP1_RESPONSE_MAX];
static char http1_error[512];

/* Why the last call failed, for the client's JSON line. */
static inline void http1_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(http1_error, sizeof http1_error, fmt, ap);
    va_end(ap);
}

/* A connect that gives up after the read timeout too, so an unreachable host cannot hang a run. */
static inline int http1_connect(const char *host, const char *port, int timeout_ms) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *addrs;
    int rc = getaddrinfo(host, port, &hints, &addrs);
    if (rc != 0) {
        http1_set_error("cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = addrs; a != NULL; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            http1_set_error("socket: %s", strerror(errno));
            continue;
        }
        int err = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            err = errno;
            if (err == EINPROGRESS) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int n = poll(&p, 1, timeout_ms);
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
        http1_set_error("cannot connect to %s:%s: %s", host, port, strerror(err));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(addrs);
    if (fd < 0) {
        return -1;
    }
    /* Back to blocking, with the timeout on the socket (SO_RCVTIMEO): a read is one recv() that
     * sleeps until the response arrives, as an ordinary client's does, without a poll() before it
     * (one system call a request fewer). A blocking send of a small request into an empty socket
     * buffer returns at once. TCP_NODELAY: each request is one segment, sent now. */
    int one = 1;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0
        || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0
        || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) {
        http1_set_error("cannot set up the socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    http1_error[0] = '\0';
    return fd;
}

static inline bool http1_send(int fd, const char *request, size_t request_len) {
    size_t off = 0;
    while (off < request_len) {
        /* MSG_NOSIGNAL: a server that closed the connection is an error, not a SIGPIPE death. */
        ssize_t n = send(fd, request + off, request_len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET) {
                http1_set_error("the server closed the connection (cannot send the request: %s)", strerror(errno));
            } else {
                http1_set_error("cannot send the request: %s", strerror(errno));
            }
            return false;
        }
        off += (size_t)n;
    }
    return true;
}

/* "HTTP/1.x NNN" followed by a space or the line end; the status code, or -1. */
static inline int http1_parse_status(const char *p, size_t header_len) {
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
static inline long long http1_parse_content_length(const char *p, size_t header_len) {
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
                if (v > HTTP1_RESPONSE_MAX) { /* too big for the buffer anyway; stop before overflow */
                    v = HTTP1_RESPONSE_MAX + 1;
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
 * Reads one whole response into http1_response: up to CRLFCRLF, then exactly Content-Length more
 * bytes. Sets *length and *status. Any byte past the response end is an error: with one request in
 * flight there is nothing else the server may send.
 */
static inline bool http1_read_response(int fd, int timeout_ms, size_t *length, int *status) {
    size_t have = 0;
    size_t header_len = 0;
    size_t total = 0;
    for (;;) {
        ssize_t n = recv(fd, http1_response + have, sizeof http1_response - have, 0);
        if (n == 0) {
            http1_set_error(have == 0 ? "the server closed the connection"
                                : "the server closed the connection in the middle of a response");
            return false;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) { /* SO_RCVTIMEO ran out */
                http1_set_error("no response within %d ms", timeout_ms);
                return false;
            }
            if (errno == ECONNRESET) { /* closed with our request unread: the kernel answers it with a reset */
                http1_set_error(have == 0 ? "the server closed the connection (reset)"
                                    : "the server closed the connection in the middle of a response (reset)");
            } else {
                http1_set_error("cannot read the response: %s", strerror(errno));
            }
            return false;
        }
        size_t before = have;
        have += (size_t)n;
        if (header_len == 0) {
            /* Only the new bytes, plus 3 before them in case CRLFCRLF straddles two reads. */
            size_t from = before >= 3 ? before - 3 : 0;
            const char *crlf2 = memmem(http1_response + from, have - from, "\r\n\r\n", 4);
            if (crlf2 == NULL) {
                if (have == sizeof http1_response) {
                    http1_set_error("no end of the response header within %d bytes", HTTP1_RESPONSE_MAX);
                    return false;
                }
                continue;
            }
            header_len = (size_t)(crlf2 - http1_response) + 4;
            *status = http1_parse_status(http1_response, header_len);
            if (*status < 0) {
                http1_set_error("malformed status line (expected 'HTTP/1.x NNN ...')");
                return false;
            }
            long long content_length = http1_parse_content_length(http1_response, header_len);
            if (content_length < 0) {
                http1_set_error("the response has no valid Content-Length (status %d)", *status);
                return false;
            }
            total = header_len + (size_t)content_length;
            if (total > sizeof http1_response) {
                http1_set_error("a response of %zu bytes is larger than the %d-byte buffer", total, HTTP1_RESPONSE_MAX);
                return false;
            }
        }
        if (have >= total) {
            if (have > total) {
                http1_set_error("server sent bytes after the response (%zu beyond its %zu bytes)", have - total, total);
                return false;
            }
            *length = total;
            return true;
        }
    }
}

static inline uint64_t http1_ns_between(const struct timespec *a, const struct timespec *b) {
    return (uint64_t)(b->tv_sec - a->tv_sec) * UINT64_C(1000000000) + (uint64_t)b->tv_nsec - (uint64_t)a->tv_nsec;
}

#endif
