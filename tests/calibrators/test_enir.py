"""Tests of ENIR (calibdash.calibrators.enir, ._nearly_isotonic), its explainer and its figures.

Three independent references:

* the authors' published path (``shared/data/enir-authors``: their sorted
  scores and labels, and the breakpoints lambda, df and fitted values that
  their ``neariso`` package returned), reproduced to 1e-9;
* a line-by-line Python transcription of the authors' code: the ``neariso``
  C++ path (``NIR.cc``: ``NIR2``, ``mergeGroups``, ``addConnection``, the
  multimap of events, ``NIRexplicitSolution``), its R wrappers
  (``nearisoGetBreakpoints``, ``NIROneDimExplicitSolution``) and the ``enir``
  package's ``enir.build`` / ``enir.predict`` (``getDF``, ``getScoreLocal``,
  ``smoothBeta``, ``getMA``, ``findIdx``), one row and one score at a time;
  the fast implementation must agree with it to 1e-12;
* the optimality conditions of nearly-isotonic regression, checked on every
  fit of the path (a certificate that each fit is the minimiser).
"""
from __future__ import annotations

import bisect
import math

import numpy as np
import pytest

from calibdash import calibrators
from calibdash.io import export
from calibdash.calibrators._nearly_isotonic import breakpoints, group_slopes, near_isotonic_path
from calibdash.calibrators.enir import ENIR, enir_path, information_criterion, select_breakpoints
from calibdash.core.errors import ProgrammingError, SettingsError
from calibdash.explain import explain
from calibdash.figures import inner_figures

from tests.conftest import shared_file
from tests.calibrators.test_calibrators import assert_weights_count_as_rows, integer_weights


def fitted_values(path, lam: float) -> np.ndarray:
    """The nearly-isotonic fit ``beta(lam)`` at every point (not rounded or clipped), from the path's merges."""
    if path.n == 0:
        return np.empty(0)
    starts = np.r_[0, np.flatnonzero(path.death > lam) + 1].astype(np.int64)
    v = (np.add.reduceat(path.s, starts) + lam * group_slopes(path, starts)) / np.add.reduceat(path.w, starts)
    return np.repeat(v, np.diff(np.r_[starts, path.n]))


def _sample(n=400, seed=0, decimals=None):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 3, n)
    if decimals is not None:
        s = np.round(s, decimals)
    y = (rng.random(n) < 0.15 + 0.7 * s).astype(int)      # noisy: many violations, a long path
    return s, y


# ---------------------------------------------------------------------------
# literal transcription of the authors' code
# ---------------------------------------------------------------------------
def _rel_dif(a, b):
    d = max(abs(a), abs(b))
    return 0.0 if d == 0.0 else abs(a - b) / d


def _neariso2(y, x):
    """``neariso2(y, x)`` of the neariso package (NIR.cc, Mahdi's NIR2): the solution tree."""
    tol = 1.0e-8
    # processInput: runs of equal x -> mean y, mean x, frequency
    ys, fr = [], []
    i, n = 0, len(y)
    while i < n:
        j, sy = i + 1, y[i]
        while j < n and abs(x[j] - x[i]) == 0:
            sy += y[j]
            j += 1
        ys.append(sy / (j - i))
        fr.append(j - i)
        i = j
    n = len(ys)
    mu, lam0, deriv, size, merge_lam, merge_to, nb, active = [], [], [], [], [], [], [], []
    for i in range(n):
        if i == 0:
            d, nbr = -float(ys[1] < ys[0]), [1]
        elif i == n - 1:
            d, nbr = float(ys[n - 1] < ys[n - 2]), [n - 2]
        else:
            d, nbr = -float(ys[i] > ys[i + 1]) + float(ys[i] < ys[i - 1]), [i - 1, i + 1]
        mu.append(ys[i]); lam0.append(0.0); deriv.append(d / fr[i]); size.append(fr[i])
        merge_lam.append(-1.0); merge_to.append(-1); nb.append(nbr); active.append(True)
    events, counter = [], [0]                               # a multimap: by lambda, then insertion order

    def cur(g, lam):
        return mu[g] + (lam - lam0[g]) * deriv[g]

    def add_connection(a, b, lam):
        y1, y2 = cur(a, lam), cur(b, lam)
        if _rel_dif(y1, y2) < tol:
            bisect.insort(events, (lam, counter[0], a, b))
        elif _rel_dif(deriv[a], deriv[b]) >= tol:
            corr = -(y1 - y2) / (deriv[a] - deriv[b])
            if corr > 0:
                bisect.insort(events, (corr + lam, counter[0], a, b))
        counter[0] += 1

    for i in range(n - 1):
        add_connection(i, i + 1, 0.0)
    while events:
        lam, _, one, two = events.pop(0)
        if not (active[one] and active[two]):
            continue
        g = len(mu)
        mu.append(mu[one] + (lam - lam0[one]) * deriv[one]); lam0.append(lam)
        size.append(size[one] + size[two])
        cpp_round = math.floor(abs(deriv[one] * size[one] + deriv[two] * size[two]) + 0.5)
        deriv.append(math.copysign(cpp_round, deriv[one] * size[one] + deriv[two] * size[two]) / size[g])
        merge_lam.append(-1.0); merge_to.append(-1); active.append(True)
        for k in (one, two):
            active[k] = False; merge_to[k] = g; merge_lam[k] = lam
        new = [v for v in nb[two] if v != one] + [v for v in nb[one] if v != two]
        nb.append(new)
        for v in new:
            nb[v] = [g if u in (one, two) else u for u in nb[v]]
        for v in new:
            add_connection(v, g, lam)
    return dict(mu=mu, deriv=deriv, merge_lam=merge_lam, merge_to=merge_to, n=n)


def _get_breakpoints(tree, max_breaks=100):
    """``nearisoGetBreakpoints``; one deliberate deviation, marked below."""
    lams = sorted(set(tree["merge_lam"]))
    # DEVIATION (as calibdash.calibrators._nearly_isotonic.breakpoints): penalties within a relative
    # 1e-9 are one breakpoint, the largest; the package keeps float twins of one breakpoint apart
    lams = [v for k, v in enumerate(lams) if k == len(lams) - 1 or lams[k + 1] > v * (1 + 1e-9)]
    if lams[0] == -1:
        lams[0] = 0.0
        if len(lams) > 1 and lams[0] == lams[1]:
            lams = lams[1:]
    else:
        lams = [0.0] + lams
    if len(lams) > max_breaks:
        sel = np.round(np.arange(max_breaks) / (max_breaks - 1) * (len(lams) - 1)).astype(int)
        lams = [lams[k] for k in sel]
    return lams


def _explicit_solution(tree, lams):
    """``NIRexplicitSolution``: beta (points x lambdas); and the package's df (a breakpoint counter)."""
    n = tree["n"]
    beta = np.zeros((n, len(lams)))
    for i in range(n):
        g, cl = i, 0.0
        for j, lam in enumerate(lams):
            while tree["merge_lam"][g] < lam and tree["merge_lam"][g] != -1:
                cl = tree["merge_lam"][g]
                g = tree["merge_to"][g]
            beta[i, j] = tree["mu"][g] + (lam - cl) * tree["deriv"][g]
    all_lams = _get_breakpoints(tree, n + 1) + [1e10]
    df = [n + 1 - (bisect.bisect_right(all_lams, lam)) for lam in lams]   # cut(..., right = FALSE)
    return beta, df


def _enir_build(y, z, score_func="BIC", max_breaks=100):
    """``enir.build`` of the authors' R package (``max_breaks``: neariso's ``maxBreaks``, 100 there)."""
    order = np.argsort(y, kind="stable")
    y, z = list(np.asarray(y, float)[order]), list(np.asarray(z, float)[order])
    uy, iy, iuy = [y[0]], [0], [0]
    for i in range(1, len(y)):
        if y[i] != y[i - 1]:
            uy.append(y[i]); iy.append(i)
        iuy.append(len(uy) - 1)
    tree = _neariso2(z, y)
    lam = _get_breakpoints(tree, max_breaks)
    beta, _ = _explicit_solution(tree, lam)
    beta = np.clip(np.round(beta * 10 ** 6) / 10 ** 6, 0, 1)
    df = [1 + sum(beta[j, i] != beta[j - 1, i] for j in range(1, beta.shape[0])) for i in range(len(lam))]
    score = []
    for i in range(len(lam)):
        ll = sum(math.log(beta[iuy[r], i] if z[r] == 1 else 1 - beta[iuy[r], i]) if
                 (beta[iuy[r], i] if z[r] == 1 else 1 - beta[iuy[r], i]) > 0 else -math.inf for r in range(len(z)))
        n = len(z)
        if score_func == "BIC":
            score.append(-2 * ll + df[i] * (math.log(n) + math.log(2 * math.pi)))
        else:
            score.append(2 * df[i] - 2 * ll)
    idx = [math.isfinite(sc) for sc in score]
    if len(idx) > 1:
        idx[0] = False
    keep = [i for i in range(len(lam)) if idx[i]]
    sv = [score[i] for i in keep]
    sv = [math.exp((min(sv) - v) / 2) for v in sv]
    # smoothBeta: runs of equal values over the rows
    n = len(y)
    smooth = np.zeros((len(uy), len(keep)))
    for col, i in enumerate(keep):
        b = [beta[iuy[r], i] for r in range(n)]
        b2 = [0.0] * n
        j = 0
        while j < n:
            i1, p_hat = j, b[j]
            j += 1
            while j < n and b[j] == b[i1]:
                j += 1
            i2 = j - 1
            o_f = sum(z[i1:i2 + 1]) / (i2 - i1 + 1)
            e_f = sum(y[i1:i2 + 1]) / (i2 - i1 + 1)
            c_e = abs(o_f - e_f)
            cnt = i2 - i1 + 1
            for r in range(i1, i2 + 1):
                b2[r] = (p_hat * cnt + e_f * (1 - c_e)) / (cnt + 1 * (1 - c_e))
        smooth[:, col] = [b2[r] for r in iy]
    return dict(uy=uy, sv=sv, beta=smooth, lam=[lam[i] for i in keep], df=[df[i] for i in keep])


def _find_idx(ptr, x):
    n = len(ptr)
    if x >= ptr[n - 1]:
        return n
    if x <= ptr[0]:
        return 0
    lo, hi = 1, n + 1                                       # 1-based, as in R
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if x > ptr[mid - 1]:
            lo = mid
        elif x < ptr[mid - 1]:
            hi = mid
        else:
            lo = mid
            break
    return lo


def _enir_predict(model, xs):
    """``enir.predict(..., option = 1)``: ``getMA`` for each score."""
    uy, sv, beta = model["uy"], model["sv"], model["beta"]
    n = len(uy)
    out = []
    for x in xs:
        idx = _find_idx(uy, x)
        p = []
        for i in range(len(sv)):
            if idx == 0:
                p.append(beta[0, i])
            elif idx == n:
                p.append(beta[n - 1, i])
            else:
                ya, yb = uy[idx - 1], uy[idx]
                a, b = beta[idx - 1, i], beta[idx, i]
                p.append(((x - ya) * b + (yb - x) * a) / (yb - ya))
        out.append(sum(w * q for w, q in zip(sv, p)) / sum(sv))
    return np.array(out)


# ---------------------------------------------------------------------------
# the path
# ---------------------------------------------------------------------------
def test_two_points_by_hand():
    # y = (1, 0), weights (1, 3): b1 = 1 - lambda, b2 = lambda / 3 meet at lambda = 3/4 at the mean 1/4
    path = near_isotonic_path([1.0, 0.0], [1.0, 3.0])
    assert path.death.tolist() == [0.75]
    np.testing.assert_allclose(fitted_values(path, 0.5), [0.5, 1 / 6], atol=1e-15)
    np.testing.assert_allclose(fitted_values(path, 0.75), [0.25, 0.25], atol=1e-15)
    np.testing.assert_allclose(fitted_values(path, 9.0), [0.25, 0.25], atol=1e-15)


def test_four_points_by_hand():
    # y = (0, 1, 0, 1): only the middle pair violates; b2 = 1 - lambda, b3 = lambda, meet at 1/2
    path = near_isotonic_path([0.0, 1.0, 0.0, 1.0], np.ones(4))
    assert breakpoints(path).tolist() == [0.0, 0.5]
    np.testing.assert_allclose(fitted_values(path, 0.2), [0, 0.8, 0.2, 1], atol=1e-15)
    np.testing.assert_allclose(fitted_values(path, 0.5), [0, 0.5, 0.5, 1], atol=1e-15)
    # y = (1, 1, 0, 0): equal neighbours fuse at lambda = 0, then (1, 1) and (0, 0) meet at lambda = 1
    path = near_isotonic_path([1.0, 1.0, 0.0, 0.0], np.ones(4))
    assert path.death.tolist() == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(fitted_values(path, 0.5), [0.75, 0.75, 0.25, 0.25], atol=1e-15)


def _assert_optimal(y, w, b, lam, tol=1e-9):
    """KKT of min 1/2 sum w (y - b)^2 + lam sum (b_i - b_(i+1))_+: the subgradient t_i of boundary i,
    read off cumulatively, is 1 where b_i > b_(i+1), 0 where b_i < b_(i+1), in [0, 1] at ties, and
    closes to 0 after the last point."""
    t = np.cumsum(w * (y - b)) / lam
    assert abs(t[-1]) < tol
    t = t[:-1]
    gap = b[:-1] - b[1:]
    assert np.all(t > -tol) and np.all(t < 1 + tol)
    up, down = gap > 1e-12, gap < -1e-12
    np.testing.assert_allclose(t[up], 1.0, atol=tol)
    np.testing.assert_allclose(t[down], 0.0, atol=tol)


@pytest.mark.parametrize("seed", [0, 1])
def test_every_fit_on_the_path_is_optimal(seed):
    rng = np.random.default_rng(seed)
    n = 300
    w = rng.integers(1, 5, n).astype(float) * rng.choice([1.0, 0.37], n)    # whole and fractional weights
    pos = w * rng.random(n).round(1)
    y = pos / w
    path = near_isotonic_path(pos, w)
    bps = breakpoints(path)
    assert bps.size > 20
    lams = np.r_[bps[1:], (bps[1:-1] + bps[2:]) / 2, bps[-1] * 1.5]
    for lam in lams:
        _assert_optimal(y, w, fitted_values(path, lam), lam)
    iso = fitted_values(path, bps[-1] * 2)
    assert np.all(np.diff(iso) >= -1e-12)                    # the end of the path is isotonic
    from sklearn.isotonic import IsotonicRegression
    np.testing.assert_allclose(iso, IsotonicRegression().fit_transform(np.arange(n), y, sample_weight=w),
                               atol=1e-12)


def test_reproduces_the_authors_published_path():
    folder = ("enir-authors",)
    y = np.loadtxt(shared_file(*folder, "data_y.csv"))
    z = np.loadtxt(shared_file(*folder, "data_z.csv"))
    lam = np.loadtxt(shared_file(*folder, "data_lambda.csv"))
    df = np.loadtxt(shared_file(*folder, "data_df.csv"))
    beta = np.loadtxt(shared_file(*folder, "data_beta.csv"), delimiter=",")
    assert y.size == 1000 and np.all(np.diff(y) > 0) and beta.shape == (1000, lam.size)
    path = near_isotonic_path(z, np.ones_like(z))
    bps = breakpoints(path)
    np.testing.assert_allclose(bps[:lam.size], lam, rtol=1e-9, atol=1e-9)
    for k, l in enumerate(lam):
        np.testing.assert_allclose(fitted_values(path, bps[k]), beta[:, k], rtol=0, atol=1e-9)
    # the package's df is a breakpoint counter, n - k; ENIR's df (getDF) counts distinct fitted values
    np.testing.assert_array_equal(df, 1000 - np.arange(lam.size))
    res = enir_path(y, z.astype(int), max_models=lam.size)
    np.testing.assert_allclose(res.lam, lam, rtol=1e-9, atol=1e-9)
    authors_df = 1 + (np.diff(np.round(beta * 1e6) / 1e6, axis=0) != 0).sum(axis=0)
    np.testing.assert_array_equal(res.df, authors_df)
    assert res.df.tolist() == [8, 6, 5, 4]
    # the literal transcription gives the same path on the same data
    tree = _neariso2(list(z), list(y))
    lit_lams = _get_breakpoints(tree)
    lit_beta, lit_df = _explicit_solution(tree, lit_lams)
    np.testing.assert_allclose(lit_lams, lam, rtol=1e-12)
    np.testing.assert_allclose(lit_beta, beta, atol=1e-9)
    assert lit_df == df.tolist()


@pytest.mark.parametrize("n,decimals,seed", [(60, 2, 3), (400, None, 0), (500, 2, 1)])
def test_path_equals_the_literal_neariso_package(n, decimals, seed):
    s, y = _sample(n, seed, decimals)
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order].astype(float)
    tree = _neariso2(list(y), list(s))
    lams = _get_breakpoints(tree, max_breaks=10 ** 6)
    beta, _ = _explicit_solution(tree, lams)
    res = enir_path(s, y.astype(int), max_models=10 ** 6)
    np.testing.assert_allclose(res.lam, lams, rtol=1e-12, atol=1e-12)
    for k, lam in enumerate(res.lam):
        np.testing.assert_allclose(fitted_values(res.path, lam), beta[:, k], atol=1e-12)


def test_thinning_takes_breakpoints_evenly_by_index():
    assert select_breakpoints(np.arange(5.0), 100).tolist() == [0, 1, 2, 3, 4]
    # R: round((0:3) / 3 * 9) = round(0, 3, 6, 9); round((0:4)/4 * 5) = round(0, 1.25, 2.5, 3.75, 5) -> 2.5 to 2
    assert select_breakpoints(np.arange(10.0), 4).tolist() == [0, 3, 6, 9]
    assert select_breakpoints(np.arange(6.0), 5).tolist() == [0, 1, 2, 4, 5]


# ---------------------------------------------------------------------------
# the ensemble
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n,decimals,seed,max_models", [(300, None, 0, 100), (400, 2, 1, 100), (1500, None, 2, 100),
                                                        (300, None, 2, 12)])
def test_predictions_equal_the_literal_authors_code(n, decimals, seed, max_models):
    s, y = _sample(n, seed, decimals)
    model = _enir_build(s, y, max_breaks=max_models)
    cal = ENIR(max_models=max_models).fit(s, y)
    new = np.r_[np.linspace(0.0, 1.0, 301), s[:50], np.unique(s)[:-1] + np.diff(np.unique(s)) / 3]
    np.testing.assert_allclose(cal.predict(new), np.clip(_enir_predict(model, new), 0, 1), rtol=0, atol=1e-12)
    res = enir_path(s, y, max_models=max_models)
    assert (res.n_breakpoints > max_models) == (n > 1000 or max_models < 100)    # thinning exercised or not
    np.testing.assert_allclose(res.lam[res.kept], model["lam"], rtol=1e-12)
    assert res.df[res.kept].tolist() == model["df"]
    # weights: a fitted value on a rounding boundary of the 6 decimals can round the other way in either
    # code (the code evaluates unmerged groups at a breakpoint); here that moves a weight of 1e-140
    np.testing.assert_allclose(res.weight[res.kept], np.array(model["sv"]) / sum(model["sv"]), rtol=1e-9,
                               atol=1e-15)


def test_long_paths_are_thinned_to_max_models_and_drop_lambda_zero():
    s, y = _sample(2000, 4)
    res = enir_path(s, y, max_models=30)
    assert res.n_breakpoints > 150 and res.lam.size == 30 and res.lam[0] == 0.0
    assert not res.kept[0] and res.weight[0] == 0.0
    all_bps = breakpoints(res.path)
    np.testing.assert_array_equal(res.lam, all_bps[np.round(np.arange(30) / 29 * (all_bps.size - 1)).astype(int)])
    assert res.weight.sum() == pytest.approx(1.0, abs=1e-12)


def test_bic_weights_by_hand():
    s, y = _sample(300, 5)
    res = enir_path(s, y)
    n = 300
    # log-likelihood of the rows under the rounded values, and the code's BIC
    for k in np.flatnonzero(res.kept)[:5]:
        p = np.clip(np.round(fitted_values(res.path, res.lam[k]) * 1e6) / 1e6, 0, 1)
        pos, neg = res.pos, res.wt - res.pos
        ll = np.sum(pos[pos > 0] * np.log(p[pos > 0])) + np.sum(neg[neg > 0] * np.log1p(-p[neg > 0]))
        assert res.loglik[k] == pytest.approx(ll, rel=1e-12)
        assert res.df[k] == 1 + np.count_nonzero(np.diff(p))
        assert res.score[k] == pytest.approx(-2 * ll + res.df[k] * (math.log(n) + math.log(2 * math.pi)), rel=1e-12)
    sc = res.score[res.kept]
    np.testing.assert_allclose(res.weight[res.kept], np.exp(-(sc - sc.min()) / 2) / np.exp(-(sc - sc.min()) / 2).sum())
    aic = information_criterion(np.array([-10.0]), np.array([3]), 20.0, "aic")
    aicc = information_criterion(np.array([-10.0]), np.array([3]), 20.0, "aicc")
    assert aic[0] == 26.0 and aicc[0] == pytest.approx(26.0 + 24.0 / 16.0)


def test_a_monotone_sample_is_the_data_smoothed():
    # scores already perfectly ranked: the path has only lambda = 0, which is then the one model
    s = np.array([0.1, 0.2, 0.3, 0.7, 0.8])
    y = np.array([0, 0, 1, 1, 1])
    res = enir_path(s, y)
    assert res.lam.tolist() == [0.0] and res.kept.tolist() == [True]
    # runs of equal values: (0.1, 0.2) at 0 and (0.3, 0.7, 0.8) at 1, each pulled towards its mean score
    e0, e1 = 0.15, 0.6
    lo = (0 * 2 + e0 * (1 - e0)) / (2 + 1 - e0)
    hi = (1 * 3 + e1 * (1 - 0.4)) / (3 + 1 - 0.4)
    cal = ENIR().fit(s, y)
    np.testing.assert_allclose(cal.predict([0.0, 0.15, 0.2, 0.25, 0.3, 0.9]),
                               [lo, lo, lo, (lo + hi) / 2, hi, hi], atol=1e-15)
    assert cal.knots_.tolist() == [0.1, 0.2, 0.3, 0.8]
    ex = explain(cal, s, y)
    assert ex.path["kept"].tolist() == [True] and any("no merge" in note for note in ex.notes)
    assert inner_figures(ex)[0][1].layout.xaxis.type == "linear"      # lambda = 0 alone: no log axis


def test_tied_scores_are_one_point_and_weights_count_as_rows():
    s, y = _sample(1500, 6, decimals=2)
    res = enir_path(s, y)
    assert res.x.size == np.unique(s).size
    k = integer_weights(y)
    assert_weights_count_as_rows(ENIR, s, y, k)
    # every weight 2: the rows counted twice; the breakpoints double, exactly
    a = enir_path(s, y, sample_weight=np.full(s.size, 2.0))
    b = enir_path(np.repeat(s, 2), np.repeat(y, 2))
    np.testing.assert_array_equal(a.lam, b.lam)
    np.testing.assert_array_equal(a.map_p, b.map_p)
    np.testing.assert_array_equal(a.lam, 2 * res.lam)


def test_fitted_state_is_small_and_exports_exactly():
    s, y = _sample(20000, 7)
    cal = ENIR().fit(s, y)
    assert cal.knots_.size < 2000 and cal.n_models_ == cal.weight_.size and cal.weight_.sum() == pytest.approx(1)
    back = export.loads(export.dumps(cal))
    grid = np.linspace(0, 1, 10001)
    assert np.array_equal(back.predict(grid), cal.predict(grid))


def test_bad_settings_are_refused():
    s, y = _sample(100, 0)
    for params in ({"criterion": "hqc"}, {"max_models": 0}, {"max_models": 2.5}, {"max_models": "many"},
                   {"max_models": True}):
        with pytest.raises(SettingsError):
            calibrators.get("enir", **params).fit(s, y)
    a, b = ENIR(max_models=7.0).fit(s, y), ENIR(max_models=7).fit(s, y)     # a slider's 7.0 is 7
    assert np.array_equal(a.values_, b.values_)


def test_constant_scores_give_the_smoothed_base_rate():
    s = np.full(50, 0.3)
    y = np.r_[np.ones(10, int), np.zeros(40, int)]
    cal = ENIR().fit(s, y)
    ce = abs(0.2 - 0.3)
    assert cal.predict([0.0, 0.3, 1.0]).tolist() == pytest.approx([(0.2 * 50 + 0.3 * (1 - ce)) / (50 + 1 - ce)] * 3)


# ---------------------------------------------------------------------------
# explainer and figures
# ---------------------------------------------------------------------------
def test_explanation_shows_the_path_and_models_that_average_to_the_map():
    s, y = _sample(3000, 8)
    w = integer_weights(y).astype(float) * 0.5
    cal = ENIR(max_models=40).fit(s, y, sample_weight=w)
    ex = explain(cal, s, y, sample_weight=w)
    path = ex.path
    assert len(path) <= 40 and not path["kept"].iloc[0] and path["weight"].sum() == pytest.approx(1.0)
    assert (path["weight"][~path["kept"]] == 0).all()
    np.testing.assert_allclose(path.loc[path["weight"] > 0, "lambda"], cal.lambda_)
    # the weighted average of the models' maps on the grid is the calibrator's map there
    wide = ex.models.pivot(index="score", columns="model", values="prob")
    wts = ex.models.groupby("model")["weight"].first()[wide.columns].to_numpy()
    avg = wide.to_numpy() @ wts / wts.sum()
    np.testing.assert_allclose(avg, cal.predict(wide.index.to_numpy()), atol=1e-12)
    assert ex.points["count"].sum() == pytest.approx(w.sum())
    titles = [t for t, _ in inner_figures(ex)]
    assert len(titles) == 2 and "λ path" in titles[0]
    with pytest.raises(ProgrammingError, match="not the ones ENIR was fitted on"):
        explain(cal, s, y)                                   # the weights are part of the rows


def test_map_figure_draws_models_by_weight_and_the_average():
    s, y = _sample(2000, 9)
    cal = ENIR(criterion="aic").fit(s, y)
    ex = explain(cal, s, y)
    _, fig = inner_figures(ex)[1]
    models = [t for t in fig.data if t.meta == "model"]
    weights = ex.path["weight"][ex.path["weight"] > 0].sort_values(ascending=False)
    assert len(models) == min(len(weights), 60)
    np.testing.assert_allclose([t.opacity for t in models], 0.6 * weights.to_numpy()[:len(models)] / weights.max())
    average = [t for t in fig.data if t.meta == "average"][0]
    np.testing.assert_allclose(np.array(average.y), cal.predict(np.array(average.x)))
    path_fig = inner_figures(ex)[0][1]
    assert path_fig.layout.xaxis.type == "log"
