"""The reliability diagrams as library code (calibdash.diagrams: one module per kind, its prepare and its plot):
each prepare returns the hand-worked data, each plot draws that data, and the bin-count rule is stated once."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibdash import diagrams
from calibdash.measures import corp
from calibdash.measures import smooth_ece
from calibdash.core.errors import SettingsError


def _legend(fig) -> list[str]:
    return [t.name for t in fig.data if t.showlegend is not False and t.name != "perfect calibration"]


# -- Binned --------------------------------------------------------------------------------------------
def test_prepare_binned_is_the_hand_worked_table():
    """Two equal-width bins of four rows each: [0, .5) holds .1 .2 .3 .4 with one positive (mean prediction
    .25, observed .25), [.5, 1] holds .6 .7 .8 .9 with three (mean .75, observed .75)."""
    p = pd.DataFrame({"m": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]})
    y = np.array([0, 0, 1, 0, 1, 0, 1, 1])
    data = diagrams.prepare_binned(p, y, n_bins=2, strategy="uniform")
    t = data.tables["m"]
    assert list(t["count"]) == [4, 4]
    np.testing.assert_allclose(t["mean_pred"], [0.25, 0.75])
    np.testing.assert_allclose(t["obs_freq"], [0.25, 0.75])
    assert (data.n_bins, data.strategy, data.bins_text) == (2, "uniform", "2 bins")
    assert data.caption().startswith("Binned reliability diagram: 2 bins, equal-width; each point")
    fig = diagrams.plot(data, names={"m": "Model"})
    line = next(t for t in fig.data if t.name == "Model")
    np.testing.assert_allclose(np.asarray(line.y, dtype=float), [0.25, 0.75])
    assert fig.layout.title.text == diagrams.TITLES[diagrams.BINNED]


def test_auto_bins_count_the_weights_and_state_the_rule():
    """On weighted rows "auto" is the cube root of the weights' sum: 8 rows of weight 125 stand for 1,000."""
    w = np.full(8, 125.0)
    assert diagrams.bin_count("auto", np.zeros(8), w) == (10, "auto: 10 bins (cube root of n = 1,000 rows)")
    assert diagrams.bin_count(15, np.zeros(8)) == (15, "15 bins")
    assert diagrams.auto_bin_count(1728) == 12 and diagrams.auto_bin_count(10 ** 7) == diagrams.MAX_BINS
    assert diagrams.describe_rule(150, "min_count") == "2 bins (at least 100 rows per bin, n = 150 rows, raised " \
                                                       "to the minimum of 2)"
    assert set(diagrams.RULE_TEXT) == set(diagrams.BIN_RULES)


# -- CORP ----------------------------------------------------------------------------------------------
def test_prepare_corp_is_the_hand_worked_pav_fit_and_decomposition():
    """PAV of y = (0, 1, 0, 1) on p = (.1, .2, .3, .4) is (0, .5, .5, 1): Brier 1.1/4 = .275, recalibrated
    .125, climatology .25, so MCB .150, DSC .125, UNC .250."""
    p, y = pd.DataFrame({"m": [0.1, 0.2, 0.3, 0.4]}), np.array([0, 1, 0, 1])
    data = diagrams.prepare_corp(p, y)
    np.testing.assert_allclose(data.curves["m"]["calibrated"], [0, 0.5, 0.5, 1])
    assert {k: data.decompositions["m"][k] for k in ("MCB", "DSC", "UNC")} == pytest.approx(
        {"MCB": 0.15, "DSC": 0.125, "UNC": 0.25})
    assert data.bands == {} and not data.band
    assert _legend(diagrams.plot(data, names={"m": "Model"})) == ["Model · MCB 0.150 · DSC 0.125 · UNC 0.250"]
    banded = diagrams.prepare_corp(p, y, band=True, n_boot=20)
    assert list(banded.bands) == ["m"] and "(20 resamples with labels drawn" in banded.caption()
    assert "Shaded" not in data.caption()


# -- Smooth --------------------------------------------------------------------------------------------
def test_prepare_smooth_holds_smooth_ece_curve_and_says_its_bandwidth():
    rng = np.random.default_rng(4)
    s = rng.uniform(size=600)
    y = (rng.uniform(size=s.size) < s ** 2).astype(int)
    data = diagrams.prepare_smooth(pd.DataFrame({"a": s, "b": s ** 2}), y)
    for key, p in (("a", s), ("b", s ** 2)):
        np.testing.assert_allclose(data.curves[key]["calibrated"], smooth_ece.smoothed_curve(p, y)["calibrated"],
                                   equal_nan=True)
    sigma = smooth_ece.smooth_ece_bandwidth(s, y)
    assert f"A {sigma:.4f}" in data.caption({"a": "A"})
    fig = diagrams.plot(data, names={"a": "A"})
    assert _legend(fig)[0].startswith(f"A · smECE {smooth_ece.smooth_ece(s, y):.3f}")


def test_column_hook_computes_each_column_once_with_the_parameters():
    """prepare_smooth / prepare_corp call ``column`` once per column (the dashboard passes a cached one)."""
    calls = []

    def column(p, y, w, *, band, n_boot):
        calls.append((p.tolist(), w, band, n_boot))
        return diagrams.corp_column(p, y, w, band=band, n_boot=n_boot)

    frame = pd.DataFrame({"a": [0.1, 0.4, 0.8], "b": [0.2, 0.5, 0.9]})
    data = diagrams.prepare_corp(frame, [0, 1, 1], column=column, n_boot=7)
    assert calls == [([0.1, 0.4, 0.8], None, False, 7), ([0.2, 0.5, 0.9], None, False, 7)]
    assert list(data.curves) == ["a", "b"]
    assert data.decompositions["a"] == pytest.approx(corp.corp_decomposition(frame["a"], [0, 1, 1]))


# -- dispatch, kinds, the legend's room ----------------------------------------------------------------
def test_prepare_and_diagram_pick_the_kind_in_any_letter_case():
    frame = pd.DataFrame({"m": [0.1, 0.3, 0.6, 0.9]})
    y = [0, 0, 1, 1]
    assert isinstance(diagrams.prepare("corp", frame, y), diagrams.CorpData)
    assert isinstance(diagrams.prepare("Smooth", frame, y), diagrams.SmoothData)
    assert isinstance(diagrams.prepare("BINNED", frame, y, n_bins=2), diagrams.BinnedData)
    data = diagrams.prepare("corp", frame, y)
    fig, caption = data.figure(title=None), data.caption()
    assert caption == diagrams.CorpData.text and fig.layout.title.text is None
    with pytest.raises(SettingsError, match="kind must be one of"):
        diagrams.prepare("pie", frame, y)


def test_long_legends_get_room_below_the_plot():
    """Three smECE or MCB/DSC/UNC entries need 70 + 3 * 24 = 142 px under the plot: the figure grows by 22."""
    rng = np.random.default_rng(1)
    s = rng.uniform(size=300)
    y = (rng.uniform(size=s.size) < s).astype(int)
    three = pd.DataFrame({"a": s, "b": s ** 2, "c": np.sqrt(s)})
    for kind in ("smooth", "corp"):
        fig = diagrams.plot(diagrams.prepare(kind, three, y), height=400)
        assert (fig.layout.height, fig.layout.margin.b) == (422, 142)
        one = diagrams.plot(diagrams.prepare(kind, three[["a"]], y), height=400)
        assert one.layout.height == 400
