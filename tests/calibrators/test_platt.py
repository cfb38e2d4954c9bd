"""Platt scaling (Platt 1999): equality to a direct likelihood fit, known parameters, weights, its explanation."""
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from calibdash import calibrators
from calibdash.calibrators.platt import logit
from calibdash.explain import explain

from tests.calibrators.test_calibrators import tied_rows, integer_weights, assert_weights_count_as_rows, GRID


def direct_platt(z, t):
    def nll(w):
        f = w[0] * z + w[1]
        return np.sum(np.logaddexp(0, f) - t * f)
    return minimize(nll, [0.5, 0.0], method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("smooth", [False, True])
def test_platt_equals_direct_likelihood_fit(noisy, smooth):
    s, y = noisy
    cal = calibrators.get("platt", smooth_targets=smooth).fit(s, y)
    n1, n0 = y.sum(), y.size - y.sum()
    t = np.where(y == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2)) if smooth else y.astype(float)
    a, b = direct_platt(logit(s), t)
    assert cal.a_ == pytest.approx(a, abs=1e-5) and cal.b_ == pytest.approx(b, abs=1e-5)
    np.testing.assert_allclose(cal.predict(s), expit(a * logit(s) + b), atol=1e-6)


def test_platt_recovers_known_parameters():
    rng = np.random.default_rng(1)
    s = rng.uniform(0.01, 0.99, size=200_000)
    y = (rng.uniform(size=s.size) < expit(2.0 * logit(s) - 0.5)).astype(int)
    cal = calibrators.get("platt").fit(s, y)
    assert cal.a_ == pytest.approx(2.0, abs=0.05) and cal.b_ == pytest.approx(-0.5, abs=0.05)


@pytest.mark.parametrize("smooth", [False, True])
def test_platt_explanation_is_the_fit(noisy, smooth):
    s, y = noisy
    cal = calibrators.get("platt", smooth_targets=smooth).fit(s, y)
    ex = explain(cal, s, y)
    assert (ex.A, ex.B) == (cal.a_, cal.b_)
    assert ex.log_likelihood == pytest.approx(cal.log_likelihood_, rel=1e-12)
    n1, n0 = y.sum(), y.size - y.sum()
    t = np.where(y == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2)) if smooth else y
    q = cal.predict(s)
    assert ex.log_likelihood == pytest.approx(np.sum(t * np.log(q) + (1 - t) * np.log1p(-q)), rel=1e-9)
    assert ex.tables["fit"].iloc[0].to_dict() == {"A": ex.A, "B": ex.B, "log_likelihood": ex.log_likelihood,
                                                  "rows": s.size}


@pytest.mark.parametrize("smooth", [False, True])
def test_platt_weights_count_as_rows(smooth):
    s, y = tied_rows()
    k = integer_weights(y)
    # Both fits stop at the floating-point limit (fit_logistic): each within |H^-1| (log2(N) eps
    # sum w |x| |q - y|) of the optimum, 1.9e-13 relative in the map on these data; rtol 1e-11 is 25
    # times twice it (seen: 4e-16). The log-likelihoods differ by the rounding of their sums (log2(N)
    # eps, 3e-15 relative) plus a second-order term in d beta (1e-25).
    weighted, repeated = assert_weights_count_as_rows(
        lambda: calibrators.get("platt", smooth_targets=smooth), s, y, k, rtol=1e-11)
    assert weighted.log_likelihood_ == pytest.approx(repeated.log_likelihood_, rel=1e-13)
    # explained with its weights, it is the repeated rows' fit
    ex = explain(weighted, s, y, sample_weight=k)
    assert ex.log_likelihood == pytest.approx(weighted.log_likelihood_, rel=1e-12)
    assert ex.tables["fit"]["weight"].tolist() == [k.sum()] and ex.tables["fit"]["rows"].tolist() == [s.size]


def test_platt_weighted_by_hand():
    """Two distinct scores: the MLE meets each score's weighted frequency (2 parameters, 2 points)."""
    s = np.array([0.2, 0.2, 0.7, 0.7])
    y = np.array([0, 1, 0, 1])
    w = np.array([3.0, 1.0, 1.0, 3.0])                      # frequencies 1/4 at 0.2, 3/4 at 0.7
    cal = calibrators.get("platt").fit(s, y, sample_weight=w)
    # Newton at the floating-point limit: the frequencies and slope to a few ulps (seen: 1e-16, exact)
    np.testing.assert_allclose(cal.predict([0.2, 0.7]), [0.25, 0.75], rtol=0, atol=1e-13)
    assert cal.a_ == pytest.approx(2 * np.log(3) / (logit(0.7) - logit(0.2)), rel=1e-13)
    # smoothed targets from the weighted class totals N+ = N- = 4: t+ = 5/6, t- = 1/6, so the fit
    # meets the mean targets (3/6 + 5/6) / 4 = 1/3 and (1/6 + 15/6) / 4 = 2/3 (unweighted totals 2
    # would give t+ = 3/4, t- = 1/4)
    smooth = calibrators.get("platt", smooth_targets=True).fit(s, y, sample_weight=w)
    np.testing.assert_allclose(smooth.predict([0.2, 0.7]), [1 / 3, 2 / 3], rtol=0, atol=1e-13)


def test_platt_scaled_weights_same_map_unless_smoothed(noisy):
    """Scaling every weight by c: the same map without smoothing; with smoothing, the fit whose
    targets come from c N+ and c N- (the documented exception)."""
    s, y = noisy
    w = np.random.default_rng(4).uniform(0.2, 3.0, s.size)
    for c in (0.01, 7.0):
        # the same optimum, both fits within 2.2e-13 of it relative in the map (the rounding bound of
        # test_weights.py on these data): rtol 1e-11 is 20 times twice it (seen: equal)
        np.testing.assert_allclose(calibrators.get("platt").fit(s, y, sample_weight=c * w).predict(GRID),
                                   calibrators.get("platt").fit(s, y, sample_weight=w).predict(GRID), rtol=1e-11)
    cal = calibrators.get("platt", smooth_targets=True).fit(s, y, sample_weight=0.01 * w)
    n1, n0 = 0.01 * w[y == 1].sum(), 0.01 * w[y == 0].sum()
    t = np.where(y == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    a, b = minimize(lambda p: np.sum(w * (np.logaddexp(0, p[0] * logit(s) + p[1]) - t * (p[0] * logit(s) + p[1]))),
                    [0.5, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    assert cal.a_ == pytest.approx(a, abs=1e-5) and cal.b_ == pytest.approx(b, abs=1e-5)
    unscaled = calibrators.get("platt", smooth_targets=True).fit(s, y, sample_weight=w)
    assert abs(cal.b_ - unscaled.b_) > 1e-3
