"""Dirichlet calibration (Kull et al. 2019): the cross-validated penalty, the same map on logits and on their
probabilities."""
from __future__ import annotations

import numpy as np
from scipy.special import softmax

from calibdash import calibrators
from tests.calibrators.multiclass.conftest import FIT_TOL, make


def test_cross_validated_choice_is_the_grid_point_with_the_lowest_held_out_loss(lenet):
    P, y, _, _ = lenet
    cal = calibrators.get("dirichlet", "classes", lambdas=(1e4, 10.0, 1e-2), n_folds=3).fit(P[:1500], y[:1500])
    losses = np.asarray(cal.cv_losses_)
    assert cal.cv_grid_ == [(1e4, 1e4), (10.0, 10.0), (1e-2, 1e-2)]
    assert (cal.lambda_, cal.mu_) == cal.cv_grid_[int(np.argmin(losses))]
    # a strength fixed by hand is used as given, with no search
    fixed = calibrators.get("dirichlet", "classes", select=False, lam=cal.lambda_, mu=cal.mu_).fit(P[:1500], y[:1500])
    assert fixed.cv_losses_ is None
    np.testing.assert_allclose(fixed.predict_proba(P[:50]), cal.predict_proba(P[:50]), atol=FIT_TOL)


def test_dirichlet_is_the_same_map_for_logits_and_their_probabilities(small):
    """Dirichlet works on log-probabilities, which logits and their softmax give alike (to rounding)."""
    Z, y = small
    a = make("dirichlet", logits=True).fit(Z, y)
    b = make("dirichlet").fit(softmax(Z, axis=1), y)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(softmax(Z, axis=1)), atol=FIT_TOL)
