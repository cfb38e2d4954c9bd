"""SBB (Naeini, Cooper & Hauskrecht 2014): the selected binning, checked against brute force, explained and drawn."""
from __future__ import annotations

import numpy as np
import pytest

from calibdash import calibrators
from calibdash.explain import explain

from tests.calibrators.test_bayes_binning import brute_force, positions_of, rows_of, CASES


@pytest.mark.parametrize("s,y,lam", CASES)
def test_sbb_equals_brute_force_best(s, y, lam):
    vals, n0, n1 = positions_of(s, y)
    bf = brute_force(vals, n0, n1, lam)
    sbb = calibrators.get("sbb", lam=lam).fit(s, y)
    assert sbb.log_score_ == pytest.approx(bf["best"], abs=1e-9)
    assert sbb.log_evidence_ == pytest.approx(bf["log_evidence"], abs=1e-9)
    bins = explain(sbb, s, y).bins
    cuts = [0] * (vals.size - 1)
    for last in bins["last"].to_numpy()[:-1]:
        cuts[last] = 1
    # the chosen binning is a best one (and the best one when it is unique)
    assert bf["scores"][tuple(cuts)] == pytest.approx(bf["best"], abs=1e-9)
    runner_up = sorted(bf["scores"].values())[-2] if len(bf["scores"]) > 1 else -np.inf
    if bf["best"] - runner_up > 1e-9:
        assert max(bf["scores"], key=bf["scores"].get) == tuple(cuts)
    # each bin predicts its smoothed frequency, everywhere in its interval
    for _, b in bins.iterrows():
        inside = (vals >= b["score_min"]) & (vals <= b["score_max"])
        expected = (sum(np.array(n1)[inside]) + 1) / (sum(np.array(n0)[inside]) + sum(np.array(n1)[inside]) + 2)
        np.testing.assert_allclose(sbb.predict(vals[inside]), expected, atol=1e-12)
    assert bins["n"].sum() == s.size


def test_sbb_cuts_halfway_and_upper_bin_on_the_cut():
    s = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9] * 5)
    y = np.array([0, 0, 0, 1, 1, 1] * 5)
    sbb = calibrators.get("sbb", lam=1.0).fit(s, y)
    np.testing.assert_allclose(sbb.cuts_, [0.5])
    assert sbb.predict([0.5])[0] == pytest.approx(16 / 17)     # 15 positives of 15, smoothed
    assert sbb.predict([0.4999])[0] == pytest.approx(1 / 17)
    bins = explain(sbb, s, y).bins
    assert bins["lower"].tolist() == [0.0, 0.5] and bins["upper"].tolist() == [0.5, 1.0]


def test_sbb_explained_bins_match_predict():
    s, y = rows_of()
    sbb = calibrators.get("sbb").fit(s, y)
    bins = explain(sbb, s, y).bins
    assert len(bins) > 2
    np.testing.assert_array_equal(bins["lower"].to_numpy()[1:], sbb.cuts_)
    np.testing.assert_array_equal(bins["upper"].to_numpy()[:-1], sbb.cuts_)
    for _, b in bins.iterrows():
        inside = (s >= b["lower"]) & ((s < b["upper"]) | (b["upper"] == 1.0))
        # the rows predict puts in the bin are the bin's rows, and it gives them the bin's estimate
        assert inside.sum() == b["n"] and y[inside].sum() == b["n1"]
        assert s[inside].min() == b["score_min"] and s[inside].max() == b["score_max"]
        np.testing.assert_array_equal(sbb.predict(s[inside]), b["estimate"])
        assert b["estimate"] == pytest.approx((b["n1"] + 1) / (b["n"] + 2), abs=1e-15)


def test_sbb_figure_shades_the_chosen_bins():
    from calibdash.figures import inner_figures

    s, y = rows_of()
    sbb = calibrators.get("sbb").fit(s, y)
    ex = explain(sbb, s, y)
    [(title, fig)] = inner_figures(ex)
    bins = ex.bins
    assert f"{len(bins)} bins" in title
    bands = [t for t in fig.data if t.fill == "toself"][0]
    xs = [x for x in bands.x if x is not None]
    expected = np.column_stack([bins["lower"], bins["upper"], bins["upper"], bins["lower"],
                                bins["lower"]])[::2].ravel()
    np.testing.assert_allclose(xs, expected)
    step = [t for t in fig.data if t.name == "SBB map"][0]
    np.testing.assert_allclose(np.array(step.y[:-1], dtype=float), sbb.predict(bins["lower"].to_numpy()))
