"""Tests of BBQ (calibdash.calibrators.bbq), its explainer (calibdash.explain.bbq) and its figures.

Two slow, literal references live here: a line-by-line Python transcription of
the authors' MATLAB code (``build.m``, ``elbow.m``, ``predict.m``) and a
per-model loop over the paper's equations on top of the histogram calibrator's
binning. The fast implementation must agree with both to 1e-12.
"""
from __future__ import annotations

import inspect
import math
import pickle
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.special import betaln, gammaln

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.io import export
from calibdash.calibrators.bbq import (BBQCalibrator, bdeu_log_marginal, elbow_authors, model_range, model_size,
                                       prune_paper)
from calibdash.calibrators.histogram import equal_count_cuts
from calibdash.core.errors import ProgrammingError, SettingsError
from calibdash.explain import explain

from tests.conftest import shared_file
from tests.calibrators.test_calibrators import GRID, as_cells, assert_weights_count_as_rows, integer_weights


def _tied_sample(n=300, seed=3, decimals=2):
    """Scores rounded to ``decimals`` (many ties), labels drawn with P(y=1) = s**0.8."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 5, size=n), decimals)
    y = (rng.uniform(size=n) < s ** 0.8).astype(int)
    return s, y


# ---------------------------------------------------------------------------
# the marginal likelihood
# ---------------------------------------------------------------------------
def test_bdeu_single_bin_hand_computed():
    # a = 2, p = 1/2: Beta(1, 1); one positive and one negative: 1! 1! / 3! = 1/6
    assert bdeu_log_marginal(1, 1, 0.5, 2.0) == pytest.approx(math.log(1 / 6), abs=1e-13)
    # a = 1, p = 1/4, one positive: the prior mean alpha / (alpha + beta) = 1/4
    assert bdeu_log_marginal(1, 0, 0.25, 1.0) == pytest.approx(math.log(0.25), abs=1e-13)
    # then a negative: 1/4 * (3/4) / 2
    assert bdeu_log_marginal(1, 1, 0.25, 1.0) == pytest.approx(math.log(0.09375), abs=1e-13)


@pytest.mark.parametrize("n1,n0,p,a", [(3, 5, 0.3, 0.4), (0, 7, 0.9, 2.0), (12, 1, 0.05, 6.0)])
def test_bdeu_equals_the_beta_binomial_integral(n1, n0, p, a):
    # P(D) = integral theta^n1 (1 - theta)^n0 Beta(theta; a p, a (1 - p)) d theta
    dist = stats.beta(a * p, a * (1 - p))
    val, _ = integrate.quad(lambda t: t ** n1 * (1 - t) ** n0 * dist.pdf(t), 0, 1, limit=200)
    assert bdeu_log_marginal(n1, n0, p, a) == pytest.approx(math.log(val), rel=1e-6)


def test_model_log_marginal_likelihood_of_a_tiny_case_by_hand():
    # 8 distinct scores; the paper variant's B = 2 model has bins [0, .5) and [.5, 1],
    # midpoints 1/4 and 3/4, a = N'/B = 1. Bin 1: 1 positive, 3 negatives; bin 2: 3 and 1.
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 1, 0, 1, 1, 0, 1])
    cal = BBQCalibrator(ess=2.0, prune=False).fit(s, y)
    ex = explain(cal, s, y)
    models = ex.models.set_index("B")
    # rising factorials: Gamma(x + k) / Gamma(x) = x (x + 1) ... (x + k - 1)
    q = Fraction(1, 4)
    bin1 = q * ((1 - q) * (2 - q) * (3 - q)) / 24          # Gamma(1)/Gamma(5) = 1/24
    expected = 2 * math.log(bin1)                           # bin 2 is the mirror image
    assert models.loc[2, "log_marginal_likelihood"] == pytest.approx(expected, abs=1e-12)
    bins = ex.bins
    b2 = bins[bins["B"] == 2]
    assert b2["upper"].tolist() == [0.5, 1.0]
    # smoothed frequencies (m_b + a p_b) / (N_b + a)
    assert b2["estimate"].tolist() == pytest.approx([(1 + 0.25) / 5, (3 + 0.75) / 5], abs=1e-15)


# ---------------------------------------------------------------------------
# reproduction of the authors' published figures
# ---------------------------------------------------------------------------
def test_authors_variant_reproduces_published_bbq_figures():
    def load(name):
        return np.loadtxt(shared_file("svm-quadratic-scores", name))

    s_tr, y_tr = load("train_data_y.csv"), load("train_data_z.csv").astype(int)
    s_te, y_te = load("test_data_y.csv"), load("test_data_z.csv").astype(int)
    cal = calibrators.get("bbq", variant="authors").fit(s_tr, y_tr)
    p = cal.predict(s_te)
    auc = metrics.auc(p, y_te)
    got = {
        "RMSE": metrics.rmse(p, y_te),
        "AUC": max(auc, 1 - auc),
        "ACC": metrics.accuracy(p, y_te),
        # the authors binned the (heavily tied) calibrated outputs by rank, as their code does
        "MCE": metrics.mce(p, y_te, n_bins=10, strategy="rank"),
        "ECE": metrics.ece(p, y_te, n_bins=10, strategy="rank"),
    }
    published = {"RMSE": 0.0716, "AUC": 0.9999, "ACC": 0.9930, "MCE": 0.0491, "ECE": 0.0090}
    for key, value in published.items():
        assert got[key] == pytest.approx(value, abs=5e-4), key
    assert cal.n_models_ == 100                             # B = 1 .. 100 for N = 1000


# ---------------------------------------------------------------------------
# the authors' variant against a literal transcription of their MATLAB code
# ---------------------------------------------------------------------------
def _matlab_hist(P, Y, b):
    """HistCalibrationFreq_local, 1-based indices as in build.m; returns bins (min, max, P)."""
    N = len(P)

    def mk(lo, hi, ys, ps):
        m0 = (lo + hi) / 2
        p0 = (ps[ys == 1].sum() + m0) / ((ys == 1).sum() + 1)
        n, n1 = len(ys), ys.sum()
        return {"min": lo, "max": hi, "n": n, "n1": n1, "n0": n - n1, "P": (n1 + p0) / (n + 1)}

    if b == 1:
        return [mk(0.0, 1.0, Y, P)]
    c = N // b
    i, T = 1, []
    while i < b:
        idx1, idx2 = (i - 1) * c + 1, i * c
        j = i + 1
        while j <= b:
            jidx2 = j * c if j < b else N
            if P[jidx2 - 1] == P[idx1 - 1]:
                idx2 = jidx2
                j += 1
            else:
                break
        T.append((idx1, idx2))
        i = j
    if idx2 < N:
        T.append((idx2 + 1, N))
    if len(T) == 1:                                  # MATLAB stops here (T{2} undefined); see bbq.py
        return [mk(0.0, 1.0, Y, P)]
    hist = []
    for k, (a, e) in enumerate(T):
        lo = 0.0 if k == 0 else (P[a - 1] + P[T[k - 1][1] - 1]) / 2
        hi = 1.0 if k == len(T) - 1 else (P[e - 1] + P[T[k + 1][0] - 1]) / 2
        hist.append(mk(lo, hi, Y[a - 1:e], P[a - 1:e]))
    return hist


def _matlab_bdeu2(hist):
    score = 0.0
    for h in hist:
        pj = min(max((h["min"] + h["max"]) / 2, 5e-3), 1 - 5e-3)
        score += (gammaln(2) + gammaln(h["n1"] + 2 * pj) + gammaln(h["n0"] + 2 * (1 - pj))
                  - gammaln(h["n"] + 2) - gammaln(2 * pj) - gammaln(2 * (1 - pj)))
    return -2 * score


def _matlab_elbow(scores, alpha=0.001):
    b = len(scores)
    sigma2 = np.var(scores)
    idxs = np.argsort(-np.asarray(scores), kind="stable")
    R = np.asarray(scores)[idxs]
    k = 1
    while k < b and R[k - 1] == R[k]:
        k += 1
    while k < b and (R[k - 1] - R[k]) / sigma2 > alpha:
        k += 1
    return idxs[:k - 1] if k > 1 else idxs[:1]


def _matlab_getHistPr(hist, x):
    B = len(hist)
    cuts = [0.0] + [h["max"] for h in hist[:-1]] + [1.0]
    lo, hi = 1, B + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if x > cuts[mid - 1]:
            lo = mid
        elif x < cuts[mid - 1]:
            hi = mid
        else:
            lo = mid
            break
    idx = lo - 1
    res, cnt = hist[idx]["P"], 1
    for step in (-1, 1):
        k = idx + step
        while 0 <= k < B and hist[k]["min"] == hist[idx]["min"] and hist[k]["max"] == hist[idx]["max"]:
            res += hist[k]["P"]
            cnt += 1
            k += step
    return res / cnt


def _matlab_bbq(ptr, ytr, pte, prune=True):
    order = np.argsort(ptr, kind="stable")
    P, Y = ptr[order], ytr[order]
    N = len(P)
    max_b = min(math.ceil(N / 5), math.ceil(10 * N ** (1 / 3)))
    min_b = max(1, math.floor(N ** (1 / 3) / 10))
    models = [_matlab_hist(P, Y, b) for b in range(min_b, max_b + 1)]
    S = np.array([_matlab_bdeu2(h) for h in models])
    SV = np.exp((S.min() - S) / 2)
    idxs = _matlab_elbow(SV) if prune else np.arange(len(models))
    out = np.empty(len(pte))
    for i, x in enumerate(pte):
        p = np.array([_matlab_getHistPr(models[k], x) for k in idxs])
        out[i] = SV[idxs] @ p / SV[idxs].sum()
    return out


@pytest.mark.parametrize("seed,decimals,prune", [(3, 2, True), (5, 2, False), (11, 6, True)])
def test_authors_variant_equals_a_literal_transcription_of_the_matlab_code(seed, decimals, prune):
    s, y = _tied_sample(n=300, seed=seed, decimals=decimals)
    cal = BBQCalibrator(variant="authors", prune=prune).fit(s, y)
    bins = explain(cal, s, y).bins
    x = np.unique(np.concatenate([s, bins["lower"], bins["upper"], np.linspace(0, 1, 101)]))
    np.testing.assert_allclose(cal.predict(x), _matlab_bbq(s, y, x, prune=prune), rtol=0, atol=1e-12)


def test_authors_zero_width_bins_follow_the_codes_binary_search():
    # heavy ties make blocks of one value: zero-width bins [v, v] whose lookup at exactly v is
    # decided by predict.m's binary search, not by the upper-bin rule
    s, y = _tied_sample(n=300, seed=3, decimals=2)
    cal = BBQCalibrator(variant="authors").fit(s, y)
    assert cal.point_x_.size > 0
    np.testing.assert_allclose(cal.predict(cal.point_x_), _matlab_bbq(s, y, cal.point_x_), atol=1e-12)
    # and without the correction the fast map alone would be wrong there
    plain = cal.levels_[np.searchsorted(cal.cuts_, cal.point_x_, side="right")]
    assert np.max(np.abs(plain - cal.predict(cal.point_x_))) > 1e-6


def test_authors_ties_split_or_merge_exactly_as_their_code_does():
    # N = 15 gives B = 1 .. 3 (ceil(N / 5) = 3). Ten scores 0.2, then five 0.5.
    s = np.r_[np.full(10, 0.2), np.full(5, 0.5)]
    y = np.r_[np.tile([0, 1], 5), [1, 1, 0, 1, 1]]
    bins = explain(BBQCalibrator(variant="authors").fit(s, y), s, y).bins
    # B = 2: blocks of 7 rows; block 2 ends on 0.5, not on block 1's first score 0.2, so no merge:
    # the run of 0.2 is split 7 / 3 and the cut is (0.2 + 0.2) / 2
    b2 = bins[bins["B"] == 2]
    assert b2["count"].tolist() == [7, 8]
    assert b2["upper"].tolist() == pytest.approx([0.2, 1.0], abs=1e-15)
    # B = 3: blocks of 5; block 2 ends on 0.2 = block 1's first score, so they merge (10 rows);
    # block 3 ends on 0.5 and stays apart; the cut lies halfway between 0.2 and 0.5
    b3 = bins[bins["B"] == 3]
    assert b3["count"].tolist() == [10, 5]
    assert b3["upper"].tolist() == pytest.approx([0.35, 1.0], abs=1e-15)
    # the paper variant never splits the run: B = 2 and B = 3 both give the 10 / 5 bins
    pb = explain(BBQCalibrator().fit(s, y), s, y).bins
    assert pb[pb["B"] == 2]["count"].tolist() == [10, 5]


# ---------------------------------------------------------------------------
# the paper variant against a per-model loop
# ---------------------------------------------------------------------------
def _paper_bbq(s, y, x, ess=2.0, c=10, prune=True):
    """Per-model loop: the histogram calibrator's equal-count cuts, the marginal likelihood as a
    Beta-function ratio, the weighted average, the paper's pruning rule read literally."""
    values, counts = np.unique(s, return_counts=True)
    N = s.size
    root = np.cbrt(N)
    seen, models = set(), []
    for B in range(max(1, math.ceil(root / c)), min(N, math.floor(c * root)) + 1):
        cuts = equal_count_cuts(values, counts, B)
        if tuple(cuts) in seen:
            continue
        seen.add(tuple(cuts))
        ids = np.searchsorted(cuts, s, side="right")
        K = cuts.size + 1
        n = np.bincount(ids, minlength=K)
        m = np.bincount(ids, weights=y, minlength=K)
        edges = np.concatenate([[0.0], cuts, [1.0]])
        p = (edges[:-1] + edges[1:]) / 2
        a = ess / K
        lml = np.sum(betaln(m + a * p, n - m + a * (1 - p)) - betaln(a * p, a * (1 - p)))
        models.append((lml, cuts, (m + a * p) / (n + a)))
    lml = np.array([mm[0] for mm in models])
    w = np.exp(lml - lml.max())
    w /= w.sum()
    keep = list(range(len(models)))
    if prune:
        order = sorted(range(len(models)), key=lambda i: -w[i])
        S = w[order]
        var = np.var(S)
        k = len(S)
        for j in range(len(S) - 1):
            if (S[j] - S[j + 1]) / var <= 0.001:
                k = j + 1
                break
        keep = order[:k]
    total = sum(w[i] for i in keep)
    out = np.zeros(x.size)
    for i in keep:
        _, cuts, est = models[i]
        out += w[i] / total * est[np.searchsorted(cuts, x, side="right")]
    return out


@pytest.mark.parametrize("seed,decimals,ess,c,prune", [(1, 2, 2.0, 10, True), (2, 2, 0.5, 4, False),
                                                       (4, 8, 20.0, 10, True)])
def test_paper_variant_equals_a_per_model_loop(seed, decimals, ess, c, prune):
    s, y = _tied_sample(n=400, seed=seed, decimals=decimals)
    cal = BBQCalibrator(ess=ess, c=c, prune=prune).fit(s, y)
    bins = explain(cal, s, y).bins
    x = np.unique(np.concatenate([s, bins["lower"], np.linspace(0, 1, 201)]))
    np.testing.assert_allclose(cal.predict(x), _paper_bbq(s, y, x, ess, c, prune), rtol=0, atol=1e-12)


@pytest.mark.parametrize("variant,prune", [("paper", False), ("paper", True), ("authors", False),
                                           ("authors", True)])
def test_the_explainers_bins_average_to_the_map_predict_uses(variant, prune):
    s, y = _tied_sample(n=500, seed=8, decimals=3)
    cal = BBQCalibrator(prune=prune, variant=variant).fit(s, y)
    ex = explain(cal, s, y)
    x = np.unique(np.concatenate([np.linspace(0, 1, 301), ex.bins["lower"], s]))
    # the authors' lookup at a zero-width bin's edge is predict.m's binary search, tested above
    x = x[~np.isin(x, cal.point_x_)]
    expect = np.zeros(x.size)
    for _, row in ex.models[ex.models["weight"] > 0].iterrows():
        b = ex.bins[ex.bins["B"] == row["B"]]
        expect += row["weight"] * b["estimate"].to_numpy()[np.searchsorted(b["lower"].to_numpy()[1:], x, "right")]
    np.testing.assert_allclose(cal.predict(x), expect, atol=1e-12)
    # and the map pieces it lists are predict's
    pieces = ex.map
    np.testing.assert_allclose(cal.predict(pieces["lower"].to_numpy()[1:]), pieces["prob"].to_numpy()[1:],
                               atol=1e-12)
    # the fitted calibrator's small summaries are the explanation's kept models
    kept = ex.models[ex.models["kept"]]
    assert cal.n_models_ == len(ex.models)
    assert cal.kept_b_.tolist() == kept["B"].tolist()
    np.testing.assert_allclose(cal.kept_weight_, kept["weight"], rtol=0, atol=0)


def test_explaining_a_loaded_calibrator_gives_the_same_explanation():
    s, y = _tied_sample(n=400, seed=12, decimals=3)
    cal = BBQCalibrator(variant="authors").fit(s, y)
    loaded = export.loads(export.dumps(cal))
    a, b = explain(cal, s, y), explain(loaded, s, y)
    assert a.notes == b.notes and a.log_evidence == b.log_evidence
    for name in ("models", "bins", "map"):
        assert a.tables[name].equals(b.tables[name]), name


def test_explaining_on_other_rows_is_refused():
    s, y = _tied_sample(n=400, seed=12, decimals=3)
    cal = BBQCalibrator().fit(s, y)
    with pytest.raises(ProgrammingError, match="fitted on 400 rows"):
        explain(cal, s[:300], y[:300])
    with pytest.raises(ProgrammingError, match="not the ones BBQ was fitted on"):
        explain(cal, s, 1 - y)


# ---------------------------------------------------------------------------
# ties, degenerate data, weights
# ---------------------------------------------------------------------------
def test_paper_variant_never_splits_tied_scores():
    s, y = _tied_sample(n=600, seed=9, decimals=1)          # about 8 distinct scores
    cal = BBQCalibrator().fit(s, y)
    ex = explain(cal, s, y)
    for B, b in ex.bins.groupby("B"):
        # every training score sits strictly inside one bin: the stored counts are the value lookup's
        cuts = b["lower"].to_numpy()[1:]
        assert not np.isin(cuts, s).any()
        ids = np.searchsorted(cuts, s, side="right")
        assert np.bincount(ids, minlength=len(b)).tolist() == b["count"].tolist(), B
    models = ex.models
    assert (models["n_bins"] <= np.unique(s).size).all()
    dup = models[models["same_as"] >= 0]
    assert len(dup) > 0 and (dup["weight"] == 0).all() and (dup["posterior"] == 0).all()
    assert any("counted once" in n for n in ex.notes)


def test_paper_boundary_goes_to_the_nearest_change_of_score_lower_on_a_tie():
    # three runs of two ties; B = 2 wants 3 rows below the cut, the changes of score are at 2 and 4
    # (equally near): the lower one wins, as in the histogram calibrator; B = 3 cuts at 2 and 4
    s = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3])
    y = np.array([0, 1, 0, 1, 1, 1])
    bins = explain(BBQCalibrator().fit(s, y), s, y).bins
    assert bins[bins["B"] == 2]["count"].tolist() == [2, 4]
    assert bins[bins["B"] == 3]["count"].tolist() == [2, 2, 2]
    assert bins[bins["B"] == 3]["upper"].tolist() == pytest.approx([0.15, 0.25, 1.0], abs=1e-15)


@pytest.mark.parametrize("variant", ["paper", "authors"])
def test_constant_scores_give_the_one_bin_estimate(variant):
    s = np.full(50, 0.3)
    y = np.r_[np.ones(20, int), np.zeros(30, int)]
    cal = BBQCalibrator(variant=variant).fit(s, y)
    if variant == "paper":
        expected = (20 + 2 * 0.5) / (50 + 2)                # a = N' / 1, p = 1/2
    else:
        p0 = (20 * 0.3 + 0.5) / 21                          # (sum of positives' scores + midpoint) / (m + 1)
        expected = (20 + p0) / 51
    np.testing.assert_allclose(cal.predict([0.0, 0.3, 0.7, 1.0]), expected, atol=1e-14)


@pytest.mark.parametrize("variant", ["paper", "authors"])
def test_weights_are_the_normalised_marginal_likelihoods(variant):
    s, y = _tied_sample(n=300, seed=6, decimals=3)
    m = explain(BBQCalibrator(variant=variant).fit(s, y), s, y).models
    distinct = m[m["same_as"] < 0]
    lml = distinct["log_marginal_likelihood"].to_numpy()
    np.testing.assert_allclose(distinct["posterior"], np.exp(lml - lml.max()) / np.exp(lml - lml.max()).sum(),
                               rtol=1e-10)
    kept = m["kept"].to_numpy()
    assert m["weight"].sum() == pytest.approx(1.0) and (m.loc[~kept, "weight"] == 0).all()
    np.testing.assert_allclose(m.loc[kept, "weight"], m.loc[kept, "posterior"] / m.loc[kept, "posterior"].sum(),
                               rtol=1e-10)
    # pruning keeps the heaviest models
    pruned = m.loc[~kept & (m["same_as"] < 0), "posterior"].to_numpy()
    assert pruned.size > 0 and m.loc[kept, "posterior"].min() >= pruned.max()


def test_pruning_rules_on_hand_made_weights():
    w = np.array([0.3, 0.0, 0.7, 0.0])
    # paper: sorted .7 .3 0 0, variance .0825; drops .4 .3 0 -> first small drop at k = 3: keep 3 models
    assert prune_paper(w).tolist() == [True, True, True, False]
    # elbow.m: advance while the drop is large (k = 3, 1-based), keep the top k - 1 = 2
    assert elbow_authors(w).tolist() == [True, False, True, False]
    # no small drop: keep everything (paper); ties at the top are skipped first (code)
    assert prune_paper(np.array([0.5, 0.3, 0.2])).all()
    # (without skipping, the zero drop between the tied 1.0s would stop at k = 1 and keep one model)
    assert elbow_authors(np.array([1.0, 1.0, 0.2])).tolist() == [True, True, False]
    # a single model, or all equal: no crash, at least one model kept
    assert elbow_authors(np.array([1.0])).tolist() == [True]
    assert prune_paper(np.array([0.25] * 4)).all()
    # all tied: the code would read past its array; we stop at the last model (k = 4), keep k - 1
    assert elbow_authors(np.array([1.0] * 4)).tolist() == [True, True, True, False]


def test_model_ranges():
    assert model_range(1000, 10, "paper").tolist() == list(range(1, 101))
    assert model_range(1000, 10, "authors").tolist() == list(range(1, 101))   # 1000**(1/3) < 10
    assert model_range(10 ** 6, 10, "authors")[[0, -1]].tolist() == [9, 1000]  # floor(9.99..) = 9
    assert model_range(10 ** 6, 10, "paper")[[0, -1]].tolist() == [10, 1000]
    assert model_range(20, 10, "authors").tolist() == [1, 2, 3, 4]              # ceil(N / 5) = 4
    assert model_range(64, 2, "paper").tolist() == list(range(2, 9))
    assert model_range(2, 10, "paper").tolist() == [1, 2]


# ---------------------------------------------------------------------------
# contract: hyperparameters, registry, errors, pickling
# ---------------------------------------------------------------------------
def test_hyperparameters_match_the_constructor_and_the_registry():
    sig = inspect.signature(BBQCalibrator.__init__).parameters
    assert [h.name for h in BBQCalibrator.hyperparams] == ["ess", "c", "prune", "variant"]
    for h in BBQCalibrator.hyperparams:
        assert sig[h.name].default == h.default
    ess = BBQCalibrator.hyperparams[0]
    assert ess.log and ess.default == 2 and ess.low < 2 < ess.high
    assert calibrators.get_class("bbq") is BBQCalibrator
    assert "bbq" in calibrators.available()


@pytest.mark.parametrize("params", [{"variant": "matlab"}, {"ess": 0}, {"c": 0.5}])
def test_bad_hyperparameters_raise_settings_errors(params):
    s, y = _tied_sample(n=60)
    with pytest.raises(SettingsError):
        BBQCalibrator(**params).fit(s, y)


def test_fitted_calibrator_pickles_and_predicts_the_same():
    s, y = _tied_sample(n=300, seed=2, decimals=2)
    cal = BBQCalibrator(variant="authors").fit(s, y)
    back = pickle.loads(pickle.dumps(cal))
    x = np.linspace(0, 1, 57)
    assert np.array_equal(back.predict(x), cal.predict(x))


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------
def test_figures_show_the_weights_and_the_kept_models():
    from calibdash.figures.layout import MAX_OPACITY
    from calibdash.figures.methods import bbq as fig_bbq

    s, y = _tied_sample(n=400, seed=1, decimals=3)
    cal = BBQCalibrator().fit(s, y)
    ex = explain(cal, s, y)
    models = ex.models
    figs = dict(fig_bbq.inner_figures(ex))
    assert len(figs) == 2
    weights_fig, map_fig = figs.values()
    bars = [t for t in weights_fig.data if t.type == "bar"]
    line = [t for t in weights_fig.data if t.type == "scatter"][0]
    assert sorted(np.concatenate([b.x for b in bars]).tolist()) == models["B"].tolist()
    assert np.concatenate([b.y for b in bars]).sum() == pytest.approx(1.0)
    assert line.yaxis == "y2"
    # the line and the x axis keep to the models within LML_SPAN nats of the best (the rest have no weight)
    near = models[models["log_marginal_likelihood"] >= models["log_marginal_likelihood"].max() - fig_bbq.LML_SPAN]
    np.testing.assert_allclose(line.y, near["log_marginal_likelihood"])
    assert set(models.loc[models["kept"], "B"]) <= set(near["B"])
    lo, hi = weights_fig.layout.xaxis.range
    assert lo < near["B"].min() and hi > near["B"].max()
    faint = [t for t in map_fig.data if getattr(t, "meta", None) == "model"]
    kept = models[models["weight"] > 0]
    assert len(faint) == len(kept)
    opac = sorted(t.opacity for t in faint)
    assert opac[-1] == pytest.approx(MAX_OPACITY)
    np.testing.assert_allclose(opac, np.sort(kept["weight"] / kept["weight"].max() * MAX_OPACITY))
    avg = [t for t in map_fig.data if getattr(t, "meta", None) == "average"][0]
    np.testing.assert_allclose(avg.y, cal.predict(np.clip(avg.x, 0, 1)), atol=1e-12)


# ---------------------------------------------------------------------------
# sample weights
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("params", [{}, {"prune": False, "ess": 5.0, "c": 4}])
def test_paper_weights_count_as_rows(params):
    s, y = _tied_sample(n=2000, seed=21, decimals=2)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(lambda: BBQCalibrator(**params), s, y, k, atol=0)
    assert weighted.n_models_ == repeated.n_models_ == model_range(int(k.sum()), weighted.c).size
    np.testing.assert_array_equal(weighted.kept_b_, repeated.kept_b_)
    # explained with its weights: the repeated rows' models and bins (counts as weight sums)
    a = explain(weighted, s, y, sample_weight=k)
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k))
    for name in ("models", "bins", "map"):
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_dtype=False, rtol=1e-12)
    assert a.log_evidence == pytest.approx(b.log_evidence, rel=1e-12)
    assert any("sample weights" in n for n in a.notes)
    with pytest.raises(ProgrammingError, match="not the ones BBQ was fitted on"):
        explain(weighted, s, y)


def test_authors_whole_weights_are_repeated_rows_and_fractions_are_refused():
    s, y = _tied_sample(n=600, seed=22, decimals=2)
    k = integer_weights(y)
    weighted = BBQCalibrator(variant="authors").fit(s, y, sample_weight=k.astype(float))
    repeated = BBQCalibrator(variant="authors").fit(np.repeat(s, k), np.repeat(y, k))
    np.testing.assert_array_equal(weighted.predict(GRID), repeated.predict(GRID))
    np.testing.assert_array_equal(weighted.point_x_, repeated.point_x_)
    a = explain(weighted, s, y, sample_weight=k)
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k))
    assert a.tables["bins"].equals(b.tables["bins"]) and a.tables["models"].equals(b.tables["models"])
    with pytest.raises(SettingsError, match="whole-number sample weights only .3 are fractional.*rank"):
        BBQCalibrator(variant="authors").fit(s, y, sample_weight=np.r_[[0.5, 1.5, 2.25], np.ones(s.size - 3)])


def test_authors_cells_equal_the_rows_in_the_cells_order_only():
    """The code's blocks split runs of ties by row order: cells (score, label, count) are the rows
    sorted by score then label, which is what they equal; rows in another order may differ."""
    s, y = _tied_sample(n=600, seed=23, decimals=2)
    cs, cy, cn = as_cells(s, y)
    order = np.lexsort((cy, cs))
    by_cells = BBQCalibrator(variant="authors").fit(cs[order], cy[order], sample_weight=cn[order])
    ordered = np.lexsort((y, s))
    np.testing.assert_array_equal(by_cells.predict(GRID),
                                  BBQCalibrator(variant="authors").fit(s[ordered], y[ordered]).predict(GRID))
    assert np.abs(by_cells.predict(GRID) - BBQCalibrator(variant="authors").fit(s, y).predict(GRID)).max() > 1e-3


def test_paper_weighted_by_hand():
    """Four scores with weights .5, 1.5, 1, 1: W = 4, so N = 4 and B = 1 .. 4. B = 2 cuts at
    cumulative weight 2, after 0.3, at (0.3 + 0.6) / 2 = 0.45; bin 1 holds weight 2 with 1.5 positive,
    bin 2 weight 2 with 1 positive; a = N'/B = 1 and p_b the bin midpoints 0.225 and 0.725."""
    s = np.array([0.1, 0.3, 0.6, 0.9])
    y = np.array([0, 1, 0, 1])
    w = np.array([0.5, 1.5, 1.0, 1.0])
    cal = BBQCalibrator(prune=False).fit(s, y, sample_weight=w)
    ex = explain(cal, s, y, sample_weight=w)
    assert ex.models["B"].tolist() == [1, 2, 3, 4] and cal.n_models_ == 4
    b2 = ex.bins[ex.bins["B"] == 2]
    assert b2["upper"].tolist() == pytest.approx([0.45, 1.0], abs=1e-15)
    assert b2["count"].tolist() == [2.0, 2.0] and b2["positives"].tolist() == [1.5, 1.0]
    np.testing.assert_allclose(b2["estimate"], [(1.5 + 0.225) / 3, (1 + 0.725) / 3], rtol=1e-15)
    # Eq. 2 with real counts: Beta(m + a p, n + a (1 - p)) / Beta(a p, a (1 - p)) per bin
    lml = (betaln(1.5 + 0.225, 0.5 + 0.775) - betaln(0.225, 0.775)
           + betaln(1.0 + 0.725, 1.0 + 0.275) - betaln(0.725, 0.275))
    assert ex.models.set_index("B").loc[2, "log_marginal_likelihood"] == pytest.approx(lml, abs=1e-12)


def test_the_model_range_takes_the_total_weight_rounded():
    assert model_size(7, None) == 7
    assert model_size(7, np.full(7, 0.5)) == 4                  # 3.5: halves up
    assert model_size(7, np.full(7, 0.02)) == 1                 # at least one row
    assert model_size(7, np.full(7, 1000.0)) == 7000


def test_paper_scaled_weights_are_more_rows_not_the_same_map():
    """The documented exception: weights c * w are the fit of c times as many rows (half-weights on
    every row twice are the rows once), so the map moves with c."""
    s, y = _tied_sample(n=1500, seed=24, decimals=3)
    plain = BBQCalibrator().fit(s, y)
    halves = BBQCalibrator().fit(np.repeat(s, 2), np.repeat(y, 2), sample_weight=np.full(2 * s.size, 0.5))
    np.testing.assert_allclose(halves.predict(GRID), plain.predict(GRID), rtol=0, atol=1e-12)
    tenth = BBQCalibrator().fit(s, y, sample_weight=np.full(s.size, 0.1))
    assert tenth.n_models_ == model_range(150, 10).size != plain.n_models_
    assert np.abs(tenth.predict(GRID) - plain.predict(GRID)).max() > 1e-2
