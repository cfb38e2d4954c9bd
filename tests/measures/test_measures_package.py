"""The measures subpackage's shared pieces: the one logistic solver, the public binning, MVCE's one home,
the registry's tests, and the old module names kept as re-exports."""
import math

import numpy as np
import pytest
from scipy import optimize, special
from sklearn.linear_model import LogisticRegression

import calibdash
from calibdash import measures
from calibdash.core import logistic
from calibdash.calibrators.platt import PlattCalibrator, logit
from calibdash.calibrators.temperature import TemperatureCalibrator
from calibdash.measures import binning, calibration, hypothesis, mvce, recalibration
from calibdash.measures import calibration as metrics


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    s = np.round(rng.beta(2, 4, 3_000), 3)                      # ties straddle the equal-count cuts
    y = (rng.random(s.size) < special.expit(1.4 * logit(s) + 0.3)).astype(int)
    w = rng.integers(0, 4, s.size).astype(float)
    return s, y, w


# ----------------------------------------------------------------------------
# one weighted-logistic solver
# ----------------------------------------------------------------------------
def test_one_solver_gives_platt_temperature_and_the_calibration_slope(data):
    s, y, w = data
    z = logit(s)
    ones = np.ones_like(z)
    two = logistic.solve_logistic(np.column_stack([z, ones]), y, w, [1.0, 0.0])
    assert two.converged
    platt = PlattCalibrator().fit(s, y, sample_weight=w)
    np.testing.assert_allclose([platt.a_, platt.b_], two.beta, rtol=1e-10)
    # the calibration slope is the same regression on the unclipped logit (no score here is 0 or 1)
    cox = recalibration.calibration_intercept_slope(s, y, w)
    slope_fit = logistic.solve_logistic(np.column_stack([ones, z]), y, w, [0.0, 1.0])
    np.testing.assert_allclose([cox["slope_model_intercept"], cox["slope"]], slope_fit.beta, rtol=1e-10)
    # ... and sklearn's unpenalised fit agrees
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(z[:, None], y, sample_weight=w)
    assert cox["slope"] == pytest.approx(ref.coef_[0, 0], rel=1e-6)
    # temperature scaling: one column, no intercept, beta = 1/T
    temp = TemperatureCalibrator().fit(s, y, sample_weight=w)
    (beta,), _, _ = logistic.fit_logistic(z[:, None], y, w, [1.0])
    assert 1.0 / temp.temperature_ == pytest.approx(beta, rel=1e-12)


def test_the_offset_fixes_a_coefficient_at_one(data):
    """The calibration intercept (slope fixed at 1) is the maximiser of the likelihood with logit(p) as offset."""
    s, y, w = data
    x = logit(s)
    fit = logistic.solve_logistic(np.ones((s.size, 1)), y, w, [0.0], offset=x)

    def nll(a):
        f = a + x
        return float(np.dot(w, np.logaddexp(0.0, f) - y * f))

    best = optimize.minimize_scalar(nll, bracket=(-1.0, 1.0), tol=1e-12).x
    assert fit.beta[0] == pytest.approx(best, abs=1e-7)
    assert recalibration.calibration_intercept_slope(s, y, w)["intercept"] == fit.beta[0]
    se = math.sqrt(logistic.covariance(fit.hessian)[0, 0])
    assert recalibration.calibration_intercept_slope(s, y, w)["intercept_se"] == pytest.approx(se, rel=1e-12)


def test_separated_classes_are_not_converged():
    x = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    fit = logistic.solve_logistic(np.column_stack([np.ones(6), logit(x)]), y, None, [0.0, 1.0])
    assert not fit.converged and fit.beta[1] > 50             # the slope runs away (the MLE is infinite)
    assert fit.nll < 1e-30
    r = recalibration.calibration_intercept_slope(x, y)
    assert not r["converged"] and math.isnan(r["slope"])


# ----------------------------------------------------------------------------
# the public binning that the metrics, the clinical measures and the bootstrap share
# ----------------------------------------------------------------------------
def test_quantile_edges_of_many_totals_are_each_totals_edges():
    totals = np.array([0.0, 7.0, 10.0, 23.0, 1001.0])
    many = binning.quantile_edges(totals, 10, whole=True)
    for t, row in zip(totals, many):
        np.testing.assert_array_equal(row, binning.quantile_edges(float(t), 10, True))


def test_binned_errors_of_rows_of_bins_are_each_rows_ece_and_mce(data):
    s, y, w = data
    rows = []
    for seed in range(4):
        ws = w * np.random.default_rng(seed).poisson(1.0, w.size)
        b = binning.bin_sums(s, y, ws, 10, "quantile")
        rows.append((b, float(ws.sum()), metrics.ece(s, y, sample_weight=ws), metrics.mce(s, y, sample_weight=ws)))
    count = np.stack([r[0].count for r in rows])
    sum_p = np.stack([r[0].sum_p for r in rows])
    sum_y = np.stack([r[0].sum_y for r in rows])
    ece, mce = calibration.binned_errors(count, sum_p, sum_y, np.array([r[1] for r in rows]))
    np.testing.assert_allclose(ece, [r[2] for r in rows], rtol=1e-13)
    np.testing.assert_allclose(mce, [r[3] for r in rows], rtol=1e-13)


def test_hosmer_lemeshow_groups_are_the_ece_bins(data):
    s, y, w = data
    hl = hypothesis.hosmer_lemeshow(s, y, w, n_groups=10)["table"]
    rel = binning.reliability_table(s, y, 10, "quantile", sample_weight=w)
    np.testing.assert_allclose(hl["observed_rate"], rel["obs_freq"], rtol=1e-12)
    np.testing.assert_allclose(hl["mean_pred"], rel["mean_pred"], rtol=1e-12)


# ----------------------------------------------------------------------------
# MVCE's one home
# ----------------------------------------------------------------------------
def test_grouped_mvce_of_one_group_is_the_metric(data):
    s, y, _ = data
    views = mvce.random_views(s.size, 7, 5)
    grouped = mvce.grouped_mvce((s - y)[None], np.zeros(s.size, int), 1, views, 300)[0, 0]
    assert grouped == pytest.approx(metrics.mvce(s, y, bin_size=300, n_views=7, seed=5), rel=1e-12)


def test_mvce_of_moments_is_the_partition_views_of_the_rows(data):
    s, y, w = data
    d = s - y
    counts = w.astype(np.int64) * 500
    n = float(counts.sum())
    mean = float(np.dot(counts, d) / n)
    var = float(np.dot(counts, (d - mean) ** 2) / n)
    direct = float(np.mean(mvce.partition_views(d, counts, int(n) // 10, 30, 1.0, 0)))
    assert mvce.mvce_of_moments(mean, var, n, 30) == pytest.approx(direct, rel=1e-9)


# ----------------------------------------------------------------------------
# the registry and the old names
# ----------------------------------------------------------------------------
def test_registry_tests_are_the_tests_and_their_statistic_is_the_measure(data):
    s, y, w = data
    got = measures.hypothesis_tests(s, y, w)
    assert set(got) == set(measures.TESTS) <= set(measures.MEASURE_NAMES)
    z = hypothesis.spiegelhalter_z(s, y, w)
    hl = hypothesis.hosmer_lemeshow(s, y, w)
    assert got["Spieg. z"] == {"statistic": z["z"], "p_value": z["p_value"], "reading": z["reading"]}
    assert got["HL"] == {"statistic": hl["statistic"], "p_value": hl["p_value"], "reading": hl["reading"]}
    values = measures.compute(s, y, w, names=list(measures.TESTS))
    assert values == {name: got[name]["statistic"] for name in measures.TESTS}


def test_old_module_names_forward_to_the_subpackage_with_a_warning():
    import importlib
    old = {name: importlib.import_module(f"calibdash.{name}") for name in ("metrics", "smooth_ece", "corp", "clinical")}
    pairs = [(old["metrics"], "summary", calibration.summary), (old["metrics"], "reliability_table", binning.reliability_table),
             (old["metrics"], "mvce", mvce.mvce), (old["smooth_ece"], "smoothed_curve", measures.smooth_ece.smoothed_curve),
             (old["corp"], "corp_decomposition", measures.corp.corp_decomposition),
             (old["clinical"], "spiegelhalter_z", hypothesis.spiegelhalter_z)]
    for module, name, new in pairs:
        with pytest.warns(DeprecationWarning, match=f"{module.__name__}.{name} moved to calibdash.measures"):
            assert getattr(module, name) is new
    with pytest.warns(DeprecationWarning):
        assert old["clinical"].auto_bin_count(1728) == 12
    with pytest.raises(AttributeError):
        old["clinical"].mvce                                         # only the names the old module had
    with pytest.raises(AttributeError):
        old["metrics"].no_such_measure
    assert not hasattr(calibdash, "metrics") or calibdash.metrics is old["metrics"]


