"""End-to-end: the "Large data" source in a real headless Chromium, with an operator's data root.

A server started with CALIBDASH_DATA_ROOT offers a third source on the Data page; a glob under the root is
aggregated by DuckDB (in the server's background thread), the sidebar says how many rows became how many cells, and
Compare draws its charts and metrics on them; Groups & time runs its keyed aggregations as jobs too (by group and
over time, the drift sample as two Parquet files; screenshots copied to pages/screenshots/). A path outside the
root is refused with a message.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest

from calibdash.samples.drifting_score import make_drift

from .conftest import REPO, RESULTS, start_streamlit, stop_process
from .test_browser import MAIN, _assert_no_traceback, _nav, _open

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def large_server(tmp_path_factory, chromium):
    root = tmp_path_factory.mktemp("root")
    rng = np.random.default_rng(2)
    for i in range(3):
        s = rng.beta(2, 5, 200_000).astype("float32")
        y = (rng.random(s.size) < np.clip(1.3 * s, 0, 1)).astype("int8")
        pd.DataFrame({"pctr": s, "click": y}).to_parquet(root / f"part-{i}.parquet", index=False)
    drift = make_drift()                                  # 20,000 rows: date, segment, score, label
    for i, rows in enumerate(np.array_split(np.arange(len(drift)), 2)):
        drift.iloc[rows].to_parquet(root / f"drift-{i}.parquet", index=False)
    log = RESULTS / "streamlit-large-source.log"
    proc, url = start_streamlit(log, env={"CALIBDASH_DATA_ROOT": str(root)})
    try:
        yield url, log
    finally:
        stop_process(proc)


@pytest.fixture
def page(chromium, large_server, ui):
    url, log = large_server
    context = ui.new_context(chromium)
    p = context.new_page()
    p.app_url = url
    p.server_log = (log, log.stat().st_size if log.exists() else 0)
    p.js_errors = []
    p.on("pageerror", lambda exc: p.js_errors.append(str(exc)))
    try:
        yield p
    finally:
        context.close()


def _choose_large(page, ui, path: str) -> None:
    _open(page, ui, "/data")
    page.locator(".st-key-source").get_by_role("radio", name="Large data").click()
    ui.wait_idle(page)
    box = page.get_by_role("textbox", name="Path or glob under the data root")
    box.fill(path)
    box.press("Enter")
    ui.wait_idle(page)


def _aggregate(page, ui, path: str, rows: str) -> None:
    """Choose the glob ``path``, press Aggregate and wait until the sidebar says its ``rows`` were summarised."""
    _choose_large(page, ui, path)
    page.get_by_role("button", name="Aggregate").click()
    page.wait_for_function(
        "(rows) => document.querySelector('[data-testid=\"stSidebarUserContent\"]').innerText"
        ".includes(rows + ' rows summarised into')", arg=rows, timeout=ui.timeout_ms)
    ui.wait_idle(page)


def test_a_glob_under_the_root_is_aggregated_and_compared(page, ui):
    _aggregate(page, ui, "part-*.parquet", "600,000")
    ui.screenshot(page, "e2e-large-source-data")
    _nav(page, ui, "Compare")
    page.wait_for_selector(".st-key-compare-reliability .js-plotly-plot", timeout=ui.timeout_ms)
    text = page.locator(MAIN).inner_text()
    assert re.search(r"600,000 rows summarised into [\d,]+ score cells", text)
    assert "Isotonic regression" in text and "has the lowest ECE" in text
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-large-source-compare")


def test_a_path_outside_the_root_is_refused(page, ui):
    _choose_large(page, ui, "../../../etc/passwd")
    err = page.locator(f"{MAIN} [data-testid='stAlertContentError']")
    err.first.wait_for(timeout=ui.timeout_ms)
    assert "is outside the data root" in err.first.inner_text()
    assert page.locator(f"{MAIN} [data-testid='stMetric']").count() == 0          # nothing was read
    _assert_no_traceback(page, ui)


def _plot_data(page, ui, key_class: str) -> list[dict]:
    """The traces drawn in the element ``key_class``: name, mode and y (waits until the chart is drawn)."""
    page.locator(f"{key_class} .js-plotly-plot").wait_for(state="visible", timeout=ui.timeout_ms)
    return page.evaluate("(sel) => Array.from(document.querySelector(sel + ' .js-plotly-plot')._fullData)"
                         ".map(t => ({name: t.name, mode: t.mode, y: t.y ? Array.from(t.y) : null}))", key_class)


def test_groups_and_time_on_a_large_source(page, ui):
    """Groups & time on a large source: the keyed aggregation runs as a job, the partner segment stands out in
    the forest and the table, and over time the calibrator fitted in January goes stale while the refitted one
    does not (the drift sample's story, from keyed cells DuckDB made)."""
    _aggregate(page, ui, "drift-*.parquet", "20,000")
    page.locator('[data-testid="stSidebarNav"] a', has_text="Groups & time").click()
    page.locator(".st-key-segments-forest .js-plotly-plot").wait_for(state="visible", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    text = page.locator(MAIN).inner_text()
    assert "does not work on a large source" not in text
    assert "The least calibrated group is partner" in text
    assert re.search(r"python -m calibdash groups '?drift-\*\.parquet'? --engine duckdb", text)
    table = ui.table(page, 0)
    assert set(table) >= {"app", "partner", "store", "web"}
    _assert_no_traceback(page, ui)
    shot = ui.screenshot(page, "e2e-segments-large-groups")
    shutil.copy(shot, REPO / "pages" / "screenshots" / "segments_large_groups.png")

    page.locator(".st-key-segments-view").get_by_role("radio", name="Over time").click()
    page.locator(".st-key-segments-stale .js-plotly-plot").wait_for(state="visible", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    drift = _plot_data(page, ui, ".st-key-segments-drift")
    ece = next(t for t in drift if t["name"] == "ECE" and t["mode"] == "lines+markers")
    assert len(ece["y"]) == 12 and ece["y"][-1] > ece["y"][0] + 0.1      # the raw score drifts over the year
    stale = _plot_data(page, ui, ".st-key-segments-stale")
    never = next(t for t in stale if "never refitted" in t["name"])
    refit = next(t for t in stale if "refitted on the period before" in t["name"])
    assert 0.15 < never["y"][-1] < 0.21 and max(refit["y"]) <= 0.04
    _assert_no_traceback(page, ui)
    shot = ui.screenshot(page, "e2e-segments-large-time")
    shutil.copy(shot, REPO / "pages" / "screenshots" / "segments_large_time.png")
