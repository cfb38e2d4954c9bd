"""``--save`` on evaluate, groups and drift, and ``python -m calibdash runs``: a saved run holds the command's JSON
document exactly, a nightly series builds a history, and the runs are listed, shown, exported, shared and deleted."""
from __future__ import annotations

import json

import pytest

from calibdash import cli
from calibdash.io.runs import Workspace
from tests.conftest import REPO

CIRCLES = str(REPO / "sample_data" / "circles_svm.csv")
DRIFT = str(REPO / "sample_data" / "drift.csv")


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBDASH_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("CALIBDASH_USER", raising=False)
    return tmp_path / "ws"


def _run(capsys, *argv, status: int = 0) -> tuple[str, str]:
    assert cli.main(list(argv)) == status
    return capsys.readouterr()


def _saved_id(err: str) -> str:
    line = next(x for x in err.splitlines() if x.startswith("saved run "))
    return line.split()[2]


def test_evaluate_save_keeps_the_json_document_models_and_reliability(ws, capsys):
    plain = json.loads(_run(capsys, "evaluate", CIRCLES, "--methods", "platt,isotonic", "--json")[0])
    out, err = _run(capsys, "evaluate", CIRCLES, "--methods", "platt,isotonic", "--json", "--save", "circles",
                    "--tag", "model=svm", "--tag", "version=1")
    assert json.loads(out) == plain                                   # saving changes nothing printed
    run = Workspace(ws).open(_saved_id(err))
    assert run.results == plain and run.record.tags == {"model": "svm", "version": "1"}
    assert run.record.owner == "" and run.record.visibility == "all"  # the server's own run
    assert set(run.models) == {"platt", "isotonic"} and run.models["platt"]["kind"] == "binary"
    assert set(run.diagrams["methods"]) == {"uncalibrated", "platt", "isotonic"}
    assert sum(run.diagrams["methods"]["platt"]["count"]) == plain["rows_judged"]
    assert run.record.headline["platt"]["ECE"] == plain["metrics"]["platt"]["ECE"]
    shown = json.loads(_run(capsys, "runs", "show", run.record.id, "--json")[0])
    assert shown["results"] == plain and shown["run"]["tags"] == {"model": "svm", "version": "1"}


def test_a_nightly_series_keeps_its_thresholds_and_alerts(ws, capsys):
    for _ in range(2):
        out, err = _run(capsys, "groups", DRIFT, "--by", "segment", "--fail-above", "ECE=0.05", "--json",
                        "--save", "nightly", status=1)               # alerts still exit 1
    listed = json.loads(_run(capsys, "runs", "list", "--name", "nightly", "--json")[0])
    assert len(listed["runs"]) == 2 and {r["kind"] for r in listed["runs"]} == {"groups"}
    run = Workspace(ws).open(listed["runs"][0]["id"])
    assert run.results == json.loads(out) and run.results["alerts"]
    assert run.view["thresholds"] == {"ECE": 0.05}
    assert run.record.headline["app"]["ECE"] == next(g["ECE"]["value"] for g in run.results["groups"]
                                                     if g["key"] == "app")


def test_drift_save_and_the_text_list(ws, capsys):
    _, err = _run(capsys, "drift", DRIFT, "--time", "date", "--period", "month", "--save", "monthly")
    run_id = _saved_id(err)
    out, _ = _run(capsys, "runs", "list")
    assert out.startswith("1 run(s) in ") and run_id in out and "drift" in out and "monthly" in out


def test_an_older_id_starting_with_a_dash_is_reached_after_two_dashes(ws, capsys, tmp_path, monkeypatch):
    """New ids never start with '-' (:func:`calibdash.io.runs.new_run_id`); an older one is given after ``--``, as
    the id's help says."""
    from calibdash.io.runs import store
    monkeypatch.setattr(store, "new_run_id", lambda: "-olderRunId01234")
    _run(capsys, "evaluate", CIRCLES, "--methods", "platt", "--save", "old")
    with pytest.raises(SystemExit):                                   # argparse reads it as an option
        cli.main(["runs", "export", "-olderRunId01234", "--out", str(tmp_path / "a")])
    _run(capsys, "runs", "export", "--out", str(tmp_path / "b"), "--", "-olderRunId01234")
    assert json.loads((tmp_path / "b" / "run.json").read_text())["results"]["file"] == "circles_svm.csv"


def test_export_share_and_delete(ws, capsys, tmp_path):
    _, err = _run(capsys, "evaluate", CIRCLES, "--methods", "platt", "--save", "mine", "--owner", "ann@x.org")
    run_id = _saved_id(err)
    wrote = json.loads(_run(capsys, "runs", "export", run_id, "--out", str(tmp_path / "out"), "--json")[0])
    assert [p.rsplit("/", 1)[1] for p in wrote["files"]] == ["run.json"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["results"]["file"] == "circles_svm.csv"
    # another user: not shared, cannot share or delete; the owner shares, then deletes
    _, err = _run(capsys, "runs", "show", run_id, "--user", "bob@x.org", status=2)
    assert "is not shared with you" in err
    _run(capsys, "runs", "share", run_id, "--with", "bob@x.org", "--user", "ann@x.org")
    assert json.loads(_run(capsys, "runs", "show", run_id, "--user", "bob@x.org", "--json")[0])["run"]["id"] == run_id
    _, err = _run(capsys, "runs", "delete", run_id, "--user", "bob@x.org", status=2)
    assert "Only the owner" in err
    out, _ = _run(capsys, "runs", "delete", run_id, "--user", "ann@x.org")
    assert out.strip() == f"deleted run {run_id}"
    _, err = _run(capsys, "runs", "show", run_id, status=2)
    assert err.startswith("error: No saved run has the id") and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (("runs", "show", "../../etc/passwd"), "No saved run has the id"),
    (("evaluate", CIRCLES, "--save", "x", "--tag", "novalue"), "--tag takes KEY=VALUE"),
])
def test_bad_run_requests_are_one_line_errors(ws, capsys, argv, message):
    _, err = _run(capsys, *argv, status=2)
    assert message in err and err.count("\n") == 1
