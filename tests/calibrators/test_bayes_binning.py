"""The Bayesian binning core SBB and ABB share (calibrators/_bayes_binning.py): hand-computed scores, brute force
over all binnings, limits, grouping, weights, reference data. Each method's own tests: test_sbb.py, test_abb.py."""
from __future__ import annotations

import itertools
import math
import pickle
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.io import export
from calibdash.calibrators._bayes_binning import collapse
from calibdash.core.errors import ProgrammingError, SettingsError
from calibdash.explain import explain
from calibdash.measures.calibration import ece, rmse

from tests.conftest import shared_file
from tests.calibrators.test_calibrators import GRID, assert_weights_count_as_rows, integer_weights, tied_rows


# ---------------------------------------------------------------------------
# brute force: every binning of the distinct scores, straight from Eq. 4-7
# ---------------------------------------------------------------------------
def brute_force(score, n0, n1, lam):
    """Enumerate all 2^(P-1) binnings of P positions; returns the exact averages.

    ``score`` are the positions' scores (ascending), ``n0``/``n1`` their counts.
    Prior(k) = 1 - exp(-lam d_k / D) per gap (boundary), exp(-lam d_k / D) (none).
    """
    p = len(score)
    d_total = score[-1] - score[0]
    xs = [lam * (score[k + 1] - score[k]) / d_total for k in range(p - 1)]
    results = []
    for cuts in itertools.product((0, 1), repeat=p - 1):
        log_prior = sum(math.log(-math.expm1(-x)) if c else -x for c, x in zip(cuts, xs))
        bins, start = [], 0
        for k, c in enumerate(cuts):
            if c:
                bins.append((start, k))
                start = k + 1
        bins.append((start, p - 1))
        log_ml, est = 0.0, np.zeros(p)
        for lo, hi in bins:
            a, b = sum(n0[lo:hi + 1]), sum(n1[lo:hi + 1])
            log_ml += math.lgamma(a + 1) + math.lgamma(b + 1) - math.lgamma(a + b + 2)
            est[lo:hi + 1] = (b + 1) / (a + b + 2)
        results.append((log_prior + log_ml, cuts, est))
    top = max(r[0] for r in results)
    w = np.array([math.exp(r[0] - top) for r in results])
    z = w.sum()
    return {
        "log_evidence": top + math.log(z),
        "value": sum(wi * r[2] for wi, r in zip(w, results)) / z,
        "boundary": (sum(wi * np.array(r[1], dtype=float) for wi, r in zip(w, results)) / z
                     if p > 1 else np.empty(0)),
        "best": top,
        "scores": {r[1]: r[0] for r in results},
    }


def positions_of(s, y):
    """Distinct scores and their counts, computed independently of the package."""
    vals, inv = np.unique(s, return_inverse=True)
    n1 = np.bincount(inv, weights=y, minlength=vals.size).astype(int)
    n = np.bincount(inv, minlength=vals.size)
    return vals, list(n - n1), list(n1)


def _cases():
    """(scores, labels, lambda) on 3 to 8 rows, with and without ties."""
    rng = np.random.default_rng(7)
    cases = []
    for n in range(3, 9):
        for lam in (0.3, 3.0, 30.0):
            s = np.round(rng.uniform(0, 1, n), 3)
            y = rng.integers(0, 2, n)
            y[:2] = [0, 1]
            cases.append((s, y, lam))
        s = np.sort(rng.choice([0.1, 0.2, 0.45, 0.5, 0.9], n))       # ties
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        cases.append((s, y, 2.0))
    return cases


CASES = _cases()


# ---------------------------------------------------------------------------
# hand-computed
# ---------------------------------------------------------------------------
def test_three_points_hand_computed():
    """Scores 0, .5, 1 with labels 0, 1, 1 and lambda = 2 ln 2, so Prior(k) = 1/2 at both gaps.

    Every binning has prior 1/4; marginal likelihoods: {011} 1/12, {0}{11} 1/6,
    {01}{1} 1/12, {0}{1}{1} 1/8; scores 2, 4, 2, 3 (in 1/96), evidence 11/96.
    """
    s, y, lam = np.array([0.0, 0.5, 1.0]), np.array([0, 1, 1]), 2 * math.log(2)
    abb = calibrators.get("abb", lam=lam).fit(s, y)
    d = explain(abb, s, y)
    assert d.log_evidence == pytest.approx(math.log(11 / 96), abs=1e-12)
    assert abb.log_evidence_ == d.log_evidence
    expected = [Fraction(68, 165), Fraction(36, 55), Fraction(113, 165)]
    np.testing.assert_allclose(abb.predict(s), [float(f) for f in expected], atol=1e-12)
    np.testing.assert_allclose(d.positions["value"], [float(f) for f in expected], atol=1e-12)
    np.testing.assert_allclose(d.boundaries["posterior"], [7 / 11, 5 / 11], atol=1e-12)
    np.testing.assert_allclose(d.boundaries["prior"], [0.5, 0.5], atol=1e-12)
    assert d.expected_bins == pytest.approx(1 + 12 / 11)

    sbb = calibrators.get("sbb", lam=lam).fit(s, y)
    e = explain(sbb, s, y)
    assert e.bins[["first", "last"]].values.tolist() == [[0, 0], [1, 2]]
    np.testing.assert_allclose(sbb.predict(s), [1 / 3, 3 / 4, 3 / 4], atol=1e-12)
    assert sbb.log_score_ == pytest.approx(math.log(4 / 96), abs=1e-12)
    assert e.log_score == sbb.log_score_ and e.log_evidence == sbb.log_evidence_
    assert e.posterior_of_best == pytest.approx(4 / 11)


# ---------------------------------------------------------------------------
# brute force on 3..8 points
# ---------------------------------------------------------------------------


def test_row_order_and_ties_do_not_matter():
    """Shuffling rows changes nothing; a run of ties is one position."""
    rng = np.random.default_rng(3)
    s = np.repeat(rng.uniform(0, 1, 30), rng.integers(1, 5, 30))
    y = (rng.uniform(size=s.size) < s).astype(int)
    perm = rng.permutation(s.size)
    for name in ("sbb", "abb"):
        a = calibrators.get(name).fit(s, y)
        b = calibrators.get(name).fit(s[perm], y[perm])
        grid = np.linspace(0, 1, 101)
        np.testing.assert_allclose(a.predict(grid), b.predict(grid), atol=1e-12)
        ex = explain(a, s, y)
        assert len(ex.positions) == 30 and ex.positions["n"].sum() == s.size
        assert any("Tied scores were collapsed" in n for n in ex.notes)


# ---------------------------------------------------------------------------
# limits and prediction between positions
# ---------------------------------------------------------------------------
def test_lambda_limits_one_bin_and_one_bin_per_score():
    """lambda -> 0: one bin over everything; lambda -> infinity: one bin per distinct score."""
    rng = np.random.default_rng(5)
    s = rng.uniform(0, 1, 25)
    y = (rng.uniform(size=25) < s).astype(int)
    pooled = (y.sum() + 1) / (y.size + 2)
    per_score = (y + 1) / 3.0
    for name in ("sbb", "abb"):
        small = calibrators.get(name, lam=1e-9).fit(s, y)
        np.testing.assert_allclose(small.predict(s), pooled, atol=1e-6)
        big = calibrators.get(name, lam=1e9).fit(s, y)
        np.testing.assert_allclose(big.predict(s), per_score, atol=1e-6)
    assert calibrators.get("sbb", lam=1e9).fit(s, y).bin_estimate_.size == 25


def test_constant_score_column():
    s = np.full(10, 0.3)
    y = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1])
    for name in ("sbb", "abb"):
        cal = calibrators.get(name).fit(s, y)
        np.testing.assert_allclose(cal.predict([0.0, 0.3, 1.0]), 8 / 12)
        assert cal.log_evidence_ == pytest.approx(math.lgamma(4) + math.lgamma(8) - math.lgamma(12))
        assert explain(cal, s, y).log_evidence == cal.log_evidence_
    assert len(explain(calibrators.get("abb").fit(s, y), s, y).boundaries) == 0


# ---------------------------------------------------------------------------
# micro-bin grouping
# ---------------------------------------------------------------------------
def test_grouping_keeps_ties_and_counts():
    rng = np.random.default_rng(2)
    s = np.concatenate([rng.uniform(0, 1, 60), np.full(15, 0.5)])   # a run of 15 ties
    y = (rng.uniform(size=s.size) < s).astype(int)
    pos = collapse(s, y, max_positions=8)
    assert pos.grouped and pos.size <= 8 and pos.n_distinct == 61
    assert (pos.n0 + pos.n1).sum() == s.size and pos.n1.sum() == y.sum()
    assert np.all(pos.hi[:-1] < pos.lo[1:])                        # contiguous, disjoint ranges
    assert np.all((pos.lo <= pos.score) & (pos.score <= pos.hi))
    holder = np.flatnonzero((pos.lo <= 0.5) & (0.5 <= pos.hi))
    assert holder.size == 1 and pos.lo[holder[0]] <= 0.5 <= pos.hi[holder[0]]
    for k in range(pos.size):                                       # counts per micro-bin
        inside = (s >= pos.lo[k]) & (s <= pos.hi[k])
        assert inside.sum() == pos.n0[k] + pos.n1[k] and y[inside].sum() == pos.n1[k]
        assert pos.score[k] == pytest.approx(s[inside].mean())


def test_grouped_fit_equals_brute_force_on_the_micro_bins():
    """With grouping, ABB/SBB are exact over the binnings of the micro-bins (scores = their means)."""
    rng = np.random.default_rng(4)
    s = rng.uniform(0, 1, 40)
    y = (rng.uniform(size=40) < s).astype(int)
    abb = calibrators.get("abb", lam=2.0, max_positions=6).fit(s, y)
    sbb = calibrators.get("sbb", lam=2.0, max_positions=6).fit(s, y)
    pos = collapse(s, y, max_positions=6)
    bf = brute_force(pos.score, list(pos.n0), list(pos.n1), 2.0)
    ex = explain(abb, s, y)
    np.testing.assert_array_equal(ex.positions[["score", "lo", "hi"]].to_numpy(),
                                  np.column_stack([pos.score, pos.lo, pos.hi]))
    np.testing.assert_allclose(ex.positions["value"], bf["value"], atol=1e-9)
    np.testing.assert_allclose(abb.predict(s), bf["value"][np.searchsorted(pos.hi, s)], atol=1e-9)
    assert sbb.log_score_ == pytest.approx(bf["best"], abs=1e-9)
    notes = " ".join(ex.notes)
    assert "micro-bins" in notes and f"{pos.size}" in notes
    assert "micro-bins" in " ".join(explain(sbb, s, y).notes)


def test_without_log_factorial_table_results_are_identical(monkeypatch):
    """Above LGAMMA_TABLE_MAX rows gammaln is called directly: same numbers as the table."""
    from calibdash.calibrators import _bayes_binning

    rng = np.random.default_rng(8)
    s = rng.uniform(0, 1, 400)
    y = (rng.uniform(size=400) < s).astype(int)
    fits = {}
    for limit in (10**9, 0):
        monkeypatch.setattr(_bayes_binning, "LGAMMA_TABLE_MAX", limit)
        fits[limit] = [calibrators.get(n, max_positions=60).fit(s, y) for n in ("sbb", "abb")]
    (sbb_t, abb_t), (sbb_f, abb_f) = fits[10**9], fits[0]
    np.testing.assert_allclose(abb_f.knots_y_, abb_t.knots_y_, rtol=0, atol=1e-12)
    assert abb_f.log_evidence_ == pytest.approx(abb_t.log_evidence_, abs=1e-9)
    np.testing.assert_array_equal(sbb_f.cuts_, sbb_t.cuts_)


# ---------------------------------------------------------------------------
# reference data, contract details
# ---------------------------------------------------------------------------
def test_quadratic_svm_reference_scores_improve():
    """Fitted on the quadratic-SVM train scores, both lower the test RMSE (raw .1263) and ECE (raw .0495)."""
    def col(name):
        return np.loadtxt(shared_file("svm-quadratic-scores", name))
    s_tr, y_tr = col("train_data_y.csv"), col("train_data_z.csv")
    s_te, y_te = col("test_data_y.csv"), col("test_data_z.csv")
    assert rmse(s_te, y_te) == pytest.approx(0.1263, abs=1e-4)
    for name in ("sbb", "abb"):
        p = calibrators.get(name).fit(s_tr, y_tr).predict(s_te)
        assert rmse(p, y_te) < 0.085, name
        assert ece(p, y_te, 10, "quantile") < 0.03, name


def test_parameters_pickling_and_refusals():
    for name in ("sbb", "abb"):
        cls = calibrators.get_class(name)
        assert [h.name for h in cls.hyperparams] == ["lam"]
        hp = cls.hyperparams[0]
        assert hp.log and hp.low < hp.default < hp.high
        cal = calibrators.get(name, lam=4.0).fit(np.linspace(0, 1, 50), np.arange(50) % 3 == 0)
        again = pickle.loads(pickle.dumps(cal))
        np.testing.assert_array_equal(again.predict(np.linspace(0, 1, 7)), cal.predict(np.linspace(0, 1, 7)))
        for bad in (0.0, -1.0, float("nan")):
            with pytest.raises(SettingsError, match="λ"):
                calibrators.get(name, lam=bad).fit(np.linspace(0, 1, 10), np.arange(10) % 2)
        with pytest.raises(SettingsError, match="max_positions"):
            calibrators.get(name, max_positions=0).fit(np.linspace(0, 1, 10), np.arange(10) % 2)


# ---------------------------------------------------------------------------
# explainers: the chosen bins are predict's; other rows are refused; loaded models explain the same
# ---------------------------------------------------------------------------
def rows_of():
    rng = np.random.default_rng(9)
    s = rng.uniform(0, 1, 300)
    y = (rng.uniform(size=300) < 0.5 + 0.4 * np.sin(3 * np.pi * s)).astype(int)
    return s, y


@pytest.mark.parametrize("name", ["sbb", "abb"])
def test_explaining_needs_the_training_rows_and_works_on_a_loaded_model(name):
    s, y = rows_of()
    cal = calibrators.get(name).fit(s, y)
    with pytest.raises(ProgrammingError, match=f"not the ones {name.upper()} was fitted on"):
        explain(cal, s, 1 - y)
    a, b = explain(cal, s, y), explain(export.loads(export.dumps(cal)), s, y)
    assert a.notes == b.notes and a.log_evidence == b.log_evidence
    for key in a.tables:
        assert a.tables[key].equals(b.tables[key]), key


# ---------------------------------------------------------------------------
# figures draw the explanation's numbers
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# sample weights: positions count weights; the prior and the dynamic programme are unchanged
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sbb", "abb"])
@pytest.mark.parametrize("max_positions", [10_000, 40])          # distinct scores, or micro-bins
def test_weights_count_as_rows(name, max_positions):
    s, y = tied_rows(n=3000, seed=31, decimals=2)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(
        lambda: calibrators.get(name, max_positions=max_positions), s, y, k, atol=0)
    assert weighted.log_evidence_ == repeated.log_evidence_
    # explained with its weights: the repeated rows' positions (and bins or boundaries)
    a = explain(weighted, s, y, sample_weight=k)
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k))
    for key in a.tables:
        pd.testing.assert_frame_equal(a.tables[key], b.tables[key], check_dtype=False, rtol=1e-12)
    notes = " ".join(a.notes)
    assert "sample weights" in notes and f"total {k.sum():,}" in notes
    assert ("equal-weight micro-bins" in notes) == (max_positions == 40)
    with pytest.raises(ProgrammingError, match="and weights"):
        explain(weighted, s, y)


def test_weighted_micro_bins_hold_equal_weight():
    """Above max_positions a distinct score goes to micro-bin floor(W_below * max_positions / W),
    W_below the weight of the rows below it: the repeated rows' micro-bins, zero weights absent."""
    s, y = tied_rows(n=1500, seed=32, decimals=4)
    k = integer_weights(y)
    pos = collapse(s, y, 25, k.astype(float))
    again = collapse(np.repeat(s, k), np.repeat(y, k), 25)
    assert pos.grouped and pos.weighted and pos.n_distinct == np.unique(s[k > 0]).size == again.n_distinct
    for field in ("score", "lo", "hi", "n0", "n1"):
        np.testing.assert_array_equal(getattr(pos, field), getattr(again, field), err_msg=field)
    w = np.random.default_rng(3).uniform(0.1, 2.0, s.size)
    grouped = collapse(s, y, 25, w)
    shares = (grouped.n0 + grouped.n1) / w.sum()
    assert shares.sum() == pytest.approx(1.0) and shares.max() < 2.5 / 25     # ties keep a micro-bin whole


def test_constant_score_with_fractional_weights_by_hand():
    """One position with n0 = 1.5, n1 = 2.5: estimate (2.5 + 1) / (4 + 2), evidence Eq. 4 with real
    counts Gamma(2.5) Gamma(3.5) / Gamma(6)."""
    s = np.full(4, 0.3)
    y = np.array([0, 0, 1, 1])
    w = np.array([1.0, 0.5, 2.0, 0.5])
    for name in ("sbb", "abb"):
        cal = calibrators.get(name).fit(s, y, sample_weight=w)
        np.testing.assert_allclose(cal.predict([0.0, 0.3, 1.0]), 3.5 / 6, rtol=1e-15)
        assert cal.log_evidence_ == pytest.approx(math.lgamma(2.5) + math.lgamma(3.5) - math.lgamma(6), abs=1e-13)
        assert explain(cal, s, y, sample_weight=w).positions[["n", "n1"]].values.tolist() == [[4.0, 2.5]]


@pytest.mark.parametrize("s,y,lam", CASES[::3])
def test_fractional_weights_equal_brute_force_on_real_counts(s, y, lam):
    """Eq. 4-7 with each position's weights as its counts: brute force over every binning."""
    w = np.random.default_rng(int(lam * 10) + s.size).uniform(0.05, 3.0, s.size)
    vals, inv = np.unique(s, return_inverse=True)
    n1 = np.bincount(inv, weights=w * y, minlength=vals.size)
    n0 = np.bincount(inv, weights=w * (1 - y), minlength=vals.size)
    bf = brute_force(vals, list(n0), list(n1), lam)
    abb = calibrators.get("abb", lam=lam).fit(s, y, sample_weight=w)
    np.testing.assert_allclose(abb.predict(vals), bf["value"], rtol=0, atol=1e-9)
    assert abb.log_evidence_ == pytest.approx(bf["log_evidence"], abs=1e-9)
    sbb = calibrators.get("sbb", lam=lam).fit(s, y, sample_weight=w)
    assert sbb.log_score_ == pytest.approx(bf["best"], abs=1e-9)


@pytest.mark.parametrize("name", ["sbb", "abb"])
def test_scaled_weights_are_more_rows_not_the_same_map(name):
    """The documented exception: weights c * w are the fit of c times as many rows (half-weights on
    every row twice are the rows once), so the map moves with c: c = 1/10 weighs the data a tenth as
    much against the prior, and the map flattens towards fewer bins."""
    s, y = rows_of()
    plain = calibrators.get(name).fit(s, y)
    halves = calibrators.get(name).fit(np.repeat(s, 2), np.repeat(y, 2), sample_weight=np.full(2 * s.size, 0.5))
    np.testing.assert_allclose(halves.predict(GRID), plain.predict(GRID), rtol=0, atol=1e-12)
    tenth = calibrators.get(name).fit(s, y, sample_weight=np.full(s.size, 0.1))
    assert np.abs(tenth.predict(GRID) - plain.predict(GRID)).max() > 1e-2
    assert np.ptp(tenth.predict(GRID)) < np.ptp(plain.predict(GRID))
