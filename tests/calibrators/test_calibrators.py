"""The calibrator contract (every registered method) and the weights helpers the method tests share; each
method has its own module (test_platt.py, test_isotonic.py, test_histogram.py, ...)."""
import inspect
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from calibdash import calibrators
from calibdash.io import export
from calibdash.core.errors import DataError, NotFittedError, ProgrammingError, SettingsError
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
# sample weights (a row of weight w counts as w rows): helpers shared with test_bbq and test_bayes_binning
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


