"""Temperature scaling of a binary score (Guo, Pleiss, Sun & Weinberger 2017): hand-computed cases, equality to a
direct scipy fit, invariances, its range, export and explanation."""
import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit

from calibdash import calibrators
from calibdash.io import export
from calibdash.calibrators.platt import logit
from calibdash.core.errors import DataError, ProgrammingError, SettingsError
from calibdash.explain import explain

GRID = np.linspace(0.0, 1.0, 1001)


def temp_rows(t_true, n=20_000, seed=0, sd=2.0):
    """Logits z ~ N(0, sd), scores sigmoid(z), labels drawn from sigmoid(z / t_true)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, sd, n)
    return expit(z), (rng.uniform(size=n) < expit(z / t_true)).astype(int)


def se_temperature(s, y, t):
    """Standard error of T from the Fisher information of 1/T (delta method)."""
    z = logit(s)
    q = expit(z / t)
    info = float(np.sum(q * (1 - q) * z * z))
    return t * t / math.sqrt(info)


def direct_temperature(s, y, w=None):
    """T minimising the weighted NLL, by scipy's bounded scalar search on log T."""
    z = logit(s)
    w = np.ones(s.size) if w is None else w

    def nll(log_t):
        f = z / math.exp(log_t)
        return float(np.sum(w * (np.logaddexp(0, f) - y * f)))
    return math.exp(minimize_scalar(nll, bounds=(-5, 5), method="bounded", options={"xatol": 1e-12}).x)


def test_temperature_hand_computed_symmetric_case():
    """Logits +-2 with positive rates sigmoid(+-1): the likelihood is maximised where sigmoid(2 / T) = sigmoid(1)."""
    s = expit(np.array([2.0, 2.0, -2.0, -2.0]))
    y = np.array([1, 0, 1, 0])
    r = expit(1.0)
    cal = calibrators.get("temperature").fit(s, y, sample_weight=[r, 1 - r, 1 - r, r])
    # the solver takes its last Newton step once a step is below 1e-12 of 1/T, so the error after it
    # is quadratically small: what is left is the rounding of the sums, a few ulps here
    assert cal.temperature_ == pytest.approx(2.0, rel=1e-12)
    np.testing.assert_allclose(cal.predict(s[[0, 2]]), [r, 1 - r], rtol=1e-12)


@pytest.mark.parametrize("t_true", [0.5, 2.5])
def test_temperature_recovers_a_known_temperature(t_true):
    s, y = temp_rows(t_true, n=60_000, seed=1)
    cal = calibrators.get("temperature").fit(s, y)
    assert abs(cal.temperature_ - t_true) < 4 * se_temperature(s, y, t_true)


@pytest.mark.parametrize("weighted", [False, True])
def test_temperature_equals_direct_scipy_fit(weighted):
    s, y = temp_rows(1.7, seed=2)
    w = np.random.default_rng(3).uniform(0.1, 3.0, s.size) if weighted else None
    cal = calibrators.get("temperature").fit(s, y, sample_weight=w)
    assert cal.temperature_ == pytest.approx(direct_temperature(s, y, w), rel=1e-6)
    z = logit(s)
    ww = np.ones(s.size) if w is None else w
    # first-order condition: sum w (p - y) logit(s) = 0 at the fit
    grad = np.sum(ww * (cal.predict(s) - y) * z)
    assert abs(grad) < 1e-8 * np.sum(ww * np.abs(z))
    f = z / cal.temperature_
    assert cal.log_likelihood_ == pytest.approx(-np.sum(ww * (np.logaddexp(0, f) - y * f)), rel=1e-12)


def test_temperature_is_one_on_calibrated_scores_and_on_its_own_output():
    s, y = temp_rows(1.0, n=40_000, seed=4)
    cal = calibrators.get("temperature").fit(s, y)
    assert abs(cal.temperature_ - 1.0) < 4 * se_temperature(s, y, 1.0)
    # refitting on its own output: logit(p) = logit(s) / T, whose best temperature is exactly 1
    s2, y2 = temp_rows(2.0, seed=5)
    first = calibrators.get("temperature").fit(s2, y2)
    again = calibrators.get("temperature").fit(first.predict(s2), y2)
    assert first.temperature_ == pytest.approx(2.0, abs=0.1)
    assert again.temperature_ == pytest.approx(1.0, abs=1e-9)


def test_temperature_invariances():
    s, y = temp_rows(1.5, seed=6)
    w = np.random.default_rng(7).uniform(0.2, 2.0, s.size)
    t = calibrators.get("temperature").fit(s, y, sample_weight=w).temperature_
    # both fits at the floating-point limit: 1/T within |h^-1| log2(N) eps sum w |z| |q - y| of the
    # optimum, 1.4e-13 relative on such data, so rel 1e-12 is 3.5 times twice it
    assert calibrators.get("temperature").fit(s, y, sample_weight=1e-3 * w).temperature_ == pytest.approx(t, rel=1e-12)
    # swapping the classes negates every logit: the same T
    assert calibrators.get("temperature").fit(1 - s, 1 - y, sample_weight=w).temperature_ == pytest.approx(t, rel=1e-9)
    # it never reorders scores and fixes 1/2
    p = calibrators.get("temperature").fit(s, y).predict(GRID)
    assert np.all(np.diff(p) >= 0) and p[500] == 0.5


def test_temperature_softens_over_confident_scores_out_of_sample():
    s, y = temp_rows(2.0, n=20_000, seed=8)
    cal = calibrators.get("temperature").fit(s[:10_000], y[:10_000])
    p, st, yt = cal.predict(s[10_000:]), s[10_000:], y[10_000:]
    assert np.mean((p - yt) ** 2) < np.mean((st - yt) ** 2)
    assert -np.mean(yt * np.log(p) + (1 - yt) * np.log1p(-p)) < -np.mean(yt * np.log(st) + (1 - yt) * np.log1p(-st))


def test_temperature_stops_at_its_range_when_the_likelihood_has_no_interior_optimum():
    s = np.array([0.2, 0.3, 0.7, 0.8])
    assert calibrators.get("temperature").fit(s, [1, 1, 0, 0]).temperature_ == 1e3       # ranks the wrong way
    assert calibrators.get("temperature").fit(s, [0, 0, 1, 1]).temperature_ == 1e-3      # separable at 1/2
    assert calibrators.get("temperature", t_max=50.0).fit(s, [1, 1, 0, 0]).temperature_ == 50.0
    assert calibrators.get("temperature").fit(np.full(6, 0.5), [0, 1, 0, 1, 0, 1]).temperature_ == 1.0
    for bad in ({"t_min": 0.0}, {"t_min": 2.0, "t_max": 1.0}, {"t_max": math.inf}):
        with pytest.raises(SettingsError, match="temperature range"):
            calibrators.get("temperature", **bad).fit(s, [0, 0, 1, 1])


def test_temperature_export_round_trip_and_hand_written_file():
    s, y = temp_rows(1.3, n=3000, seed=9)
    cal = calibrators.get("temperature").fit(s, y)
    text = export.dumps(cal)
    state = json.loads(text)["state"]
    assert set(state) == {"n_train", "temperature"} and state["temperature"] == cal.temperature_
    assert np.array_equal(export.loads(text).predict(GRID), cal.predict(GRID))
    doc = json.loads(text)
    doc["state"]["temperature"] = 2.0
    assert export.loads(json.dumps(doc)).predict([expit(3.0)])[0] == pytest.approx(expit(1.5), rel=1e-15)
    for bad in (-1.0, 0.0, "2"):
        doc["state"]["temperature"] = bad
        with pytest.raises(DataError, match="temperature"):
            export.loads(json.dumps(doc))


def test_temperature_explanation_curve_has_its_minimum_at_t():
    s, y = temp_rows(1.8, n=5000, seed=17)
    cal = calibrators.get("temperature").fit(s, y)
    ex = explain(cal, s, y)
    assert ex.log_likelihood == pytest.approx(cal.log_likelihood_, rel=1e-12)
    q = cal.predict(s)
    assert ex.log_likelihood == pytest.approx(np.sum(y * np.log(q) + (1 - y) * np.log1p(-q)), rel=1e-10)
    assert ex.log_likelihood_at_1 == pytest.approx(np.sum(y * np.log(s) + (1 - y) * np.log1p(-s)), rel=1e-10)
    assert ex.log_likelihood > ex.log_likelihood_at_1
    c = ex.nll_curve
    assert c["temperature"].min() <= 1.0 <= c["temperature"].max()
    assert c["nll"].idxmin() == int(np.flatnonzero(c["temperature"].to_numpy() == ex.temperature)[0])
    # se of log T against the curvature of the NLL in 1/T by finite differences
    z, h = logit(s), 1e-4
    nll = [np.sum(np.logaddexp(0, z * v) - y * z * v) for v in (1 / ex.temperature - h, 1 / ex.temperature,
                                                                1 / ex.temperature + h)]
    curv = (nll[0] - 2 * nll[1] + nll[2]) / h ** 2
    assert ex.se_log_t == pytest.approx(ex.temperature / math.sqrt(curv), rel=1e-4)
    assert ex.at_bound == ""
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, 1 - y)
    edge = calibrators.get("temperature").fit([0.2, 0.3, 0.7, 0.8], [1, 1, 0, 0])
    bound = explain(edge, [0.2, 0.3, 0.7, 0.8], [1, 1, 0, 0])
    assert bound.at_bound == "t_max" and math.isnan(bound.se_log_t) and any("t_max" in n for n in bound.notes)
