"""The scaling family's objective (calibdash.calibrators.multiclass.linear_map.objective): its gradient."""
from __future__ import annotations

import numpy as np
import pytest

from calibdash.calibrators.multiclass.linear_map import LinearForm, identity_start, objective


@pytest.mark.parametrize("form", [LinearForm("scalar", False), LinearForm("diagonal", True),
                                  LinearForm("full", True, "odir"), LinearForm("full", True, "l2"),
                                  LinearForm("diagonal", True, "odir")])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_matches_central_differences(small, form, weighted):
    """Central differences with h = 1e-5: truncation error h^2 f''' / 6 ~ 1e-11 and rounding eps f / h
    ~ 1e-11 on an objective of size ~1, so 1e-8 absolute is far above both and far below any real error."""
    Z, y = small
    k = Z.shape[1]
    w = np.random.default_rng(5).uniform(0, 3, y.size) if weighted else None
    theta = identity_start(form, k) + np.random.default_rng(6).normal(0, 0.3, identity_start(form, k).size)
    _, _, grad = objective(theta, Z, y, w, form, lam=2.0, mu=0.7)
    h = 1e-5
    numeric = np.array([(objective(theta + h * e, Z, y, w, form, 2.0, 0.7)[0]
                         - objective(theta - h * e, Z, y, w, form, 2.0, 0.7)[0]) / (2 * h)
                        for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, numeric, atol=1e-8)
