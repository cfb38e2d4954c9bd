"""Venn-Abers (IVAP): the fast tables equal refitting isotonic regression, hand-worked cases, the merge
rules, weights, export and the explainer."""
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression

from calibdash import calibrators, figures
from calibdash.io import export
from calibdash.calibrators.venn_abers import fit_tables, interval_at, merge
from calibdash.core.errors import DataError, NotFittedError, ProgrammingError, SettingsError
from calibdash.explain import explain
from calibdash.explain.venn_abers import interval_band


def _refit(cs, cy, s, label, w=None):
    """The definition: scikit-learn's isotonic regression (ties pooled) of the calibration rows plus
    the test row ``(s, label)`` of weight 1, evaluated at ``s``."""
    x = np.append(cs, s)
    y = np.append(cy, label).astype(float)
    ww = np.ones(x.size) if w is None else np.append(w, 1.0)
    return IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=ww).predict([s])[0]


def _probe(u):
    """Test scores: each distinct calibration score, the midpoints, below the smallest and above the largest."""
    return np.r_[u, (u[:-1] + u[1:]) / 2, max(u[0] - 0.05, 0.0) if u[0] > 0 else [], min(u[-1] + 0.05, 1.0)
                 if u[-1] < 1 else []]


@pytest.mark.parametrize("weights", ["none", "integer", "float"])
def test_tables_equal_refitting_isotonic_regression_with_the_test_row(weights):
    """150 random small calibration sets with many ties; every kind of test score; both labels."""
    rng = np.random.default_rng({"none": 0, "integer": 1, "float": 2}[weights])
    for _ in range(150):
        n = int(rng.integers(1, 13))
        cs = rng.integers(0, rng.integers(1, 7), n) / 6.0
        cy = rng.integers(0, 2, n)
        w = {"none": None, "integer": rng.integers(1, 4, n).astype(float),
             "float": rng.uniform(0.1, 3.0, n)}[weights]
        t = fit_tables(cs, cy, w)
        tests = _probe(t.scores)
        p0, p1 = interval_at(t.scores, t.f0, t.f1, tests)
        want0 = [_refit(cs, cy, x, 0, w) for x in tests]
        want1 = [_refit(cs, cy, x, 1, w) for x in tests]
        np.testing.assert_allclose(p0, want0, rtol=0, atol=1e-12, err_msg=f"{cs} {cy} {w}")
        np.testing.assert_allclose(p1, want1, rtol=0, atol=1e-12, err_msg=f"{cs} {cy} {w}")
        assert np.all(p0 <= p1)


def test_long_stacks_equal_refitting_on_3000_rows():
    """3,000 rows on a 0.001 grid: long GCM stacks, many pops; 25 test scores of each kind checked."""
    rng = np.random.default_rng(4)
    s = np.round(rng.beta(2, 3, 3000), 3)
    y = (rng.random(3000) < s ** 1.5).astype(int)
    cal = calibrators.get("venn_abers").fit(s, y)
    u = cal.scores_
    tests = np.r_[rng.choice(u, 25, replace=False), rng.uniform(0, 1, 25), 0.0, 1.0]
    p0, p1 = cal.predict_interval(tests)
    np.testing.assert_allclose(p0, [_refit(s, y, x, 0) for x in tests], rtol=0, atol=1e-12)
    np.testing.assert_allclose(p1, [_refit(s, y, x, 1) for x in tests], rtol=0, atol=1e-12)


def test_many_test_scores_are_sorted_first_with_the_same_result():
    """From SORT_FROM test scores on, the lookup sorts them first; the answers are those of small batches."""
    from calibdash.calibrators.venn_abers import SORT_FROM

    rng = np.random.default_rng(9)
    s = np.round(rng.uniform(size=2000), 3)
    y = (rng.random(2000) < s).astype(int)
    cal = calibrators.get("venn_abers").fit(s, y)
    test = np.r_[rng.choice(cal.scores_, SORT_FROM), rng.uniform(size=SORT_FROM), 0.0, 1.0]
    big = cal.predict_interval(test)
    small = [np.concatenate(part) for part in zip(*(cal.predict_interval(c) for c in np.array_split(test, 40)))]
    for a, b in zip(big, small):
        np.testing.assert_array_equal(a, b)


def test_hand_computed_interval():
    """Calibration rows (0.2, 0), (0.5, 1), (0.8, 0), (0.9, 1), worked by hand with PAV.

    At 0.2 with label 1 the test row pools with the tied row: {0, 1} -> 1/2, then 1, 0, 1 -> pool (1, 0):
    p1 = 1/2. At 0.5 with label 0: 0, {1, 0} (weight 2), 0, 1 -> pool to 1/3. At 0.85 with label 1:
    0, (1, 0) -> 1/2, 1, 1 -> p1 = 1. At 0.9 with label 0: 0, 1, 0, {1, 0} -> 0, 1/2, 1/2, 1/2.
    """
    cal = calibrators.get("venn_abers").fit([0.2, 0.5, 0.8, 0.9], [0, 1, 0, 1])
    tests = [0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.85, 0.9, 0.95]
    p0, p1 = cal.predict_interval(tests)
    np.testing.assert_allclose(p0, [0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2], atol=1e-15)
    np.testing.assert_allclose(p1, [1 / 2, 1 / 2, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 1, 1, 1], atol=1e-15)
    # the log-loss merge at 0.5: (2/3) / (1 - 1/3 + 2/3) = 1/2
    assert cal.predict([0.5])[0] == pytest.approx(0.5, abs=1e-15)


def test_outside_the_calibration_range_closed_forms():
    """Below the smallest score: p0 = 0, p1 = min_v (Y_v + 1) / (W_v + 1); above the largest: p1 = 1,
    p0 = max_t (Y_k - Y_t) / (W_k - W_t + 1) (the min-max formula of isotonic regression at an end)."""
    rng = np.random.default_rng(8)
    s = rng.uniform(0.1, 0.9, 400)
    y = (rng.random(400) < s).astype(int)
    cal = calibrators.get("venn_abers").fit(s, y)
    order = np.argsort(s)
    W = np.arange(1, 401)
    Y = np.cumsum(y[order])
    p0, p1 = cal.predict_interval([0.05, 0.95])
    assert p0[0] == 0.0 and p1[1] == 1.0
    assert p1[0] == pytest.approx(np.min((Y + 1) / (W + 1)), abs=1e-14)
    Wt, Yt = np.r_[0, W], np.r_[0, Y]
    assert p0[1] == pytest.approx(np.max((Y[-1] - Yt) / (W[-1] - Wt + 1)), abs=1e-14)


def test_interval_contains_the_isotonic_fit_and_is_monotone(noisy):
    s, y = noisy
    cal = calibrators.get("venn_abers").fit(s, y)
    iso = IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(cal.scores_)
    p0, p1 = cal.predict_interval(cal.scores_)
    assert np.all(p0 <= iso + 1e-12) and np.all(iso <= p1 + 1e-12)
    assert np.mean(p1 - p0) < 0.02                      # 5,000 rows: narrow, but not zero
    assert np.all(p1 - p0 > 0)
    grid = np.linspace(0, 1, 20001)
    g0, g1 = cal.predict_interval(grid)
    assert np.all(np.diff(g0) >= -1e-15) and np.all(np.diff(g1) >= -1e-15)
    for rule in ("log", "brier"):
        p = calibrators.get("venn_abers", merge=rule).fit(s, y).predict(grid)
        assert np.all((g0 - 1e-15 <= p) & (p <= g1 + 1e-15))


def test_merge_rules_by_hand_and_equal_regrets():
    """(p0, p1) = (0.2, 0.4): log 0.4 / 1.2 = 1/3, Brier 0.4 + (0.04 - 0.16) / 2 = 0.34. Each equalises the
    two regrets (the minimax choice) and no other p on a fine grid has a smaller worst regret."""
    assert merge(0.2, 0.4, "log") == pytest.approx(1 / 3)
    assert merge(0.2, 0.4, "brier") == pytest.approx(0.34)
    rng = np.random.default_rng(0)
    p0 = rng.uniform(0, 0.9, 50)
    p1 = np.minimum(p0 + rng.uniform(0.01, 0.5, 50), 0.999)
    cands = np.linspace(1e-4, 1 - 1e-4, 20001)
    losses = {"log": (lambda p, y: -np.log(np.where(y == 1, p, 1 - p))),
              "brier": (lambda p, y: (y - p) ** 2)}
    for rule, loss in losses.items():
        p = merge(p0, p1, rule)
        r0, r1 = loss(p, 0) - loss(p0, 0), loss(p, 1) - loss(p1, 1)
        np.testing.assert_allclose(r0, r1, atol=1e-12)
        for a, b, pm in zip(p0[:10], p1[:10], p[:10]):
            worst = np.maximum(loss(cands, 0) - loss(a, 0), loss(cands, 1) - loss(b, 1))
            assert np.max([loss(pm, 0) - loss(a, 0), loss(pm, 1) - loss(b, 1)]) <= worst.min() + 1e-12
    with pytest.raises(SettingsError, match="merge"):
        merge(0.2, 0.4, "mean")
    with pytest.raises(SettingsError, match="merge"):
        calibrators.get("venn_abers", merge="mean").fit([0.1, 0.9], [0, 1])


def test_integer_weights_and_cells_give_the_tables_of_repeated_rows():
    rng = np.random.default_rng(6)
    s = np.r_[np.round(rng.uniform(size=500), 2), 0.555, 0.555]      # 0.555: only rows of weight 0
    y = np.r_[(rng.random(500) < s[:500]).astype(int), 0, 1]
    k = np.r_[rng.integers(0, 4, 500), 0, 0]
    k[np.flatnonzero(y == 1)[0]] = 1
    a = calibrators.get("venn_abers").fit(s, y, sample_weight=k)
    b = calibrators.get("venn_abers").fit(np.repeat(s, k), np.repeat(y, k))
    for attr in ("scores_", "f0_", "f1_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    # a score whose rows all weigh 0 is absent, as from the repeated rows
    assert 0.555 not in a.scores_ and np.array_equal(a.predict_interval([0.555])[1], b.predict_interval([0.555])[1])


def test_the_test_row_weighs_one_so_scaled_weights_narrow_the_interval():
    """Weights 2 are the rows twice: half as much room for one test row (documented, unlike isotonic)."""
    s = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    y = np.array([0, 1, 0, 1, 1])
    two = calibrators.get("venn_abers").fit(s, y, sample_weight=np.full(5, 2.0))
    rep = calibrators.get("venn_abers").fit(np.repeat(s, 2), np.repeat(y, 2))
    one = calibrators.get("venn_abers").fit(s, y)
    np.testing.assert_array_equal(two.f1_, rep.f1_)
    g = np.linspace(0, 1, 101)
    w1 = np.subtract(*one.predict_interval(g)[::-1])
    w2 = np.subtract(*two.predict_interval(g)[::-1])
    assert np.all(w2 <= w1 + 1e-15) and np.any(w2 < w1)


def test_predict_interval_validates_like_predict():
    cal = calibrators.get("venn_abers")
    with pytest.raises(NotFittedError):
        cal.predict_interval([0.5])
    cal.fit([0.1, 0.9], [0, 1])
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        cal.predict_interval([1.5])
    p0, p1 = cal.predict_interval(np.array([[0.5]]))       # one column of scores
    assert p0.shape == p1.shape == (1,)


def test_export_round_trip_is_exact_and_bad_states_are_refused():
    rng = np.random.default_rng(2)
    s = np.round(rng.uniform(size=800), 3)
    y = (rng.random(800) < s).astype(int)
    cal = calibrators.get("venn_abers", merge="brier").fit(s, y)
    text = export.dumps(cal)
    back = export.loads(text)
    new = np.r_[np.linspace(0, 1, 5001), cal.scores_, np.nextafter(cal.scores_, 0), np.nextafter(cal.scores_, 1)]
    assert np.array_equal(back.predict(new), cal.predict(new))
    for a, b in zip(back.predict_interval(new), cal.predict_interval(new)):
        assert np.array_equal(a, b)
    assert export.dumps(back) == text
    state = json.loads(text)["state"]
    assert set(state) == {"n_train", "scores", "f0", "f1"}
    doc = json.loads(text)
    for change, words in [({"scores": state["scores"][::-1]}, "increasing order"),
                          ({"scores": [0.1, 0.1], "f0": [0, 0], "f1": [1, 1]}, "distinct"),
                          ({"f0": state["f0"][:-1]}, "'f0' must hold"),
                          ({"f1": [2.0] * len(state["f1"])}, r"'f1' must lie in \[0, 1\]"),
                          ({"scores": [], "f0": [], "f1": []}, "empty")]:
        bad = {**doc, "state": {**state, **change}}
        with pytest.raises(DataError, match=words):
            export.loads(json.dumps(bad))


def test_explanation_matches_the_calibrator_and_refuses_other_rows(noisy):
    s, y = noisy
    w = np.random.default_rng(1).integers(1, 3, s.size)
    cal = calibrators.get("venn_abers").fit(s, y, sample_weight=w)
    ex = explain(cal, s, y, sample_weight=w)
    at = ex.at_scores
    p0, p1 = cal.predict_interval(at["score"])
    np.testing.assert_array_equal(at["p0"], p0)
    np.testing.assert_array_equal(at["p1"], p1)
    assert at["count"].sum() == w.sum() and at["positives"].sum() == (w * y).sum()
    assert np.all((at["p0"] <= at["isotonic"] + 1e-12) & (at["isotonic"] <= at["p1"] + 1e-12))
    widths = (at["p1"] - at["p0"]).to_numpy()
    assert ex.width["mean"].iloc[0] == pytest.approx(np.average(widths, weights=at["count"]))
    assert ex.width["max"].iloc[0] == widths.max()
    assert ex.width["median"].iloc[0] <= ex.width["p90"].iloc[0] <= ex.width["max"].iloc[0]
    b0, b1 = cal.predict_interval(ex.band["score"])
    np.testing.assert_array_equal(ex.band["p0"], b0)
    np.testing.assert_array_equal(ex.band["p1"], b1)
    # 5,000 distinct scores: the grid takes 2,000 of them, the smallest and largest included
    assert {cal.scores_[0], cal.scores_[-1]} <= set(ex.band["score"]) and len(ex.band) <= 501 + 2000
    assert any("sample weights" in n for n in ex.notes)
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, 1 - y, sample_weight=w)
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, y)                                  # fitted with weights, explained without


def test_interval_band_and_figures():
    cal = calibrators.get("venn_abers").fit([0.2, 0.5, 0.8, 0.9], [0, 1, 0, 1])
    band = interval_band(cal, [0.0, 0.5, 1.0])
    assert list(band.columns) == ["score", "p0", "p1", "p"]
    np.testing.assert_allclose(band["p0"], [0, 1 / 3, 1 / 2])
    np.testing.assert_allclose(band["p1"], [1 / 2, 2 / 3, 1])
    np.testing.assert_array_equal(band["p"], cal.predict([0.0, 0.5, 1.0]))
    ex = explain(cal, [0.2, 0.5, 0.8, 0.9], [0, 1, 0, 1])
    figs = figures.inner_figures(ex)
    assert len(figs) == 2
    band_fig = figs[0][1]
    fills = [tr for tr in band_fig.data if getattr(tr, "fill", None) == "tonexty"]
    assert len(fills) == 1 and np.array_equal(fills[0].y, ex.band["p1"].to_numpy())
    np.testing.assert_array_equal(figs[1][1].data[0].y, (ex.band["p1"] - ex.band["p0"]).to_numpy())
    assert isinstance(ex.tables["interval width"], pd.DataFrame)


def test_the_prediction_for_the_true_label_is_calibrated():
    """Vovk & Petej (2014), Theorem 1: p_Y (the interval's end for the test row's true label) is perfectly
    calibrated, E[Y | p_Y] = p_Y, whatever the distribution. 6,000 draws of 6 calibration rows and a test
    row (truth score**2): Y - p_Y averages 0 overall and where p_Y < 1/2 and >= 1/2, within 4 standard
    errors, while p0 alone and p1 alone are biased by many standard errors."""
    rng = np.random.default_rng(12)
    reps, n = 6000, 7
    s = rng.uniform(size=(reps, n))
    y = (rng.uniform(size=(reps, n)) < s ** 2).astype(int)
    p_true, p0s, p1s, ys = [], [], [], []
    for i in range(reps):
        # every draw, one-class calibration sets too: dropping those would condition on the calibration
        # labels alone, which breaks the exchangeability the theorem rests on (z = -2.9 here if dropped)
        t = fit_tables(s[i, :-1], y[i, :-1])
        p0, p1 = interval_at(t.scores, t.f0, t.f1, s[i, -1:])
        p0s.append(p0[0])
        p1s.append(p1[0])
        p_true.append(p1[0] if y[i, -1] else p0[0])
        ys.append(y[i, -1])
    p_true, p0s, p1s, ys = map(np.asarray, (p_true, p0s, p1s, ys))

    def z(resid):
        return resid.mean() / (resid.std(ddof=1) / np.sqrt(resid.size))

    assert abs(z(ys - p_true)) < 4
    for part in (p_true < 0.5, p_true >= 0.5):
        assert part.sum() > 500 and abs(z(ys[part] - p_true[part])) < 4
    assert z(ys - p0s) > 20 and z(ys - p1s) < -20
