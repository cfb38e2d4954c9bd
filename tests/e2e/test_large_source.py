"""End-to-end: the "Large data" source in a real headless Chromium, with an operator's data root.

A server started with CALIBDASH_DATA_ROOT offers a third source on the Data page; a glob under the root is
aggregated by DuckDB (in the server's background thread), the sidebar says how many rows became how many cells, and
Compare draws its charts and metrics on them. A path outside the root is refused with a message.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from .conftest import RESULTS, start_streamlit, stop_process
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


def test_a_glob_under_the_root_is_aggregated_and_compared(page, ui):
    _choose_large(page, ui, "part-*.parquet")
    page.get_by_role("button", name="Aggregate").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stSidebarUserContent\"]').innerText"
        ".includes('600,000 rows summarised into')", timeout=ui.timeout_ms)
    ui.wait_idle(page)
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
