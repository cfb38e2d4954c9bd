"""The contract every K-class calibrator keeps, for every name ``calibdash.calibrators.available("classes")`` gives.

A method added later is covered by being registered (a module in calibdash/calibrators/multiclass/methods/). Data
are small (120 rows, 3 classes; 60 rows for the slow binary ones) so that the
~30 names run in a few seconds.
"""
from __future__ import annotations

import numpy as np
import pytest

from calibdash import calibrators
from calibdash.core.errors import DataError, NotFittedError, SettingsError
from calibdash.io import export
from calibdash.calibrators.multiclass.base import LOG_FLOOR

NAMES = calibrators.available("classes")
K = 3

#: Binary methods whose fit is an iterative solver (calibdash.core.logistic's Newton iterations, run to the
#: floating-point limit): their maps agree on weighted and repeated rows, or in another row order, up to
#: the rounding of the gradient's sums carried through the inverse Hessian. tests/test_weights.py bounds
#: that by 2.4e-11 relative on 4000 rows; rtol 1e-9 keeps its margin. The other binary methods are
#: functions of per-score counts and positives (whole numbers, exact in any order): exact.
SOLVERS = {"platt", "beta", "temperature", "scaling_binning"}
#: Binary methods slow enough (ELiTE: a trend-filter path of 50 lambdas per fit, ~0.4 s a fit on 120
#: rows) to get half the rows.
SLOW = {"elite"}


def _binary(name: str) -> str:
    return name.partition(":")[2]


def tolerance(name: str) -> dict | None:
    """None: the two fits must agree exactly; else ``assert_allclose``'s rtol and atol (see SOLVERS).
    A non-composite (scaling) method is a solver; one that stops at a gradient tolerance rather than the
    floating-point limit must argue its own bound here."""
    binary = _binary(name)
    if binary and binary not in SOLVERS:
        return None
    return {"rtol": 1e-9, "atol": 1e-12}


def agree(a, b, tol):
    if tol is None:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, **tol)


def rows(name: str, seed: int = 0, n: int | None = None):
    """(P, y): softmax rows of shifted Gaussian logits (no ties), labels drawn from a sharper softmax so
    that the scores are miscalibrated, and some saturated rows: a one-hot row, exact zeros, a top
    probability of 1 - 1e-16."""
    n = n or (60 if _binary(name) in SLOW else 120)
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, K)) * 1.5 + np.array([1.0, 0.0, -0.5])
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    truth = np.exp(1.6 * Z) / np.exp(1.6 * Z).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    P[0] = [0.0, 1.0, 0.0]
    P[1] = [0.3, 0.0, 0.7]
    P[2] = [1.0 - 1e-16, 1e-16, 0.0]
    return P, y


#: Rows to predict: random, one-hot (probabilities exactly 0 and 1.0), uniform, zeros and a near-one top.
GRID = np.vstack([np.random.default_rng(99).dirichlet(np.ones(K), 40), np.eye(K), np.full((1, K), 1.0 / K),
                  [[0.0, 0.4, 0.6], [1.0 - 1e-15, 5e-16, 5e-16]]])


@pytest.fixture(scope="module")
def fitted():
    """name -> the calibrator fitted on ``rows(name)``, shared by the tests that only read it."""
    out = {}
    for name in NAMES:
        P, y = rows(name)
        out[name] = calibrators.get(name, "classes").fit(P, y)
    return out


def test_every_composite_is_available_for_every_binary_method_without_features():
    usable = [b for b in calibrators.available() if not calibrators.get_class(b).uses_features]
    assert {"histogram", "isotonic", "platt", "beta", "bbq", "sbb", "abb", "elite", "enir", "venn_abers",
            "scaling_binning", "temperature"} <= set(usable)
    for prefix in calibrators.composites():
        assert [n for n in NAMES if n.startswith(prefix + ":")] == [f"{prefix}:{b}" for b in usable]


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_and_rows_sum_to_one(name, fitted):
    P, y = rows(name)
    cal = calibrators.get(name, "classes")
    assert cal.fit(P, y) is cal
    Q = fitted[name].predict_proba(GRID)
    assert Q.shape == (GRID.shape[0], K)
    assert np.all(np.isfinite(Q)) and np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(fitted[name].predict(GRID), np.argmax(Q, axis=1))


@pytest.mark.parametrize("name", NAMES)
def test_integer_weights_equal_repeated_rows(name):
    P, y = rows(name, seed=1)
    k = np.random.default_rng(3).integers(0, 4, y.size)
    k[:3] = 1                                                   # the saturated rows stay in
    weighted = calibrators.get(name, "classes").fit(P, y, sample_weight=k)
    repeated = calibrators.get(name, "classes").fit(np.repeat(P, k, axis=0), np.repeat(y, k))
    agree(weighted.predict_proba(GRID), repeated.predict_proba(GRID), tolerance(name))   # see SOLVERS


@pytest.mark.parametrize("name", NAMES)
def test_row_order_does_not_matter(name, fitted):
    P, y = rows(name)
    perm = np.random.default_rng(4).permutation(y.size)
    shuffled = calibrators.get(name, "classes").fit(P[perm], y[perm])
    agree(shuffled.predict_proba(GRID), fitted[name].predict_proba(GRID), tolerance(name))   # see SOLVERS


@pytest.mark.parametrize("name", NAMES)
def test_finite_on_saturated_rows(name):
    """Training on one-hot rows only (every probability exactly 0 or 1.0) and predicting such rows."""
    P = np.tile(np.eye(K), (8, 1))
    y = np.tile(np.arange(K), 8)
    y[::5] = (y[::5] + 1) % K                                   # some one-hot rows are wrong
    Q = calibrators.get(name, "classes").fit(P, y).predict_proba(np.vstack([np.eye(K), GRID]))
    assert np.all(np.isfinite(Q))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_json_round_trip_reproduces_predictions_exactly(name, fitted):
    cal = fitted[name]
    text = export.dumps(cal, fitted_on={"file": "t.csv"})
    model = export.read_model(text)
    np.testing.assert_array_equal(model.calibrator.predict_proba(GRID), cal.predict_proba(GRID))
    assert model.fitted_on == {"file": "t.csv"}
    assert export.dumps(model.calibrator, fitted_on={"file": "t.csv"}) == text    # deterministic, stable


@pytest.mark.parametrize("name", NAMES)
def test_logits_of_the_probabilities_give_the_same_map(name):
    """Fitted on Z = log P with logits=True, a method sees softmax(Z) = P and log-scores log P, as it does
    fitted on P: the two maps agree up to the inputs' rounding (softmax(log P) and P / sum(P) differ by a
    few ulps). Continuous maps move by that times their slope; the trend-filter fit (ELiTE, stopping at
    1e-9) and the solvers stay far below 1e-9 (seen: 1e-13). There are no ties in the data, so no ulp
    moves a score across a bin edge or a block cut (edges lie between distinct training scores)."""
    P, y = rows(name)
    P, y = P[3:], y[3:]                # without the saturated rows, whose equal zeros softmax(log P) would untie
    on_logits = calibrators.get(name, "classes", logits=True).fit(np.log(P), y)
    on_probs = calibrators.get(name, "classes").fit(P, y)
    grid = GRID[:40]                   # the random rows: no zeros
    np.testing.assert_allclose(on_logits.predict_proba(np.log(grid)), on_probs.predict_proba(grid),
                               rtol=0, atol=1e-9)
    Q = on_logits.predict_proba(np.array([[800.0, -800.0, 0.0], [0.0, 0.0, 0.0]]))   # saturating logits
    assert np.all(np.isfinite(Q))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    text = export.dumps(on_logits)
    np.testing.assert_array_equal(export.loads(text).predict_proba(np.log(grid)), on_logits.predict_proba(np.log(grid)))


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_use_raises_not_fitted(name):
    from sklearn.exceptions import NotFittedError as SklearnNotFitted
    with pytest.raises(NotFittedError) as info:
        calibrators.get(name, "classes").predict_proba(GRID)
    assert isinstance(info.value, SklearnNotFitted)
    with pytest.raises(NotFittedError):
        export.dumps(calibrators.get(name, "classes"))


@pytest.mark.parametrize("name", NAMES)
def test_wrong_number_of_columns_at_predict_is_a_data_error(name, fitted):
    with pytest.raises(DataError, match="3 classes"):
        fitted[name].predict_proba(np.full((2, 4), 0.25))


@pytest.mark.parametrize("name", NAMES)
def test_clone_keeps_the_parameters(name):
    from sklearn.base import clone
    cal = calibrators.get(name, "classes", logits=True)
    again = clone(cal)
    assert again.get_params() == cal.get_params() and type(again) is type(cal)


# -- the file: damage is refused ------------------------------------------------------------------------
def _damaged(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("name", ["ovr:isotonic", "top_label:platt"])
def test_damaged_files_are_data_errors(name, fitted):
    text = export.dumps(fitted[name])
    cases = {
        "not valid JSON": text[:-5],
        "not a calibdash": _damaged(text, "calibdash-calibrator", "calibdash-other"),
        "version 3 is not supported": _damaged(text, '"version":2', '"version":3'),
        "'kind' is 'binary.'": _damaged(text, '"kind":"classes"', '"kind":"binary?"'),
        "do not give a calibrator": _damaged(text, '"method":"', '"method":"nope'),
        "n_classes": _damaged(text, '"n_classes":3', '"n_classes":1'),
        "one model per class": _damaged(text, '"n_classes":3', '"n_classes":4'),
        "must be an object": _damaged(text, '"state":{\n', '"state":[{\n').replace("\n}\n}\n", "\n}]\n}\n"),
    }
    for message, bad in cases.items():
        with pytest.raises(DataError, match=message):
            export.loads(bad)
    with pytest.raises(DataError):
        export.loads(_damaged(text, '{"state":{"n_train"', '{"state":{"n_trian"'))


def test_a_binary_file_is_not_a_multiclass_file():
    text = export.dumps(calibrators.get("isotonic").fit([0.1, 0.4, 0.8], [0, 1, 1]))
    with pytest.raises(DataError, match="holds a binary calibrator; a K-class calibrator is needed"):
        export.loads(text, "classes")
    assert export.read_model(text).kind == "binary"


def test_logits_probe_uses_floored_logs():
    """A loaded logits model is probed on log-probabilities floored at LOG_FLOOR: finite logits."""
    P, y = rows("ovr:platt")
    cal = calibrators.get("ovr:platt", "classes", logits=True).fit(np.log(np.maximum(P, LOG_FLOOR)), y)
    assert export.loads(export.dumps(cal)).logits is True


def test_unknown_parameters_and_feature_methods_are_settings_errors():
    with pytest.raises(SettingsError, match=r"no hyperparameter \['bogus'\]"):
        calibrators.get("ovr:isotonic", "classes", bogus=1)
    with pytest.raises(SettingsError, match="uses feature columns"):
        calibrators.get("top_label:mbct", "classes")
    with pytest.raises(SettingsError, match="'nope' is none"):
        calibrators.get("ovr:nope", "classes")
