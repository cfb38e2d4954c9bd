"""Clinical and ML calibration statistics: hand-worked cases, independent computations, published code's numbers.

Independent references used here: scipy.optimize on the weighted likelihood and scikit-learn's unpenalised
logistic regression (intercept and slope), a row-level weighted least-squares loess (ICI), the textbook
formulas on sorted rows (Hosmer-Lemeshow, Brier decomposition), numbers printed by the authors' own code
(debiased l2 calibration error), and analytic values of known distortions.
"""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special, stats
from sklearn.linear_model import LogisticRegression

from calibdash import clinical as C
from calibdash.measures import smoother
from calibdash.measures import calibration as M
from calibdash.core.errors import DataError, SettingsError


def _data(n, seed, truth=lambda p: p, dist="uniform"):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n) if dist == "uniform" else rng.beta(0.3, 3, size=n)
    y = (rng.uniform(size=n) < truth(p)).astype(int)
    return p, y


def _nll(params, x, y, w, offset):
    eta = offset + params[0] + (params[1] * x if params.size > 1 else 0.0)
    return float(np.dot(w, np.logaddexp(0.0, eta) - y * eta))


def _numeric_hessian(f, x0, step=1e-4):
    k = x0.size
    H = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            ei, ej = np.eye(k)[i] * step, np.eye(k)[j] * step
            H[i, j] = (f(x0 + ei + ej) - f(x0 + ei - ej) - f(x0 - ei + ej) + f(x0 - ei - ej)) / (4 * step * step)
    return H


# ----------------------------------------------------------------------------
# calibration intercept and slope
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def miscalibrated():
    rng = np.random.default_rng(11)
    z = rng.normal(size=3000)
    p = special.expit(1.6 * z - 0.4)                 # too extreme and too low on average
    y = (rng.uniform(size=3000) < special.expit(z)).astype(int)
    w = rng.uniform(0.2, 3.0, size=3000)
    return p, y, w


def test_intercept_and_slope_equal_scipy_minimisation_of_the_weighted_likelihood(miscalibrated):
    p, y, w = miscalibrated
    r = C.calibration_intercept_slope(p, y, sample_weight=w)
    x = special.logit(p)
    slope_fit = optimize.minimize(_nll, np.array([0.0, 1.0]), args=(x, y, w, 0.0), method="BFGS",
                                  options={"gtol": 1e-10})
    citl_fit = optimize.minimize(_nll, np.array([0.0]), args=(x, y, w, x), method="BFGS", options={"gtol": 1e-10})
    assert r["converged"]
    assert r["slope"] == pytest.approx(slope_fit.x[1], abs=1e-6)
    assert r["slope_model_intercept"] == pytest.approx(slope_fit.x[0], abs=1e-6)
    assert r["intercept"] == pytest.approx(citl_fit.x[0], abs=1e-6)
    # standard errors: the inverse of a finite-difference Hessian of the negative log-likelihood
    H2 = _numeric_hessian(lambda b: _nll(b, x, y, w, 0.0), slope_fit.x)
    H1 = _numeric_hessian(lambda b: _nll(b, x, y, w, x), citl_fit.x)
    assert r["slope_se"] == pytest.approx(math.sqrt(np.linalg.inv(H2)[1, 1]), rel=1e-4)
    assert r["intercept_se"] == pytest.approx(math.sqrt(1.0 / H1[0, 0]), rel=1e-4)
    z = stats.norm.ppf(0.975)
    assert r["slope_low"] == pytest.approx(r["slope"] - z * r["slope_se"])
    assert r["intercept_high"] == pytest.approx(r["intercept"] + z * r["intercept_se"])
    # the data were made too extreme (true slope 1/1.6) and too low on average (intercept > 0)
    assert r["slope_low"] < 0.625 < r["slope_high"] < 1
    assert r["intercept_low"] > 0


def test_slope_equals_sklearn_unpenalised_logistic_regression(miscalibrated):
    p, y, w = miscalibrated
    r = C.calibration_intercept_slope(p, y, sample_weight=w)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)         # unpenalised (penalty=None before 1.8)
    lr.fit(special.logit(p)[:, None], y, sample_weight=w)
    assert r["slope"] == pytest.approx(lr.coef_[0, 0], abs=1e-5)
    assert r["slope_model_intercept"] == pytest.approx(lr.intercept_[0], abs=1e-5)


def test_true_probabilities_give_slope_one_and_intercept_zero():
    rng = np.random.default_rng(5)
    z = rng.normal(size=200_000)
    p = special.expit(z)
    y = (rng.uniform(size=z.size) < p).astype(int)
    r = C.calibration_intercept_slope(p, y)
    assert abs(r["slope"] - 1) < 4 * r["slope_se"] and r["slope_se"] < 0.01
    assert abs(r["intercept"]) < 4 * r["intercept_se"] and r["intercept_se"] < 0.01


def test_doubled_logits_give_slope_one_half():
    rng = np.random.default_rng(6)
    z = rng.normal(size=200_000)
    y = (rng.uniform(size=z.size) < special.expit(z)).astype(int)
    r = C.calibration_intercept_slope(special.expit(2 * z), y)
    assert abs(r["slope"] - 0.5) < 4 * r["slope_se"] and r["slope_se"] < 0.01
    assert abs(r["intercept"]) < 4 * r["intercept_se"]       # symmetric around 0: no overall bias


def test_constant_prediction_intercept_is_the_logit_difference_by_hand():
    # every p = 0.2 and 3 of 10 positive: a solves expit(logit(.2) + a) = .3, so a = logit(.3) - logit(.2)
    p = np.full(10, 0.2)
    y = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    r = C.calibration_intercept_slope(p, y)
    assert r["intercept"] == pytest.approx(math.log(0.3 / 0.7) - math.log(0.2 / 0.8), abs=1e-10)
    assert r["intercept_se"] == pytest.approx(1 / math.sqrt(10 * 0.3 * 0.7), rel=1e-8)
    assert not r["converged"] and math.isnan(r["slope"])     # one logit value: the slope is not identified


def test_separated_classes_have_no_finite_slope():
    r = C.calibration_intercept_slope([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 0, 1, 1, 1])
    assert not r["converged"] and math.isnan(r["slope"]) and math.isnan(r["slope_se"])


def test_predictions_of_exactly_zero_or_one_are_left_out_and_counted():
    p, y = _data(500, 3)
    r0 = C.calibration_intercept_slope(p, y)
    r1 = C.calibration_intercept_slope(np.r_[p, 0.0, 1.0, 1.0], np.r_[y, 1, 0, 1],
                                       sample_weight=np.r_[np.ones(500), 2, 3, 4])
    assert r1["excluded"] == 9 and r0["excluded"] == 0 and r1["n"] == 500
    for k in ("intercept", "slope", "intercept_se", "slope_se"):
        assert r1[k] == pytest.approx(r0[k], rel=1e-12)
    with pytest.raises(DataError, match="both classes"):
        C.calibration_intercept_slope([0.2, 0.4, 1.0], [1, 1, 0])


# ----------------------------------------------------------------------------
# loess curve and ICI
# ----------------------------------------------------------------------------
def _direct_loess(x, y, w, x0, span=0.75, degree=2):
    """R's loess at one point from the rows: q-th nearest row, tricube weights, weighted least squares."""
    q = math.floor(w.sum() * span + 1e-9)
    d = np.abs(x - x0)
    order = np.argsort(d, kind="stable")
    h = d[order][np.searchsorted(np.cumsum(w[order]), q)]       # distance of the q-th nearest row
    k = np.where(d < h, (1 - (d / h) ** 3) ** 3, 0.0) * w
    X = np.vander(x - x0, degree + 1, increasing=True) * np.sqrt(k)[:, None]
    return np.linalg.lstsq(X, y * np.sqrt(k), rcond=None)[0][0]


def test_loess_equals_direct_weighted_least_squares_at_points():
    rng = np.random.default_rng(8)
    x = np.round(rng.beta(2, 3, 400), 3)                        # ties included
    y = (rng.uniform(size=400) < x ** 1.5).astype(float)
    curve = C.smoothed_calibration_curve(x, y, max_points=None)
    assert np.all(np.diff(curve.score) > 0) and set(curve.score) == set(np.unique(x))
    for i in (0, 17, 90, len(curve) // 2, len(curve) - 1):
        x0 = curve.score.iloc[i]
        assert curve.calibrated.iloc[i] == pytest.approx(_direct_loess(x, y, np.ones(400), x0), abs=1e-7)


def test_loess_with_weights_equals_direct_computation_on_repeated_rows():
    rng = np.random.default_rng(9)
    x = rng.uniform(size=150)
    y = (rng.uniform(size=150) < x).astype(float)
    w = rng.integers(0, 5, 150)
    curve = C.smoothed_calibration_curve(x, y, sample_weight=w, max_points=None, degree=1, span=0.4)
    xr, yr = np.repeat(x, w), np.repeat(y, w)
    for i in (0, 30, 77, len(curve) - 1):
        x0 = curve.score.iloc[i]
        assert curve.calibrated.iloc[i] == pytest.approx(
            _direct_loess(xr, yr, np.ones(xr.size), x0, span=0.4, degree=1), abs=1e-7)


def test_ici_is_near_zero_for_calibrated_predictions():
    p, y = _data(40_000, 1)
    r = C.ici(p, y)
    assert r["ICI"] < 0.01 and r["E90"] < 0.015 and r["E50"] <= r["E90"] <= r["Emax"]


def test_ici_of_a_known_distortion_matches_its_analytic_value():
    # truth p^2 with p uniform: a local quadratic reproduces p^2, so the curve estimates it without bias;
    # |p^2 - p| = p(1 - p): mean 1/6, median .25 * .75, 90th percentile .45 * .55, maximum 1/4
    p, y = _data(60_000, 2, truth=lambda p: p ** 2)
    r = C.ici(p, y)
    assert r["ICI"] == pytest.approx(1 / 6, abs=0.006)
    assert r["E50"] == pytest.approx(0.1875, abs=0.006)
    assert r["E90"] == pytest.approx(0.2475, abs=0.006)
    assert r["Emax"] == pytest.approx(0.25, abs=0.012)


@pytest.mark.parametrize("dist", ["uniform", "beta"])
def test_interpolated_curve_is_close_to_the_exact_fit(dist):
    """500 nodes and a cubic spline against the fit at every one of 3,000 distinct predictions."""
    p, y = _data(3_000, 4, truth=np.sqrt, dist=dist)
    d = smoother._Distinct(p, y.astype(float), np.ones(p.size))
    exact = smoother._loess_at(d, d.x, 0.75, 2)
    nodes, _, curve = smoother._smooth(d, 0.75, 2, 500)
    assert nodes.size <= 502
    assert np.max(np.abs(curve - exact)) < 2e-4
    err = np.abs(exact - d.x)
    fast = C.ici(p, y)
    assert fast["ICI"] == pytest.approx(np.mean(err), abs=1e-6)
    assert fast["E50"] == pytest.approx(np.median(err), abs=1e-5)
    assert fast["E90"] == pytest.approx(np.quantile(err, 0.9), abs=1e-5)
    assert fast["Emax"] == pytest.approx(np.max(err), abs=2e-4)


def test_ici_quantiles_are_r_type_7_over_rows():
    v = np.array([0.3, 0.1, 0.2, 0.5])
    w = np.array([2, 0, 3, 1])
    for q in (0.0, 0.5, 0.9, 1.0):
        assert smoother._weighted_quantile7(v, w.astype(float), q) == pytest.approx(np.quantile(np.repeat(v, w), q))


def test_heavily_tied_predictions_make_loess_undefined():
    with pytest.raises(DataError, match="span too small"):
        C.ici(np.r_[np.full(80, 0.3), np.linspace(0.4, 0.9, 20)], np.r_[np.zeros(70), np.ones(30)])
    with pytest.raises(DataError, match="too few rows"):
        C.ici([0.2, 0.7], [0, 1])
    # 74 of 100 rows tied is still fine: the 75 nearest rows reach past the tie
    tied = np.r_[np.full(74, 0.3), np.linspace(0.4, 0.9, 26)]
    assert np.isfinite(C.ici(tied, np.r_[np.zeros(70), np.ones(30)])["ICI"])
    with pytest.raises(SettingsError):
        C.ici([0.2, 0.5], [0, 1], span=1.5)


# ----------------------------------------------------------------------------
# Spiegelhalter
# ----------------------------------------------------------------------------
def test_spiegelhalter_hand_worked():
    # (y-p)(1-2p): -.2*.6, .4*-.2, .1*-.8, -.3*.4 = -.40;  (1-2p)^2 p(1-p): .0576 + .0096 + .0576 + .0336 = .1584
    r = C.spiegelhalter_z([0.2, 0.6, 0.9, 0.3], [0, 1, 1, 0])
    assert r["z"] == pytest.approx(-0.40 / math.sqrt(0.1584), rel=1e-12)
    assert r["p_value"] == pytest.approx(2 * stats.norm.cdf(-0.40 / math.sqrt(0.1584)), rel=1e-12)
    assert r["reading"].startswith("No evidence of miscalibration at the 5% level")


def test_spiegelhalter_is_brier_minus_its_null_expectation_over_its_null_sd():
    p, y = _data(5000, 12, truth=lambda p: 0.1 + 0.8 * p)
    r = C.spiegelhalter_z(p, y)
    z = (np.sum((p - y) ** 2) - np.sum(p * (1 - p))) / math.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    assert r["z"] == pytest.approx(z, rel=1e-10)
    assert r["p_value"] < 0.05 and r["reading"].startswith("Evidence of miscalibration at the 5% level")
    nan = C.spiegelhalter_z([0.5, 0.5, 1.0], [0, 1, 1])
    assert math.isnan(nan["z"]) and "cannot be computed" in nan["reading"]


# ----------------------------------------------------------------------------
# Hosmer-Lemeshow
# ----------------------------------------------------------------------------
def test_hosmer_lemeshow_hand_worked():
    # groups {.1,.2} O=1 E=.3; {.3,.5} O=1 E=.8; {.6,.9} O=1 E=1.5
    r = C.hosmer_lemeshow([0.1, 0.2, 0.3, 0.5, 0.6, 0.9], [0, 1, 0, 1, 0, 1], n_groups=3)
    by_hand = (0.49 / 0.3 + 0.49 / 1.7) + (0.04 / 0.8 + 0.04 / 1.2) + (0.25 / 1.5 + 0.25 / 0.5)
    assert r["statistic"] == pytest.approx(by_hand, rel=1e-12)
    assert r["df"] == 1 and r["p_value"] == pytest.approx(stats.chi2.sf(by_hand, 1), rel=1e-12)
    assert r["table"]["count"].tolist() == [2, 2, 2]
    assert r["table"]["expected"].tolist() == pytest.approx([0.3, 0.8, 1.5])


def test_hosmer_lemeshow_equals_the_direct_formula_on_sorted_rows():
    p, y = _data(1003, 13, truth=lambda p: p ** 1.3)
    r = C.hosmer_lemeshow(p, y)
    order = np.argsort(p)
    stat = 0.0
    for g in np.array_split(order, 10):                        # first groups one larger, as in metrics
        n, o, e = g.size, y[g].sum(), p[g].sum()
        stat += (o - e) ** 2 / (n * (e / n) * (1 - e / n))
    assert r["statistic"] == pytest.approx(stat, rel=1e-10)
    assert r["df"] == 8
    t = r["table"]
    assert t["count"].sum() == 1003 and t["observed"].sum() == pytest.approx(y.sum())
    assert t["mean_pred"].tolist() == pytest.approx(M.reliability_table(p, y)["mean_pred"].tolist())


def test_hosmer_lemeshow_does_not_reject_calibrated_predictions():
    p, y = _data(20_000, 14)
    assert C.hosmer_lemeshow(p, y)["p_value"] > 0.01
    assert C.hosmer_lemeshow(p, (np.random.default_rng(1).uniform(size=p.size) < p ** 2).astype(int))["p_value"] < 1e-6


# ----------------------------------------------------------------------------
# Brier decomposition
# ----------------------------------------------------------------------------
def test_brier_decomposition_hand_worked():
    # f=.2: n=2, o=.5; f=.8: n=3, o=2/3; overall .6
    r = C.brier_decomposition([0.2, 0.2, 0.8, 0.8, 0.8], [0, 1, 1, 1, 0])
    assert r["reliability"] == pytest.approx((2 * 0.3 ** 2 + 3 * (0.8 - 2 / 3) ** 2) / 5)
    assert r["resolution"] == pytest.approx((2 * 0.1 ** 2 + 3 * (2 / 3 - 0.6) ** 2) / 5)
    assert r["uncertainty"] == pytest.approx(0.24) and r["brier"] == pytest.approx(0.28)
    assert r["groups"] == 2


@pytest.mark.parametrize("kw", [{}, {"n_bins": 10}, {"n_bins": 7, "strategy": "uniform"}])
def test_brier_identity_holds(kw):
    rng = np.random.default_rng(15)
    p = np.round(rng.beta(2, 2, 3000), 2)
    y = (rng.uniform(size=3000) < p ** 1.4).astype(int)
    r = C.brier_decomposition(p, y, **kw)
    total = (r["reliability"] - r["resolution"] + r["uncertainty"]
             + r["within_bin_variance"] - r["within_bin_covariance"])
    assert total == pytest.approx(M.brier(p, y), abs=1e-13) and r["brier"] == pytest.approx(M.brier(p, y), abs=1e-15)
    if kw:
        assert r["within_bin_variance"] > 0
        t = M.reliability_table(p, y, n_bins=kw["n_bins"], strategy=kw.get("strategy", "quantile"))
        t = t[t["count"] > 0]
        assert r["reliability"] == pytest.approx(np.sum(t["count"] * t["gap"] ** 2) / 3000, rel=1e-10)
    else:
        assert r["within_bin_variance"] == r["within_bin_covariance"] == 0.0


# ----------------------------------------------------------------------------
# debiased l2 calibration error: numbers printed by the authors' code (p-lambda/verified_calibration,
# calibration/utils.py: lower_bound_scaling_ce(..., p=2, debias=True) and get_calibration_error)
# ----------------------------------------------------------------------------
P30 = np.array([0.03, 0.07, 0.11, 0.14, 0.19, 0.22, 0.25, 0.29, 0.33, 0.36, 0.41, 0.44, 0.47, 0.52, 0.55,
                0.58, 0.61, 0.64, 0.67, 0.71, 0.74, 0.77, 0.81, 0.84, 0.87, 0.9, 0.92, 0.95, 0.97, 0.99])
Y30 = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])


def _generated():
    u = np.random.default_rng(2019).random((2, 2000))
    return u[0] ** 2, u[1]


@pytest.mark.parametrize("n_bins, value, squared", [(3, 0.2475205191643865, 0.06126640740740742),
                                                    (5, 0.2517990821623022, 0.0634027777777778)])
def test_debiased_l2_reproduces_the_authors_code_on_a_literal_array(n_bins, value, squared):
    assert C.debiased_l2_ce(P30, Y30, n_bins=n_bins) == pytest.approx(value, rel=1e-12)
    assert C.debiased_l2_ce(P30, Y30, n_bins=n_bins, squared=True) == pytest.approx(squared, rel=1e-12)


def test_debiased_l2_reproduces_the_authors_code_on_generated_arrays():
    p, u = _generated()
    y = (u < p ** 0.7).astype(int)
    assert C.debiased_l2_ce(p, y) == pytest.approx(0.08987934998638367, rel=1e-10)           # 15 bins
    assert C.debiased_l2_ce(p, y, n_bins=7) == pytest.approx(0.09019377923348516, rel=1e-10)
    # calibrated labels: the unbiased squared estimate is negative, the l2 value clipped to 0
    y2 = (u < p).astype(int)
    assert C.debiased_l2_ce(p, y2, squared=True) == pytest.approx(-0.0002495549491036547, rel=1e-9)
    assert C.debiased_l2_ce(p, y2) == 0.0
    # binned predictions: one bin per distinct value (their get_binning_ce)
    assert C.debiased_l2_ce(np.round(p * 8) / 8, y, n_bins=None) == pytest.approx(0.0905190523529015, rel=1e-10)


def test_debiased_is_below_the_plugin_estimate_by_the_variance_term():
    p, u = _generated()
    y = (u < p ** 0.7).astype(int)
    t = M.reliability_table(p, y, n_bins=15)
    plugin = np.sum(t["count"] / 2000 * t["gap"] ** 2)
    var = np.sum(t["count"] / 2000 * t["obs_freq"] * (1 - t["obs_freq"]) / (t["count"] - 1))
    assert C.debiased_l2_ce(p, y, squared=True) == pytest.approx(plugin - var, rel=1e-10)


# ----------------------------------------------------------------------------
# ACE
# ----------------------------------------------------------------------------
def test_ace_hand_worked_with_both_classes():
    p = np.array([0.1, 0.3, 0.4, 0.7, 0.9])
    y = np.array([0, 1, 0, 1, 1])
    # positive class, ranges {.1 .3 .4} {.7 .9}: gaps 1/3 - .8/3 and .2
    pos = (abs(1 / 3 - 0.8 / 3) + 0.2) / 2
    # negative class (1 - p ascending = p descending), ranges {.9 .7 .4} {.3 .1}: gaps 0 and .3
    neg = (abs((0.1 + 0.3 + 0.6) / 3 - 1 / 3) + abs((0.7 + 0.9) / 2 - 0.5)) / 2
    assert C.adaptive_ece(p, y, n_bins=2, classes="positive") == pytest.approx(pos)
    assert C.adaptive_ece(p, y, n_bins=2) == pytest.approx((pos + neg) / 2)
    # swapping the classes leaves ACE unchanged; the positive-class value changes
    assert C.adaptive_ece(1 - p, 1 - y, n_bins=2) == pytest.approx(C.adaptive_ece(p, y, n_bins=2))
    assert C.adaptive_ece(1 - p, 1 - y, n_bins=2, classes="positive") == pytest.approx(neg)


def test_ace_is_the_unweighted_mean_gap_of_equal_count_bins():
    p, y = _data(3000, 16, truth=lambda p: p ** 2)
    t = M.reliability_table(p, y, n_bins=15)
    assert C.adaptive_ece(p, y) == pytest.approx(np.mean(np.abs(t["gap"])), rel=1e-12)
    with pytest.raises(SettingsError):
        C.adaptive_ece(p, y, classes="negative")


# ----------------------------------------------------------------------------
# bin-count rules
# ----------------------------------------------------------------------------
def test_bin_count_rules():
    assert C.auto_bin_count(1728) == 12 and C.auto_bin_count(1000) == 10 and C.auto_bin_count(1001) == 11
    assert all(C.auto_bin_count(k ** 3) == k and C.auto_bin_count(k ** 3 + 1) == k + 1 for k in range(2, 99))
    assert C.auto_bin_count(100, "sqrt") == 10 and C.auto_bin_count(101, "sqrt") == 11
    assert C.auto_bin_count(1728, "min_count", min_count=100) == 17
    assert C.auto_bin_count(1) == 2 and C.auto_bin_count(10 ** 7) == 100 and C.auto_bin_count(150, "min_count") == 2
    assert C.describe_rule(1728) == "12 bins (cube root of n = 1,728 rows)"
    assert C.describe_rule(10 ** 7) == "100 bins (cube root of n = 10,000,000 rows, capped at 100)"
    assert (C.describe_rule(150, "min_count")
            == "2 bins (at least 100 rows per bin, n = 150 rows, raised to the minimum of 2)")
    assert C.describe_rule(400, "sqrt") == "20 bins (square root of n = 400 rows)"
    with pytest.raises(SettingsError):
        C.auto_bin_count(100, "freedman-diaconis")
    with pytest.raises(DataError):
        C.auto_bin_count(0)


# ----------------------------------------------------------------------------
# weights count rows, for every function
# ----------------------------------------------------------------------------
CASES = {
    "intercept_slope": lambda p, y, w: C.calibration_intercept_slope(p, y, sample_weight=w),
    "ici": lambda p, y, w: C.ici(p, y, sample_weight=w),
    "curve": lambda p, y, w: C.smoothed_calibration_curve(p, y, sample_weight=w),
    "spiegelhalter": lambda p, y, w: C.spiegelhalter_z(p, y, sample_weight=w),
    "hosmer_lemeshow": lambda p, y, w: C.hosmer_lemeshow(p, y, sample_weight=w, n_groups=7),
    "brier": lambda p, y, w: C.brier_decomposition(p, y, sample_weight=w),
    "brier_binned": lambda p, y, w: C.brier_decomposition(p, y, sample_weight=w, n_bins=9),
    "debiased_l2": lambda p, y, w: C.debiased_l2_ce(p, y, sample_weight=w, squared=True),
    "ace": lambda p, y, w: C.adaptive_ece(p, y, sample_weight=w, n_bins=8),
}


def _same(a, b):
    """Equal to rel 1e-9: the functions are closed forms of weighted sums (whole weights against
    repeated rows: a few ulps apart) and, for the intercept and slope, the one logistic solver
    (:func:`calibdash.core.logistic.solve_logistic`) iterated to the floating-point limit, so both fits
    agree to the rounding of the gradient sums."""
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False,
                                      rtol=1e-9, atol=1e-12)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, str):
        assert a == b
    else:
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("name", list(CASES))
def test_whole_weights_equal_repeated_rows(name):
    rng = np.random.default_rng(17)
    p = np.round(rng.beta(2, 3, 700), 2)                      # ties straddle the equal-count cuts
    y = (rng.uniform(size=700) < p ** 1.2).astype(int)
    w = rng.integers(0, 4, 700)
    fn = CASES[name]
    _same(fn(p, y, w), fn(np.repeat(p, w), np.repeat(y, w), None))
