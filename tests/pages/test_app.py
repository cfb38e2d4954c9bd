"""Streamlit AppTest of the dashboard: every page renders, reacts to its widgets, and refuses bad files politely.

Runs app.py (st.navigation over pages/) headless, without a browser. Uploads go
through the real ``data.uploader`` widget (AppTest drives st.file_uploader), so
its on_change callback stores the file exactly as in the browser.
"""
from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io
import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from calibdash import calibrators, data as cdata, figures, samples
from calibdash.measures import calibration as metrics
from calibdash.evaluation import cells, holdout as evaluation
from calibdash.core.errors import DataError, EnvironmentProblem, ProgrammingError, SettingsError
from calibdash.explain import explain
from calibdash.figures.charts.calibration_map import SCORE_BARS
from pages.parts import downloads, fitting
from pages.parts.tables import BEST_STYLE, best_cells, bold_best, metrics_frame
from tests.conftest import APPTEST_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app.py"

DATA, EXPLORE, COMPARE = "pages/data.py", "pages/explore.py", "pages/compare.py"
TITLES = {DATA: "Data", EXPLORE: "Explore a calibrator", COMPARE: "Compare calibrators"}
CHARTS = {DATA: {"data.reliability"}, EXPLORE: {"explore.reliability", "explore.map"},
          COMPARE: {"compare.reliability", "compare.map"}}


@pytest.fixture(autouse=True)
def _run_entry_point_every_time(request, monkeypatch):
    """Make every AppTest run start from app.py, as the live server does after its first run.

    AppTest resets ``PagesManager.uses_pages_directory`` to None before each
    run, and PagesManager then sets it to True because a ``pages/`` folder sits
    next to app.py, so every rerun would go through Streamlit's legacy
    folder router, which runs the page file alone (pages bounce back through
    app.py with ``pages.parts.routing.route_guard``). In the live server app.py's
    st.navigation sets the flag to False on the first run and it stays False;
    False is therefore the faithful value for ordinary tests. Tests that ask
    for the ``legacy_router`` fixture keep AppTest's own behaviour instead.
    """
    if "legacy_router" in request.fixturenames:
        return
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture
def legacy_router():
    """Marker fixture: leave Streamlit's pages-folder detection alone (see above)."""


# -- helpers --------------------------------------------------------------------------------
def go(at: AppTest, page: str) -> AppTest:
    """Switch to ``page`` like a click in the menu.

    Runs twice: on AppTest's first run after a page switch, widgets that keep
    their value for the session (persist_state="session") still hand the script
    their default (for a select_slider drawn without ``value=``, its first
    option), although the browser gets the kept value at once (checked in
    tests/e2e/test_browser.py). The second run is what a user sees.
    """
    at.switch_page(page).run()
    return at.run()


def start(page: str | None = None) -> AppTest:
    """A fresh session on ``page`` (default: the app's default page, Compare)."""
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT).run()
    if page is not None and page != COMPARE:
        go(at, page)
    return at


def assert_clean(at: AppTest) -> None:
    """No traceback and no error box anywhere."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [shown(e.value) for e in at.error]


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page: widget key -> figure dict (data, layout)."""
    out = {}
    for el in at.get("plotly_chart"):
        key = el.proto.id.rsplit("-", 1)[-1] if el.proto.id else ""
        # ids look like "$$ID-<hash>-<key>"; keys may contain dots but no dashes here
        out[key] = json.loads(el.proto.spec)
    return out


def metrics_table(at: AppTest) -> pd.DataFrame:
    """The held-out metrics table (the st.dataframe whose columns include ECE), as numbers.

    Cells shown as "value [low, high]" (bootstrap intervals) are read as their value.
    """
    for df in at.main.dataframe:
        value = df.value
        if "ECE" in value.columns and "Uncalibrated" in value.index:
            return value.apply(lambda col: pd.to_numeric(col.astype(str).str.split(" [", regex=False).str[0])
                               if not pd.api.types.is_numeric_dtype(col) else col)
    raise AssertionError("no metrics table on the page")


def shown(markdown: str) -> str:
    """The text a Markdown body shows of names from the data, which the pages escape (pages/parts/text.py):
    each backslash escape read as the character it escapes."""
    return re.sub(r"\\(.)", r"\1", markdown, flags=re.S)


def sidebar_text(at: AppTest) -> str:
    return shown("\n".join([shown(m.value) for m in at.sidebar.markdown] + [shown(c.value) for c in at.sidebar.caption]
                            + [shown(e.value) for e in at.sidebar.error]))


def errors(at: AppTest) -> str:
    return shown("\n".join(shown(e.value) for e in at.main.error))


def scores_csv(n: int = 300, labels=None, seed: int = 7) -> bytes:
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    if labels is None:
        labels = (rng.uniform(size=n) < s).astype(int)
    return ("score,label\n" + "".join(f"{a:.5f},{b}\n" for a, b in zip(s, labels))).encode()


def upload(at: AppTest, name: str, data: bytes, mime: str = "text/csv") -> AppTest:
    """On the Data page: choose Upload and send ``data`` through the uploader widget."""
    if at.segmented_control(key="source").value != "Upload":
        at.segmented_control(key="source").set_value("Upload").run()
    at.file_uploader(key="data.uploader").set_value((name, data, mime)).run()
    return at


# -- the best value in bold ------------------------------------------------------------------------
def bolded(styler) -> set[tuple[int, int]]:
    """(row, column) positions of the cells a Styler marks as best."""
    ctx = styler._compute().ctx          # what pandas (and st.dataframe) render: position -> CSS pairs
    best = sorted(tuple(p.strip().split(": ")) for p in BEST_STYLE.split(";"))
    return {pos for pos, css in ctx.items() if sorted(css) == best}


def test_bold_best_treats_values_equal_to_rounding_as_tied():
    """Two values a float rounding apart are both best (the copy comparing with == bolded one)."""
    frame = pd.DataFrame({"ECE": [0.1 + 0.2, 0.3, 0.5], "AUC": [0.7, 0.9, 0.9 - 1e-13]}, index=["a", "b", "c"])
    assert bolded(bold_best(frame, {"ECE": True, "AUC": False})) == {(0, 0), (1, 0), (1, 1), (2, 1)}


def test_bold_best_direction_per_row_and_from_a_set_of_names():
    frame = pd.DataFrame([[3.0, 1.0, 2.0], [3.0, 1.0, 2.0]], index=["loss", "gain"], columns=["x", "y", "z"])
    np.testing.assert_array_equal(best_cells(frame, {"loss": True, "gain": False}, axis=1),
                                  [[False, True, False], [True, False, False]])
    np.testing.assert_array_equal(best_cells(frame, {"loss"}, axis=1), best_cells(frame, {"loss": True,
                                                                                          "gain": False}, axis=1))
    np.testing.assert_array_equal(best_cells(frame.T, True, axis=0), [[False, False], [True, True], [False, False]])


def test_bold_best_skips_a_column_of_nan_and_bolds_text_from_its_numbers():
    values = pd.DataFrame({"ECE": [np.nan, np.nan], "MCE": [0.2, np.nan]})
    np.testing.assert_array_equal(best_cells(values, True), [[False, True], [False, False]])
    text = values.map(lambda v: f"{v:.1f} [..]")
    assert bolded(bold_best(text, True, values=values)) == {(0, 1)}


def test_metrics_frame_bolds_lowest_loss_and_highest_auc_with_display_names():
    table = pd.DataFrame({"AUC": [0.80, 0.85], "ECE": [0.10, 0.02]}, index=["uncalibrated", "platt"])
    styler = metrics_frame(table)
    assert list(styler.data.index) == ["Uncalibrated", calibrators.get_class("platt").label]
    assert bolded(styler) == {(1, 0), (1, 1)}


# -- every page with the default sample -------------------------------------------------------
@pytest.mark.parametrize("page", [DATA, EXPLORE, COMPARE])
def test_page_renders_default_sample(page):
    at = start(page)
    assert_clean(at)
    assert at.title[0].value == TITLES[page]
    figs = charts(at)
    assert CHARTS[page] <= set(figs), set(figs)
    for key in CHARTS[page]:
        assert figs[key]["data"], f"{key} has no traces"
    side = sidebar_text(at)
    assert "circles_svm.csv" in side and "2,000 rows" in side
    # the metrics table says how ECE and MCE were binned: the package's default
    assert any(f"ECE and MCE use {metrics.binning_label()}" in shown(c.value) for c in at.main.caption)
    assert "linear_svm" in side
    if page == DATA:
        summary = at.main.dataframe[0].value
        assert {"AUC", "ECE"} <= set(summary.index)
        assert [m.value for m in at.metric][:2] == ["2,000", "2,000"]
    else:
        table = metrics_table(at)
        assert {"AUC", "ACC", "Brier", "ECE", "MCE"} <= set(table.columns)
        assert table.notna().all().all()


def test_legacy_folder_router_bounces_through_app_py(legacy_router):
    """With Streamlit's pages/ detection left on, every run still shows app.py's sidebar and the asked-for page,
    and widgets still work (the route guard sends page files opened alone back through app.py)."""
    at = start()
    for page in (EXPLORE, DATA, COMPARE, EXPLORE):
        go(at, page)
        assert_clean(at)
        assert at.title[0].value == TITLES[page]
        assert "circles_svm.csv" in sidebar_text(at)
        at.run()
        assert at.title[0].value == TITLES[page]
        assert "circles_svm.csv" in sidebar_text(at)
    table0 = metrics_table(at)
    at.select_slider(key="hp.histogram.n_bins").set_value(5).run()
    assert_clean(at)
    assert not np.allclose(metrics_table(at).loc["Histogram binning"], table0.loc["Histogram binning"])


def test_sidebar_survives_reruns():
    """The sidebar summary is drawn by app.py on every run, not only the first."""
    at = start()
    for _ in range(2):
        at.run()
        assert "circles_svm.csv" in sidebar_text(at)
    go(at, EXPLORE)
    assert "circles_svm.csv" in sidebar_text(at)


# -- Compare -------------------------------------------------------------------------------------
def test_compare_calibrator_choice_changes_rows():
    at = start(COMPARE)
    assert list(metrics_table(at).index) == ["Uncalibrated", "Platt scaling", "Histogram binning",
                                             "Isotonic regression"]
    at.multiselect(key="compare.methods").set_value(["isotonic"]).run()
    assert_clean(at)
    assert list(metrics_table(at).index) == ["Uncalibrated", "Isotonic regression"]
    names = {t.get("name") for t in charts(at)["compare.reliability"]["data"]}
    assert "Isotonic regression" in names and "Platt scaling" not in names
    at.multiselect(key="compare.methods").set_value(["histogram", "platt"]).run()
    assert_clean(at)
    assert set(metrics_table(at).index) == {"Uncalibrated", "Histogram binning", "Platt scaling"}


def test_compare_without_calibrators_shows_uncalibrated_only():
    at = start(COMPARE)
    at.multiselect(key="compare.methods").set_value([]).run()
    assert_clean(at)
    assert list(metrics_table(at).index) == ["Uncalibrated"]


def test_compare_figure_widgets_change_figures_not_metrics():
    at = start(COMPARE)
    table0, figs0 = metrics_table(at), charts(at)
    at.select_slider(key="compare.n_bins").set_value(20).run()
    assert_clean(at)
    figs1 = charts(at)
    assert figs1["compare.reliability"]["data"] != figs0["compare.reliability"]["data"]
    assert figs1["compare.map"] == figs0["compare.map"]
    pd.testing.assert_frame_equal(metrics_table(at), table0)
    at.toggle(key="compare.logx").set_value(True).run()
    assert_clean(at)
    assert charts(at)["compare.map"]["layout"]["xaxis"].get("type") == "log"
    assert at.segmented_control(key="compare.strategy").value == "quantile"     # the metrics' binning
    at.segmented_control(key="compare.strategy").set_value("uniform").run()
    assert_clean(at)
    assert charts(at)["compare.reliability"]["data"] != figs1["compare.reliability"]["data"]


def test_compare_hyperparameter_changes_one_row():
    at = start(COMPARE)
    table0 = metrics_table(at)
    at.select_slider(key="hp.histogram.n_bins").set_value(5).run()
    assert_clean(at)
    table1 = metrics_table(at)
    assert not np.allclose(table1.loc["Histogram binning"], table0.loc["Histogram binning"])
    for row in ("Uncalibrated", "Platt scaling", "Isotonic regression"):
        pd.testing.assert_series_equal(table1.loc[row], table0.loc[row])


# -- Explore -------------------------------------------------------------------------------------
def test_explore_hyperparameter_slider_changes_metrics():
    at = start(EXPLORE)
    assert at.selectbox(key="explore.method").value == "histogram"
    table0, figs0 = metrics_table(at), charts(at)
    assert list(table0.index) == ["Uncalibrated", "Histogram binning"]
    at.select_slider(key="hp.histogram.n_bins").set_value(5).run()
    assert_clean(at)
    table1, figs1 = metrics_table(at), charts(at)
    assert not np.allclose(table1.loc["Histogram binning"], table0.loc["Histogram binning"])
    pd.testing.assert_series_equal(table1.loc["Uncalibrated"], table0.loc["Uncalibrated"])
    assert figs1["explore.map"]["data"] != figs0["explore.map"]["data"]
    assert figs1["explore.reliability"]["data"] != figs0["explore.reliability"]["data"]


def test_explore_diagram_bins_change_chart_not_metrics():
    at = start(EXPLORE)
    table0, figs0 = metrics_table(at), charts(at)
    at.select_slider(key="explore.n_bins").set_value(30).run()
    assert_clean(at)
    figs1 = charts(at)
    assert figs1["explore.reliability"]["data"] != figs0["explore.reliability"]["data"]
    assert figs1["explore.map"]["data"] == figs0["explore.map"]["data"]
    pd.testing.assert_frame_equal(metrics_table(at), table0)


@pytest.mark.parametrize("method", calibrators.available())
def test_explore_every_calibrator(method):
    """Each registered calibrator renders on Explore with its defaults and its own metrics row."""
    at = start(EXPLORE)
    at.selectbox(key="explore.method").set_value(method).run()
    assert_clean(at)
    label = calibrators.get_class(method).label or method
    assert list(metrics_table(at).index) == ["Uncalibrated", label]
    figs = charts(at)
    assert {"explore.reliability", "explore.map"} <= set(figs)
    assert any(t.get("name") == label for t in figs["explore.map"]["data"])


def _explained(method: str):
    """The explanation of ``method`` fitted as Explore fits it on the default sample: by the library alone."""
    sample = samples.SAMPLES[samples.DEFAULT_SAMPLE]
    df, info = cdata.read_table(samples.sample_path(sample.name))
    ss = cdata.build_score_set(df, info=info, name=info.name, score=sample.score, label=sample.label)
    feats = ss.features if calibrators.get_class(method).uses_features else None
    ev = evaluation.evaluate(ss.scores, ss.labels, method, evaluation.Scheme(kind="column"), features=feats,
                             split=ss.split)
    rows = ev.fit_rows
    return explain(ev.models[method], ss.scores[rows], ss.labels[rows],
                   None if feats is None else feats.reset_index(drop=True).iloc[rows])


@pytest.mark.parametrize("method", ["bbq", "mbct"])
def test_explore_draws_the_explanation_of_the_model_on_its_fitting_rows(method):
    """Explore's inner charts, notes and tables are those of the model explained on the rows it was fitted on."""
    at = start(EXPLORE)
    at.selectbox(key="explore.method").set_value(method).run()
    assert_clean(at)
    ex = _explained(method)
    expected = figures.inner_figures(ex)
    assert expected, f"{method} has no inner figures"
    drawn = charts(at)
    inner = {k: v for k, v in drawn.items() if k.startswith("explore.inner.")}
    assert sorted(inner) == [f"explore.inner.{i}" for i in range(len(expected))]
    for i, (title, fig) in enumerate(expected):
        assert inner[f"explore.inner.{i}"]["data"] == json.loads(plotly.io.to_json(fig, validate=False))["data"], title
    bold = {shown(m.value) for m in at.main.markdown}
    assert {f"**{title}**" for title, _ in expected} <= bold
    assert {f"**{name}**" for name in ex.tables} <= bold
    assert "Inside the calibrator" in [shown(h.value) for h in at.main.subheader]
    assert [shown(i.value) for i in at.main.info] == list(ex.notes)


def test_hyperparameters_are_shared_between_explore_and_compare():
    """A hyperparameter set on Explore holds on Compare (same key, persisted for the session)."""
    at = start(EXPLORE)
    at.select_slider(key="hp.histogram.n_bins").set_value(5).run()
    explore_row = metrics_table(at).loc["Histogram binning"]
    go(at, COMPARE)
    assert_clean(at)
    assert at.select_slider(key="hp.histogram.n_bins").value == 5
    # Compare shows its metrics rounded to 4 decimals (with bootstrap intervals)
    np.testing.assert_allclose(metrics_table(at).loc["Histogram binning"].to_numpy(dtype=float),
                               explore_row.to_numpy(dtype=float), atol=6e-5)


# -- errors by kind ------------------------------------------------------------------------------------
ERROR_KINDS = {
    # id: (error raised inside the page, the heading its message must carry, whether it is logged as a bug)
    "data": (DataError("the fitting part holds one class only; calibrators need both."),
             "This cannot be done with the current data", False),
    "settings": (SettingsError("test_size must lie strictly between 0 and 1, got 2.0."),
                 "This setting cannot be used", False),
    "environment": (EnvironmentProblem("PNG/SVG export needs a Chromium browser (Debian: apt-get install chromium)."),
                    "This server lacks something needed here", False),
    "programming": (ProgrammingError("exporting an unregistered class."), "Something went wrong", True),
    "other": (ZeroDivisionError("division by zero"), "Something went wrong", True),
}


@pytest.mark.parametrize("kind", list(ERROR_KINDS))
def test_an_error_inside_a_page_is_shown_by_its_kind_without_a_traceback(kind, monkeypatch, caplog):
    error, heading, logged = ERROR_KINDS[kind]

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(fitting, "evaluate_methods", fail)
    with caplog.at_level(logging.ERROR, logger="calibdash.app"):
        at = start(COMPARE)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == TITLES[COMPARE]
    text = errors(at)
    assert text.startswith(f"**{heading}") and str(error) in text, text
    others = {h for _, h, _ in ERROR_KINDS.values()} - {heading}
    assert not any(h in text for h in others), text
    assert "Traceback" not in text
    bugs = [r for r in caplog.records if r.name == "calibdash.app" and r.exc_info]
    assert bool(bugs) == logged, [r.getMessage() for r in bugs]


@pytest.mark.parametrize("page", [COMPARE, DATA])
def test_an_out_of_range_setting_in_a_link_is_ignored_with_a_warning(page):
    """A shared link with test_size=2 (or an unknown ELiTE criterion) is not applied: the page says which
    settings were ignored and why, and works on the defaults; before, the Data page's slider crashed on it."""
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.query_params["scheme"] = "split"
    at.query_params["test_size"] = "2"
    at.query_params["methods"] = "elite"
    at.query_params["elite.criterion"] = "nonsense"
    at.run()
    if page == DATA:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not errors(at)
    warning = shown(" ".join(shown(w.value) for w in at.warning))                  # the link's text is escaped
    assert "test_size=2 (outside 0.1 to 0.5)" in warning and "elite.criterion=nonsense" in warning, warning
    assert "30% held out" in sidebar_text(at)                  # the default scheme stands


# -- Data ------------------------------------------------------------------------------------------
def test_data_sample_choice_changes_everything():
    at = start(DATA)
    at.selectbox(key="sample").set_value("breast_cancer_nb").run()
    assert_clean(at)
    assert at.metric[0].value == "569"
    assert "breast_cancer_nb.csv" in sidebar_text(at)
    go(at, COMPARE)
    assert_clean(at)
    assert "breast_cancer_nb.csv" in shown(at.caption[0].value)
    assert "breast_cancer_nb.csv" in sidebar_text(at)


def test_data_evaluation_scheme_changes_results():
    at = start(COMPARE)
    table_split = metrics_table(at)
    go(at, DATA)
    at.radio(key="scheme.kind").set_value("kfold").run()
    assert_clean(at)
    assert "fold" in sidebar_text(at).lower()
    go(at, COMPARE)
    assert_clean(at)
    table_kfold = metrics_table(at)
    assert not np.allclose(table_kfold.to_numpy(), table_split.to_numpy())


def test_upload_good_csv_is_used_on_every_page():
    at = start(DATA)
    upload(at, "my_scores.csv", scores_csv(300))
    assert_clean(at)
    assert at.session_state["upload"]["name"] == "my_scores.csv"
    assert at.segmented_control(key="source").value == "Upload"
    assert [m.value for m in at.metric][:3] == ["300", "300", "0"]
    assert "my_scores.csv" in sidebar_text(at) and "300 rows" in sidebar_text(at)
    assert set(charts(at)) == {"data.reliability"}
    for page in (EXPLORE, COMPARE):
        go(at, page)
        assert_clean(at)
        assert any("my_scores.csv" in shown(c.value) for c in at.main.caption)
        assert CHARTS[page] <= set(charts(at))
        assert "Uncalibrated" in metrics_table(at).index
        # below the cells threshold: judged on rows, stratified, as always
        caption = next(shown(c.value) for c in at.main.caption if "my_scores.csv" in shown(c.value))
        assert "judged on 90 held-out rows" in caption and "Stratified split" in caption, caption
        assert "score cells" not in caption
        bars = [t for t in charts(at)[f"{page.split('/')[1][:-3]}.map"]["data"] if t.get("name") == "scores"]
        # the map's histogram is its bars (never one value per row): they count the held-out rows on Compare
        assert bars and bars[0]["type"] == "bar" and len(plotly_array(bars[0]["y"])) == SCORE_BARS
        if page == COMPARE:
            assert plotly_array(bars[0]["y"]).sum() == 90


def test_upload_of_20_rows_is_accepted_everywhere():
    """The smallest accepted file (MIN_ROWS = 20) works on every page."""
    at = start(DATA)
    data = scores_csv(20, labels=[0, 1] * 10)
    upload(at, "twenty.csv", data)
    assert_clean(at)
    assert len(data) < 1_000 and any(f"({len(data)} bytes)" in c.value for c in at.main.caption)   # not "0.5 kB"
    for page in (EXPLORE, COMPARE):
        go(at, page)
        assert_clean(at)
        metrics_table(at)


# -- large data: score cells --------------------------------------------------------------------------
BIG_ROWS = 1_000_000
CELLS_NOTE = re.compile(r"1,000,000 rows summarised into [\d,]+ score cells")


def big_csv(n: int = BIG_ROWS, seed: int = 4) -> bytes:
    """Click-like scores at 4 decimals (about 10^4 distinct: exact cells) and their outcomes, as CSV (9 MB)."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(1.5, 12, n), 4)
    y = (rng.random(n) < np.clip(1.3 * s, 0, 1)).astype(np.int8)
    buf = io.BytesIO()
    buf.write(b"score,label\n")
    np.savetxt(buf, np.column_stack([s, y]), fmt=["%.4f", "%d"], delimiter=",")
    return buf.getvalue()


def plotly_array(value) -> np.ndarray:
    """A trace's array as plotly JSON holds it: a list, or a typed array ({"dtype", "bdata"} in base64)."""
    if isinstance(value, dict) and "bdata" in value:
        import base64

        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value)


def test_million_row_upload_runs_on_score_cells():
    """A 10^6-row upload is evaluated on score cells: the Data page says so and how many cells, Compare and Explore
    say what the cells summarise and how many rows were judged, draw their charts (counting rows, not cells) and
    fill the metrics table of every method, with intervals, and nothing raises."""
    at = start(DATA)
    upload(at, "clicks_1m.csv", big_csv())
    assert_clean(at)
    assert at.metric[0].value == "1,000,000"
    info = " ".join(shown(i.value) for i in at.main.info)
    assert "Evaluations run on score cells" in info and CELLS_NOTE.search(info), info
    assert "Random split by row hash" in sidebar_text(at)
    held_out = int((cells.parts_for(BIG_ROWS, "split", seed=0, test_size=0.3) == 1).sum())
    judged = f"judged on {held_out:,} held-out rows"

    go(at, COMPARE)
    everything = calibrators.available()
    at.multiselect(key="compare.methods").set_value(everything).run()
    assert_clean(at)
    caption = shown(at.main.caption[0].value)
    assert CELLS_NOTE.search(caption) and judged in caption and "Random split by row hash" in caption, caption
    table = metrics_table(at)
    assert list(table.index) == ["Uncalibrated"] + [calibrators.get_class(m).label or m for m in everything]
    assert table.notna().all().all()
    assert "[" in at.main.dataframe[0].value.iloc[0, 0]                       # intervals
    assert any("200 Poisson resamples" in shown(c.value) for c in at.main.caption)
    assert any("has the lowest ECE" in shown(i.value) for i in at.main.info)
    figs = charts(at)
    for key in CHARTS[COMPARE]:
        assert figs[key]["data"], key
    hist = [t for t in figs["compare.map"]["data"] if t.get("name") == "scores"][0]
    assert hist["type"] == "bar" and plotly_array(hist["y"]).sum() == held_out       # rows, not cells
    bars = [t for t in figs["compare.reliability"]["data"] if t.get("type") == "bar"]
    assert plotly_array(bars[0]["y"]).sum() == held_out
    assert any(downloads.PER_CELL_CAPTION in shown(c.value) for c in at.main.caption)

    go(at, EXPLORE)
    assert_clean(at)
    caption = next(shown(c.value) for c in at.main.caption if "clicks_1m.csv" in shown(c.value))
    assert CELLS_NOTE.search(caption) and judged in caption, caption
    assert list(metrics_table(at).index) == ["Uncalibrated", "Histogram binning"]
    figs = charts(at)
    assert CHARTS[EXPLORE] <= set(figs) and all(figs[k]["data"] for k in CHARTS[EXPLORE])
    at.selectbox(key="explore.method").set_value("bbq").run()      # inner charts from the cells' fitted sample
    assert_clean(at)
    assert list(metrics_table(at).index) == ["Uncalibrated", "BBQ"]
    assert any(k.startswith("explore.inner.") for k in charts(at))
    assert any("Fitted with sample weights" in shown(i.value) for i in at.main.info)


def test_mbct_with_features_keeps_large_data_on_rows_and_says_so():
    """Above the threshold every method goes to score cells, unless MBCT reads feature columns: then all are
    judged on rows, alike, and the pages say why."""
    rng = np.random.default_rng(0)
    n = evaluation.CELLS_MIN_ROWS + 1
    df = pd.DataFrame({"score": rng.uniform(size=n), "label": rng.integers(0, 2, n),
                       "device": rng.choice(["mobile", "desktop"], n)})
    ss = cdata.build_score_set(df, score="score", label="label", features=["device"])
    assert fitting.on_cells(ss, ["platt", "bbq"]) and fitting.on_cells(ss, ["mbct"]) is False
    assert not fitting.on_cells(ss, {"platt": {}, "mbct": {}})
    assert fitting.rows_reason(ss, ["platt"]) == ""
    reason = fitting.rows_reason(ss, ["platt", "mbct"])
    assert "MBCT" in reason and "device" in reason and "every method" in reason
    plain = cdata.build_score_set(df, score="score", label="label", features=[])
    assert fitting.on_cells(plain, ["mbct"])                                    # no features: MBCT on cells too
    small = cdata.build_score_set(df.head(1000), score="score", label="label", features=[])
    assert not fitting.on_cells(small, ["platt"]) and fitting.rows_reason(small, ["mbct"]) == ""


def test_predictions_download_per_cell_on_score_cells():
    """On score cells the predictions file has one line per held-out cell with its rows and positives."""
    rng = np.random.default_rng(2)
    s = np.round(rng.uniform(size=5000), 2)
    y = (rng.uniform(size=5000) < s).astype(int)
    scheme = evaluation.Scheme(kind="split")
    c = cells.aggregate(s, y, evaluation.cell_parts(s.size, scheme))
    ev = evaluation.evaluate_cells(c, "platt,isotonic", scheme)
    got = pd.read_csv(io.BytesIO(downloads.predictions_csv(ev)()), index_col="cell")
    held = c.select(c.part == 1)
    assert list(got.columns) == ["rows", "positives", "uncalibrated", "platt", "isotonic"]
    np.testing.assert_array_equal(got["rows"], held.n)
    np.testing.assert_array_equal(got["positives"], held.n_pos)
    np.testing.assert_allclose(got["uncalibrated"], held.score)
    np.testing.assert_allclose(got["platt"], ev.models["platt"].predict(held.score), rtol=1e-12)
    rows = evaluation.evaluate(s, y, "platt", evaluation.Scheme())
    by_row = pd.read_csv(io.BytesIO(downloads.predictions_csv(rows)()), index_col="row")
    assert list(by_row.columns) == ["label", "uncalibrated", "platt"] and len(by_row) == rows.n_judged


def test_class_probabilities_download_is_made_on_click_with_one_line_per_held_out_row():
    from calibdash.evaluation.holdout import evaluate_classes

    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3), size=400)
    y = np.array([rng.choice(3, p=p) for p in P])
    ev = evaluate_classes(P, y, "temperature", evaluation.Scheme(), classes=["a", "b", "c"])
    make = downloads.class_probabilities_csv(ev, ["a", "b", "c"])
    assert callable(make)                                   # nothing written until the button is clicked
    got = pd.read_csv(io.BytesIO(make()))
    assert list(got.columns) == ["row", "label"] + [f"{m}:{c}" for m in ev.predictions for c in "abc"]
    np.testing.assert_array_equal(got["row"], ev.rows)
    assert got["label"].tolist() == [["a", "b", "c"][i] for i in ev.labels]
    np.testing.assert_allclose(got[["temperature:a", "temperature:b", "temperature:c"]], ev.predictions["temperature"])


# -- bad files --------------------------------------------------------------------------------------
_rng = np.random.default_rng(11)
BAD_FILES = {
    # id: (file name, bytes, words the error must contain)
    "one-class": ("one_class.csv", scores_csv(100, labels=[1] * 100), ["one class only"]),
    "non-binary-label": ("three_labels.csv", scores_csv(90, labels=[0, 1, 2] * 30),
                         ["3 distinct values", "binary"]),
    "text-multiclass": ("species.csv", scores_csv(90, labels=["cat", "dog", "cow"] * 30),
                        ["3 distinct values", "binary"]),
    "empty": ("empty.csv", b"", ["empty"]),
    "header-only": ("header_only.csv", b"score,label\n", ["no rows"]),
    "too-few-rows": ("tiny.csv", scores_csv(19, labels=[0, 1] * 9 + [0]), ["only 19 usable rows", "at least 20"]),
    "binary-junk": ("junk.csv", bytes(_rng.integers(0, 256, 4096, dtype=np.uint8)), ["binary"]),
    "utf-16": ("excel_export.csv", scores_csv(100).decode().encode("utf-16-le"), ["UTF-16"]),
    "xlsx-as-csv": ("book.csv", b"PK\x03\x04" + bytes(200), ["ZIP", "Excel"]),
    "no-score-column": ("words.csv", b"name,label\n" + b"".join(b"a,0\nb,1\n" for _ in range(30)),
                        ["no numeric column"]),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_upload_is_refused_with_a_message_on_every_page(case):
    name, data, words = BAD_FILES[case]
    at = start(DATA)
    upload(at, name, data)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["upload"]["name"] == name
    for page in (DATA, EXPLORE, COMPARE):
        if page != DATA:
            go(at, page)
        assert not at.exception, (page, [e.value for e in at.exception])
        text = errors(at)
        assert text, f"{page}: no st.error for {name}"
        for word in words:
            assert word in text, (page, text)
        assert "Traceback" not in text and "Something went wrong" not in text
        # the sidebar says the same instead of naming a data set
        assert any(words[0] in shown(e.value) for e in at.sidebar.error), (page, sidebar_text(at))
        if page != DATA:
            assert not charts(at), f"{page} drew charts for an unusable file"
            assert at.main.get("page_link"), f"{page} does not point back to the Data page"


def test_bad_upload_then_back_to_sample_recovers():
    at = start(DATA)
    upload(at, "one_class.csv", BAD_FILES["one-class"][1])
    assert errors(at)
    at.segmented_control(key="source").set_value("Sample").run()
    assert_clean(at)
    assert "circles_svm.csv" in sidebar_text(at)
    go(at, COMPARE)
    assert_clean(at)
    metrics_table(at)


def test_bad_then_good_upload_replaces_the_file():
    at = start(DATA)
    upload(at, "tiny.csv", BAD_FILES["too-few-rows"][1])
    assert "at least 20" in errors(at)
    upload(at, "fixed.csv", scores_csv(200))
    assert_clean(at)
    assert at.metric[0].value == "200"
    assert "fixed.csv" in sidebar_text(at)


@pytest.mark.parametrize("case", ["one-class", "utf-16", "empty"])
def test_bad_file_in_session_state_on_a_fresh_compare_page(case):
    """The stored-upload path without the Data page: Compare alone shows the error, no traceback."""
    import hashlib

    name, data, words = BAD_FILES[case]
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.session_state["upload"] = {"name": name, "data": data, "sha": hashlib.sha256(data).hexdigest()}
    at.session_state["source"] = "Upload"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == TITLES[COMPARE]
    assert words[0] in errors(at)
    assert not charts(at)
