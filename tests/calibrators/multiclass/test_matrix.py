"""Matrix scaling with ODIR (Guo et al. 2017; Kull et al. 2019): a map by hand where it is saturated, the penalty
search on a fold without a class."""
from __future__ import annotations

import numpy as np

from calibdash import calibrators
from tests.calibrators.multiclass.conftest import FIT_TOL, SEARCH, check_ended, draw, fit_quietly, make


def test_a_fold_without_a_class_still_fits():
    """A class of one row (absent from the training part of its fold): the search ends and chooses."""
    Z, y = draw(600, 4, seed=10)
    y[y == 3] = 0
    y[0] = 3
    cal = fit_quietly(make("matrix", logits=True, **SEARCH), Z, y)
    check_ended(cal, Z)
    assert cal.absent_classes_ == ()


def test_unpenalised_matrix_scaling_gives_each_kind_of_row_its_class_rates():
    """Logits one-hot (``x = e_k``): a row of kind ``k`` scores ``W[:, k] + b``, a free K-vector per kind, so
    unpenalised matrix scaling (Guo et al.'s; ``lam = mu = 0``) is saturated and its maximum-likelihood map gives
    each kind the rates of its labels: kind 0 labels 3, 1, 1 of classes 0, 1, 2; kind 1: 1, 2, 1; kind 2: 2, 1, 3.
    Vector scaling (``a_k`` on the kind's own class, ``b`` shared) cannot, nor can ODIR's penalty (it shrinks the
    off-diagonal entries that carry the rates): both miss by more than 0.01. Tolerance: FIT_TOL (conftest.py)."""
    counts = np.array([[3, 1, 1], [1, 2, 1], [2, 1, 3]])
    Z = np.repeat(np.eye(3), counts.sum(axis=1), axis=0)
    y = np.concatenate([np.repeat(np.arange(3), c) for c in counts])
    rates = counts / counts.sum(axis=1, keepdims=True)
    cal = fit_quietly(make("matrix", logits=True, lam=0.0, mu=0.0), Z, y)
    assert cal.converged_
    np.testing.assert_allclose(cal.predict_proba(np.eye(3)), rates, rtol=0, atol=FIT_TOL)
    for other in (calibrators.get("vector", "classes", logits=True), make("matrix", logits=True)):
        assert np.abs(other.fit(Z, y).predict_proba(np.eye(3)) - rates).max() > 0.01
