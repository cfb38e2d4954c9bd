"""End-to-end: the diagram types of Compare's reliability chart in Debian's headless Chromium.

Screenshots: test-results/e2e-diagrams-<step>.png (repo root), to be looked at after a run.
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e

MAIN = '[data-testid="stMain"]'
REL = ".st-key-compare-reliability"


def _traces(page, ui) -> list:
    return json.loads(ui.plot_signature(page, REL) or "[]")


def _choose(page, ui, kind: str) -> None:
    before = ui.plot_signature(page, REL)
    page.locator(".st-key-compare-diagram").get_by_role("radio", name=kind, exact=True).click()
    ui.wait_plot_changed(page, REL, before)
    ui.wait_idle(page)


def _chart_shot(page, ui, name: str):
    """A screenshot of the reliability chart and its caption (the chart's column), and of the whole page."""
    chart = page.locator(REL)
    chart.scroll_into_view_if_needed()
    path = ui.results / f"e2e-diagrams-{name}-chart.png"
    chart.locator("xpath=..").screenshot(path=str(path))
    ui.screenshot(page, f"e2e-diagrams-{name}")
    return path


def test_compare_switches_to_corp_and_smooth_with_band(app_page, ui):
    page = app_page
    page.goto(page.app_url + "/")
    page.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    page.locator(f"{REL} .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    band = page.locator(".st-key-compare-band input")
    assert band.is_disabled()                                  # Binned has no band to toggle

    _choose(page, ui, "CORP")
    names = [t.get("name") or "" for t in _traces(page, ui)]
    assert sum(" · MCB " in n for n in names) == 4, names
    assert page.locator(MAIN).get_by_text("no binning choice", exact=False).count() >= 1
    _chart_shot(page, ui, "corp")

    _choose(page, ui, "Smooth")
    assert not any(t.get("fill") == "tonexty" for t in _traces(page, ui))
    before = ui.plot_signature(page, REL)
    page.locator(".st-key-compare-band").get_by_text("Band").click()
    ui.wait_plot_changed(page, REL, before)
    ui.wait_idle(page)
    traces = _traces(page, ui)
    fills = [t for t in traces if t.get("fill") == "tonexty"]
    assert len(fills) == 4 and all(t["fillcolor"].startswith("rgba(") for t in fills)
    assert sum(" · smECE " in (t.get("name") or "") for t in traces) == 4
    assert page.locator(MAIN).get_by_text("95% bootstrap band", exact=False).count() >= 1
    _chart_shot(page, ui, "smooth-band")

    _choose(page, ui, "CORP")                                   # the band stays on: the consistency band
    assert sum(t.get("fill") == "tonexty" for t in _traces(page, ui)) == 4
    assert page.locator(MAIN).get_by_text("90% consistency band", exact=False).count() >= 1
    _chart_shot(page, ui, "corp-band")
    _choose(page, ui, "Smooth")

    # the small multiples follow the choice
    page.get_by_role("tab", name="Side by side").click()
    page.locator(".st-key-compare-small-platt .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    small = json.loads(ui.plot_signature(page, ".st-key-compare-small-platt") or "[]")
    assert sum(t.get("fill") == "tonexty" for t in small) == 1
    ui.screenshot(page, "e2e-diagrams-smooth-band-multiples")

    assert page.locator('[data-testid="stException"]').count() == 0
    assert not page.js_errors, page.js_errors
    log = ui.server_log_since(page)
    assert "Traceback" not in log, log[-3000:]


def test_compare_draws_venn_abers_interval_on_the_map(app_page, ui):
    page = app_page
    page.goto(page.app_url + "/?methods=platt,venn_abers")
    page.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
    # the link's methods are restored in a run after the first: wait for their map, with Venn-Abers' band
    page.wait_for_function("() => { const gd = document.querySelector('.st-key-compare-map .js-plotly-plot');"
                           " return !!gd && !!gd.data && gd.data.some(t => t.legendgroup === 'venn_abers'); }",
                           timeout=ui.timeout_ms, polling=100)
    ui.wait_idle(page)
    traces = json.loads(ui.plot_signature(page, ".st-key-compare-map") or "[]")
    fills = [t for t in traces if t.get("fill") == "tonexty"]
    assert len(fills) == 1 and fills[0]["legendgroup"] == "venn_abers"
    page.locator(".st-key-compare-map").scroll_into_view_if_needed()
    page.locator(".st-key-compare-map").locator("xpath=..").screenshot(
        path=str(ui.results / "e2e-diagrams-venn-abers-map.png"))
    assert page.locator('[data-testid="stException"]').count() == 0
    assert not page.js_errors, page.js_errors
