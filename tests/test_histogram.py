"""The histogram reader: percentiles of known buckets, exact; merging; malformed buckets."""

import pytest

from latency_diff.histogram import Histogram, HistogramError, merge


def exact(values: list[int]) -> Histogram:
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return Histogram.from_buckets([[v, v, c] for v, c in sorted(counts.items())], max(values))


def test_percentiles_of_exact_buckets_are_the_ranked_values():
    h = exact(list(range(1, 101)))
    assert h.count == 100
    assert h.percentiles() == {"p50": 50, "p90": 90, "p99": 99, "p99.9": 100, "max": 100}
    assert h.percentile(1) == 1
    assert h.percentile(0.001) == 1  # rank is at least 1


def test_a_percentile_is_the_top_of_its_bucket_but_never_above_the_max():
    h = Histogram.from_buckets([[1000, 1003, 3], [1024, 1027, 1]], max_ns=1025)
    assert h.percentile(50) == 1003     # rank 2 of 4 is in [1000, 1003]
    assert h.percentile(75) == 1003     # rank 3
    assert h.percentile(76) == 1025     # rank 4: its bucket's top (1027) is above the exact max
    assert h.percentile(100) == 1025


def test_merge_adds_counts_of_equal_buckets_and_keeps_the_largest_max():
    a = Histogram.from_buckets([[10, 10, 2], [512, 513, 1]], max_ns=512)
    b = Histogram.from_buckets([[10, 10, 1], [20, 20, 4]], max_ns=20)
    m = merge([a, b])
    assert m.buckets == ((10, 10, 3), (20, 20, 4), (512, 513, 1))
    assert m.max_ns == 512 and m.count == 8
    assert m.percentile(50) == 20


@pytest.mark.parametrize("buckets, message", [
    ([[5, 4, 1]], "need 0 <= lo <= hi"),
    ([[1, 1, 0]], "count >= 1"),
    ([[1, 2, 1], [2, 3, 1]], "overlaps"),
    ([[5, 5, 1], [1, 1, 1]], "overlaps or precedes"),
    ([[1, 1]], "is not \\[lo, hi, count\\]"),
    ([[1.5, 2, 1]], "of integers"),
])
def test_malformed_buckets_are_errors(buckets, message):
    with pytest.raises(HistogramError, match=message):
        Histogram.from_buckets(buckets)


def test_a_max_outside_the_top_bucket_is_an_error():
    with pytest.raises(HistogramError, match="not in the highest bucket"):
        Histogram.from_buckets([[1, 1, 1]], max_ns=7)


def test_empty_histograms_have_no_percentiles():
    with pytest.raises(ValueError, match="empty"):
        Histogram.from_buckets([]).percentile(50)
    with pytest.raises(ValueError, match="not in"):
        exact([1]).percentile(0)
