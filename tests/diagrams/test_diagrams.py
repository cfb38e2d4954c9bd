"""The reliability chart of every page (pages/parts/diagrams.py) and the Venn-Abers band of the calibration map:
what each diagram type draws and says, checked against the library's functions and hand-computed values."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators, clinical
from calibdash.measures import corp
from calibdash.measures import smooth_ece
from calibdash.evaluation import cells as ccells
from calibdash.figures import calibration_map, color_of, map_curves, rgba
from pages.parts import diagrams

warnings.filterwarnings("ignore", message=".*No runtime found.*")


@pytest.fixture(scope="module")
def exact_cells():
    """2,000 rows over 40 distinct scores (so the score cells are exact), their cells' weighted rows, and a
    second (calibrated) column: (rows frame, labels, cells frame, cell labels, cell weights)."""
    rng = np.random.default_rng(7)
    grid = np.round(np.linspace(0.02, 0.98, 40), 4)
    s = rng.choice(grid, 2000)
    y = (rng.uniform(size=s.size) < s ** 2).astype(int)
    c = ccells.aggregate(s, y)
    assert len(c) == 40                                      # exact: one cell per distinct score
    cp, cy, cw = c.weighted_predictions(c.score)
    rows = pd.DataFrame({"uncalibrated": s, "squared": s ** 2})
    on_cells = pd.DataFrame({"uncalibrated": cp, "squared": cp ** 2})
    return rows, y, on_cells, cy, cw


def _xy(fig) -> list:
    """Every trace's name, fill and (x, y, error bar) arrays, to compare two figures numerically."""
    out = []
    for t in fig.data:
        x = None if t.x is None else np.asarray(t.x, dtype=float)
        y = None if t.y is None else np.asarray(t.y, dtype=float)
        err = getattr(t, "error_y", None)
        e = None if err is None or err.array is None else np.asarray(err.array, dtype=float)
        out.append((t.name, getattr(t, "fill", None), x, y, e))
    return out


# -- Binned: the auto rule -------------------------------------------------------------------------------
def test_auto_bins_follow_the_cube_root_rule_and_say_it():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=1728)
    y = (rng.uniform(size=s.size) < s).astype(int)
    assert diagrams.resolve_bins("auto", y) == (12, "auto: 12 bins (cube root of n = 1,728 rows)")
    assert diagrams.resolve_bins(20, y) == (20, "20 bins")
    fig, caption = diagrams.build(pd.DataFrame({"m": s}), y, kind="Binned", n_bins="auto", strategy="quantile")
    assert "12 bins (cube root of n = 1,728 rows)" in caption and "equal-count" in caption
    line = [t for t in fig.data if t.name == "m" and t.type == "scatter"][0]
    assert len(line.x) == 12                                # 12 equal-count bins of distinct scores
    # on weighted rows n is the weights' sum (the rows they stand for), not the number of weighted rows
    w = np.full(8, 125.0)
    assert diagrams.resolve_bins("auto", np.zeros(8), w) == (10, "auto: " + clinical.describe_rule(1000))


# -- CORP: the decomposition in the legend ------------------------------------------------------------------
def test_corp_legend_is_the_hand_computed_decomposition():
    """PAV of y = (0, 1, 0, 1) on p = (.1, .2, .3, .4) is (0, .5, .5, 1): Brier 1.1/4 = .275, recalibrated .125,
    climatology .25, so MCB .150, DSC .125, UNC .250."""
    p, y = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, 0, 1])
    fig, caption = diagrams.build(pd.DataFrame({"m": p}), y, kind="CORP", names={"m": "Model"})
    names = [t.name for t in fig.data if t.showlegend is not False and t.name != "perfect calibration"]
    assert names == ["Model · MCB 0.150 · DSC 0.125 · UNC 0.250"]
    assert "no binning choice" in caption and "PAV" in caption


def test_corp_legend_equals_corp_decomposition(exact_cells):
    rows, y, *_ = exact_cells
    fig = diagrams.draw(rows, y, kind="CORP")
    for key in rows:
        d = corp.corp_decomposition(rows[key], y)
        entry = next(t.name for t in fig.data if t.name and t.name.startswith(key + " · "))
        got = dict(re.findall(r"(MCB|DSC|UNC) ([0-9.]+)", entry))
        assert {k: float(v) for k, v in got.items()} == pytest.approx(
            {k: d[k] for k in ("MCB", "DSC", "UNC")}, abs=5e-4)
    assert d["MCB"] < corp.corp_decomposition(rows["uncalibrated"], y)["MCB"]     # the calibrated column


# -- Smooth: the bandwidth in the caption -----------------------------------------------------------------
def test_smooth_caption_gives_smooth_ece_bandwidth(exact_cells):
    rows, y, *_ = exact_cells
    fig, caption = diagrams.build(rows, y, kind="Smooth", names={"uncalibrated": "Raw", "squared": "Squared"})
    for key, name in (("uncalibrated", "Raw"), ("squared", "Squared")):
        sigma = float(re.search(rf"{name} ([0-9]+\.[0-9]+)", caption).group(1))
        assert sigma == pytest.approx(smooth_ece.smooth_ece_bandwidth(rows[key], y), abs=5e-5)
        curve = smooth_ece.smoothed_curve(rows[key], y)
        line = next(t for t in fig.data if t.name and t.name.startswith(name + " · smECE"))
        np.testing.assert_allclose(np.asarray(line.y, dtype=float), curve["calibrated"], equal_nan=True)
        assert f"smECE {smooth_ece.smooth_ece(rows[key], y):.3f}" in line.name
    assert not any(t.fill == "tonexty" for t in fig.data)                  # no band unless asked
    banded, caption = diagrams.build(rows, y, kind="Smooth", band=True, n_boot=20)
    fills = [t for t in banded.data if t.fill == "tonexty"]
    assert len(fills) == 2 and "95% bootstrap band (20 Poisson resamples" in caption
    band = smooth_ece.smoothed_curve_band(rows["squared"], y, n_boot=20)
    np.testing.assert_allclose(np.asarray(fills[1].y, dtype=float), band["lower"], equal_nan=True)


# -- score cells: the same chart as the rows ---------------------------------------------------------------
@pytest.mark.parametrize("kind,band", [("Binned", False), ("Smooth", False), ("Smooth", True), ("CORP", False),
                                       ("CORP", True)])
def test_weighted_cells_draw_the_rows_chart(exact_cells, kind, band):
    """On exact score cells (each row a cell's positives or negatives, weighted) every diagram, bands included
    (Poisson resamples of the rows the cells stand for, same seed), is the rows' diagram."""
    rows, y, on_cells, cy, cw = exact_cells
    kw = dict(kind=kind, band=band, n_bins="auto", strategy="quantile", n_boot=30)
    by_rows, cap_rows = diagrams.build(rows, y, **kw)
    by_cells, cap_cells = diagrams.build(on_cells, cy, cw, **kw)
    assert cap_rows == cap_cells
    a, b = _xy(by_rows), _xy(by_cells)
    assert [t[:2] for t in a] == [t[:2] for t in b]
    for (name, _, xa, ya, ea), (_, _, xb, yb, eb) in zip(a, b):
        np.testing.assert_allclose(xa, xb, err_msg=str(name), equal_nan=True)
        np.testing.assert_allclose(ya, yb, err_msg=str(name), atol=1e-12, equal_nan=True)
        if ea is not None:
            np.testing.assert_allclose(ea, eb, err_msg=str(name), atol=1e-12, equal_nan=True)
    assert any(getattr(t, "fill", None) == "tonexty" for t in by_cells.data) == band


def test_cache_key_is_the_full_content(exact_cells):
    """The band cache is keyed on every value: changing one label, or the weights, changes the key (and the
    chart), so a cached chart is never drawn for other data."""
    rows, y, on_cells, cy, cw = exact_cells
    p = rows["uncalibrated"].to_numpy()
    key = diagrams._content_key(p, y, None)
    y2 = y.copy()
    y2[1234] = 1 - y2[1234]
    assert diagrams._content_key(p, y2, None) != key
    assert diagrams._content_key(p, y, np.ones(y.size)) != key
    assert diagrams._content_key(p.copy(), y.copy(), None) == key
    first = diagrams.build(rows[["uncalibrated"]], y, kind="CORP")[0]
    second = diagrams.build(rows[["uncalibrated"]], y2, kind="CORP")[0]
    direct = corp.corp_curve(rows["uncalibrated"], y2)["calibrated"]
    np.testing.assert_allclose(np.asarray(second.data[1].y, dtype=float), direct)      # not the cached first
    assert not np.array_equal(np.asarray(first.data[1].y), np.asarray(second.data[1].y))


# -- the Venn-Abers band on the calibration map --------------------------------------------------------------
def test_calibration_map_fills_venn_abers_interval():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=400)
    y = (rng.uniform(size=s.size) < s ** 2).astype(int)
    models = {"venn_abers": calibrators.get("venn_abers").fit(s, y), "platt": calibrators.get("platt").fit(s, y)}
    bands = diagrams.interval_bands(models)
    assert list(bands) == ["venn_abers"]                     # only the Venn-Abers calibrator has a band
    band = bands["venn_abers"]
    p0, p1 = models["venn_abers"].predict_interval(band["score"])
    np.testing.assert_allclose(band["p0"], p0)
    np.testing.assert_allclose(band["p1"], p1)
    assert (band["p0"] <= band["p1"]).all() and (band["p1"] > band["p0"]).any()
    fig = calibration_map(map_curves(models, s), s, bands=bands, labels={"venn_abers": "Venn-Abers"})
    i = next(i for i, t in enumerate(fig.data) if getattr(t, "fill", None) == "tonexty")
    fill, upper = fig.data[i], fig.data[i - 1]              # tonexty fills down to the trace before it
    np.testing.assert_allclose(np.asarray(fill.y, dtype=float), band["p0"])
    np.testing.assert_allclose(np.asarray(upper.y, dtype=float), band["p1"])
    np.testing.assert_allclose(np.asarray(fill.x, dtype=float), band["score"])
    assert fill.fillcolor == rgba(color_of("venn_abers"), 0.2)            # the method's colour, light
    assert fill.legendgroup == upper.legendgroup == "venn_abers"
    curve = next(t for t in fig.data if t.name == "Venn-Abers")
    assert fig.data.index(curve) > i                       # the curve is drawn over its band
    assert sum(getattr(t, "fill", None) == "tonexty" for t in calibration_map(map_curves(models, s), s).data) == 0


def test_unknown_diagram_type_is_a_settings_error():
    from calibdash.core.errors import SettingsError
    with pytest.raises(SettingsError, match="kind must be one of"):
        diagrams.build(pd.DataFrame({"m": [0.2, 0.8]}), [0, 1], kind="Pie")
