"""End-to-end: compare three methods, download the metrics CSV, reopen the shared URL elsewhere."""
from __future__ import annotations

import io

import pandas as pd
import pytest

pytestmark = pytest.mark.e2e

MAIN = '[data-testid="stMain"]'


CHIPS_JS = """(n) => Array.from(document.querySelectorAll('[data-testid="stMultiSelect"]'))
    .filter(b => b.textContent.includes('Calibrators'))
    .some(b => b.querySelectorAll('[data-tag]').length === n)"""


def _methods_chips(page, n: int, timeout_ms: int) -> list[str]:
    """The chosen methods' chips, once ``n`` of them are drawn (a page opened from a shared address restores
    its methods in a run that follows the first, so the first idle moment can come before them)."""
    page.wait_for_function(CHIPS_JS, arg=n, timeout=timeout_ms, polling=100)
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Calibrators").first
    return [t.get_attribute("aria-label") for t in box.locator("[data-tag]").all()]


def test_compare_three_download_and_share(app_page, chromium, ui):
    page = app_page
    page.goto(page.app_url + "/")
    page.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    assert _methods_chips(page, 3, ui.timeout_ms) == ["Platt scaling", "Histogram binning", "Isotonic regression"]

    # swap Platt for BBQ: three methods, one of them not a default
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Calibrators").first
    box.get_by_role("button", name="Remove Platt scaling").click()
    ui.wait_idle(page)
    box.locator("input").first.click()
    page.keyboard.type("BBQ")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    ui.wait_idle(page)
    assert _methods_chips(page, 3, ui.timeout_ms) == ["Histogram binning", "Isotonic regression", "BBQ"]
    ui.screenshot(page, "e2e-share-1-three-methods")

    # the metrics CSV holds one row per method plus the uncalibrated scores, with intervals
    with page.expect_download() as dl:
        page.get_by_role("button", name="Measures table (CSV)").click()
    csv = pd.read_csv(io.BytesIO(open(dl.value.path(), "rb").read()))
    assert csv["method"].tolist() == ["uncalibrated", "histogram", "isotonic", "bbq"]
    assert {"ECE_value", "ECE_low", "ECE_high", "AUC_value"} <= set(csv.columns)
    assert (csv["ECE_low"] <= csv["ECE_value"]).all() and (csv["ECE_value"] <= csv["ECE_high"]).all()

    # the address bar carries the view: a new browser context (a new session) sees the same
    url = page.url
    assert "methods=histogram%2Cisotonic%2Cbbq" in url or "methods=histogram,isotonic,bbq" in url
    first_rows = ui.table(page, 0)
    other = ui.new_context(chromium, viewport={"width": 1500, "height": 1100})
    try:
        page2 = other.new_page()
        page2.goto(url)
        page2.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
        ui.wait_idle(page2)
        assert _methods_chips(page2, 3, ui.timeout_ms) == ["Histogram binning", "Isotonic regression", "BBQ"]
        ui.wait_idle(page2)                       # the run that restored the methods has drawn its table
        second_rows = ui.table(page2, 0)
        assert list(second_rows) == list(first_rows)
        for method in first_rows:
            a, b = ui.same_columns(first_rows[method], second_rows[method])
            assert a == b, method
        ui.screenshot(page2, "e2e-share-2-reopened")
    finally:
        other.close()
