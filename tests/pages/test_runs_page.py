"""Saved runs in the pages: a run's link opens its rows in its saved view with the same numbers, a bad link shows
why and no data, and the Runs page lists, compares, plots a series' history and deletes."""
from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash.io.runs import Workspace
from tests.conftest import APPTEST_TIMEOUT
from tests.pages.test_app import (APP, COMPARE, _run_entry_point_every_time, assert_clean, charts, errors,  # noqa: F401
                                  go, metrics_table, scores_csv, sidebar_text, start, upload)

RUNS = "pages/runs.py"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A workspace of this test's own (the pages open it through CALIBDASH_WORKSPACE)."""
    from pages.parts import runs
    monkeypatch.setenv("CALIBDASH_WORKSPACE", str(tmp_path / "ws"))
    runs.workspace.clear()
    yield Workspace()
    runs.workspace.clear()


def _open_link(run_id: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    return at.run()


def _saved_compare(workspace) -> tuple[str, pd.DataFrame]:
    """A Compare view on an upload, chosen in the pages (methods, a hyperparameter, the scheme's seed), saved
    with the page's Save button; returns its id and the metrics table the page showed."""
    at = start("pages/data.py")
    upload(at, "team_scores.csv", scores_csv(400, seed=11))
    at.number_input(key="scheme.seed").set_value(5).run()
    go(at, COMPARE)
    at.multiselect(key="compare.methods").set_value(["platt", "isotonic", "histogram"]).run()
    at.select_slider(key="hp.histogram.n_bins").set_value(7).run()
    assert_clean(at)
    shown = metrics_table(at)
    at.text_input(key="runs.compare.name").set_value("scores v1")
    at.text_input(key="runs.compare.tags").set_value("model=churn, version=1")
    at.button(key="runs.compare.save").click().run()
    assert_clean(at)
    run_id = at.session_state["runs.last_saved"]
    assert any(run_id in s.value for s in at.success)
    run = workspace.open(run_id)
    assert run.record.tags == {"model": "churn", "version": "1"} and run.record.name == "scores v1"
    assert set(run.models) == {"platt", "isotonic", "histogram"} and run.results["file"] == "team_scores.csv"
    assert run.results["metrics"]["histogram"]["ECE"] == pytest.approx(shown.loc["Histogram binning", "ECE"],
                                                                        abs=5e-4)     # the table shows 3 places
    assert len(run.rows()) == 400
    return run_id, shown


def test_a_run_link_opens_the_saved_view_with_the_same_numbers(workspace):
    run_id, shown = _saved_compare(workspace)
    at = _open_link(run_id)                                          # a new session, as a teammate's browser
    assert_clean(at)
    assert at.session_state["source"] == "Upload" and at.session_state["upload"]["name"] == "team_scores.csv"
    assert at.multiselect(key="compare.methods").value == ["platt", "isotonic", "histogram"]
    assert at.session_state["hp.histogram.n_bins"] == 7 and at.session_state["scheme.seed"] == 5
    pd.testing.assert_frame_equal(metrics_table(at), shown)
    at.button(key="runs.compare.save").click().run()                 # saved again by the teammate: the same name
    again = workspace.open(at.session_state["runs.last_saved"])
    assert again.results["file"] == again.record.dataset == "team_scores.csv" and len(again.rows()) == 400
    # after a restart (a new workspace object on the same folder): the same
    from pages.parts import runs
    runs.workspace.clear()
    pd.testing.assert_frame_equal(metrics_table(_open_link(run_id)), shown)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "AAAAAAAAAAAAAAAA", "x"])
def test_a_bad_run_link_says_why_and_shows_no_data(workspace, bad):
    at = _open_link(bad)
    assert not at.exception
    assert "This run cannot be opened" in errors(at) and "No saved run has the id" in errors(at)
    assert not at.main.dataframe and not at.get("plotly_chart")


def test_a_deleted_run_s_link_says_so(workspace):
    rec = workspace.save(name="gone", kind="evaluate", dataset="d.csv", results={})
    workspace.delete(rec.id)
    at = _open_link(rec.id)
    assert "was deleted" in errors(at) and not at.main.dataframe


def test_the_runs_page_lists_compares_and_draws_a_series_history(workspace):
    at = start()
    assert "anyone who reaches it sees every saved run" in sidebar_text(at)
    go(at, RUNS)
    assert_clean(at)
    assert "No saved runs yet" in " ".join(i.value for i in at.info)
    bins = {"mean_pred": [0.2, 0.6], "obs_freq": [0.25, 0.5], "count": [10, 12]}
    a = workspace.save(name="v1", kind="evaluate", dataset="d.csv", tags={"model": "v1"},
                       results={"metrics": {"platt": {"ECE": 0.05, "Brier": 0.2}, "isotonic": {"ECE": 0.04}}},
                       diagrams={"methods": {"platt": bins, "isotonic": bins}})
    b = workspace.save(name="v2", kind="evaluate", dataset="d.csv", tags={"model": "v2"},
                       results={"metrics": {"platt": {"ECE": 0.03, "Brier": 0.19}}},
                       diagrams={"methods": {"platt": {**bins, "obs_freq": [0.2, 0.62]}}})
    for i, ece in enumerate((0.02, 0.04, 0.07)):
        workspace.save(name="nightly", kind="groups", dataset="lake", view={"thresholds": {"ECE": 0.05}},
                       results={"overall": {"ECE": {"value": ece}}, "groups": [{"key": "app", "ECE": {"value": ece
                                                                                                     + 0.01}}]})
    at.run()
    assert_clean(at)
    listed = at.main.dataframe[0].value
    assert len(listed) == 5 and set(listed["id"]) >= {a.id, b.id} and listed["open"].iloc[0].startswith("?run=")
    at.selectbox(key="runs.tag").set_value("model=v2").run()
    assert list(at.main.dataframe[0].value["id"]) == [b.id]
    at.selectbox(key="runs.tag").set_value("(all)").run()
    at.selectbox(key="runs.a").set_value(a.id).run()
    at.selectbox(key="runs.b").set_value(b.id).run()
    diff = at.main.dataframe[1].value
    assert diff[["method", "measure"]].values.tolist() == [["platt", "ECE"], ["platt", "Brier"]]
    assert diff["B - A"].tolist() == pytest.approx([0.03 - 0.05, 0.19 - 0.2], abs=1e-15)
    pair = charts(at)["runs.pair"]                   # the methods both runs hold, A solid and B dashed
    assert [(t["name"], t["line"].get("dash")) for t in pair["data"][1:]] == [("platt · v1", "solid"),
                                                                             ("platt · v2", "dash")]
    assert pair["data"][2]["y"] == [0.2, 0.62]
    spec = charts(at)["runs.history"]
    lines = {t["name"]: t["y"] for t in spec["data"]}
    assert set(lines) == {"(all rows)", "app"}
    assert any(s.get("y0") == 0.05 for s in spec["layout"]["shapes"])         # the alert threshold
    at.selectbox(key="runs.pick").set_value(a.id).run()
    at.button(key="runs.delete").click().run()
    assert_clean(at)
    assert a.id not in set(at.main.dataframe[0].value["id"]) and len(workspace.list(None)) == 4


def test_a_command_line_run_s_link_shows_its_saved_numbers(workspace, capsys):
    from calibdash import cli
    from tests.conftest import REPO
    assert cli.main(["evaluate", str(REPO / "sample_data" / "circles_svm.csv"), "--methods", "platt,bbq",
                     "--save", "from cron", "--tag", "model=svm"]) == 0
    run_id = capsys.readouterr().err.split("saved run ")[1].split()[0]
    saved = workspace.open(run_id).results["metrics"]
    at = _open_link(run_id)
    assert_clean(at)
    assert at.title[0].value == "Saved runs" and at.subheader[0].value == "from cron"
    table = at.main.dataframe[0].value
    assert list(table.index) == ["uncalibrated", "platt", "bbq"]
    for method, values in saved.items():
        for name, value in values.items():
            assert table.loc[method, name] == value                   # every number as the JSON holds it
    assert "runs.shown.reliability" in charts(at)


def test_names_from_a_run_are_shown_as_text_and_its_command_splits_back(workspace):
    import shlex
    from pages.parts.text import md
    name, argv = "**bold** <b>x</b> [link](http://e.org)", ["groups", "my file.csv", "--by", "seg`ment"]
    rec = workspace.save(name=name, kind="groups", dataset="`d`.csv", tags={"*k*": "_v_"},
                         view={"command": "groups", "argv": argv}, results={"groups": []})
    at = _open_link(rec.id)
    assert_clean(at)
    assert at.subheader[0].value == md(name) != name
    caption = at.main.caption[0].value
    assert md("`d`.csv") in caption and md("*k*=_v_") in caption
    assert shlex.split(at.code[0].value) == ["python", "-m", "calibdash", *argv]
