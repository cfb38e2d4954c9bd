"""Vector scaling (Guo et al. 2017): a map by hand where the family is saturated, 1,000 classes."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from calibdash import calibrators
from tests.calibrators.multiclass.conftest import FIT_TOL, check_ended, draw, log_loss


def test_vector_scaling_of_1000_classes_ends_in_few_steps():
    """2,000 rows of 1,000 classes (870 of them in the labels, most on one or two rows, many separable by
    their own score: no finite optimum, their parameters run to 1e5). The fit ends within the cap, by the
    decrease rule once the steps' decreases fall into the objective's rounding (a warning may say that
    the map is not at an optimum: it has none), and beats the temperature map on its rows."""
    Z, y = draw(2000, 1000, seed=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cal = calibrators.get("vector", "classes", logits=True).fit(Z, y)
    check_ended(cal, Z, cap=40)
    assert cal.stop_ in ("gtol", "ftol", "floating-point limit")
    T = calibrators.get("temperature", "classes", logits=True).fit(Z, y).predict_proba(Z)
    assert log_loss(cal.predict_proba(Z), y) < log_loss(T, y)          # 2,000 parameters fitted in-sample


def test_vector_scaling_gives_each_kind_of_row_its_rate_where_it_is_saturated():
    """K = 2, logits of three kinds: (1, 0) on 4 rows (1 of class 1), (0, 1) on 5 rows (4 of class 1), (0, 0) on 2
    rows (1 of class 1). Vector scaling's class-1 probability is ``sigmoid(a1 x1 - a0 x0 + b1 - b0)``: on these
    kinds ``sigmoid(c - a0)``, ``sigmoid(a1 + c)`` and ``sigmoid(c)`` (``c = b1 - b0``), three free numbers for three
    rates, so the maximum-likelihood map gives each kind its observed rate: ``[3/4, 1/4]``, ``[1/5, 4/5]``,
    ``[1/2, 1/2]``, with ``c = 0``, ``a0 = ln 3``, ``a1 = ln 4`` (the intercepts' sum kept at 0: ``b = 0``).
    Temperature scaling, one number, cannot: its mean NLL's derivative is the mean of ``q_top - [top is the label]``
    over the one-hot rows (the (0, 0) rows add 0), so it gives (1, 0) and (0, 1) the pooled accuracy 7/9 as top
    probability, 1/36 off the first kind's rate. Tolerances: the probabilities to FIT_TOL (conftest.py); the scales
    move them by ``q (1 - q) >= 0.16`` per unit, so 1e-5."""
    kinds = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    Z = np.repeat(kinds, [4, 5, 2], axis=0)
    y = np.array([0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1])
    cal = calibrators.get("vector", "classes", logits=True).fit(Z, y)
    assert cal.converged_
    rates = np.array([[3 / 4, 1 / 4], [1 / 5, 4 / 5], [1 / 2, 1 / 2]])
    np.testing.assert_allclose(cal.predict_proba(kinds), rates, rtol=0, atol=FIT_TOL)
    np.testing.assert_allclose(cal.theta_, [np.log(3.0), np.log(4.0), 0.0, 0.0], rtol=0, atol=1e-5)
    T = calibrators.get("temperature", "classes", logits=True).fit(Z, y).predict_proba(kinds)
    np.testing.assert_allclose([T[0, 0], T[1, 1]], 7 / 9, rtol=0, atol=FIT_TOL)
