"""ABB (Naeini, Cooper & Hauskrecht 2014): averaging over all binnings, checked against brute force and drawn."""
from __future__ import annotations

import numpy as np
import pytest

from calibdash import calibrators
from calibdash.explain import explain

from tests.calibrators.test_bayes_binning import brute_force, positions_of, rows_of, CASES


@pytest.mark.parametrize("s,y,lam", CASES)
def test_abb_equals_brute_force(s, y, lam):
    vals, n0, n1 = positions_of(s, y)
    bf = brute_force(vals, n0, n1, lam)
    abb = calibrators.get("abb", lam=lam).fit(s, y)
    ex = explain(abb, s, y)
    np.testing.assert_allclose(abb.predict(vals), bf["value"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ex.positions["value"], bf["value"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ex.boundaries["posterior"], bf["boundary"], rtol=0, atol=1e-9)
    assert abb.log_evidence_ == pytest.approx(bf["log_evidence"], abs=1e-9)
    assert ex.log_evidence == abb.log_evidence_


def test_abb_interpolates_betweenpositions_of_and_is_flat_outside():
    rng = np.random.default_rng(11)
    s = np.sort(rng.uniform(0.2, 0.8, 12))
    y = rng.integers(0, 2, 12)
    y[:2] = [0, 1]
    abb = calibrators.get("abb", lam=3.0).fit(s, y)
    v = abb.predict(s)
    mid = (s[:-1] + s[1:]) / 2
    np.testing.assert_allclose(abb.predict(mid), (v[:-1] + v[1:]) / 2, atol=1e-12)
    np.testing.assert_allclose(abb.predict([0.0, 0.1]), v[0], atol=1e-12)
    np.testing.assert_allclose(abb.predict([0.9, 1.0]), v[-1], atol=1e-12)


def test_abb_figure_shows_map_over_boundary_posterior():
    from calibdash.figures import inner_figures

    s, y = rows_of()
    abb = calibrators.get("abb").fit(s, y)
    ex = explain(abb, s, y)
    np.testing.assert_allclose(abb.predict(ex.curve["x"].to_numpy()), ex.curve["y"], atol=1e-12)
    [(title, fig)] = inner_figures(ex)
    assert f"{ex.expected_bins:.1f} bins" in title
    post = [t for t in fig.data if t.name == "posterior P(boundary)"][0]
    np.testing.assert_allclose(np.array(post.y, dtype=float), ex.boundaries["posterior"])
    assert post.yaxis == "y2" and fig.layout.xaxis.matches == "x2"      # under the map, same x axis
