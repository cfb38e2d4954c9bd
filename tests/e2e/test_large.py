"""End-to-end: a one-million-row upload in Debian's headless Chromium runs on score cells.

Compare and Explore must say how the rows were summarised, draw their charts,
fill the metrics table for every chosen method and show no traceback. The
time from the upload to a ready Compare page is measured by bench/bench_ui.py,
not asserted here.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from .test_browser import MAIN, _assert_no_traceback, _nav, _open, _upload_input

pytestmark = pytest.mark.e2e

N_ROWS = 1_000_000


def _write_big_csv(path, n: int = N_ROWS, seed: int = 4):
    """Click-like scores at 4 decimals (so about 10^4 distinct scores) and their outcomes."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(1.5, 12, n), 4)
    y = (rng.random(n) < np.clip(1.3 * s, 0, 1)).astype(np.int8)
    with open(path, "w") as fh:
        fh.write("score,label\n")
        np.savetxt(fh, np.column_stack([s, y]), fmt=["%.4f", "%d"], delimiter=",")
    return path


def test_million_row_upload_runs_on_score_cells(app_page, ui, tmp_path):
    page = app_page
    csv = _write_big_csv(tmp_path / "clicks_1m.csv")
    _open(page, ui, "/data")
    file_input = _upload_input(page, ui)
    file_input.set_input_files(str(csv))
    # The name shows in the uploader while the browser is still sending the file; "Rows read" means the server
    # has read it (switching page before that would drop the file).
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                 .some(m => m.innerText.includes('Rows read') && m.innerText.includes('1,000,000'))""",
        timeout=ui.timeout_ms)
    ui.wait_idle(page)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-large-1-data")

    cells_note = re.compile(r"1,000,000 rows summarised into [\d,]+ score cells")
    _nav(page, ui, "Compare")
    page.get_by_text(cells_note).first.wait_for(timeout=ui.timeout_ms)
    for key in (".st-key-compare-reliability", ".st-key-compare-map"):
        page.locator(f"{key} .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    table = ui.table(page, 0)
    assert list(table) == ["Uncalibrated", "Platt scaling", "Histogram binning", "Isotonic regression"]
    assert page.locator(f"{MAIN} .js-plotly-plot").count() >= 2
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-large-2-compare")

    _nav(page, ui, "Explore")
    page.get_by_text(cells_note).first.wait_for(timeout=ui.timeout_ms)
    page.locator(".st-key-explore-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    assert list(ui.table(page, 0)) == ["Uncalibrated", "Histogram binning"]
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-large-3-explore")
