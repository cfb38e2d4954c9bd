"""The calibrator contract (every registered method), the classic calibrators' known results and
their explainers."""
import inspect
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.isotonic import IsotonicRegression

from calibdash import calibrators, export
from calibdash.calibrators.platt import logit
from calibdash.errors import DataError, NotFittedError, ProgrammingError, SettingsError
from calibdash.explain import explain

ALL = calibrators.available()


def test_registry_lists_classic_methods_in_order():
    assert ALL[:3] == ["platt", "histogram", "isotonic"]


def test_unknown_method_and_parameter_are_refused():
    with pytest.raises(SettingsError, match="unknown calibrator"):
        calibrators.get("nope")
    with pytest.raises(SettingsError, match="no hyperparameter"):
        calibrators.get("platt", n_bins=3)


@pytest.mark.parametrize("name", ALL)
def test_declared_hyperparameters_match_constructor(name):
    cls = calibrators.get_class(name)
    sig = inspect.signature(cls.__init__).parameters
    assert cls.label and cls.paper
    for hp in cls.hyperparams:
        assert hp.name in sig, f"{name}.{hp.name} is not a constructor argument"
        assert sig[hp.name].default == hp.default, f"{name}.{hp.name} default differs"
        if hp.kind in ("int", "float"):
            assert hp.low <= hp.default <= hp.high
            assert hp.default in hp.grid()
        if hp.kind == "choice":
            assert hp.default in hp.choices


@pytest.mark.parametrize("name", ALL)
def test_contract_outputs_in_unit_interval_and_state(name, noisy):
    s, y = noisy
    s = s.copy()
    s[:3] = [0.0, 1.0, 0.5]
    cal = calibrators.get(name)
    with pytest.raises(NotFittedError):
        cal.predict(s)
    assert cal.fit(s, y) is cal
    p = cal.predict(np.linspace(0, 1, 501))
    assert p.shape == (501,) and np.all((p >= 0) & (p <= 1))
    assert not hasattr(cal, "diagnostics")           # explaining is calibdash.explain's job
    again = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(again.predict(s), cal.predict(s))
    fresh = clone(cal)
    assert not hasattr(fresh, "n_train_")


@pytest.mark.parametrize("name", ALL)
def test_contract_refuses_bad_input(name):
    cal = calibrators.get(name)
    with pytest.raises(DataError, match="one class"):
        cal.fit(np.linspace(0.1, 0.9, 30), np.ones(30))
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        cal.fit(np.linspace(-1, 2, 30), np.arange(30) % 2)


#: Temperature scaling only rescales the logit about score 1/2 (no intercept), so it cannot correct the truth
#: score**2 (a shift); tests/test_beta_temperature.py checks that it softens over-confident scores out of sample.
NO_SHIFT = {"temperature"}


@pytest.mark.parametrize("name", [n for n in ALL if n not in NO_SHIFT])
def test_contract_improves_badly_calibrated_scores(name, noisy):
    """On 5,000 rows whose truth is score**2, every method beats the raw scores' Brier score."""
    s, y = noisy
    cal = calibrators.get(name).fit(s[:3000], y[:3000])
    raw = np.mean((s[3000:] - y[3000:]) ** 2)
    assert np.mean((cal.predict(s[3000:]) - y[3000:]) ** 2) < raw


def _direct_platt(z, t):
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
    a, b = _direct_platt(logit(s), t)
    assert cal.a_ == pytest.approx(a, abs=1e-5) and cal.b_ == pytest.approx(b, abs=1e-5)
    np.testing.assert_allclose(cal.predict(s), expit(a * logit(s) + b), atol=1e-6)


def test_platt_recovers_known_parameters():
    rng = np.random.default_rng(1)
    s = rng.uniform(0.01, 0.99, size=200_000)
    y = (rng.uniform(size=s.size) < expit(2.0 * logit(s) - 0.5)).astype(int)
    cal = calibrators.get("platt").fit(s, y)
    assert cal.a_ == pytest.approx(2.0, abs=0.05) and cal.b_ == pytest.approx(-0.5, abs=0.05)


def test_isotonic_hand_computed_pav():
    cal = calibrators.get("isotonic").fit([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    np.testing.assert_allclose(cal.predict([0.1, 0.2, 0.3, 0.4]), [0, 0.5, 0.5, 1])
    # step map: the pooled block's value holds up to halfway to the next block
    np.testing.assert_allclose(cal.predict([0.14, 0.16, 0.36]), [0, 0.5, 1])


def test_isotonic_monotone_and_matches_sklearn(noisy):
    s, y = noisy
    for mode in ("step", "linear"):
        cal = calibrators.get("isotonic", interpolation=mode).fit(s, y)
        assert np.all(np.diff(cal.predict(np.linspace(0, 1, 2001))) >= 0)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    lin = calibrators.get("isotonic", interpolation="linear").fit(s, y)
    grid = np.linspace(0, 1, 999)
    np.testing.assert_allclose(lin.predict(grid), ref.predict(grid), atol=1e-12)
    step = calibrators.get("isotonic").fit(s, y)
    np.testing.assert_allclose(step.predict(s), ref.predict(s), atol=1e-12)


def test_histogram_bins_hand_computed():
    s = np.arange(1, 11) / 11
    y = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
    cal = calibrators.get("histogram", n_bins=2).fit(s, y)
    bins = explain(cal, s, y).bins
    assert bins["count"].tolist() == [5, 5] and bins["positives"].tolist() == [1, 4]
    np.testing.assert_allclose(bins["mean_score"], [3 / 11, 8 / 11])
    np.testing.assert_allclose(cal.predict(s), [0.2] * 5 + [0.8] * 5)
    assert cal.cuts_[0] == pytest.approx((5 / 11 + 6 / 11) / 2)
    assert bins["upper"].tolist() == [cal.cuts_[0], 1.0]


def test_histogram_never_splits_ties_and_estimates_are_bin_means():
    rng = np.random.default_rng(5)
    s = np.round(rng.uniform(size=3000), 2)            # heavy ties
    y = (rng.uniform(size=3000) < s).astype(int)
    cal = calibrators.get("histogram", n_bins=13).fit(s, y)
    bins = cal.bin_of(s)
    for v in np.unique(s):
        assert np.unique(bins[s == v]).size == 1
    for b in np.unique(bins):
        assert cal.predict(s[bins == b])[0] == pytest.approx(y[bins == b].mean())
    table = explain(cal, s, y).bins
    assert table["count"].tolist() == np.bincount(bins).tolist() and table["count"].sum() == 3000


def test_histogram_bin_size_mode():
    s = np.linspace(0.01, 0.99, 1000)
    y = (np.arange(1000) % 3 == 0).astype(int)
    cal = calibrators.get("histogram", by="size", bin_size=250).fit(s, y)
    assert explain(cal, s, y).bins["count"].tolist() == [250] * 4


def test_constant_scores_do_not_crash():
    s = np.full(50, 0.3)
    y = np.arange(50) % 2
    for name in ALL:
        p = calibrators.get(name).fit(s, y).predict(np.array([0.1, 0.3, 0.9]))
        assert np.all((p >= 0) & (p <= 1)), name


@pytest.mark.parametrize("name,params", [("histogram", {"by": "rows"}), ("histogram", {"n_bins": 0}),
                                         ("isotonic", {"interpolation": "cubic"})])
def test_bad_hyperparameters_are_settings_errors(name, params, noisy):
    s, y = noisy
    with pytest.raises(SettingsError):
        calibrators.get(name, **params).fit(s, y)


# ---------------------------------------------------------------------------
# explainers of the classic methods
# ---------------------------------------------------------------------------
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


@pytest.mark.parametrize("mode", ["step", "linear"])
def test_isotonic_explanation_lists_the_pav_blocks(mode):
    s, y = np.array([0.1, 0.2, 0.3, 0.4, 0.4]), np.array([0, 1, 0, 1, 1])
    cal = calibrators.get("isotonic", interpolation=mode).fit(s, y)
    blocks = explain(cal, s, y).blocks
    assert blocks["first_score"].tolist() == [0.1, 0.2, 0.4]
    assert blocks["last_score"].tolist() == [0.1, 0.3, 0.4]
    assert blocks["count"].tolist() == [1, 2, 2]
    np.testing.assert_allclose(blocks["value"], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(cal.predict(blocks["last_score"].to_numpy()), blocks["value"])


@pytest.mark.parametrize("name", ["platt", "histogram", "isotonic"])
def test_classic_explanations_need_only_the_exported_state_and_the_rows(name, noisy):
    s, y = noisy
    cal = calibrators.get(name).fit(s, y)
    a, b = explain(cal, s, y), explain(export.loads(export.dumps(cal)), s, y)
    assert a.tables.keys() == b.tables.keys() and a.tables
    for key in a.tables:
        pd.testing.assert_frame_equal(a.tables[key], b.tables[key])


@pytest.mark.parametrize("name", ["histogram", "isotonic"])
def test_classic_explanations_refuse_other_rows(name, noisy):
    s, y = noisy
    cal = calibrators.get(name).fit(s, y)
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, 1 - y)


# ---------------------------------------------------------------------------
# sample weights (a row of weight w counts as w rows): helpers shared with test_bbq and test_sbb_abb
# ---------------------------------------------------------------------------
GRID = np.linspace(0.0, 1.0, 2001)


def tied_rows(n=3000, seed=0, decimals=2):
    """Scores rounded to ``decimals`` (many ties) and labels with P(y=1) = s**1.3."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 3, n), decimals)
    return s, (rng.uniform(size=n) < s ** 1.3).astype(int)


def integer_weights(y, seed=1, high=4):
    """Random weights 0 .. high - 1 (about a quarter of the rows absent), both classes kept."""
    k = np.random.default_rng(seed).integers(0, high, y.size)
    k[[np.flatnonzero(y == 0)[0], np.flatnonzero(y == 1)[0]]] = 1
    return k


def as_cells(s, y):
    """Rows compressed to cells: each distinct (score, label) once, with its number of rows."""
    frame = pd.DataFrame({"s": s, "y": y}).value_counts().reset_index()
    return frame["s"].to_numpy(), frame["y"].to_numpy(), frame["count"].to_numpy()


def assert_weights_count_as_rows(make, s, y, k, rtol=0.0, atol=1e-12):
    """``make()`` fitted with integer weights ``k`` predicts like the rows repeated ``k`` times, and
    fitted on the cells of ``(s, y)`` with their counts like the rows themselves."""
    weighted = make().fit(s, y, sample_weight=k)
    repeated = make().fit(np.repeat(s, k), np.repeat(y, k))
    np.testing.assert_allclose(weighted.predict(GRID), repeated.predict(GRID), rtol=rtol, atol=atol)
    cs, cy, cn = as_cells(s, y)
    assert cs.size < s.size / 2                       # the cells really compress
    np.testing.assert_allclose(make().fit(cs, cy, sample_weight=cn).predict(GRID), make().fit(s, y).predict(GRID),
                               rtol=rtol, atol=atol)
    return weighted, repeated


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


@pytest.mark.parametrize("params", [{}, {"n_bins": 7}, {"by": "size", "bin_size": 150}])
def test_histogram_weights_count_as_rows(params):
    s, y = tied_rows(decimals=3)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(lambda: calibrators.get("histogram", **params), s, y, k,
                                                      atol=0)
    np.testing.assert_array_equal(weighted.cuts_, repeated.cuts_)
    # explained with its weights: the repeated rows' bins, counts as weight sums
    a = explain(weighted, s, y, sample_weight=k).bins
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k)).bins
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-12)
    with pytest.raises(ProgrammingError, match="and weights"):
        explain(weighted, s, y)


def test_histogram_weighted_by_hand():
    """Equal-weight bins: total weight 6, so B = 2 cuts at cumulative weight 3, between 0.3 and 0.4;
    the weight-0 row at 0.36 is absent (it would otherwise move the cut to 0.33)."""
    s = np.array([0.1, 0.2, 0.3, 0.36, 0.4])
    y = np.array([0, 1, 0, 0, 1])
    w = np.array([1.0, 1.0, 1.0, 0.0, 3.0])
    cal = calibrators.get("histogram", n_bins=2).fit(s, y, sample_weight=w)
    assert cal.cuts_.tolist() == pytest.approx([0.35], abs=1e-15)
    np.testing.assert_allclose(cal.estimates_, [1 / 3, 1.0])
    bins = explain(cal, s, y, sample_weight=w).bins
    assert bins["count"].tolist() == [3.0, 3.0] and bins["positives"].tolist() == [1.0, 3.0]
    np.testing.assert_allclose(bins["mean_score"], [0.2, 0.4])
    # by size: B = W // bin_size = 6 // 2 = 3, boundaries at weight 2 (after 0.2) and 4 (nearest: 3,
    # after 0.3); unweighted, the 5 rows would make 5 // 2 = 2 bins
    three = calibrators.get("histogram", by="size", bin_size=2).fit(s, y, sample_weight=w)
    np.testing.assert_allclose(three.cuts_, [0.25, 0.35], atol=1e-15)
    np.testing.assert_allclose(three.estimates_, [0.5, 0.0, 1.0])


def test_histogram_scaled_weights_same_bins_unless_sized():
    """Scaling every weight by c keeps equal-weight bins (by="bins"); by="size" has c times the weight
    per bin_size: B grows with c (the documented exception)."""
    s, y = tied_rows(decimals=3)
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
    for c in (0.25, 3.0):
        np.testing.assert_array_equal(calibrators.get("histogram").fit(s, y, sample_weight=c * w).cuts_,
                                      calibrators.get("histogram").fit(s, y, sample_weight=w).cuts_)
    sized = [calibrators.get("histogram", by="size", bin_size=300).fit(s, y, sample_weight=c * w)
             for c in (1.0, 0.5)]
    assert sized[0].estimates_.size == int(w.sum() // 300) and sized[1].estimates_.size == int(w.sum() / 2 // 300)


@pytest.mark.parametrize("mode", ["step", "linear"])
def test_isotonic_weights_count_as_rows(mode):
    s, y = tied_rows(decimals=3)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(lambda: calibrators.get("isotonic", interpolation=mode),
                                                      s, y, k, atol=0)
    # the same map as scikit-learn's weighted isotonic regression on the rows
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y, sample_weight=k.astype(float))
    if mode == "linear":
        np.testing.assert_allclose(weighted.predict(GRID), ref.predict(GRID), atol=1e-12)
    a = explain(weighted, s, y, sample_weight=k).blocks
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k)).blocks
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-12)
    # scaling every weight by c changes nothing
    w = np.random.default_rng(3).uniform(0.1, 5.0, s.size)
    np.testing.assert_allclose(calibrators.get("isotonic", interpolation=mode).fit(s, y, sample_weight=w / 3)
                               .predict(GRID), calibrators.get("isotonic", interpolation=mode)
                               .fit(s, y, sample_weight=w).predict(GRID), rtol=0, atol=1e-12)


def test_isotonic_weighted_by_hand():
    """Ties merge at their weighted mean label: 0.2 holds weight 4 at mean 1/4, which violates
    0.1's 1 and pools with it: (1 + 4 * 1/4) / 5 = 2/5. Unweighted the pool would be (1 + 1/2 * 2) / 3."""
    s = np.array([0.1, 0.2, 0.2, 0.3])
    y = np.array([1, 0, 1, 1])
    w = np.array([1.0, 3.0, 1.0, 1.0])
    cal = calibrators.get("isotonic").fit(s, y, sample_weight=w)
    np.testing.assert_allclose(cal.predict([0.1, 0.2, 0.3]), [0.4, 0.4, 1.0], atol=1e-15)
    blocks = explain(cal, s, y, sample_weight=w).blocks
    assert blocks["count"].tolist() == [5.0, 1.0] and blocks["last_score"].tolist() == [0.2, 0.3]
    np.testing.assert_allclose(calibrators.get("isotonic").fit(s, y).predict([0.1, 0.2]), [2 / 3, 2 / 3])
