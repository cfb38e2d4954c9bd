"""The scaling family's solver (calibdash.calibrators.multiclass.linear.fit_linear): a fit that stops short says so."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from calibdash.calibrators.multiclass.linear import LinearForm, fit_linear
from tests.calibrators.multiclass.conftest import draw


def test_a_solver_that_stops_short_warns_instead_of_returning_the_start_silently(lenet):
    P, y, _, _ = lenet
    X = np.log(P)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        fit = fit_linear(X, y, None, LinearForm("full", True, "odir"), 1.0, 1.0, max_iter=2)
    assert not fit.converged


def test_the_wall_clock_cap_stops_a_fit_with_a_warning_never_silently():
    Z, y = draw(300, 4, seed=1)
    with pytest.warns(ConvergenceWarning, match="wall-clock cap"):
        fit = fit_linear(Z, y, None, LinearForm("full", True, "odir"), 1.0, 1.0, max_seconds=-1.0)
    assert fit.stop == "time" and not fit.converged and fit.n_iter == 0
