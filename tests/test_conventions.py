"""scikit-learn's conventions and the size of a fitted calibrator, for every registered method.

A fitted calibrator holds what ``predict`` needs plus small learned
summaries, never its training rows (explaining is :mod:`calibdash.explain`'s
job): pickled, it is at most twice its JSON export plus 4 KB. The fit cache of
the dashboard holds many of them, shared by every session.
"""
from __future__ import annotations

import inspect
import pickle

import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.io import export
from calibdash.core.errors import NotFittedError

N = 20_000


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 3, N)
    y = (rng.random(N) < s ** 1.5).astype(int)
    f = pd.DataFrame({"device": rng.choice(list("abc"), N), "x": rng.normal(size=N)})
    return s, y, f


def _fit(name, rows):
    s, y, f = rows
    cal = calibrators.get(name)
    return cal.fit(s, y, f if cal.uses_features else None)


@pytest.mark.parametrize("name", calibrators.available())
def test_pickled_fit_is_at_most_twice_its_export_plus_4kb(name, rows):
    cal = _fit(name, rows)
    pickled = len(pickle.dumps(cal))
    exported = len(export.dumps(cal).encode("utf-8"))
    assert pickled <= 2 * exported + 4096, f"{name}: pickle {pickled:,} B, export {exported:,} B"
    # and the pickle predicts like the original
    again = pickle.loads(pickle.dumps(cal))
    s, _, f = rows
    feats = f if cal.uses_features else None
    np.testing.assert_array_equal(again.predict(s[:500], None if feats is None else feats.iloc[:500]),
                                  cal.predict(s[:500], None if feats is None else feats.iloc[:500]))


@pytest.mark.parametrize("name", calibrators.available())
def test_init_only_stores_its_arguments(name):
    cls = calibrators.get_class(name)
    cal = cls()
    params = inspect.signature(cls.__init__).parameters
    args = {p for p in params if p != "self"}
    assert set(vars(cal)) == args
    assert {k: getattr(cal, k) for k in args} == {k: params[k].default for k in args}


@pytest.mark.parametrize("name", calibrators.available())
def test_fit_learns_only_attributes_ending_in_underscore(name, rows):
    cal = _fit(name, rows)
    learned = set(vars(cal)) - set(cal.get_params())
    assert learned, "fit learned nothing"
    assert all(k.endswith("_") and not k.startswith("_") for k in learned), sorted(learned)


@pytest.mark.parametrize("name", calibrators.available())
def test_unfitted_use_raises_sklearn_not_fitted_error(name):
    from sklearn.exceptions import NotFittedError as SklearnNotFitted

    with pytest.raises(NotFittedError) as info:
        calibrators.get(name).predict([0.2, 0.4])
    assert isinstance(info.value, SklearnNotFitted)
