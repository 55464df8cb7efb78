"""Statistics of independent samples (process pairs, runs): Student-t 95% intervals, Welch differences,
robust outliers.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import statistics
from dataclasses import asdict, dataclass

CONFIDENCE = 0.95
#: Modified z-score above which a value (a process pair's diff) is an outlier (Iglewicz and Hoaglin, 1993,
#: "How to Detect and Handle Outliers": M_i = 0.6745 (x_i - median) / MAD, outlier if |M_i| > 3.5).
OUTLIER_Z = 3.5
#: ...and only if it is also this far from the median, relatively: with few samples the MAD can be tiny,
#: and a sample a few percent off is noise, not an event worth a warning.
OUTLIER_MIN_REL = 0.10
#: When more than half the values are equal the MAD is 0; the score then uses the mean absolute deviation,
#: scaled by this factor (its ratio to the standard deviation for a normal sample, sqrt(pi/2)), as IBM
#: SPSS and the Iglewicz-Hoaglin literature do.
MEAN_AD_SCALE = 1.253314


@functools.lru_cache(maxsize=4096)
def chi2_quantile(p: float, df: float) -> float:
    """The chi-square quantile (scipy imported here, as for t_quantile)."""
    from scipy import stats as sps
    return float(sps.chi2.ppf(p, df))


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile. scipy is imported here, not at the top, so that the driver's --help and --list
    run with a bare python3, before the set-up has created the virtual environment."""
    from scipy import stats as sps
    return float(sps.t.ppf(p, df))


@dataclass(frozen=True)
class Summary:
    """Mean, spread and 95% interval of n values. Fields that need n >= 2 are None below that."""
    mean: float
    median: float
    stdev: float | None
    ci95_low: float | None
    ci95_high: float | None
    n: int

    @property
    def half_width(self) -> float | None:
        return None if self.ci95_high is None else (self.ci95_high - self.ci95_low) / 2

    @property
    def rel_spread(self) -> float | None:
        return None if self.stdev is None or self.mean == 0 else self.stdev / abs(self.mean)

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(values: list[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    n = len(values)
    mean = statistics.fmean(values)
    median = statistics.median(values)
    if n < 2:
        return Summary(mean, median, None, None, None, n)
    sd = statistics.stdev(values)
    half = t_quantile(0.5 + CONFIDENCE / 2, n - 1) * sd / math.sqrt(n)
    return Summary(mean, median, sd, mean - half, mean + half, n)


def welch_difference(a: list[float], b: list[float], sd_a: float = 0.0, sd_b: float = 0.0) -> Summary:
    """mean(a) - mean(b) with a Welch 95% interval: b's (the baseline's) uncertainty is propagated. sd_a and sd_b
    bound each sample's sd from below (a server's interval sd, never below its units' noise nor the run's spread
    between fresh JVMs: docs/method.md "When to stop"), so that two rows of three tight pairs are not called apart on
    less evidence than each row's own interval has.

    The `stdev` field is the standard error of the difference; `n` is the smaller sample's size.
    """
    return contrast([(1, a, sd_a), (-1, b, sd_b)])


def contrast(groups: list[tuple[int, list[float]]] | list[tuple[int, list[float], float]]) -> Summary:
    """sum(sign * mean(values)) over independent groups, with a 95% interval from the Welch-Satterthwaite
    approximation (Satterthwaite 1946; for two groups this is Welch's t interval). Used for a diff
    (server minus dummy) and for the change of a diff between two runs (four groups).

    The `stdev` field is the standard error; `median` combines the medians the same way; `n` is the
    smallest group's size.
    """
    full = [(g[0], g[1], g[2] if len(g) > 2 else 0.0) for g in groups]
    if any(not values for _, values, _ in full):
        raise ValueError("every group needs values")
    mean = sum(sign * statistics.fmean(v) for sign, v, _ in full)
    median = sum(sign * statistics.median(v) for sign, v, _ in full)
    n = min(len(v) for _, v, _ in full)
    if n < 2:
        return Summary(mean, median, None, None, None, n)
    parts = [max(statistics.variance(v), floor ** 2) / len(v) for _, v, floor in full]
    se = math.sqrt(sum(parts))
    if se == 0:
        return Summary(mean, median, 0.0, mean, mean, n)
    df = sum(parts) ** 2 / sum(p ** 2 / (len(v) - 1) for p, (_, v, _) in zip(parts, full, strict=True))
    half = t_quantile(0.5 + CONFIDENCE / 2, df) * se
    return Summary(mean, median, se, mean - half, mean + half, n)


def significantly_different(a: list[float], b: list[float], sd_a: float = 0.0, sd_b: float = 0.0) -> bool | None:
    """Whether two samples' means differ at 95% (Welch's t-test, sds bounded as in welch_difference); None when
    either has < 2 values."""
    d = welch_difference(a, b, sd_a, sd_b)
    if d.ci95_low is None:
        return None
    return not (d.ci95_low <= 0 <= d.ci95_high)


def outliers(values: list[float], min_abs: float = 0.0) -> list[int]:
    """Indices of values whose modified z-score exceeds OUTLIER_Z (median absolute deviation) and that lie
    more than OUTLIER_MIN_REL from the median, and more than min_abs."""
    if len(values) < 3:
        return []
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad > 0:
        def score(v: float) -> float:
            return 0.6745 * (v - med) / mad
    else:
        mean_ad = statistics.fmean(abs(v - med) for v in values)
        if mean_ad == 0:
            return []

        def score(v: float) -> float:
            return (v - med) / (MEAN_AD_SCALE * mean_ad)
    return [i for i, v in enumerate(values)
            if abs(score(v)) > OUTLIER_Z and abs(v - med) > max(OUTLIER_MIN_REL * abs(med), min_abs)]


@dataclass(frozen=True)
class GroupSlope:
    """A slope pooled within groups, with its permutation p-value (within_slope)."""
    #: The slope of y on w x, each group's means removed (dimensionless when y and w share a unit).
    slope: float
    #: Two-sided: the share of within-group rearrangements of x whose |statistic| is at least the observed one.
    p: float
    points: int
    groups: int
    #: True when every rearrangement was counted, False when PERMUTATION_DRAWS random ones were.
    exact: bool


#: within_slope counts every rearrangement up to this many, else draws this many at random (seeded: repeatable).
PERMUTATIONS_EXACT_MAX = 20_000
PERMUTATION_DRAWS = 2_000


def within_slope(groups: list[tuple[list[float], list[float], float]], seed: int = 0) -> GroupSlope | None:
    """The slope of y on w x pooled over groups (xs, ys, w), each group's own mean of x and of y removed: the least
    squares slope through the origin of y - mean_g(y) on w_g (x - mean_g(x)), so that groups whose y differ in level
    (servers with different diffs) share one slope, and a group's weight w_g scales its x to y's unit.

    Its p-value is a permutation test's (Fisher; Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses",
    2005, ch. 3): under the hypothesis that within a group x says nothing about y, every rearrangement of a group's x
    among its points is as likely as the observed one. The statistic sum_g w_g sum_i (x_i - mean_g x) (y_i - mean_g y)
    is the slope times a denominator that no rearrangement changes, so p is the share of rearrangements whose
    |statistic| reaches the observed one: exact (every rearrangement, the observed one included) up to
    PERMUTATIONS_EXACT_MAX, else 1 + hits over 1 + PERMUTATION_DRAWS random ones. It assumes nothing of the noise's
    distribution or of its size from group to group. Groups with fewer than 2 points or one x are left out; None when
    none is left."""
    used = []
    for xs, ys, weight in groups:
        if len(xs) != len(ys):
            raise ValueError("a group needs as many x as y")
        if len(xs) < 2 or weight == 0:
            continue
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        cx = [x - mx for x in xs]
        if not any(cx):
            continue
        used.append((cx, [weight * (y - my) for y in ys], weight))
    if not used:
        return None
    den = sum(w * w * sum(c * c for c in cx) for cx, _, w in used)

    def statistic(arrangement: list[list[float]]) -> float:
        return sum(sum(a * b for a, b in zip(cx, wy, strict=True)) for cx, (_, wy, _) in zip(arrangement, used,
                                                                                             strict=True))

    observed = statistic([cx for cx, _, _ in used])
    level = abs(observed) * (1 - 1e-9)  # a rearrangement as extreme as the observed one, up to rounding
    total = math.prod(math.factorial(len(cx)) for cx, _, _ in used)
    if total <= PERMUTATIONS_EXACT_MAX:
        hits = sum(1 for arrangement in itertools.product(*(itertools.permutations(cx) for cx, _, _ in used))
                   if abs(statistic(list(arrangement))) >= level)
        p, exact = hits / total, True
    else:
        rng = random.Random(seed)
        hits = sum(1 for _ in range(PERMUTATION_DRAWS)
                   if abs(statistic([rng.sample(cx, len(cx)) for cx, _, _ in used])) >= level)
        p, exact = (hits + 1) / (PERMUTATION_DRAWS + 1), False
    return GroupSlope(slope=observed / den, p=p, points=sum(len(cx) for cx, _, _ in used), groups=len(used),
                      exact=exact)
