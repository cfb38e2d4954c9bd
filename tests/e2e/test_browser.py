"""End-to-end: the dashboard in Debian's headless Chromium, driven like a user would.

Every step saves a full-page screenshot under test-results/ (repo root), named
``e2e-<test>-<step>.png``, to be looked at after a run.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

MAIN = '[data-testid="stMain"]'
SIDEBAR = '[data-testid="stSidebarUserContent"]'
PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot, .js-plotly-plot'


def _open(page, ui, path: str = "/") -> None:
    page.goto(page.app_url + path)
    page.wait_for_selector(f"{MAIN} h1", timeout=ui.timeout_ms)
    ui.wait_idle(page)


def _assert_no_traceback(page, ui) -> None:
    """No exception box in the page, no JavaScript error, no traceback in the server log."""
    assert page.locator('[data-testid="stException"]').count() == 0, \
        page.locator('[data-testid="stException"]').first.inner_text()
    assert not page.js_errors, page.js_errors
    log = ui.server_log_since(page)
    assert "Traceback" not in log and "page failed" not in log, log[-3000:]


def _nav(page, ui, label: str) -> None:
    """Go to another page through the sidebar navigation (same session)."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=label).click()
    page.wait_for_function(
        "(t) => { const h = document.querySelector('[data-testid=\"stMain\"] h1'); return h && h.textContent.includes(t); }",
        arg={"Data": "Data", "Explore": "Explore a calibrator", "Compare": "Compare calibrators"}[label],
        timeout=ui.timeout_ms)
    ui.wait_idle(page)


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label)
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _upload_input(page, ui):
    """On the Data page: choose Upload; returns the file input once it is there and the app is idle."""
    page.locator(".st-key-source").get_by_role("radio", name="Upload").click()
    file_input = page.locator('[data-testid="stFileUploaderDropzoneInput"], input[type="file"]').first
    file_input.wait_for(state="attached", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    return file_input


def _write_scores_csv(path, n: int = 300, n_missing: int = 7, seed: int = 3):
    """n rows of score/label/age; the first n_missing rows have no score."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < s ** 1.5).astype(int)
    age = rng.integers(18, 80, n)
    lines = ["age,score,label"]
    for i in range(n):
        lines.append(f"{age[i]},{'' if i < n_missing else f'{s[i]:.5f}'},{y[i]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_home_shows_plotly_chart(app_page, ui):
    """/ is Compare: a drawn plotly chart with traces, the metrics table, the data set in the sidebar."""
    page = app_page
    _open(page, ui, "/")
    chart = page.locator(PLOT).first
    chart.wait_for(state="visible", timeout=ui.timeout_ms)
    assert page.locator(f"{MAIN} h1").first.inner_text().startswith("Compare calibrators")
    n_traces = page.evaluate("() => document.querySelector('.js-plotly-plot').data.length")
    assert n_traces >= 2
    # plotly really drew: an SVG with at least one trace path
    assert page.locator(".js-plotly-plot .main-svg .scatterlayer .trace").count() >= 1
    for key in (".st-key-compare-reliability", ".st-key-compare-map"):
        assert page.locator(f"{key} .js-plotly-plot").count() == 1, key
    metrics = ui.table(page, 0)
    assert list(metrics) == ["Uncalibrated", "Platt scaling", "Histogram binning", "Isotonic regression"]
    assert "AUC" in metrics["Uncalibrated"]
    assert "circles_svm.csv" in page.locator(SIDEBAR).inner_text()
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-home-compare")


def test_data_and_explore_pages_render(app_page, ui):
    """Data and Explore open by URL with the default sample: charts, metrics, no traceback."""
    page = app_page
    _open(page, ui, "/data")
    page.locator(".st-key-data-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    assert _metric(page, "Rows read") == "2,000"
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-pages-data")
    _open(page, ui, "/explore")
    page.locator(".st-key-explore-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    page.locator(".st-key-explore-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    assert list(ui.table(page, 0)) == ["Uncalibrated", "Histogram binning"]
    assert "circles_svm.csv" in page.locator(SIDEBAR).inner_text()
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-pages-explore")


def test_upload_csv_shows_validation_report(app_page, ui, tmp_path):
    """Data page -> Upload -> a 300-row CSV: the report counts it, and Explore/Compare then use it."""
    page = app_page
    csv = _write_scores_csv(tmp_path / "my_scores.csv", n=300, n_missing=7)
    _open(page, ui, "/data")
    ui.screenshot(page, "e2e-upload-1-data-sample")
    file_input = _upload_input(page, ui)
    ui.screenshot(page, "e2e-upload-2-upload-chosen")
    file_input.set_input_files(str(csv))
    page.get_by_text("my_scores.csv").first.wait_for(timeout=ui.timeout_ms)
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                 .some(m => m.innerText.includes('Rows read') && m.innerText.includes('300'))""",
        timeout=ui.timeout_ms)
    ui.wait_idle(page)
    assert _metric(page, "Rows read") == "300"
    assert _metric(page, "Rows used") == "293"
    assert _metric(page, "Rows dropped") == "7"
    assert page.get_by_text(re.compile(r"7 rows dropped: missing or non-finite score")).count() >= 1
    assert page.get_by_text(re.compile(r"Using\s+my_scores\.csv")).count() >= 1
    sidebar = page.locator(SIDEBAR).inner_text()
    assert "my_scores.csv" in sidebar and "293 rows" in sidebar
    page.locator(".st-key-data-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-upload-3-report")

    # the upload stays the active data on the other pages of the session
    _nav(page, ui, "Explore")
    assert page.get_by_text(re.compile(r"my_scores\.csv · score")).count() >= 1
    page.locator(".st-key-explore-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-upload-4-explore")
    _nav(page, ui, "Compare")
    assert page.get_by_text(re.compile(r"my_scores\.csv · score")).count() >= 1
    page.locator(".st-key-compare-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-upload-5-compare")


def test_bad_upload_shows_error_not_traceback(app_page, ui, tmp_path):
    """A UTF-16 CSV without a byte-order mark (which cannot be told from binary) is refused with a readable
    st.error on the Data page and on Compare; with the mark, as Excel writes it, it is read."""
    page = app_page
    bad = tmp_path / "excel_export.csv"
    bad.write_bytes(("score,label\n" + "0.2,0\n0.8,1\n" * 30).encode("utf-16-le"))
    _open(page, ui, "/data")
    file_input = _upload_input(page, ui)
    file_input.set_input_files(str(bad))
    err = page.locator(f"{MAIN} [data-testid='stAlertContentError']")
    err.first.wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    assert "UTF-16" in err.first.inner_text()
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-bad-upload-data")
    _nav(page, ui, "Compare")
    err = page.locator(f"{MAIN} [data-testid='stAlertContentError']")
    err.first.wait_for(timeout=ui.timeout_ms)
    assert "UTF-16" in err.first.inner_text()
    assert page.locator(f"{MAIN} .js-plotly-plot").count() == 0
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-bad-upload-compare")


def _press_right(page, ui, key_class: str) -> tuple[str, str]:
    """Focus the thumb of the slider in ``key_class`` and press ArrowRight; returns (value before, after)."""
    thumb = page.locator(key_class).get_by_role("slider")
    before = thumb.get_attribute("aria-valuetext")
    thumb.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([sel, v]) => { const t = document.querySelector(sel + ' input[type=range]'); return t && t.getAttribute('aria-valuetext') !== v; }",
        arg=[key_class, before], timeout=ui.timeout_ms)
    return before, thumb.get_attribute("aria-valuetext")


def test_explore_slider_redraws_chart(app_page, ui):
    """Explore: ArrowRight on the histogram's B slider refits (chart, map and metrics change);
    ArrowRight on the diagram's bin slider redraws the reliability diagram only."""
    page = app_page
    _open(page, ui, "/explore")
    rel, cmap = ".st-key-explore-reliability", ".st-key-explore-map"
    page.locator(f"{rel} .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    page.locator(f"{cmap} .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    ui.wait_idle(page)
    ui.screenshot(page, "e2e-explore-1-before")
    rel0, map0, table0 = ui.plot_signature(page, rel), ui.plot_signature(page, cmap), ui.table(page, 0)
    assert rel0 and map0 and table0

    before, after = _press_right(page, ui, ".st-key-hp-histogram-n_bins")
    assert (before, after) == ("10", "11")
    ui.wait_plot_changed(page, rel, rel0)
    ui.wait_plot_changed(page, cmap, map0)
    ui.wait_idle(page)
    table1 = ui.table(page, 0)
    hist0, hist1 = ui.same_columns(table0["Histogram binning"], table1["Histogram binning"])
    assert hist0 != hist1
    # the uncalibrated row does not depend on the calibrator
    unc0, unc1 = ui.same_columns(table0["Uncalibrated"], table1["Uncalibrated"])
    assert unc0 == unc1
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-explore-2-after-B")

    rel1, map1 = ui.plot_signature(page, rel), ui.plot_signature(page, cmap)
    before, after = _press_right(page, ui, ".st-key-explore-n_bins")
    assert (before, after) == ("10", "15")
    ui.wait_plot_changed(page, rel, rel1)
    ui.wait_idle(page)
    assert ui.plot_signature(page, cmap) == map1
    table2 = ui.table(page, 0)
    for row in table1:
        a, b = ui.same_columns(table1[row], table2[row])
        assert a == b
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-explore-3-after-diagram-bins")


def _numbers(row: dict[str, str]) -> dict[str, float]:
    """A metrics row as numbers; Compare's cells read "value [low, high]", Explore's the bare value."""
    return {k: float(v.split(" [")[0]) for k, v in row.items()}


def _assert_same_metrics(a: dict[str, str], b: dict[str, str]) -> None:
    """Same values up to Compare's 4-decimal rounding, on the columns both grids rendered."""
    a, b = _common_columns(_numbers(a), _numbers(b))
    assert a.keys() == b.keys() and a
    for k in a:
        assert abs(a[k] - b[k]) <= 6e-5, (k, a[k], b[k])


def _common_columns(a: dict, b: dict) -> tuple[dict, dict]:
    common = sorted(set(a) & set(b))
    return {k: a[k] for k in common}, {k: b[k] for k in common}


def test_hyperparameter_holds_between_compare_and_explore(app_page, ui):
    """Hyperparameters are shared, on the first run after a page switch (persist_state="session"):
    Compare -> Explore fits with Compare's B = 10; B = 5 set on Explore is then what Compare fits with."""
    page = app_page
    _open(page, ui, "/")
    page.locator(".st-key-compare-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    compare_row = ui.table(page, 0)["Histogram binning"]

    _nav(page, ui, "Explore")
    page.locator(".st-key-explore-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    thumb = page.locator(".st-key-hp-histogram-n_bins").get_by_role("slider")
    assert thumb.get_attribute("aria-valuetext") == "10"
    assert page.locator(".st-key-hp-histogram-bin_size").get_by_role("slider").get_attribute("aria-valuetext") == "100"
    _assert_same_metrics(ui.table(page, 0)["Histogram binning"], compare_row)

    thumb.focus()
    for _ in range(5):                      # grid 2..100: 10 -> 9 -> 8 -> 7 -> 6 -> 5
        before = thumb.get_attribute("aria-valuetext")
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            "(v) => document.querySelector('.st-key-hp-histogram-n_bins input[type=range]')"
            ".getAttribute('aria-valuetext') !== v", arg=before, timeout=ui.timeout_ms)
        ui.wait_idle(page)
    assert thumb.get_attribute("aria-valuetext") == "5"
    explore_row = ui.table(page, 0)["Histogram binning"]
    assert _numbers(explore_row) != _common_columns(_numbers(compare_row), _numbers(explore_row))[0]

    _nav(page, ui, "Compare")
    page.locator(".st-key-compare-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    _assert_same_metrics(ui.table(page, 0)["Histogram binning"], explore_row)
    page.locator('[data-testid="stExpander"] summary', has_text="Hyperparameters").click()
    slider = page.locator(".st-key-hp-histogram-n_bins").get_by_role("slider")
    slider.wait_for(timeout=ui.timeout_ms)
    assert slider.get_attribute("aria-valuetext") == "5"
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-persist-compare-hyperparameters")


def test_deep_link_as_first_request_runs_the_entry_point(chromium, results_dir, ui):
    """On a fresh server, a first request for /explore (and the sessions after it) still gets app.py:
    its navigation menu, wide layout and sidebar summary, then the Explore page.

    Regression: with a pages/ folder next to app.py, Streamlit's legacy folder router used to run
    pages/explore.py alone until someone opened "/", listing app/common/compare/data/explore as pages.
    """
    log = results_dir / "streamlit-deeplink-server.log"
    proc, url = ui.start_streamlit(log)
    try:
        for i, path in enumerate(("/explore", "/data", "/explore")):
            context = ui.new_context(chromium)
            try:
                page = context.new_page()
                page.goto(url + path)
                title = {"/explore": "Explore a calibrator", "/data": "Data"}[path]
                page.wait_for_function(
                    "(t) => { const h = document.querySelector('[data-testid=\"stMain\"] h1');"
                    " return h && h.textContent.trim() === t; }", arg=title, timeout=ui.timeout_ms)
                ui.wait_idle(page)
                if i == 0:
                    ui.screenshot(page, "e2e-deeplink-first-request")
                links = [t.strip() for t in page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]
                names = [re.sub(r"^\w+\s+", "", t) for t in links]     # drop the icon's ligature name
                assert {"Data", "Explore", "Compare"} <= set(names), (path, links)
                assert not {"app", "common"} & set(names), (path, links)      # the legacy folder menu
                assert "circles_svm.csv" in page.locator(SIDEBAR).inner_text(), path
                assert page.url.rstrip("/").endswith(path), (path, page.url)
                assert page.locator('[data-testid="stException"]').count() == 0
            finally:
                context.close()
    finally:
        ui.stop_process(proc)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "page failed" not in text, text[-3000:]


def _open_combobox(page, ui, key_class: str):
    """Open the option list of the selectbox/multiselect inside ``key_class``.

    A click alone does not always open it: react-aria closes the popover when the
    page scrolls, which Playwright's click may do; ArrowDown opens it then.
    """
    box = page.locator(key_class).get_by_role("combobox")
    box.click()
    if box.get_attribute("aria-expanded") != "true":
        box.press("ArrowDown")
    page.get_by_role("option").first.wait_for(timeout=ui.timeout_ms)
    return box


def _choose(page, ui, key_class: str, option: str) -> None:
    """Pick ``option`` (its display text) in the selectbox inside ``key_class``."""
    _open_combobox(page, ui, key_class)
    before = ui.runs(page)
    page.get_by_role("option", name=option, exact=True).click()
    page.wait_for_function(
        "([sel, t]) => { const e = document.querySelector(sel + ' input[role=combobox]');"
        " return e && e.value === t; }", arg=[key_class, option], timeout=ui.timeout_ms)
    ui.wait_idle(page, since=before)


def test_explore_every_calibrator_in_browser(app_page, ui):
    """Each registered calibrator on Explore: its row in the table, both charts drawn, no error anywhere."""
    from calibdash import calibrators

    page = app_page
    _open(page, ui, "/explore")
    page.locator(".st-key-explore-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    for name in calibrators.available():
        cls = calibrators.get_class(name)
        label = cls.label or name
        menu = f"{label} — {cls.summary}" if cls.summary else label     # the menu shows label and summary
        before = ui.plot_signature(page, ".st-key-explore-map")
        _choose(page, ui, ".st-key-explore-method", menu)
        if name != "histogram":                 # histogram is the starting choice
            ui.wait_plot_changed(page, ".st-key-explore-map", before)
            ui.wait_idle(page)
        assert list(ui.table(page, 0)) == ["Uncalibrated", label]
        n_plots = page.locator(f"{MAIN} .js-plotly-plot").count()
        assert n_plots >= 2
        assert page.locator(f"{MAIN} [data-testid='stAlertContentError']").count() == 0
        _assert_no_traceback(page, ui)
        ui.screenshot(page, f"e2e-explore-method-{name}")


def test_compare_all_calibrators_in_browser(app_page, ui):
    """Compare with every registered calibrator selected: one row each, both charts, no error."""
    from calibdash import calibrators

    page = app_page
    _open(page, ui, "/")
    page.locator(".st-key-compare-map .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
    labels = [calibrators.get_class(n).label or n for n in calibrators.available()]
    chosen = set(ui.table(page, 0)) - {"Uncalibrated"}
    for label in labels:
        if label in chosen:
            continue
        _open_combobox(page, ui, ".st-key-compare-methods")
        before = ui.runs(page)
        page.get_by_role("option", name=label, exact=True).click()
        page.keyboard.press("Escape")
        ui.wait_idle(page, since=before)          # the run that adds the method
    page.wait_for_function(
        "(n) => { const df = document.querySelector('[data-testid=\"stMain\"] [data-testid=\"stDataFrame\"]');"
        " return df && df.querySelectorAll('[role=row]').length === n + 2; }", arg=len(labels),
        timeout=ui.timeout_ms)
    ui.wait_idle(page)
    assert list(ui.table(page, 0)) == ["Uncalibrated"] + labels
    for key in (".st-key-compare-reliability", ".st-key-compare-map"):
        assert page.locator(f"{key} .js-plotly-plot").count() == 1, key
    assert page.locator(f"{MAIN} [data-testid='stAlertContentError']").count() == 0
    _assert_no_traceback(page, ui)
    ui.screenshot(page, "e2e-compare-all-calibrators")
