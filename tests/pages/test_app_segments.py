"""AppTest of the "Groups & time" page (pages/segments.py) on the drift data, uploaded, on bad choices, and on a
K-class table read through its top-label reduction.

The page runs on its own through a two-line driver that marks the run as routed (as app.py does), so the
test does not depend on app.py registering the page; the data arrives as an upload in the session (the
Data page's uploader stores exactly this), so it does not depend on "drift" being a built-in sample.
"""
from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash import cli
from calibdash.measures import calibration as metrics
from calibdash.data import load_classes
from calibdash.monitoring.group_metrics import STATS
from calibdash.measures import class_measures as mmetrics
from calibdash.samples.drifting_score import make_drift
from calibdash.synthetic.gaussian_classes import gaussian_classes
from tests.conftest import APPTEST_TIMEOUT
from pages.parts import segments_command as command
from tests.pages.test_app import shown

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "pages" / "segments.py"
DRIVER = f"""
import runpy
from pages.parts import routing
token = routing.ROUTED.set(True)
try:
    runpy.run_path({str(PAGE)!r}, run_name="__main__")
finally:
    routing.ROUTED.reset(token)
"""


def _session(frame: pd.DataFrame, name: str = "drift.csv") -> AppTest:
    at = AppTest.from_string(DRIVER, default_timeout=APPTEST_TIMEOUT)
    data = frame.to_csv(index=False).encode()
    at.session_state["upload"] = {"name": name, "data": data, "sha": hashlib.sha256(data).hexdigest()}
    at.session_state["source"] = "Upload"
    return at.run()


def _charts(at: AppTest) -> set[str]:
    return {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}


def _select(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def _assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [shown(e.value) for e in at.error]


@pytest.fixture(scope="module")
def drift():
    return make_drift()


def test_by_group_and_over_time_on_the_drift_data(drift):
    at = _session(drift)
    _assert_clean(at)
    assert at.title[0].value == "Groups & time"
    assert _select(at, "Group column").value == "segment"                  # guessed: few text values
    assert _charts(at) == {"segments.forest", "segments.grid", "segments.fix"}
    table = at.dataframe[0].value
    assert list(table.index) == ["app", "partner", "store", "web"]
    assert table.loc["partner", "rows"] == "1,950" and table.loc["partner", "ECE"].startswith("0.2069 [")
    assert any("least calibrated group is **partner**" in shown(i.value) for i in at.info)
    fixed = at.dataframe[1].value
    assert list(fixed.columns) == ["uncalibrated", "Isotonic regression", "MBCT"]
    assert fixed.loc["partner", "MBCT"] < fixed.loc["partner", "Isotonic regression"] < fixed.loc["partner",
                                                                                                  "uncalibrated"]
    at.segmented_control(key="segments.diagram").set_value("CORP").run()          # one CORP chart per group
    _assert_clean(at)
    assert _charts(at) == {"segments.forest", "segments.fix"} | {f"segments.group.{i}" for i in range(4)}
    at.segmented_control(key="segments.diagram").set_value("Binned").run()

    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert _select(at, "Date column").value == "date"
    assert _charts(at) == {"segments.drift", "segments.stale", "segments.stale_matrix"}
    assert any("grouped by month (12 periods" in shown(c.value) for c in at.caption)
    stale = at.dataframe[1].value                                            # [0] is the per-period table
    assert list(stale.index) == [f"2025-{m:02d}" for m in range(2, 13)]
    last = stale.iloc[-1]
    assert last["fitted on 2025-01"] > 3 * last["refitted on the period before"]
    assert any("goes stale" in m.value or "held-out ECE of" in shown(m.value) for m in at.info)

    at.selectbox(key="segments.freq").set_value("Q").run()                  # a period given by the user
    _assert_clean(at)
    assert any("grouped by quarter (4 periods" in shown(c.value) for c in at.caption)


def test_bad_choices_give_messages_not_tracebacks(drift):
    at = _session(drift)
    group = _select(at, "Group column")
    group.set_value("date").run()                                            # 365 distinct days
    assert not at.exception
    assert any("365 distinct values" in e.value and "Bin the column" in shown(e.value) for e in at.error)
    assert "segments.forest" not in _charts(at)

    at.segmented_control[0].set_value("Over time").run()
    _select(at, "Date column").set_value("segment").run()                   # not a date
    assert not at.exception
    assert any("segment does not hold dates" in shown(e.value) for e in at.error)
    at.selectbox(key="segments.freq").set_value("D").run()
    _select(at, "Date column").set_value("date").run()                     # 365 days: too many periods
    assert not at.exception
    assert any("choose a longer period" in shown(e.value) for e in at.error)


def test_upload_with_a_one_class_month_and_a_numeric_column(drift):
    frame = drift.copy()
    frame.loc[frame["date"].str.startswith("2025-03"), "label"] = 0
    frame["tenure"] = np.random.default_rng(0).integers(0, 120, len(frame))
    at = _session(frame, "my_scores.csv")
    _select(at, "Group column").set_value("tenure").run()
    _assert_clean(at)
    assert any("cut into 5 equal-count quantile groups" in shown(c.value) for c in at.caption)
    assert len(at.dataframe[0].value) == 5
    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert any("2025-03" in shown(c.value) and "one class only" in shown(c.value) for c in at.caption)
    per_period = at.dataframe[0].value
    assert per_period.loc["2025-03", "ECE"] == "n/a" and "one class only" in per_period.loc["2025-03", "note"]
    assert any("No calibrator is fitted on 2025-03" in shown(c.value) for c in at.caption)


def test_data_without_other_columns_says_there_is_nothing_to_group(drift):
    at = _session(drift[["score", "label"]], "plain.csv")
    _assert_clean(at)
    assert any("nothing to group by" in shown(i.value) for i in at.info)
    assert not _charts(at)


def test_data_without_a_date_column_asks_for_one(drift):
    at = _session(drift[["segment", "score", "label"]], "no_dates.csv")
    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert _select(at, "Date column").value is None
    assert any("No column of this data reads as dates" in shown(i.value) for i in at.info)
    assert not _charts(at)


# -- the page's numbers are the commands' -------------------------------------------------------------------------
def _commands(at: AppTest) -> list[list[str]]:
    """The commands shown under the page's tables, as argument lists without ``python -m calibdash``."""
    out = []
    for c in at.code:                  # what the code block's copy button copies: its text, not Markdown
        argv = shlex.split(c.value)
        assert argv[:3] == ["python", "-m", "calibdash"]
        out.append(argv[3:])
    assert len(out) == sum(command.COMMAND_CAPTION in shown(c.value) for c in at.caption)
    return out


def _cli_json(argv: list[str], file: Path, capsys) -> dict:
    """Run a shown command on ``file`` (the upload's bytes, saved under its name) with --json."""
    argv = [str(file) if a == file.name else a for a in argv]
    capsys.readouterr()
    assert cli.main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _same_as_records(shown: pd.DataFrame, records: list[dict], names: dict) -> None:
    """Every value of the page's 'value [low, high]' table is the command's JSON value printed as the page prints
    it (4 decimals). Both measure the same keyed cells with the same bootstrap draws (tests/cli/test_cli_monitor.py):
    the numbers agree to float rounding (1e-12), far inside the display's half unit of the 4th decimal."""
    assert list(shown.index) == [r["key"] for r in records]
    for rec in records:
        row = shown.loc[rec["key"]]
        assert row["rows"] == f"{rec['rows']:,}"
        for stat in STATS:
            v = rec[stat]
            text = "n/a" if v["value"] is None else (
                f"{v['value']:.4f}" + ("" if v["low"] is None else f" [{v['low']:.4f}, {v['high']:.4f}]"))
            assert row[names[stat]] == text, (rec["key"], stat)


def test_the_page_shows_the_numbers_of_the_command_it_names(drift, tmp_path, capsys):
    """The commands under the tables, run on the same file, give the tables' numbers: groups (with --fix: the
    held-out ECE of the calibrator that fixes the groups) and drift (per period and the staleness)."""
    file = tmp_path / "drift.csv"
    file.write_bytes(drift.to_csv(index=False).encode())
    at = _session(drift)
    _assert_clean(at)
    names = {s: {"positive_rate": "positive rate", "mean_score": "mean score", "LogLoss": "log-loss"}.get(s, s)
             for s in STATS}
    plain, fixing = _commands(at)
    assert plain == ["groups", "drift.csv", "--score", "score", "--label", "label", "--by", "segment",
                     "--n-bins", "10", "--boot", "200", "--seed", "0"]
    got = _cli_json(plain, file, capsys)
    _same_as_records(at.dataframe[0].value, got["groups"], names)
    fixed = _cli_json(fixing, file, capsys)
    assert fixing[-6:] == ["--fix", "isotonic", "--scheme", "split", "--test-size", "0.3"]
    page_fix = at.dataframe[1].value
    for rec in fixed["fix"]["ECE"]:                          # the same fits on the same cells: to float rounding
        assert page_fix.loc[rec["key"], "Isotonic regression"] == pytest.approx(rec["isotonic"], abs=1e-12)
        assert page_fix.loc[rec["key"], "MBCT"] == pytest.approx(rec["mbct"], abs=1e-12)
        assert page_fix.loc[rec["key"], "uncalibrated"] == pytest.approx(rec["uncalibrated"], abs=1e-12)

    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    (over,) = _commands(at)
    assert over[:8] == ["drift", "drift.csv", "--score", "score", "--label", "label", "--time", "date"]
    got = _cli_json(over, file, capsys)
    _same_as_records(at.dataframe[0].value, got["periods"], names)
    stale = at.dataframe[1].value
    for rec in got["staleness"]["periods"]:
        assert stale.loc[rec["key"], "fitted on 2025-01"] == pytest.approx(rec["fitted_on_first"], abs=1e-12)
        assert stale.loc[rec["key"], "refitted on the period before"] == pytest.approx(rec["refitted_before"],
                                                                                     abs=1e-12)
    # the drift sample's story, as the sample describes it: the January calibrator goes stale (held-out ECE
    # near 0.18 by December), the one refitted every month stays within 0.04
    assert 0.15 < stale["fitted on 2025-01"].iloc[-1] < 0.21
    assert stale["refitted on the period before"].max() <= 0.04


# -- a K-class table: its top-label reduction per group and period ------------------------------------------------
# Three sites of an animal classifier, two where the model's probabilities are the true posterior (temperature 1)
# and one, "east", where it is over-confident (temperature 3), with a month column. The page must read it as K
# classes, say that it judges the top-label (confidence) calibration, find "east" the least calibrated, and show
# the numbers the library gives on the same rows: accuracy, confidence ECE (the page's 10 equal-count bins) and
# the class-wise ECE of each group.
CLASSES = ("ant", "bee", "cow")
#: A displayed value has 4 decimals: within half a unit of the 4th decimal of the library's.
SHOWN = 5e-5


def _value(cell: str) -> float:
    return float(str(cell).split(" [", 1)[0])


@pytest.fixture(scope="module")
def table() -> tuple[bytes, pd.DataFrame]:
    parts = []
    for i, (site, temperature) in enumerate((("north", 1.0), ("south", 1.0), ("east", 3.0))):
        frame = gaussian_classes(CLASSES, radius=1.0, temperature=temperature).draw(400, seed=10 + i).frame
        frame = frame[["label", *(f"p_{c}" for c in CLASSES)]].assign(site=site)
        parts.append(frame)
    frame = pd.concat(parts, ignore_index=True)
    frame["month"] = pd.date_range("2025-01-01", "2025-04-28", periods=len(frame)).strftime("%Y-%m-%d")
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)    # sites and months interleaved
    data = frame.to_csv(index=False, float_format="%.8g").encode()
    return data, frame


def test_groups_of_a_k_class_table_are_judged_on_the_top_label(table):
    data, _ = table
    at = _session(pd.read_csv(pd.io.common.BytesIO(data)), "three_sites.csv")
    _assert_clean(at)
    assert any("top-label (confidence) calibration" in i.value for i in at.info)
    assert "K = 3" in at.caption[0].value and "confidence" in at.caption[0].value
    # a segment is guessed before the true and the predicted class
    assert _select(at, "Group column").value == "site"
    assert {"label", "predicted class", "month"} <= set(_select(at, "Group column").options)

    cs = load_classes(data, filename="three_sites.csv")          # the library on the same rows (as read)
    P, y = cs.scores().probabilities, cs.labels
    conf, right = mmetrics.top_label(P, y)
    site = cs.raw["site"].to_numpy()[cs.rows]
    shown = at.dataframe[0].value
    assert list(shown.index) == ["east", "north", "south"]
    assert {"accuracy", "mean confidence", "confidence ECE", "cwECE"} <= set(shown.columns)
    for g in shown.index:
        m = site == g
        assert shown.loc[g, "rows"] == f"{m.sum():,}"
        assert abs(_value(shown.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
        assert abs(_value(shown.loc[g, "mean confidence"]) - conf[m].mean()) <= SHOWN
        ece = metrics.ece(conf[m], right[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(_value(shown.loc[g, "confidence ECE"]) - ece) <= SHOWN
        cw = mmetrics.classwise_ece(P[m], y[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(float(shown.loc[g, "cwECE"]) - cw) <= SHOWN
    # the over-confident site: its confidence ECE the largest, and its confidence above its accuracy
    assert any("least calibrated group is **east**" in i.value for i in at.info)
    east = site == "east"
    assert conf[east].mean() > right[east].mean() + 0.05
    assert float(shown.loc["east", "cwECE"]) > max(float(shown.loc[g, "cwECE"]) for g in ("north", "south"))

    # the calibrator that fixes the groups: binary calibrators on the confidence, said so
    assert any("binary ones fitted on the confidence" in c.value for c in at.caption)
    fixed = at.dataframe[1].value
    assert list(fixed.columns) == ["uncalibrated", "Isotonic regression", "MBCT"]
    # isotonic on the confidence pulls the over-confident site's held-out confidence ECE down
    assert fixed.loc["east", "Isotonic regression"] < fixed.loc["east", "uncalibrated"]
    assert {"segments.forest", "segments.grid", "segments.fix"} <= _charts(at)

    # grouped by the predicted class: top-label calibration class by class (Gupta & Ramdas' eq. 2)
    _select(at, "Group column").set_value("predicted class").run()
    _assert_clean(at)
    by_class = at.dataframe[0].value
    predicted = np.asarray(CLASSES, dtype=object)[P.argmax(axis=1)]
    for g in by_class.index:
        m = predicted == g
        assert abs(_value(by_class.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
    assert not at.warning
    # grouped by the true class: said not to be a calibration check
    _select(at, "Group column").set_value("label").run()
    _assert_clean(at)
    assert any("Grouped by the **true** class" in w.value for w in at.warning)


def test_periods_of_a_k_class_table_show_accuracy_and_classwise_ece(table):
    data, _ = table
    at = _session(pd.read_csv(pd.io.common.BytesIO(data)), "three_sites.csv")
    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert _select(at, "Date column").value == "month"
    assert {"segments.drift", "segments.stale", "segments.stale_matrix"} <= _charts(at)
    at.selectbox(key="segments.freq").set_value("M").run()
    _assert_clean(at)
    periods = at.dataframe[0].value
    assert list(periods.index) == ["2025-01", "2025-02", "2025-03", "2025-04"]
    cs = load_classes(data, filename="three_sites.csv")
    P, y = cs.scores().probabilities, cs.labels
    _, right = mmetrics.top_label(P, y)
    month = cs.raw["month"].str[:7].to_numpy()[cs.rows]
    for g in periods.index:
        m = month == g
        assert abs(_value(periods.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
        cw = mmetrics.classwise_ece(P[m], y[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(float(periods.loc[g, "cwECE"]) - cw) <= SHOWN


def test_a_saved_groups_or_drift_run_holds_the_command_s_json(drift, tmp_path, capsys, monkeypatch):
    """Save run on Groups & time keeps the JSON the shown command prints (the file's name as its source), by
    group and over time."""
    from calibdash.io.runs import Workspace
    from pages.parts import runs
    monkeypatch.setenv("CALIBDASH_WORKSPACE", str(tmp_path / "ws"))
    runs.workspace.clear()
    file = tmp_path / "drift.csv"
    file.write_bytes(drift.to_csv(index=False).encode())
    at = _session(drift)
    for view, kind, records in (("By group", "groups", "groups"), ("Over time", "drift", "periods")):
        at.segmented_control[0].set_value(view).run()
        at.text_input(key="runs.segments.name").set_value(f"nightly {kind}")
        at.button(key="runs.segments.save").click().run()
        _assert_clean(at)
        run = Workspace(tmp_path / "ws").open(at.session_state["runs.last_saved"])
        got = _cli_json(_commands(at)[0], file, capsys)
        assert run.record.kind == kind and run.results["source"] == "drift.csv"
        assert _same_numbers(run.results[records], got[records]) and run.results["binning"] == got["binning"]
        if kind == "drift":
            assert _same_numbers(run.results["staleness"], got["staleness"])
        assert run.view["page"] == "segments" and run.rows() is not None and len(run.rows()) == len(drift)
    runs.workspace.clear()


def _same_numbers(a, b) -> bool:
    """``a`` and ``b`` (JSON) hold the same keys, texts and numbers, these to float rounding (1e-12): the page and
    the command measure the same keyed cells with the same draws."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_numbers, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b
