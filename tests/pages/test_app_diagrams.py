"""AppTest of the reliability chart's diagram types on every page, and of the Venn-Abers band on the map."""
from __future__ import annotations

import pytest

from calibdash.diagrams import common as clinical
from tests.conftest import APPTEST_TIMEOUT
from tests.pages.test_app import (COMPARE, DATA, EXPLORE, _run_entry_point_every_time, assert_clean, charts,  # noqa: F401
                      go, plotly_array, start)

PREFIX = {DATA: "data", EXPLORE: "explore", COMPARE: "compare"}
#: How each diagram type's caption begins.
CAPTION = {"Binned": "Binned reliability diagram", "Smooth": "Smoothed reliability diagram (SmoothECE",
           "CORP": "CORP reliability diagram (Dimitriadis"}


def _caption(at, kind: str) -> str:
    found = [c.value for c in at.main.caption if c.value.startswith(CAPTION[kind])]
    assert found, [c.value for c in at.main.caption]
    return found[0]


def _fills(fig: dict) -> list:
    return [t for t in fig["data"] if t.get("fill") == "tonexty"]


@pytest.fixture(scope="module")
def sessions():
    """One session per page, reused by the parametrised cases (each case sets the type it checks)."""
    return {}


def _session(sessions, page):
    if page not in sessions:
        sessions[page] = start(page)
    return sessions[page]


@pytest.mark.parametrize("page", [DATA, EXPLORE, COMPARE])
@pytest.mark.parametrize("kind", ["Smooth", "CORP", "Binned"])
def test_each_page_draws_each_diagram(sessions, page, kind):
    at = _session(sessions, page)
    prefix = PREFIX[page]
    at.segmented_control(key=f"{prefix}.diagram").set_value(kind).run()
    assert_clean(at)
    assert at.toggle(key=f"{prefix}.band").disabled == (kind == "Binned")
    assert at.select_slider(key=f"{prefix}.n_bins").disabled == (kind != "Binned")
    fig = charts(at)[f"{prefix}.reliability"]
    names = [t.get("name") or "" for t in fig["data"]]
    caption = _caption(at, kind)
    if kind == "CORP":
        assert any(" · MCB " in n and " · DSC " in n and " · UNC " in n for n in names), names
        assert "no binning choice" in caption
    elif kind == "Smooth":
        assert any(" · smECE " in n for n in names), names
        assert "bandwidth σ" in caption
        assert fig["layout"]["yaxis2"]["title"]["text"] == "density"
    else:
        assert "10 bins" in caption and any(t.get("type") == "bar" for t in fig["data"])
    if page == COMPARE:                        # the small multiples follow the same choice
        small = {k: f for k, f in charts(at).items() if k.startswith("compare.small.")}
        assert len(small) == 4
        for f in small.values():
            assert f["layout"]["title"]["text"] in ("Uncalibrated", "Platt scaling", "Histogram binning",
                                                    "Isotonic regression")
            if kind == "CORP":
                assert any(" · MCB " in (t.get("name") or "") for t in f["data"])


@pytest.mark.parametrize("page", [DATA, COMPARE])
def test_band_toggle_adds_a_shaded_band(page):
    at = start(page)
    prefix = PREFIX[page]
    at.segmented_control(key=f"{prefix}.diagram").set_value("Smooth").run()
    assert not _fills(charts(at)[f"{prefix}.reliability"])
    at.toggle(key=f"{prefix}.band").set_value(True).run()
    assert_clean(at)
    fig = charts(at)[f"{prefix}.reliability"]
    n_curves = 1 if page == DATA else 4
    assert len(_fills(fig)) == n_curves
    assert "95% bootstrap band" in _caption(at, "Smooth")
    at.segmented_control(key=f"{prefix}.diagram").set_value("CORP").run()
    assert_clean(at)
    assert len(_fills(charts(at)[f"{prefix}.reliability"])) == n_curves
    assert "90% consistency band" in _caption(at, "CORP")
    if page == COMPARE:
        assert all(len(_fills(f)) == 1 for k, f in charts(at).items() if k.startswith("compare.small."))


def test_auto_bins_say_the_rule_and_count_and_choices_persist():
    at = start(COMPARE)
    at.select_slider(key="compare.n_bins").set_value("auto").run()
    assert_clean(at)
    caption = _caption(at, "Binned")
    n = int(caption.split("n = ")[1].split(" rows")[0].replace(",", ""))
    assert clinical.describe_rule(n) in caption
    bins = clinical.auto_bin_count(n)
    line = next(t for t in charts(at)["compare.reliability"]["data"] if t.get("name") == "Uncalibrated")
    assert plotly_array(line["x"]).size == bins                     # one point per (equal-count) bin
    at.segmented_control(key="compare.diagram").set_value("CORP").run()
    go(at, DATA)
    assert at.segmented_control(key="data.diagram").value == "Binned"        # each page has its own choice
    go(at, COMPARE)
    assert_clean(at)
    assert at.segmented_control(key="compare.diagram").value == "CORP"      # kept for the session
    assert at.select_slider(key="compare.n_bins").value == "auto"


def test_compare_with_venn_abers_shades_its_interval():
    at = start(COMPARE)
    at.multiselect(key="compare.methods").set_value(["platt", "venn_abers"]).run()
    assert_clean(at)
    fig = charts(at)["compare.map"]
    fills = _fills(fig)
    assert len(fills) == 1 and fills[0]["legendgroup"] == "venn_abers"
    assert fills[0]["fillcolor"].startswith("rgba(170,68,153,")              # Venn-Abers' purple, transparent
    assert any("Venn-Abers' interval [p0, p1]" in c.value for c in at.main.caption)
    at.segmented_control(key="compare.diagram").set_value("CORP").run()
    assert_clean(at)
    at.multiselect(key="compare.methods").set_value(["platt"]).run()
    assert not _fills(charts(at)["compare.map"])


def test_explore_venn_abers_shades_its_interval():
    at = start(EXPLORE)
    at.selectbox(key="explore.method").set_value("venn_abers").run()
    assert_clean(at)
    assert len(_fills(charts(at)["explore.map"])) == 1


def test_models_side_by_side_follow_the_diagram_type():
    """With two score columns, the raw reliability of each model is drawn as the chosen diagram (CORP: one chart
    per model, with MCB in its legend)."""
    from streamlit.testing.v1 import AppTest
    from tests.conftest import REPO

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.run()
    at.switch_page("pages/compare.py").run()
    at.multiselect(key=[m.key for m in at.multiselect if m.label == "Models (score columns)"][0]).set_value(
        ["linear_svm", "quadratic_svm"]).run()
    at.segmented_control(key="compare.diagram").set_value("CORP").run()
    assert not at.exception
    import json

    charts = at.get("plotly_chart")
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in charts]
    assert any("Raw reliability of linear_svm" in t for t in titles)
    assert any("Raw reliability of quadratic_svm" in t for t in titles)
    legend = " ".join(tr.get("name", "") for c in charts for tr in json.loads(c.proto.spec)["data"]
                      if "Raw reliability of" in json.loads(c.proto.spec)["layout"].get("title", {}).get("text", ""))
    assert "MCB" in legend
