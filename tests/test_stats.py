import math

import pytest

from latency_diff import stats


def test_summary_of_known_values():
    s = stats.summarize([10.0, 12.0, 11.0, 13.0, 9.0])
    assert (s.mean, s.median, s.n) == (11.0, 11.0, 5)
    assert s.stdev == pytest.approx(math.sqrt(2.5))
    # t(0.975, 4) = 2.7764451051977987
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert (s.ci95_low, s.ci95_high) == (pytest.approx(11 - half), pytest.approx(11 + half))
    assert s.rel_spread == pytest.approx(math.sqrt(2.5) / 11)


def test_one_value_has_no_interval():
    s = stats.summarize([5.0])
    assert (s.mean, s.stdev, s.ci95_low, s.ci95_high, s.n) == (5.0, None, None, None, 1)
    with pytest.raises(ValueError):
        stats.summarize([])


def test_welch_difference_propagates_both_uncertainties():
    a, b = [20.0, 22.0, 21.0], [10.0, 10.5, 9.5, 10.0]
    d = stats.welch_difference(a, b)
    va, vb = 1.0 / 3, (1 / 6) / 4
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 3)
    from scipy.stats import t
    assert d.mean == pytest.approx(11.0)
    assert d.stdev == pytest.approx(se)
    assert d.ci95_high - d.mean == pytest.approx(t.ppf(0.975, df) * se)
    assert d.n == 3


def test_significance():
    assert stats.significantly_different([10.0, 10.1, 9.9], [20.0, 20.1, 19.9]) is True
    assert stats.significantly_different([10.0, 11.0, 9.0], [10.2, 11.2, 9.2]) is False
    assert stats.significantly_different([10.0], [20.0, 21.0]) is None


def test_a_bounded_sd_keeps_two_tight_rows_from_being_called_apart():
    """Three pairs each that happen to agree: apart by their own sds (0.1), not by the sd their intervals use (2.0)."""
    a, b = [10.0, 10.1, 9.9], [12.0, 12.1, 11.9]
    assert stats.significantly_different(a, b) is True
    assert stats.significantly_different(a, b, 2.0, 2.0) is False
    d = stats.welch_difference(a, b, 2.0, 0.0)  # a floor below a sample's own sd changes nothing of it
    se = math.sqrt(4.0 / 3 + 0.01 / 3)
    df = se ** 4 / ((4.0 / 3) ** 2 / 2 + (0.01 / 3) ** 2 / 2)
    from scipy.stats import t
    assert d.stdev == pytest.approx(se) and d.ci95_high - d.mean == pytest.approx(t.ppf(0.975, df) * se)


def test_outliers_by_median_absolute_deviation():
    assert stats.outliers([100.0, 101.0, 99.0, 100.5, 130.0]) == [4]
    assert stats.outliers([100.0, 101.0, 99.0, 100.5, 102.0]) == []
    assert stats.outliers([1.0, 50.0]) == []  # too few to judge
    # Statistically far (tiny MAD) but only 4% off the median: noise, not an outlier.
    assert stats.outliers([100.0, 100.1, 99.9, 100.0, 104.0]) == []


def test_outliers_when_most_values_are_equal():
    # MAD = 0; mean absolute deviation 20, score (200 - 100) / (1.253314 * 20) = 3.99 > 3.5.
    assert stats.outliers([100.0, 100.0, 100.0, 100.0, 200.0]) == [4]
    # Score (160 - 100) / (1.253314 * 12) = 3.99 too, and 60% off the median; 107 is only 7% off.
    assert stats.outliers([100.0, 100.0, 100.0, 100.0, 160.0]) == [4]
    assert stats.outliers([100.0, 100.0, 100.0, 100.0, 107.0]) == []
    assert stats.outliers([100.0, 100.0, 100.0]) == []  # no spread at all


def test_contrast_of_four_groups_is_the_change_of_a_diff():
    # (server B - dummy B) - (server A - dummy A): 4 independent groups of known variance.
    sb, db, sa, da = [30.0, 32.0, 31.0], [10.0, 10.0, 10.0, 10.0], [25.0, 27.0, 26.0], [9.0, 11.0, 10.0]
    c = stats.contrast([(1, sb), (-1, db), (-1, sa), (1, da)])
    assert c.mean == pytest.approx((31 - 10) - (26 - 10))
    parts = [1 / 3, 0.0, 1 / 3, 1 / 3]  # variance / n of each group
    se = math.sqrt(sum(parts))
    df = sum(parts) ** 2 / ((1 / 3) ** 2 / 2 * 3)  # the zero-variance group adds nothing
    from scipy.stats import t
    assert c.stdev == pytest.approx(se)
    assert c.ci95_high - c.mean == pytest.approx(t.ppf(0.975, df) * se)
    assert c.n == 3


def test_welch_difference_of_a_textbook_example():
    # Wikipedia, "Welch's t-test", example 1: t = -2.46, df = 24.99, p = 0.021; the interval is SciPy's
    # (ttest_ind(equal_var=False).confidence_interval()): -3.984 to -0.349.
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    d = stats.welch_difference(a1, a2)
    assert d.mean / d.stdev == pytest.approx(-2.455, abs=0.001)
    assert (d.ci95_low, d.ci95_high) == (pytest.approx(-3.9841, abs=1e-4), pytest.approx(-0.3492, abs=1e-4))
    assert stats.significantly_different(a1, a2) is True


def test_welch_difference_is_the_two_group_contrast():
    a, b = [20.0, 22.0, 21.0], [10.0, 10.5, 9.5, 10.0]
    assert stats.welch_difference(a, b) == stats.contrast([(1, a), (-1, b)])
