"""End-to-end: the HTML report opened from disk in headless Chromium with the network off.

The report of a sample file is written to ``test-results/``, opened as a
``file://`` URL in a context with ``offline=True``: both plotly charts must
draw (plotly.js is inline), nothing may be fetched but the file itself, the
legend must still hide a method, and the page must fit an A4 page's printable
width when printed. Screenshots: ``test-results/e2e-report.png`` (screen) and
``e2e-report-print.png`` (print media at the printable width of A4).
"""
from __future__ import annotations

import re

import pytest

from calibdash import report
from calibdash.samples import sample_path

pytestmark = pytest.mark.e2e

METHODS = "platt,histogram,isotonic,bbq"
LABELS = ["Uncalibrated", "Platt scaling", "Histogram binning", "Isotonic regression", "BBQ"]
#: A4 (210 mm) less the report's 12 mm print margins, in CSS pixels (96 per inch).
A4_PRINT_WIDTH = round((210 - 2 * 12) / 25.4 * 96)

DRAWN_JS = """() => {
    const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
    return plots.length === 2 && plots.every(gd => gd.querySelector('svg.main-svg')
        && gd.querySelectorAll('.scatterlayer .trace').length >= 2);
}"""


@pytest.fixture(scope="module")
def report_file(results_dir):
    path = results_dir / "report-circles_svm.html"
    path.write_text(report.report_for_file(sample_path("circles_svm"), methods=METHODS), encoding="utf-8")
    return path


def test_report_opens_offline_draws_both_charts_and_prints_on_a4(chromium, report_file, ui):
    context = chromium.new_context(viewport={"width": 1400, "height": 900}, offline=True)
    try:
        page = context.new_page()
        errors, requests, failed = [], [], []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(report_file.as_uri())
        page.wait_for_function(DRAWN_JS, timeout=ui.timeout_ms, polling=100)

        assert errors == [] and failed == []
        assert requests == [report_file.as_uri()]               # the file only: nothing from a network
        assert page.title() == "Calibration report: circles_svm.csv"
        verdict = page.locator("#verdict").inner_text()
        assert "has the lowest ECE" in verdict
        # each chart draws every method: the diagonal plus one trace per method (reliability: and its bars)
        for div, least in (("#fig-reliability", 1 + len(LABELS)), ("#fig-calibration-map", len(LABELS))):
            names = page.evaluate(f"() => document.querySelector('{div}').data.map(t => t.name)")
            assert set(LABELS[1:]) <= set(names) and len(names) >= least, (div, names)
        legend = page.eval_on_selector_all("#fig-reliability .legend .traces", "els => els.map(e => e.textContent)")
        assert [t.strip() for t in legend] == ["perfect calibration", *LABELS]

        # drawn on screen no wider than A4's printable width, so a printout (which does not redraw them) fits
        screen_widths = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                      ".map(gd => gd.getBoundingClientRect().width)")
        assert len(screen_widths) == 2 and 400 < min(screen_widths) and max(screen_widths) <= A4_PRINT_WIDTH
        shot = ui.screenshot(page, "e2e-report")
        assert shot.stat().st_size > 50_000

        # still interactive offline: clicking "BBQ" in the legend hides its traces
        page.locator("#fig-reliability .legend .traces").filter(has_text="BBQ").click()
        page.wait_for_function("() => document.querySelector('#fig-reliability').data"
                               ".filter(t => t.name === 'BBQ').every(t => t.visible === 'legendonly')",
                               timeout=ui.timeout_ms)
        page.locator("#fig-reliability .legend .traces").filter(has_text="BBQ").click()
        page.wait_for_function("() => document.querySelector('#fig-reliability').data"
                               ".filter(t => t.name === 'BBQ').every(t => t.visible !== 'legendonly')",
                               timeout=ui.timeout_ms)

        # printed: nothing wider than A4's printable width, both charts whole
        page.set_viewport_size({"width": A4_PRINT_WIDTH, "height": 1100})
        page.emulate_media(media="print")
        page.wait_for_function("(w) => window.innerWidth === w", arg=A4_PRINT_WIDTH, timeout=ui.timeout_ms)
        page.evaluate(ui.frames_js)                # the new width is laid out (plotly redraws on resize)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= A4_PRINT_WIDTH
        widths = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                               ".map(gd => gd.getBoundingClientRect().right)")
        assert len(widths) == 2 and max(widths) <= A4_PRINT_WIDTH
        page.screenshot(path=str(ui.results / "e2e-report-print.png"), full_page=True)
        pdf = page.pdf(format="A4", print_background=True)
        pages = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))
        assert pdf.startswith(b"%PDF") and 1 <= pages <= 6, pages
    finally:
        context.close()
