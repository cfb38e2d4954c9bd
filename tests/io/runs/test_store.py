"""The workspace of saved runs, on its SQLite catalog and on a real PostgreSQL server: what is saved opens the same,
access follows the owner's sharing, ids never reach a path, saves are atomic and concurrent saves lose nothing."""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import time

import numpy as np
import pandas as pd
import pytest

from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.cells import ScoreCells, aggregate
from calibdash.monitoring.keyed import Key, KeyedCells
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.io.runs import (NotTheOwner, QuotaReached, RunNotFound, RunNotShared, Workspace, check_run_id,
                               headline_of)

RESULTS = {"file": "scores.csv", "metrics": {"uncalibrated": {"ECE": 0.25, "Brier": 0.2, "AUC": 0.7, "MCE": 0.9},
                                             "platt": {"ECE": 0.03125, "Brier": 0.18, "AUC": 0.7}}}


@pytest.fixture(params=["sqlite", "postgresql"])
def workspace(request, tmp_path):
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return Workspace(tmp_path / "ws", catalog=url)


def _save(ws, **kw):
    args = dict(name="nightly", kind="evaluate", dataset="scores.csv", results=RESULTS, owner="ann@x.org")
    return ws.save(**{**args, **kw})


def test_a_saved_run_opens_with_the_same_contents(workspace):
    rows = pd.DataFrame({"score": np.linspace(0, 1, 101), "label": np.arange(101) % 2, "g": list("ab" * 50) + ["c"]})
    view = {"page": "compare", "methods": {"platt": {}, "bbq": {"n_models": 50}}, "scheme": "split", "seed": 3}
    models = {"platt": {"format": "calibdash-model", "version": 2, "a": -1.5}}
    rec = _save(workspace, view=view, models=models, rows=rows, tags={"model": "m", "version": 2})
    run = workspace.open(rec.id, "ann@x.org")
    assert (run.view, run.results, run.models) == (view, RESULTS, models)
    pd.testing.assert_frame_equal(run.rows(), rows)
    assert run.record == rec and rec.tags == {"model": "m", "version": "2"}
    assert rec.headline == {"uncalibrated": {"ECE": 0.25, "Brier": 0.2, "AUC": 0.7}, "platt": RESULTS["metrics"]["platt"]}
    assert rec.bytes == sum(p.stat().st_size for p in run.folder.iterdir()) > 0
    # a new Workspace on the same folder and catalog (a restarted server) opens it the same
    again = Workspace(workspace.folder, catalog=workspace.catalog.url).open(rec.id, "ann@x.org")
    assert again.results == RESULTS and again.record == rec


def _cells():
    """A large source's cells as the pages keep them: the all-rows cells, a split's cells and cells keyed by period
    (a date column with rows left out) and by group, from 5,000 rows."""
    rng = np.random.default_rng(4)
    s = np.round(rng.beta(2, 5, 5000), 3)
    y = (rng.random(5000) < s).astype(int)
    part = (np.arange(5000) % 4 == 0).astype(int)
    dates = pd.Series(pd.date_range("2025-01-01", periods=5000, freq="2h").astype(str)).where(s > 0.05)
    return {"all": aggregate(s, y), "split": aggregate(s, y, part),
            "time": keyed_cells(s, y, dates, Key("date", "period"), part),
            "site": keyed_cells(s, y, rng.choice(["app", "web", "store"], 5000), Key("site", min_rows=10))}


def _same_cells(a, b) -> None:
    """Equal arrays (values and dtypes) and equal scalars."""
    for c, d in ((a, b), (a.cells, b.cells)) if isinstance(a, KeyedCells) else ((a, b),):
        for f in dataclasses.fields(c):
            x, z = getattr(c, f.name), getattr(d, f.name)
            if isinstance(x, np.ndarray):
                assert x.dtype == z.dtype and np.array_equal(x, z), f.name
            elif not isinstance(x, ScoreCells):
                assert x == z, f.name


def test_a_large_source_s_run_keeps_its_cells_and_source_never_rows(workspace):
    source = {"spec": {"kind": "files", "path": "scores/part-*.parquet", "roles": {"score": "p", "label": "y"}},
              "plan": {"files": ["/lake/scores/part-0.parquet"], "identity": ["files", "parquet", [[1, 2]]]}}
    cells = _cells()
    assert cells["time"].n_left_out > 0 and cells["time"].starts and cells["time"].notes
    rec = _save(workspace, cells=cells, source=source, dataset="scores/part-*.parquet")
    run = workspace.open(rec.id, "ann@x.org")
    assert sorted(p.name for p in run.folder.iterdir()) == ["cells.parquet", "run.json"]      # no rows file
    assert json.loads((run.folder / "run.json").read_text())["holds"] == "cells" == run.holds
    assert run.rows() is None and run.source == source and run.results == RESULTS
    again = Workspace(workspace.folder, catalog=workspace.catalog.url).open(rec.id)        # a restarted server
    for got in (run.cells(), again.cells()):
        assert list(got) == list(cells)
        for name, value in cells.items():
            assert type(got[name]) is type(value)
            _same_cells(got[name], value)
    assert rec.bytes == sum(p.stat().st_size for p in run.folder.iterdir())            # counted in the quota
    plain = workspace.open(_save(workspace).id)
    assert plain.holds is None and plain.cells() is None


def test_a_run_keeps_rows_or_cells_and_only_featureless_cells(tmp_path):
    ws = Workspace(tmp_path / "ws")
    cells = _cells()
    with pytest.raises(SettingsError, match="not both"):
        _save(ws, cells=cells, rows=pd.DataFrame({"p": [0.5]}))
    featured = dataclasses.replace(cells["all"], features=pd.DataFrame({"x": np.zeros(len(cells["all"]))}))
    with pytest.raises(DataError, match="without feature columns"):
        _save(ws, cells={"all": featured})
    assert list(ws.runs_folder.iterdir()) == [] and ws.list(None) == []                   # nothing half kept


def test_the_list_filters_and_puts_the_newest_first(workspace):
    a = _save(workspace, tags={"model": "v1"})
    b = _save(workspace, dataset="other.csv", tags={"model": "v2"}, owner="bob@x.org", visibility="all")
    c = _save(workspace, name="adhoc", kind="groups", results={"overall": {"ECE": {"value": 0.1}}, "groups": []})
    assert [r.id for r in workspace.list(None)] == [c.id, b.id, a.id]
    assert [r.id for r in workspace.list(None, dataset="other.csv")] == [b.id]
    assert [r.id for r in workspace.list(None, tag=("model", "v1"))] == [a.id]
    assert [r.id for r in workspace.list(None, owner="ann@x.org")] == [c.id, a.id]
    assert [r.id for r in workspace.list(None, name="nightly")] == [b.id, a.id]
    assert [r.id for r in workspace.list(None, kind="groups")] == [c.id]
    assert [r.id for r in workspace.list(None, since=b.saved_at, until=c.saved_at)] == [b.id]
    assert c.headline == {"(all rows)": {"ECE": 0.1}}


def test_access_follows_the_owner_s_sharing(workspace):
    rec = _save(workspace)
    with pytest.raises(RunNotShared, match="not shared with you"):
        workspace.open(rec.id, "bob@x.org")
    assert workspace.list("bob@x.org") == []
    with pytest.raises(RunNotShared):
        workspace.share(rec.id, "bob@x.org", "all")
    workspace.share(rec.id, "ann@x.org", "private", ["bob@x.org"])
    assert workspace.open(rec.id, "bob@x.org").results == RESULTS
    with pytest.raises(NotTheOwner, match=r"Only the owner .* \(ann@x.org\) can share"):
        workspace.share(rec.id, "bob@x.org", "all")
    with pytest.raises(RunNotShared):
        workspace.open(rec.id, "cid@x.org")
    workspace.share(rec.id, "ann@x.org", "all")
    assert workspace.open(rec.id, "cid@x.org").record.visibility == "all"
    with pytest.raises(NotTheOwner, match="can delete"):
        workspace.delete(rec.id, "cid@x.org")
    workspace.delete(rec.id, "ann@x.org")
    with pytest.raises(RunNotFound, match="deleted"):
        workspace.open(rec.id, "ann@x.org")
    assert not (workspace.runs_folder / rec.id).exists()
    # without sign-in (user None) every run is seen and managed
    other = _save(workspace, owner="bob@x.org")
    assert workspace.open(other.id, None).record.owner == "bob@x.org"
    workspace.delete(other.id, None)


@pytest.mark.parametrize("forged", ["../../etc/passwd", "", "x" * 15, "aaaaaaaaaaaaaaa/", "a" * 17, None, 42,
                                    "..%2F..%2Fcatalog", "A" * 16])
def test_forged_ids_reach_no_path(workspace, forged):
    outside = workspace.folder.parent / "secret"
    outside.mkdir(exist_ok=True)
    with pytest.raises(RunNotFound, match="No saved run has the id"):
        workspace.open(forged, None)
    with pytest.raises(RunNotFound):
        workspace.delete(forged, None)
    assert outside.exists()


def test_check_run_id_takes_only_the_id_form():
    assert check_run_id("abcDEF0123_-xyzW") == "abcDEF0123_-xyzW"
    for bad in ("abcDEF0123_-xyz/", "abcDEF0123_-xyz", "abcDEF0123_-xyzW\n"):
        with pytest.raises(RunNotFound):
            check_run_id(bad)


def test_a_new_run_id_never_starts_with_a_dash(monkeypatch):
    """One id in 64 began with '-', which the command line reads as an option (`runs export -Xy...` failed)."""
    from calibdash.io.runs import store
    drawn = iter(["-startsWithDash0", "-startsWithDash1", "fineId_-0123456A"])
    monkeypatch.setattr(store.secrets, "token_urlsafe", lambda n: next(drawn))
    assert store.new_run_id() == "fineId_-0123456A"
    monkeypatch.undo()
    assert all(not store.new_run_id().startswith("-") and check_run_id(store.new_run_id()) for _ in range(2000))


def test_the_quota_refuses_and_keeps_nothing(tmp_path):
    ws = Workspace(tmp_path / "ws", quota_mb=0.01)                 # 10,485 bytes
    _save(ws, results={"pad": "x" * 4000})
    with pytest.raises(QuotaReached, match=r"over your quota of 0 MB\. Delete runs"):
        _save(ws, results={"pad": "x" * 9000})
    assert len(ws.list(None)) == 1 and len(list(ws.runs_folder.iterdir())) == 1
    _save(ws, owner="bob@x.org", results={"pad": "x" * 9000})     # a quota per user


def test_bad_settings_are_refused(tmp_path):
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(SettingsError, match="kind"):
        _save(ws, kind="report")
    with pytest.raises(SettingsError, match="'private'"):
        _save(ws, visibility="public")
    with pytest.raises(ValueError, match="needs a name"):
        _save(ws, name="  ")
    with pytest.raises(SettingsError, match="CALIBDASH_CATALOG"):
        Workspace(tmp_path / "ws", catalog="mysql://x")
    assert list(ws.runs_folder.iterdir()) == []


def _save_then_die(folder, url):
    """Save a run but die (as a killed server would) after its files are in place and before the catalog has it."""
    ws = Workspace(folder, catalog=url)
    ws.catalog.insert = lambda *a, **k: os._exit(3)
    _save(ws)


def test_a_save_killed_before_the_catalog_leaves_no_run(workspace):
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_save_then_die, args=(workspace.folder, workspace.catalog.url))
    p.start()
    p.join()
    assert p.exitcode == 3
    orphans = [d.name for d in workspace.runs_folder.iterdir()]
    assert len(orphans) == 1 and workspace.list(None) == []
    with pytest.raises(RunNotFound):
        workspace.open(orphans[0], None)
    assert workspace.sweep() == []                                   # a save may still be in progress: kept
    assert workspace.sweep(older_than=0) == orphans
    assert list(workspace.runs_folder.iterdir()) == []


def test_a_failed_catalog_write_removes_the_files(workspace, monkeypatch):
    def refuse(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(workspace.catalog, "insert", refuse)
    with pytest.raises(OSError, match="disk full"):
        _save(workspace)
    assert list(workspace.runs_folder.iterdir()) == []


def _save_one(folder, url, i, start):
    while time.time() < start:
        time.sleep(0.001)
    ws = Workspace(folder, catalog=url)
    rows = pd.DataFrame({"score": np.full(20_000, i / 10), "label": np.arange(20_000) % 2})
    ws.save(name=f"run {i}", kind="evaluate", dataset="d.csv", results={"i": i}, rows=rows, owner=f"u{i}@x.org")


def test_five_sessions_saving_at_once_lose_nothing(workspace):
    ctx = multiprocessing.get_context("spawn")
    start = time.time() + 3.0
    procs = [ctx.Process(target=_save_one, args=(workspace.folder, workspace.catalog.url, i, start))
             for i in range(5)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0] * 5
    runs = workspace.list(None)
    assert sorted(r.name for r in runs) == [f"run {i}" for i in range(5)]
    for r in runs:
        run = workspace.open(r.id, None)
        i = run.results["i"]
        assert r.name == f"run {i}" and (run.rows()["score"] == i / 10).all() and len(run.rows()) == 20_000


def test_headlines_of_groups_and_drift_read_each_part_s_measures():
    groups = {"overall": {"rows": 10, "ECE": 0.1, "key": "x"},                   # the whole data: plain numbers
              "groups": [{"key": "app", "ECE": {"value": 0.2}, "AUC": {"value": 0.7}}]}
    assert headline_of("groups", groups) == {"(all rows)": {"ECE": 0.1}, "app": {"ECE": 0.2, "AUC": 0.7}}
    drift = {"periods": [{"key": "2025-01", "start": "2025-01-01", "Brier": {"value": 0.3}}]}
    assert headline_of("drift", drift) == {"2025-01": {"Brier": 0.3}}
    assert json.dumps(headline_of("evaluate", {"metrics": {"m": {"ECE": 0.1, "reading": "x"}}})) == \
        '{"m": {"ECE": 0.1}}'
