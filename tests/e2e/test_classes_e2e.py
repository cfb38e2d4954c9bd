"""End-to-end: K-class files in Debian's headless Chromium, uploaded on the Data page and compared.

A K = 10 file (the CIFAR-10 LeNet-5 sample, uploaded as a user would) and a K = 100 file written here from
:func:`calibdash.synthetic.gaussian_classes.gaussian_classes` (so the test never depends on shared data). Each is
read on the Data page, then Compare draws its measures table, the confidence diagram and the class-wise
small multiples. Full-page screenshots go to test-results/ (``e2e-classes-*.png``).
"""
from __future__ import annotations

import re

import pytest

from calibdash import calibrators
from calibdash import samples
from calibdash.synthetic.gaussian_classes import gaussian_classes
from pages.parts.diagrams import SHOWN_CLASSES
from pages.parts.problem import CLASSES

from .test_browser import SIDEBAR, _assert_no_traceback, _metric, _nav, _open, _open_combobox, _upload_input

pytestmark = pytest.mark.e2e
#: The K = 100 file: 100 Gaussian classes on a circle of radius 30 (neighbours about 1.9 apart), reported
#: over-confidently (temperature 2), 4,000 rows (40 per class).
K100 = dict(classes=100, radius=30.0, temperature=2.0)
K100_ROWS, K100_SEED = 4_000, 100


def _upload(page, ui, path, k: int) -> None:
    """On the Data page: Upload, send ``path``, wait until the page reports K = ``k``."""
    _open(page, ui, "/data")
    _upload_input(page, ui).set_input_files(str(path))
    page.wait_for_function(
        """(k) => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                 .some(m => m.innerText.includes('Classes (K)') && m.innerText.includes(String(k)))""",
        arg=k, timeout=ui.timeout_ms)
    ui.wait_idle(page)


def _compare(page, ui) -> dict:
    """Go to Compare (sidebar), wait for the measures table and the confidence diagram; the table's rows."""
    _nav(page, ui, "Compare")
    page.locator(".st-key-compare-classes-confidence .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    return ui.table(page, 0)


def _classwise(page, ui) -> int:
    """Open the Class-wise tab and wait for its figure; the number of panels (subplot titles) drawn."""
    page.get_by_role("tab", name="Class-wise").click()
    chart = page.locator(".st-key-compare-classes-classwise .js-plotly-plot")
    chart.wait_for(state="visible", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    return page.evaluate("""() => {
        const gd = document.querySelector('.st-key-compare-classes-classwise .js-plotly-plot');
        return (gd.layout.annotations || []).filter(a => / · ECE /.test(a.text)).length; }""")


def test_k10_and_k100_uploads_compare_in_the_browser(app_page, ui, tmp_path):
    page = app_page
    methods = CLASSES.compare_defaults(calibrators.available("classes"), 10)
    want_rows = ["Uncalibrated"] + [calibrators.get(m, "classes").label for m in methods]
    # at K = 100 the full K x K maps are not fitted unless the user asks (chosen or not)
    held = [m for m in methods if getattr(calibrators.get_class(m, "classes"), "matrix", None) == "full"]
    want_rows_100 = [r for r in want_rows if r not in {calibrators.get(m, "classes").label for m in held}]

    # K = 10: the CIFAR-10 sample file, uploaded
    _upload(page, ui, samples.sample_path("cifar10_lenet5"), 10)
    assert _metric(page, "Rows used") == "10,000"
    assert "10 classes" in page.locator(SIDEBAR).inner_text()
    page.locator(".st-key-data-classes-confidence .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-1-data-k10")
    rows = _compare(page, ui)
    assert list(rows) == want_rows
    assert re.fullmatch(r"0\.\d{4} \[0\.\d{3}, 0\.\d{3}\]", rows["Uncalibrated"]["ECE"])
    assert page.get_by_text(re.compile(r"K = 10")).count() >= 1
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-2-compare-k10")
    assert _classwise(page, ui) == SHOWN_CLASSES            # the first 8 of 10, worst first
    ui.screenshot(page, "e2e-classes-3-classwise-k10")

    # K = 100: a synthetic file written here
    path = tmp_path / "hundred_classes.csv"
    gaussian_classes(**K100).draw(K100_ROWS, K100_SEED).frame[
        ["label"] + [f"p_{k}" for k in range(100)]].to_csv(path, index=False, float_format="%.6g")
    _upload(page, ui, path, 100)
    assert _metric(page, "Rows used") == f"{K100_ROWS:,}"
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-4-data-k100")
    rows = _compare(page, ui)
    assert held and list(rows) == want_rows_100
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-5-compare-k100")
    assert _classwise(page, ui) == SHOWN_CLASSES
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-6-classwise-k100")


def test_k3_sample_draws_the_simplex_map(app_page, ui):
    """The K = 3 sample from the menu: Compare adds the calibration map on the simplex of a chosen method."""
    page = app_page
    _open(page, ui, "/data")
    _open_combobox(page, ui, ".st-key-sample")       # a bare click may not open it (react-aria, scrolling)
    page.get_by_role("option", name=samples.CLASS_SAMPLES["animals_3class"].title).click()
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                 .some(m => m.innerText.includes('Classes (K)') && m.innerText.includes('3'))""",
        timeout=ui.timeout_ms)
    ui.wait_idle(page)
    _compare(page, ui)
    page.locator(".st-key-compare-classes-simplex_map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-classes-7-compare-k3-simplex")
