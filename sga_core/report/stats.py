"""The statistics behind comparisons: intervals over seeds, bootstrap intervals over rows,
paired differences, and the steps a KS p-value (Forget Quality) can take. (Which seeds a
launch repeats over is a setting: :func:`sga_core.params.parse_seeds`.)

Pure Python, no torch; scipy is imported only by :func:`ks_pvalue_steps` (the same
``ks_2samp`` Forget Quality uses), so importing this module is cheap.

Which interval where:

- **over seeds** (:func:`t_interval`): a configuration trained with n seeds gives n values of
  a metric; the interval is ``mean ± t(0.975, n-1) · sd / sqrt(n)`` (Student t). With 3-5
  seeds a bootstrap over seeds is degenerate (3 values have 10 distinct resamples) and a
  normal (z) interval is too narrow (z = 1.96 against t = 4.30 for n = 3); the t interval is
  exact when seed-to-seed variation is roughly normal and is the usual choice in ML papers
  with few seeds. It says nothing when n = 1 (no spread can be estimated).
- **over rows** (:func:`bootstrap_mean`): one run's per-row metric (ROUGE, probability,
  truth ratio) is a mean over rows; the percentile bootstrap over rows says how much the
  value depends on which rows were asked (not on the training randomness). With few rows
  (10 on the demo) percentile intervals are somewhat too narrow; n is always shown.
- **two configurations** (:func:`paired_t_interval`, :func:`welch_interval`): the same seed
  gives the same data order in every configuration (docs/spec.md#15-data-order), so differences are
  taken seed by seed (paired t) where both have the same seeds, else Welch's unpaired t interval.
- **two runs on the same rows** (:func:`paired_bootstrap_diff`): rows are resampled jointly.
- **statistics that are not means** (:func:`bootstrap_statistic`,
  :func:`paired_bootstrap_statistic`): MIA AUC and PrivLeak (forget and holdout rows, each
  group resampled on its own) and token-weighted perplexity are recomputed on each resample.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

LEVEL = 0.95
N_BOOT = 2000


@dataclass(frozen=True)
class Interval:
    """A mean (or a difference of means) with its interval; None where undefined."""

    n: int
    mean: float | None
    sd: float | None = None
    lo: float | None = None
    hi: float | None = None
    level: float = LEVEL
    method: str = "t"

    @property
    def half(self) -> float | None:
        """Half the width (the "±" of a symmetric interval)."""
        return None if self.lo is None or self.hi is None else (self.hi - self.lo) / 2

    def excludes(self, value: float = 0.0) -> bool:
        """Whether ``value`` lies outside the interval (False when there is none)."""
        return self.lo is not None and self.hi is not None and not self.lo <= value <= self.hi

    def to_dict(self) -> dict:
        return asdict(self)


def clean(values) -> list[float]:
    """The finite numbers among ``values`` (None, NaN, inf and non-numbers dropped)."""
    out = []
    for v in values or []:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(v):
            out.append(float(v))
    return out


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_sd(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator); needs n >= 2."""
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


# --- distributions -----------------------------------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
          + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(df):
        return 0.5 * (1.0 + math.erf(t / math.sqrt(2.0)))
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (``df`` may be fractional, or inf for the normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# --- intervals over seeds ------------------------------------------------------------------------

def t_interval(values, level: float = LEVEL) -> Interval:
    """Mean, sample sd and the Student-t interval of the mean of ``values`` (None and
    non-finite values dropped). n = 1: mean only; n = 0: nothing."""
    vals = clean(values)
    n = len(vals)
    if n == 0:
        return Interval(0, None, level=level)
    m = mean(vals)
    if n == 1:
        return Interval(1, m, level=level)
    sd = sample_sd(vals)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return Interval(n, m, sd, m - half, m + half, level)


def _no_spread(values: Sequence[float]) -> bool:
    """Whether two or more values are all the same (up to rounding)."""
    return len(values) >= 2 and max(values) - min(values) <= 1e-12 * max(
        1.0, max(abs(v) for v in values))


def _exact_or_unsure(n: int, d: float, p: float, level: float, method: str) -> Interval:
    """A difference ``d`` seen without any spread (every seed agrees exactly, as Forget
    Quality's KS steps often do). A t interval would be zero wide and call any such
    difference certain; an exact test on the same data (``p``: the chance of so clean a
    result if the configurations were alike) decides instead: below ``1 - level`` the
    difference stands ([d, d]), otherwise the interval runs from 0 to ``d`` (cannot tell)."""
    if d != 0 and p <= 1 - level:
        return Interval(n, d, 0.0, d, d, level, method)
    return Interval(n, d, 0.0, min(0.0, d), max(0.0, d), level, method)


def paired_t_interval(a, b, level: float = LEVEL) -> Interval:
    """The mean of ``a[i] - b[i]`` over pairs where both are numbers, with its t interval.
    When every pair differs by exactly the same amount, the sign test decides (all n
    differences of one sign: p = 2 * 0.5^n, so it takes 6 seeds at the 95% level)."""
    diffs = [x - y for x, y in zip(a, b) if clean([x]) and clean([y])]
    res = t_interval(diffs, level)
    if _no_spread(diffs):
        return _exact_or_unsure(res.n, res.mean, min(1.0, 2 * 0.5 ** res.n), level,
                                "paired, no spread: sign test")
    return Interval(res.n, res.mean, res.sd, res.lo, res.hi, level, "paired t")


def welch_interval(a, b, level: float = LEVEL) -> Interval:
    """``mean(a) - mean(b)`` with Welch's t interval (unequal variances); n = the smaller
    sample. Undefined (no lo/hi) unless both have 2 or more values."""
    xa, xb = clean(a), clean(b)
    if not xa or not xb:
        return Interval(min(len(xa), len(xb)), None, level=level, method="welch")
    d = mean(xa) - mean(xb)
    if len(xa) < 2 or len(xb) < 2:
        return Interval(min(len(xa), len(xb)), d, level=level, method="welch")
    va, vb = sample_sd(xa) ** 2 / len(xa), sample_sd(xb) ** 2 / len(xb)
    se = math.sqrt(va + vb)
    if _no_spread(xa) and _no_spread(xb):  # each constant: an exact permutation test
        p = min(1.0, 2 / math.comb(len(xa) + len(xb), len(xa)))
        return _exact_or_unsure(min(len(xa), len(xb)), d, p, level,
                                "welch, no spread: permutation test")
    df = (va + vb) ** 2 / (va ** 2 / (len(xa) - 1) + vb ** 2 / (len(xb) - 1))
    half = t_quantile(0.5 + level / 2.0, df) * se
    return Interval(min(len(xa), len(xb)), d, se, d - half, d + half, level, "welch")


def compare_by_seed(a: dict, b: dict, level: float = LEVEL) -> Interval:
    """``a - b`` for two configurations given as {seed: value}: paired over the seeds both
    have (when 2 or more), else Welch over all their values."""
    common = sorted(s for s in set(a) & set(b) if clean([a[s]]) and clean([b[s]]))
    if len(common) >= 2:
        return paired_t_interval([a[s] for s in common], [b[s] for s in common], level)
    return welch_interval(list(a.values()), list(b.values()), level)


# --- bootstrap over rows -------------------------------------------------------------------------

def _percentile(sorted_vals: list[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` in [0, 1] of sorted values."""
    pos = q * (len(sorted_vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _bootstrap(stat_rows: list[float], level: float, n_boot: int, seed: int,
               method: str, sd: float | None = None) -> Interval:
    n = len(stat_rows)
    m = mean(stat_rows)
    if n < 2:
        return Interval(n, m, level=level, method=method)
    rng = random.Random(seed)
    means = sorted(math.fsum(stat_rows[rng.randrange(n)] for _ in range(n)) / n
                   for _ in range(n_boot))
    tail = (1.0 - level) / 2.0
    return Interval(n, m, sample_sd(stat_rows) if sd is None else sd,
                    _percentile(means, tail), _percentile(means, 1.0 - tail), level, method)


def bootstrap_mean(values, level: float = LEVEL, n_boot: int = N_BOOT,
                   seed: int = 0) -> Interval:
    """The mean of ``values`` (one per row) with a percentile-bootstrap interval over rows
    (``n_boot`` resamples; a fixed ``seed``, so the interval is reproducible)."""
    vals = clean(values)
    if not vals:
        return Interval(0, None, level=level, method="bootstrap")
    return _bootstrap(vals, level, n_boot, seed, "bootstrap")


def paired_bootstrap_diff(a, b, level: float = LEVEL, n_boot: int = N_BOOT,
                          seed: int = 0) -> Interval:
    """``mean(a) - mean(b)`` over rows where both are numbers (the same rows of two runs),
    with a paired percentile-bootstrap interval: rows are resampled jointly."""
    diffs = [x - y for x, y in zip(a, b) if clean([x]) and clean([y])]
    if not diffs:
        return Interval(0, None, level=level, method="paired bootstrap")
    return _bootstrap(diffs, level, n_boot, seed, "paired bootstrap")


def _resample(groups: Sequence[Sequence], rng: random.Random) -> list[list[int]]:
    """Row indices drawn with replacement within each group (a stratified resample)."""
    return [[rng.randrange(len(g)) for _ in g] for g in groups]


def bootstrap_statistic(groups: Sequence[Sequence], stat, level: float = LEVEL,
                        n_boot: int = N_BOOT, seed: int = 0,
                        method: str = "bootstrap") -> Interval:
    """A statistic of several groups of rows that is not a plain mean (an AUC of forget
    against holdout scores, a token-weighted perplexity), with a percentile-bootstrap
    interval: each group is resampled on its own (stratified), ``stat(groups)`` is
    recomputed on each resample (resamples where it is None are dropped). ``n`` is the
    smallest group."""
    groups = [list(g) for g in groups]
    value = stat(groups) if all(groups) else None
    n = min((len(g) for g in groups), default=0)
    if value is None:
        return Interval(n, None, level=level, method=method)
    if n < 2:
        return Interval(n, value, level=level, method=method)
    rng = random.Random(seed)
    draws = []
    for _ in range(n_boot):
        idx = _resample(groups, rng)
        v = stat([[g[i] for i in ix] for g, ix in zip(groups, idx)])
        if v is not None and math.isfinite(v):
            draws.append(v)
    if not draws:
        return Interval(n, value, level=level, method=method)
    draws.sort()
    tail = (1.0 - level) / 2.0
    return Interval(n, value, None, _percentile(draws, tail), _percentile(draws, 1.0 - tail),
                    level, method)


def paired_bootstrap_statistic(groups_a: Sequence[Sequence], groups_b: Sequence[Sequence],
                               stat_a, stat_b=None, level: float = LEVEL,
                               n_boot: int = N_BOOT, seed: int = 0) -> Interval:
    """``stat_a(groups_a) - stat_b(groups_b)`` for two runs scored on the same rows (group
    ``k``, row ``i`` is the same text in both), with a paired bootstrap: the same row
    indices are drawn for both runs in every resample."""
    stat_b = stat_b or stat_a
    ga, gb = [list(g) for g in groups_a], [list(g) for g in groups_b]
    if [len(g) for g in ga] != [len(g) for g in gb]:
        raise ValueError("paired groups must have the same sizes")
    method = "paired bootstrap"
    n = min((len(g) for g in ga), default=0)
    va = stat_a(ga) if all(ga) else None
    vb = stat_b(gb) if all(gb) else None
    if va is None or vb is None:
        return Interval(n, None, level=level, method=method)
    if n < 2:
        return Interval(n, va - vb, level=level, method=method)
    rng = random.Random(seed)
    draws = []
    for _ in range(n_boot):
        idx = _resample(ga, rng)
        a = stat_a([[g[i] for i in ix] for g, ix in zip(ga, idx)])
        b = stat_b([[g[i] for i in ix] for g, ix in zip(gb, idx)])
        if a is not None and b is not None and math.isfinite(a - b):
            draws.append(a - b)
    if not draws:
        return Interval(n, va - vb, level=level, method=method)
    draws.sort()
    tail = (1.0 - level) / 2.0
    return Interval(n, va - vb, None, _percentile(draws, tail),
                    _percentile(draws, 1.0 - tail), level, method)


# --- Forget Quality's resolution -----------------------------------------------------------------

def ks_statistics(n: int, m: int) -> list[float]:
    """The values the two-sample KS statistic can take for sample sizes ``n`` and ``m``
    (``|i/n - j/m|``, de-duplicated), ascending; for n = m these are k/n."""
    if n < 1 or m < 1:
        return []
    vals = {round(abs(i / n - j / m), 12) for i in range(n + 1) for j in range(m + 1)}
    return sorted(vals)


def ks_pvalue_steps(n: int, m: int | None = None) -> list[tuple[float, float]]:
    """``(D, p)`` for every value D the two-sample KS statistic can take, largest p first,
    with the p-value ``scipy.stats.ks_2samp`` gives (as Forget Quality computes it).

    For n = m, samples with exactly D = k/n are built and passed to ``ks_2samp`` itself, so
    the steps are the values FQ can take. For n != m, the p-values are those of the same
    D by scipy's exact two-sample distribution when it has one, else asymptotic."""
    m = n if m is None else m
    if n < 1 or m < 1:
        return []
    from scipy.stats import ks_2samp

    out = []
    if n == m:
        base = [float(i) for i in range(n)]
        for k in range(n + 1):
            shifted = [v + k - 0.5 if k else v for v in base]
            res = ks_2samp(base, shifted)
            out.append((round(float(res.statistic), 12), float(res.pvalue)))
    else:
        from scipy.stats import kstwo

        en = round(n * m / (n + m))
        out = [(d, float(kstwo.sf(d, max(en, 1))) if d > 0 else 1.0)
               for d in ks_statistics(n, m)]
    return sorted(set(out), key=lambda x: (x[0], -x[1]))


def fq_neighbours(p: float, steps: list[tuple[float, float]]) -> dict:
    """Where an observed FQ sits among the KS steps: the nearest step, and the next step
    up and down (None at the ends)."""
    if not steps:
        return {"at": None, "higher": None, "lower": None}
    ps = sorted({s[1] for s in steps}, reverse=True)
    i = min(range(len(ps)), key=lambda j: abs(ps[j] - p))
    return {"at": ps[i], "higher": ps[i - 1] if i > 0 else None,
            "lower": ps[i + 1] if i + 1 < len(ps) else None}


__all__ = ["Interval", "LEVEL", "N_BOOT", "betainc", "bootstrap_mean", "bootstrap_statistic",
           "clean", "paired_bootstrap_statistic",
           "compare_by_seed", "fq_neighbours", "ks_pvalue_steps", "ks_statistics", "mean",
           "paired_bootstrap_diff", "paired_t_interval", "sample_sd", "t_cdf",
           "t_interval", "t_quantile", "welch_interval"]
