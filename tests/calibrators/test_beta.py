"""Beta calibration (Kull, Silva Filho & Flach 2017) (temperature scaling: test_temperature.py): the paper's
formulas, equality to direct likelihood fits (scipy) and to scikit-learn's LogisticRegression on the same
features, hand-computed cases, invariances, the explainers and their figures."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from calibdash import calibrators, figures
from calibdash.io import export
from calibdash.calibrators.beta import midpoint
from calibdash.calibrators.platt import EPS, logit
from calibdash.core.errors import ProgrammingError, SettingsError
from calibdash.explain import explain

from tests.calibrators.test_temperature import temp_rows

GRID = np.linspace(0.0, 1.0, 1001)
INNER = np.linspace(0.001, 0.999, 999)
LN2 = math.log(2.0)


def _feats(s):
    s = np.clip(s, EPS, 1 - EPS)
    return np.log(s), -np.log1p(-s)


def beta_rows(a, b, c, n=6000, seed=0):
    """Scores uniform on (0.005, 0.995) and labels drawn from the beta map mu(s; a, b, c)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.005, 0.995, n)
    x1, x2 = _feats(s)
    return s, (rng.uniform(size=n) < expit(a * x1 + b * x2 + c)).astype(int)


def paper_map(a, b, c, s):
    """The paper's beta map, written as in the paper: 1 / (1 + 1 / (e^c s^a / (1 - s)^b))."""
    return 1.0 / (1.0 + 1.0 / (np.exp(c) * s ** a / (1.0 - s) ** b))


def _nll(x, y, w):
    def f(beta):
        eta = x @ beta
        return float(np.sum(w * (np.logaddexp(0, eta) - y * eta)))

    def g(beta):
        return x.T @ (w * (expit(x @ beta) - y))
    return f, g


def direct_fit(x, y, w=None, bounds=None):
    """Maximum likelihood by scipy (BFGS, or L-BFGS-B with bounds) on design matrix x."""
    w = np.ones(y.size) if w is None else w
    f, g = _nll(x, y.astype(float), w)
    start = np.zeros(x.shape[1])
    if bounds is None:
        res = minimize(f, start, jac=g, method="BFGS", options={"gtol": 1e-9, "maxiter": 10_000})
    else:
        res = minimize(f, start, jac=g, method="L-BFGS-B", bounds=bounds,
                       options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    return res.x, -res.fun


def sklearn_betacal(s, y, w=None, parameters="abm"):
    """The authors' betacal procedure, written with scikit-learn's LogisticRegression unpenalised (C=inf)
    and solved to 1e-12 instead of betacal's C=99999999999 with the default lbfgs tolerance."""
    x1, x2 = _feats(s)

    def lr(x, intercept=True):
        m = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000,
                               fit_intercept=intercept).fit(x, y, sample_weight=w)
        return m.coef_[0], (m.intercept_[0] if intercept else 0.0)

    if parameters == "abm":
        (a, b), c = lr(np.column_stack([x1, x2]))
        if a < 0:
            (b,), c = lr(x2[:, None])
            a = 0.0
        elif b < 0:
            (a,), c = lr(x1[:, None])
            b = 0.0
        return a, b, c
    if parameters == "am":
        (a,), c = lr((x1 + x2)[:, None])
        return a, a, c
    (a, b), _ = lr(np.column_stack([x1 + LN2, x2 - LN2]), intercept=False)
    return a, b, (a - b) * LN2


# ---------------------------------------------------------------------------------------------------------
# beta calibration
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_beta_map_is_the_papers_formula_with_its_m(parameters):
    s, y = beta_rows(1.6, 0.7, -0.4, seed=1)
    cal = calibrators.get("beta", parameters=parameters).fit(s, y)
    a, b, c, m = cal.a_, cal.b_, cal.c_, cal.m_
    np.testing.assert_allclose(cal.predict(INNER), paper_map(a, b, c, INNER), rtol=1e-12, atol=1e-15)
    # m is the midpoint: c = b ln(1 - m) - a ln m and mu(m) = 1/2
    assert 0 < m < 1
    assert c == pytest.approx(b * math.log(1 - m) - a * math.log(m), abs=1e-10)
    assert cal.predict([m])[0] == pytest.approx(0.5, abs=1e-12)
    if parameters == "am":
        assert a == b and m == pytest.approx(1 / (1 + math.exp(c / a)), rel=1e-14)
    if parameters == "ab":
        assert m == 0.5 and c == pytest.approx((a - b) * LN2, rel=1e-14)


def test_beta_hand_computed_three_scores_are_interpolated():
    """Three distinct scores with weighted frequencies q: three parameters meet them exactly, with (a, b, c)
    the solution of the linear system logit(q) = a ln s - b ln(1 - s) + c."""
    s3 = np.array([0.2, 0.5, 0.8])
    q = np.array([0.1, 0.4, 0.9])
    x1, x2 = _feats(s3)
    a, b, c = np.linalg.solve(np.column_stack([x1, x2, np.ones(3)]), logit(q))
    assert a > 0 and b > 0                                   # so abm keeps both features
    s = np.repeat(s3, 2)
    y = np.tile([1, 0], 3)
    w = np.column_stack([q, 1 - q]).ravel() * 10
    cal = calibrators.get("beta").fit(s, y, sample_weight=w)
    # The Newton fit stops at the floating-point limit (calibrators.platt.fit_logistic): its
    # coefficients are off the exact solution by |H^-1| (log2(N) eps sum w |x| |q - y|), here at
    # most 1.2e-13 (1.1e-13 relative), and its log-odds at s3 by 2.5e-13, so its probabilities by a
    # quarter of that. Tolerances: 10 times those (seen: 3e-15 and 2e-16).
    np.testing.assert_allclose(cal.predict(s3), q, rtol=0, atol=1e-12)
    assert (cal.a_, cal.b_, cal.c_) == pytest.approx((a, b, c), rel=1e-12)


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_beta_equals_direct_scipy_likelihood_fit(parameters):
    s, y = beta_rows(1.6, 0.7, -0.4, seed=2)
    w = np.random.default_rng(3).uniform(0.2, 2.0, s.size)
    cal = calibrators.get("beta", parameters=parameters).fit(s, y, sample_weight=w)
    x1, x2 = _feats(s)
    one = np.ones_like(x1)
    if parameters == "abm":
        (a, b, c), ll = direct_fit(np.column_stack([x1, x2, one]), y, w)
    elif parameters == "am":
        (a, c), ll = direct_fit(np.column_stack([x1 + x2, one]), y, w)
        b = a
    else:
        (a, b), ll = direct_fit(np.column_stack([x1 + LN2, x2 - LN2]), y, w)
        c = (a - b) * LN2
    assert (cal.a_, cal.b_, cal.c_) == pytest.approx((a, b, c), abs=1e-6)
    assert cal.log_likelihood_ == pytest.approx(ll, rel=1e-12)
    assert cal.log_likelihood_ >= ll - 1e-9                   # Newton is at least as good as BFGS


@pytest.mark.parametrize("truth,dropped", [((-0.6, 1.5, 0.3), "a"), ((1.5, -0.6, -0.3), "b"),
                                           ((1.6, 0.7, -0.4), "")])
def test_beta_abm_drops_a_negative_coefficient_as_betacal_and_equals_the_bounded_mle(truth, dropped):
    s, y = beta_rows(*truth, n=8000, seed=4)
    cal = calibrators.get("beta").fit(s, y)
    steps = explain(cal, s, y).tables["steps"]
    assert len(steps) == (2 if dropped else 1) and steps["kept"].tolist() == [False] * (len(steps) - 1) + [True]
    if dropped:
        assert steps.loc[0, dropped] < 0 and getattr(cal, f"{dropped}_") == 0.0
    x1, x2 = _feats(s)
    (a, b, c), _ = direct_fit(np.column_stack([x1, x2, np.ones_like(x1)]), y,
                              bounds=[(0, None), (0, None), (None, None)])
    assert (cal.a_, cal.b_, cal.c_) == pytest.approx((a, b, c), abs=1e-5)


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
@pytest.mark.parametrize("truth", [(-0.6, 1.5, 0.3), (1.5, -0.6, -0.3), (1.6, 0.7, -0.4)])
def test_beta_equals_sklearn_logistic_regression_on_the_same_features(parameters, truth):
    s, y = beta_rows(*truth, n=5000, seed=5)
    w = np.random.default_rng(6).integers(1, 4, s.size).astype(float)
    cal = calibrators.get("beta", parameters=parameters).fit(s, y, sample_weight=w)
    a, b, c = sklearn_betacal(s, y, w, parameters)
    assert (cal.a_, cal.b_, cal.c_) == pytest.approx((a, b, c), abs=1e-6)


def test_beta_am_is_platt_scaling():
    s, y = beta_rows(1.6, 0.7, -0.4, seed=7)
    beta = calibrators.get("beta", parameters="am").fit(s, y)
    platt = calibrators.get("platt").fit(s, y)
    # The same likelihood, the same solver, both at the floating-point limit: each coefficient within
    # |H^-1| (log2(N) eps sum |x| |q - y|) of the optimum, 8e-15 relative here, the log-odds on the
    # grid within 2e-13. Tolerances: 50 times twice those (seen: equal, and 2e-16).
    assert beta.a_ == pytest.approx(platt.a_, rel=1e-12) and beta.c_ == pytest.approx(platt.b_, rel=1e-12)
    np.testing.assert_allclose(beta.predict(GRID), platt.predict(GRID), rtol=0, atol=1e-11)


def wald(cal, s, truth):
    """Wald statistic (theta - truth)' I (theta - truth) of the fitted (a, b, c), with the Fisher information I at
    the truth: chi-squared with 3 degrees of freedom when the fit is the maximum-likelihood estimate."""
    x1, x2 = _feats(s)
    x = np.column_stack([x1, x2, np.ones_like(x1)])
    p = expit(x @ np.asarray(truth))
    d = np.array([cal.a_, cal.b_, cal.c_]) - truth
    return float(d @ ((x * (p * (1 - p))[:, None]).T @ x) @ d)


CHI2_3_999 = 16.27                                             # 99.9% quantile of chi-squared(3)


def test_beta_recovers_known_parameters_and_learns_the_identity_on_calibrated_scores():
    s, y = beta_rows(2.0, 0.5, -0.3, n=60_000, seed=8)
    cal = calibrators.get("beta").fit(s, y)
    assert wald(cal, s, (2.0, 0.5, -0.3)) < CHI2_3_999
    # already calibrated scores (truth = score): a = b = 1, c = 0 within noise, the map near the identity
    s, y = beta_rows(1.0, 1.0, 0.0, n=60_000, seed=9)
    cal = calibrators.get("beta").fit(s, y)
    assert wald(cal, s, (1.0, 1.0, 0.0)) < CHI2_3_999
    assert np.max(np.abs(cal.predict(INNER) - INNER)) < 0.03


@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_beta_mirror_symmetry(parameters):
    """Swapping the classes (s -> 1 - s, y -> 1 - y) swaps a and b, negates c and mirrors m."""
    s, y = beta_rows(1.8, 0.6, -0.2, seed=10)
    cal = calibrators.get("beta", parameters=parameters).fit(s, y)
    flip = calibrators.get("beta", parameters=parameters).fit(1 - s, 1 - y)
    # Both fits at the floating-point limit, each coefficient within 2.5e-13 of its optimum (the bound
    # |H^-1| (log2(N) eps sum |x| |q - y|)), the log-odds on INNER within 1.6e-12; 1 - s rounds by
    # up to eps / 2, moving -ln(1 - s) by under 5e-14. Tolerances: about 10 times the sum (seen: 1e-16).
    assert (flip.a_, flip.b_, flip.c_) == pytest.approx((cal.b_, cal.a_, -cal.c_), abs=1e-11)
    assert flip.m_ == pytest.approx(1 - cal.m_, abs=1e-11)
    np.testing.assert_allclose(flip.predict(1 - INNER), 1 - cal.predict(INNER), atol=1e-11)


def test_beta_scaled_weights_leave_the_map_unchanged():
    s, y = beta_rows(1.6, 0.7, -0.4, seed=11)
    w = np.random.default_rng(12).uniform(0.1, 3.0, s.size)
    ref = calibrators.get("beta").fit(s, y, sample_weight=w).predict(GRID)
    for k in (1e-3, 50.0):
        # the same optimum; each fit within the rounding bound |x . d beta| <= 5.6e-12 of it (relative,
        # in the map on GRID; see test_weights.py), so 1e-10 is 9 times twice it (seen: 1.4e-14)
        np.testing.assert_allclose(calibrators.get("beta").fit(s, y, sample_weight=k * w).predict(GRID), ref,
                                   rtol=1e-10, atol=1e-13)


def test_midpoint_hand_computed():
    assert midpoint(2.0, 2.0, 0.0) == 0.5
    assert midpoint(0.0, 1.0, -LN2) == pytest.approx(0.5, abs=1e-15)    # c = ln(1 - m)
    assert midpoint(1.0, 0.0, math.log(4.0)) == pytest.approx(0.25, abs=1e-15)   # c = -ln m
    # a = 3, b = 1, c = 0: 3 ln m = ln(1 - m), m^3 = 1 - m
    m = midpoint(3.0, 1.0, 0.0)
    assert m ** 3 == pytest.approx(1 - m, abs=1e-14)
    assert math.isnan(midpoint(0.0, 1.0, 1.0))            # log-odds c - ln(1 - m) >= 1: never 1/2
    assert math.isnan(midpoint(0.0, 0.0, 0.3)) and math.isnan(midpoint(1.0, -1.0, 0.0))


def test_beta_refuses_an_unknown_parametrisation_and_survives_degenerate_scores():
    s, y = beta_rows(1.6, 0.7, -0.4, n=200, seed=13)
    with pytest.raises(SettingsError, match="parameters"):
        calibrators.get("beta", parameters="abc").fit(s, y)
    # two distinct scores with three parameters: the fit still meets each score's frequency
    s2 = np.array([0.2, 0.2, 0.7, 0.7])
    cal = calibrators.get("beta").fit(s2, [0, 1, 0, 1], sample_weight=[3.0, 1.0, 1.0, 3.0])
    # Newton at the floating-point limit: the frequencies to a few ulps (seen: exact)
    np.testing.assert_allclose(cal.predict([0.2, 0.7]), [0.25, 0.75], rtol=0, atol=1e-13)
    assert all(np.isfinite([cal.a_, cal.b_, cal.c_]))


def test_beta_export_holds_a_b_c_and_round_trips_exactly():
    s, y = beta_rows(-0.6, 1.5, 0.3, seed=14)          # the refit path: a = 0
    cal = calibrators.get("beta").fit(s, y)
    text = export.dumps(cal)
    state = json.loads(text)["state"]
    assert set(state) == {"n_train", "a", "b", "c"} and state["a"] == 0.0
    back = export.loads(text)
    assert np.array_equal(back.predict(GRID), cal.predict(GRID))
    assert (back.m_ == cal.m_) or (math.isnan(back.m_) and math.isnan(cal.m_))
    # a hand-written state: mu(s) = sigmoid(-ln(1 - s) + 0.5) at a = 0, b = 1, c = 0.5
    doc = json.loads(text)
    doc["state"].update(a=0, b=1.0, c=0.5)
    loaded = export.loads(json.dumps(doc))
    np.testing.assert_allclose(loaded.predict([0.3]), expit(-math.log(0.7) + 0.5), rtol=1e-15)


# ---------------------------------------------------------------------------------------------------------
# temperature scaling
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# explainers and figures
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parameters", ["abm", "am", "ab"])
def test_beta_explanation_recomputes_the_fit_from_the_rows(parameters):
    s, y = beta_rows(1.6, 0.7, -0.4, n=3000, seed=15)
    k = np.random.default_rng(16).integers(0, 3, s.size)
    k[[np.flatnonzero(y == 0)[0], np.flatnonzero(y == 1)[0]]] = 1
    cal = calibrators.get("beta", parameters=parameters).fit(s, y, sample_weight=k)
    ex = explain(cal, s, y, sample_weight=k)
    q = cal.predict(s)
    assert ex.log_likelihood == pytest.approx(np.sum(k * (y * np.log(q) + (1 - y) * np.log1p(-q))), rel=1e-10)
    assert ex.log_likelihood == pytest.approx(cal.log_likelihood_, rel=1e-10)
    platt = calibrators.get("platt").fit(s, y, sample_weight=k)
    assert (ex.platt_a, ex.platt_b) == (platt.a_, platt.b_)
    assert ex.platt_log_likelihood == pytest.approx(platt.log_likelihood_, rel=1e-12)
    if parameters == "am":
        assert ex.log_likelihood == pytest.approx(ex.platt_log_likelihood, rel=1e-9)
    if parameters == "abm":                                # one more free parameter than Platt (a = b)
        assert ex.log_likelihood >= ex.platt_log_likelihood - 1e-9
    fit = ex.tables["fit"].iloc[0]
    assert (fit["a"], fit["b"], fit["c"], fit["weight"], fit["rows"]) == (cal.a_, cal.b_, cal.c_, k.sum(), s.size)
    np.testing.assert_allclose(ex.curve["beta"], cal.predict(ex.curve["score"].to_numpy()), rtol=1e-13)
    assert ex.groups["weight"].sum() == pytest.approx(k.sum())
    # a loaded model explains the same; other rows or other weights are refused
    again = explain(export.loads(export.dumps(cal)), s, y, sample_weight=k)
    for key in ex.tables:
        pd.testing.assert_frame_equal(ex.tables[key], again.tables[key])
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, y)
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, 1 - y, sample_weight=k)


def test_figures_draw_what_the_explanations_hold():
    s, y = beta_rows(1.6, 0.7, -0.4, n=3000, seed=18)
    ex = explain(calibrators.get("beta").fit(s, y), s, y)
    (t1, map_fig), (t2, logodds_fig) = figures.inner_figures(ex)
    by_meta = {tr.meta: tr for tr in map_fig.data if tr.meta}
    assert by_meta["midpoint"].x == (ex.m,) and by_meta["midpoint"].y == (0.5,)
    np.testing.assert_array_equal(np.asarray(by_meta["platt"].y), ex.curve["platt"].to_numpy())
    lines = {tr.meta: tr for tr in logodds_fig.data if tr.meta}
    x = np.asarray(lines["platt"].x, dtype=float)
    assert x.min() >= logit(ex.score_range[0]) - 1e-9 and x.max() <= logit(ex.score_range[1]) + 1e-9
    np.testing.assert_allclose(np.asarray(lines["platt"].y), ex.platt_a * x + ex.platt_b, rtol=1e-9, atol=1e-9)

    s, y = temp_rows(1.8, n=3000, seed=19)
    ex = explain(calibrators.get("temperature").fit(s, y), s, y)
    (title, nll_fig), _ = figures.inner_figures(ex)
    by_meta = {tr.meta: tr for tr in nll_fig.data if tr.meta}
    assert by_meta["optimum"].x == (ex.temperature,)
    assert by_meta["optimum"].y[0] == pytest.approx(min(by_meta["curve"].y))
    assert by_meta["identity"].x == (1.0,) and f"{ex.temperature:.4g}" in title
