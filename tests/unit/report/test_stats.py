"""The interval code (docs/spec.md#57-seeds-and-groups) on hand-made cases: known values, a known
normal sample (the intervals cover the true mean about 95% of the time), a paired difference of
zero, the KS steps Forget Quality can take, and the seeds a launch repeats over."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest

from sga_core import params
from sga_core.report import stats


def test_importing_stats_loads_neither_torch_nor_scipy():
    code = ("import sys, sga_core.report.stats; "
            "print(any(m.split('.')[0] in ('torch', 'scipy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("df,expected", [(1, 12.7062047), (2, 4.3026527), (4, 2.7764451),
                                         (9, 2.2621572), (29, 2.0452296), (2.5, 3.5746548),
                                         (math.inf, 1.9599640)])
def test_t_quantile_matches_the_tables(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)
    assert stats.t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-6)


def test_t_quantile_matches_scipy_everywhere():
    from scipy.stats import t

    for df in (1, 3, 7.5, 40, 200):
        for p in (0.6, 0.9, 0.975, 0.995):
            assert stats.t_quantile(p, df) == pytest.approx(t.ppf(p, df), rel=1e-7)


def test_t_interval_by_hand():
    iv = stats.t_interval([1.0, 2.0, 3.0])
    assert (iv.n, iv.mean, iv.sd) == (3, 2.0, 1.0)
    half = 4.302652729749464 / math.sqrt(3)
    assert iv.lo == pytest.approx(2 - half) and iv.hi == pytest.approx(2 + half)
    assert iv.half == pytest.approx(half) and iv.method == "t"
    # None and non-finite values are dropped; one value has no interval; none has no mean
    assert stats.t_interval([None, 5.0, float("nan")]) == stats.Interval(1, 5.0)
    assert stats.t_interval([]).mean is None


def test_t_interval_covers_the_mean_of_a_known_normal_sample():
    """Samples of 3 and of 5 from N(10, 2): the 95% t interval holds 10 in about 95% of
    them (a z interval, 1.96 instead of t, would hold it far less often with 3 values)."""
    rng = random.Random(1)
    for n in (3, 5):
        hits = z_hits = 0
        reps = 4000
        for _ in range(reps):
            iv = stats.t_interval([rng.gauss(10, 2) for _ in range(n)])
            hits += iv.lo <= 10 <= iv.hi
            z = 1.959964 * iv.sd / math.sqrt(n)
            z_hits += iv.mean - z <= 10 <= iv.mean + z
        assert 0.935 <= hits / reps <= 0.965, (n, hits / reps)
        assert z_hits / reps < 0.91
    # and the spread of a big sample is its sd
    big = [rng.gauss(10, 2) for _ in range(20000)]
    iv = stats.t_interval(big)
    assert iv.sd == pytest.approx(2, rel=0.03) and iv.lo < 10 < iv.hi


def test_bootstrap_covers_the_mean_of_a_known_normal_sample():
    rng = random.Random(2)
    hits, reps = 0, 300
    for i in range(reps):
        iv = stats.bootstrap_mean([rng.gauss(0, 1) for _ in range(40)], n_boot=500, seed=i)
        hits += iv.lo <= 0 <= iv.hi
    assert 0.9 <= hits / reps <= 0.98
    iv = stats.bootstrap_mean([rng.gauss(0, 1) for _ in range(400)])
    # close to the normal-theory interval +-1.96/sqrt(400) = +-0.098
    assert iv.half == pytest.approx(0.098, rel=0.15)
    assert stats.bootstrap_mean([1.0, 2.0, 3.0]) == stats.bootstrap_mean([1.0, 2.0, 3.0])


def test_a_paired_difference_of_zero():
    a = [0.1, 0.5, 0.9, 0.3, 0.7]
    for iv in (stats.paired_t_interval(a, a), stats.paired_bootstrap_diff(a, a)):
        assert (iv.n, iv.mean, iv.sd, iv.lo, iv.hi) == (5, 0.0, 0.0, 0.0, 0.0)
        assert not iv.excludes(0.0)
    # a constant shift is known exactly
    shifted = [x + 0.25 for x in a]
    iv = stats.paired_bootstrap_diff(shifted, a)
    assert iv.mean == pytest.approx(0.25) and iv.lo == pytest.approx(0.25)
    assert iv.excludes(0.0)


def test_pairing_removes_the_shared_variation():
    """Two configurations whose seed-to-seed variation is shared (the same data order per
    seed): the paired interval of the difference is far narrower than Welch's."""
    base = {0: 0.2, 1: 0.6, 2: 0.35, 3: 0.8}
    noise = {0: 0.001, 1: -0.002, 2: 0.0015, 3: -0.001}  # a little of their own
    other = {s: v + 0.05 + noise[s] for s, v in base.items()}
    paired = stats.compare_by_seed(other, base)
    assert paired.method == "paired t" and paired.mean == pytest.approx(0.04988, abs=1e-5)
    assert paired.excludes(0.0)
    unpaired = stats.welch_interval(list(other.values()), list(base.values()))
    assert not unpaired.excludes(0.0)
    # disjoint seeds fall back to Welch
    assert stats.compare_by_seed({9: 1.0, 8: 2.0}, base).method == "welch"


def test_differences_without_spread_need_an_exact_test_not_a_zero_wide_interval():
    """Forget Quality moves in KS steps, so two seeds can give exactly the same difference:
    a t interval is then zero wide and would call it certain. The sign test decides for
    paired seeds (all n of one sign: p = 2 * 0.5^n), a permutation test for two constant
    groups (p = 2 / C(na + nb, na))."""
    fq_r0, fq_r08 = [0.0524, 0.0524], [0.0123, 0.0123]  # the demo's neighbouring steps
    iv = stats.paired_t_interval(fq_r08, fq_r0)
    assert iv.mean == pytest.approx(-0.0401) and not iv.excludes(0.0)
    assert (iv.lo, iv.hi) == (pytest.approx(-0.0401), 0.0) and "sign test" in iv.method
    assert not stats.paired_t_interval([0.3] * 5, [0.1] * 5).excludes(0.0)  # p = 0.0625
    six = stats.paired_t_interval([0.3] * 6, [0.1] * 6)  # p = 0.031
    assert six.excludes(0.0) and (six.lo, six.hi) == (pytest.approx(0.2), pytest.approx(0.2))
    assert not stats.welch_interval([0.3] * 3, [0.1] * 3).excludes(0.0)  # p = 2/20
    assert stats.welch_interval([0.3] * 4, [0.1] * 4).excludes(0.0)  # p = 2/70
    same = stats.paired_t_interval([0.2, 0.2, 0.2], [0.2, 0.2, 0.2])
    assert same.mean == 0 and not same.excludes(0.0)


def test_welch_matches_scipy():
    from scipy.stats import ttest_ind

    a, b = [1.0, 2.0, 3.5, 2.2], [2.0, 3.0, 5.0]
    ci = ttest_ind(a, b, equal_var=False).confidence_interval()
    iv = stats.welch_interval(a, b)
    assert iv.lo == pytest.approx(ci.low) and iv.hi == pytest.approx(ci.high)


def test_ks_steps_are_the_values_forget_quality_can_take():
    """For 10 rows: 11 statistics k/10; the README demo's FQ values 0.0021, 0.0123 and
    0.0524 are neighbouring steps; every step is what ks_2samp gives samples with that D."""
    from scipy.stats import ks_2samp

    steps = stats.ks_pvalue_steps(10)
    assert [d for d, _ in steps] == [k / 10 for k in range(11)]
    ps = [round(p, 4) for _, p in steps]
    assert ps[6:9] == [0.0524, 0.0123, 0.0021]
    rng = random.Random(3)
    table = dict(steps)
    for _ in range(50):
        a, b = [rng.random() for _ in range(10)], [rng.random() + 0.3 for _ in range(10)]
        res = ks_2samp(a, b)
        assert table[round(float(res.statistic), 12)] == pytest.approx(res.pvalue)
    near = stats.fq_neighbours(0.0524, steps)
    assert near["at"] == pytest.approx(0.0524, abs=1e-4)
    assert near["higher"] == pytest.approx(0.1678, abs=1e-4)
    assert near["lower"] == pytest.approx(0.0123, abs=1e-4)
    assert stats.ks_statistics(2, 3) == [0.0, 0.166666666667, 0.333333333333, 0.5,
                                         0.666666666667, 1.0]
    assert len(stats.ks_pvalue_steps(3, 4)) > 3


@pytest.mark.parametrize("text,base,expected", [
    ("", 7, [7]), (None, 0, [0]), ("3", 5, [5, 6, 7]), ("0, 1, 2", 9, [0, 1, 2]),
    ("4 2 4", 0, [4, 2]), ("[1, 2]", 0, [1, 2]), ([3, 1], 0, [3, 1]), ("5,", 0, [5]),
    (2, 10, [10, 11])])
def test_parse_seeds(text, base, expected):
    assert params.parse_seeds(text, base) == expected


@pytest.mark.parametrize("text,words", [("0", "count"), ("101", "count"), ("a,b", "'a'"),
                                        ("1.5", "'1.5'"), ("-1, 2", "outside"),
                                        (",".join(map(str, range(101))), "too many")])
def test_parse_seeds_errors_say_what(text, words):
    with pytest.raises(ValueError, match=words):
        params.parse_seeds(text)
