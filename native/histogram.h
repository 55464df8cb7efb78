/*
 * histogram.h: a log-linear latency histogram of integer nanoseconds, header-only.
 *
 * Why this shape: the lean client records every round trip (10^5..10^7 of them) and must do it in
 * a few instructions without allocating, yet keep the whole distribution so the Python side can
 * compute percentiles and compare runs later. A log-linear (HdrHistogram-like) layout gives a fixed
 * relative error (at most 1/256) over the whole range from 0 ns to about 18 minutes in one fixed
 * 66 KiB array.
 *
 * The layout is part of the output format (latency_diff reads the buckets back), so it is exact:
 *   v < 256:   index v; the bucket holds exactly [v, v].
 *   v >= 256:  b = floor(log2 v), shift = b - 8, m = v >> shift (256 <= m <= 511),
 *              index = shift * 256 + m; the bucket holds [m << shift, ((m + 1) << shift) - 1].
 * Values above HIST_MAX_VALUE (2^40 - 1 ns) are clamped to it and counted in `clamped`; the
 * clamped value is what goes into the bucket, the sum, min and max, so all of them stay consistent.
 *
 * Everything is `static inline` so that a file including this header but not using every function
 * still compiles warning-free.
 */
#ifndef LATENCY_DIFF_HISTOGRAM_H
#define LATENCY_DIFF_HISTOGRAM_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HIST_PRECISION_BITS 8
#define HIST_SUB_BUCKETS (1u << HIST_PRECISION_BITS) /* 256 */
#define HIST_MAX_BITS 40
#define HIST_MAX_VALUE ((UINT64_C(1) << HIST_MAX_BITS) - 1)
/* Highest index: shift = 40 - 1 - 8 = 31, m = 511, so 31 * 256 + 511 = 8447: 33 * 256 slots. */
#define HIST_BUCKETS ((HIST_MAX_BITS - HIST_PRECISION_BITS + 1) * HIST_SUB_BUCKETS)

struct histogram {
    uint64_t counts[HIST_BUCKETS];
    uint64_t count;
    /* 128 bits: 2^40 ns times 10^8 samples already overflows 64 bits. */
    unsigned __int128 sum;
    uint64_t min;
    uint64_t max;
    uint64_t clamped;
};

static inline void hist_init(struct histogram *h) {
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

static inline unsigned hist_index(uint64_t v) {
    if (v < HIST_SUB_BUCKETS) {
        return (unsigned)v;
    }
    unsigned b = 63u - (unsigned)__builtin_clzll(v); /* floor(log2 v), >= 8 here */
    unsigned shift = b - HIST_PRECISION_BITS;
    return shift * HIST_SUB_BUCKETS + (unsigned)(v >> shift);
}

/* Inclusive bounds of the bucket at index i (the inverse of hist_index). */
static inline void hist_bounds(unsigned i, uint64_t *lo, uint64_t *hi) {
    if (i < HIST_SUB_BUCKETS) {
        *lo = *hi = i;
        return;
    }
    unsigned shift = i / HIST_SUB_BUCKETS - 1;
    uint64_t m = i - shift * HIST_SUB_BUCKETS;
    *lo = m << shift;
    *hi = ((m + 1) << shift) - 1;
}

/* The hot path: a compare, a count-leading-zeros and a few adds. */
static inline void hist_record(struct histogram *h, uint64_t v) {
    if (v > HIST_MAX_VALUE) {
        v = HIST_MAX_VALUE;
        h->clamped++;
    }
    h->counts[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min) {
        h->min = v;
    }
    if (v > h->max) {
        h->max = v;
    }
}

/* min and max as printed: 0 when nothing was recorded (min starts at UINT64_MAX). */
static inline uint64_t hist_min(const struct histogram *h) {
    return h->count ? h->min : 0;
}

static inline uint64_t hist_max(const struct histogram *h) {
    return h->count ? h->max : 0;
}

/* printf has no conversion for 128-bit integers: print the decimal digits by hand. */
static inline void hist_print_u128(FILE *out, unsigned __int128 v) {
    char digits[40];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        fputc(digits[--n], out);
    }
}

/* `"histogram": {"precision_bits": 8, "buckets": [[lo, hi, count], ...]}`, nonzero buckets only. */
static inline void hist_print_json(FILE *out, const struct histogram *h) {
    fprintf(out, "\"histogram\": {\"precision_bits\": %d, \"buckets\": [", HIST_PRECISION_BITS);
    const char *sep = "";
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        if (h->counts[i] == 0) {
            continue;
        }
        uint64_t lo, hi;
        hist_bounds(i, &lo, &hi);
        fprintf(out, "%s[%llu, %llu, %llu]", sep, (unsigned long long)lo, (unsigned long long)hi,
                (unsigned long long)h->counts[i]);
        sep = ", ";
    }
    fputs("]}", out);
}

#endif
