"""End-to-end: the "Groups & time" page on the drift sample, in Debian's headless Chromium.

Assumes app.py registers pages/segments.py at url_path "segments" and that
"drift" is a built-in sample (calibdash.samples.SAMPLES). Screenshots go to
test-results/e2e-segments-*.png.
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e

MAIN = '[data-testid="stMain"]'


def _open(page, ui) -> None:
    """The drift sample chosen by a link to the home page, then the page through the sidebar menu (a deep link
    to /segments goes through app.py's router first, which does not carry the link's parameters over)."""
    page.goto(page.app_url + "/?sample=drift")
    page.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
    # the link's sample is taken in a run after the first: wait until the sidebar names it
    page.wait_for_function("() => { const s = document.querySelector('[data-testid=\"stSidebar\"]');"
                           " return !!s && s.innerText.includes('drift'); }", timeout=ui.timeout_ms, polling=100)
    ui.wait_idle(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Groups & time").click()
    page.wait_for_function(
        "() => { const h = document.querySelector('[data-testid=\"stMain\"] h1');"
        " return h && h.textContent.includes('Groups & time'); }", timeout=ui.timeout_ms)
    ui.wait_idle(page)


def _assert_no_traceback(page, ui) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, \
        page.locator('[data-testid="stException"]').first.inner_text()
    assert page.locator(f"{MAIN} [data-testid='stAlertContentError']").count() == 0, \
        page.locator(f"{MAIN} [data-testid='stAlertContentError']").first.inner_text()
    assert not page.js_errors, page.js_errors
    log = ui.server_log_since(page)
    assert "Traceback" not in log and "page failed" not in log, log[-3000:]


def _plot(page, ui, key_class: str) -> list[dict]:
    """The plotly traces drawn in the element ``key_class`` (waits until the chart is drawn)."""
    page.locator(f"{key_class} .js-plotly-plot").wait_for(state="visible", timeout=ui.timeout_ms)
    data = page.evaluate(
        "(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot');"
        " if (!gd || !gd._fullData) return null;"
        " const arr = (a) => (a && typeof a.length === 'number' && typeof a !== 'string') ? Array.from(a) : a;"
        " return JSON.stringify(gd._fullData.map(t => ({name: t.name, mode: t.mode, type: t.type,"
        " x: arr(t.x), y: arr(t.y)}))); }", key_class)
    assert data, key_class
    return json.loads(data)


def test_by_group_view_shows_the_miscalibrated_segment(app_page, ui):
    """By group (the default view): the ECE forest, one reliability panel per segment, the table, and the
    calibrators that fix the groups; the partner segment stands out."""
    page = app_page
    _open(page, ui)
    forest = _plot(page, ui, ".st-key-segments-forest")
    ticks = json.loads(page.evaluate("() => JSON.stringify(Array.from("
                                     "document.querySelector('.st-key-segments-forest .js-plotly-plot')"
                                     ".layout.yaxis.ticktext))"))
    xs = dict(zip(ticks, forest[0]["x"]))              # groups top to bottom, ECE in the same order
    assert set(xs) == {"app", "partner", "store", "web"}
    assert max(xs, key=xs.get) == "partner"          # the segment the sample miscalibrates
    grid = _plot(page, ui, ".st-key-segments-grid")
    assert sum(1 for t in grid if t.get("name") == "this group") == 4
    fix = _plot(page, ui, ".st-key-segments-fix")
    assert [t["name"] for t in fix][:1] == ["uncalibrated"] and len(fix) == 3
    assert page.get_by_text("The least calibrated group is").count() == 1
    table = ui.table(page, 0)
    assert set(table) >= {"app", "partner", "store", "web"}
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-segments-groups")


def test_over_time_view_shows_drift_and_staleness(app_page, ui):
    """Over time: switching the view draws the per-month chart, the staleness chart and its matrix; the
    never-refitted calibrator ends far worse than the one refitted every month."""
    page = app_page
    _open(page, ui)
    _plot(page, ui, ".st-key-segments-forest")
    page.locator(".st-key-segments-view").get_by_role("radio", name="Over time").click()
    ui.wait_idle(page)
    drift = _plot(page, ui, ".st-key-segments-drift")
    ece = next(t for t in drift if t.get("name") == "ECE" and t.get("mode") == "lines+markers")
    assert len(ece["x"]) == 12 and ece["x"][0] == "2025-01"
    assert ece["y"][-1] > ece["y"][0] + 0.1          # the raw score drifts over the year
    stale = _plot(page, ui, ".st-key-segments-stale")
    never = next(t for t in stale if "never refitted" in t["name"])
    refit = next(t for t in stale if "refitted on the period before" in t["name"])
    assert never["y"][-1] > refit["y"][-1] + 0.05
    heat = _plot(page, ui, ".st-key-segments-stale_matrix")
    assert heat[0]["type"] == "heatmap"
    assert page.get_by_text("rows are grouped by month").count() >= 1
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-segments-time")
