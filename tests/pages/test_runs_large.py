"""Saved runs of a large source: Save run on Compare, Explore and Groups & time keeps the source's spec and the score
cells the view read (never its rows), and the run's link opens in a fresh session of a restarted server with the
same numbers, from the saved cells, without a job; the same once the lake's files are deleted, with a note saying so.

The lakes: two Parquet files of 6,000 rows each (scores on a 0.001 grid: exact cells), and the drift sample (20,000
rows with a date and a segment) in two Parquet files, as tests/pages/test_app_segments_large.py. The pages run
through app.py with the large source active (``SYNCHRONOUS``: AppTest cannot poll a job's fragment). A restart is
every cache and store of the process emptied; a job started after it fails the test (``_no_job``). Numbers:
Compare's table shows each measure to 4 decimals, compared as the saved JSON's value printed so; Explore's table
holds the numbers, compared to 1e-12; the opened view, saved again, gives the saved JSON to float rounding (1e-12):
the same cells, settings and seeds give the same arithmetic.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from calibdash.engines import plan as cplan
from calibdash.engines.plan import LargeSource
from calibdash.io.runs import Workspace
from calibdash.monitoring.keyed import KeyedCells
from pages.parts import bounded_cache, large_source, runs
from pages.parts.labels import method_labels
from tests.conftest import APPTEST_TIMEOUT
from tests.pages.test_app import APP, COMPARE, _run_entry_point_every_time, assert_clean, go, shown  # noqa: F401
from calibdash.samples.drifting_score import make_drift
from tests.pages.test_app_segments import _cli_json, _commands, _same_as_records, _same_numbers
from tests.pages.test_app_segments_large import NAMES

METHODS = ["platt", "isotonic", "histogram"]


@pytest.fixture
def lake(tmp_path, monkeypatch):
    """A data root with a two-file Parquet glob, and a workspace of this test's own."""
    root = tmp_path / "lake"
    (root / "scores").mkdir(parents=True)
    rng = np.random.default_rng(3)
    for i in range(2):
        s = np.round(rng.beta(2, 5, 6000), 3)
        y = (rng.random(6000) < np.clip(1.3 * s, 0, 1)).astype(int)
        pd.DataFrame({"p": s, "clicked": y, "region": rng.choice(["n", "s"], 6000)}).to_parquet(
            root / "scores" / f"part-{i}.parquet", index=False)
    yield from _served(root, tmp_path, monkeypatch)


@pytest.fixture
def drift_lake(tmp_path, monkeypatch):
    """The drift sample in two Parquet files."""
    root = tmp_path / "lake"
    (root / "scores").mkdir(parents=True)
    df = make_drift()
    for i, part in enumerate(np.array_split(np.arange(len(df)), 2)):
        df.iloc[part].to_parquet(root / "scores" / f"drift-{i}.parquet", index=False)
    yield from _served(root, tmp_path, monkeypatch)


def _served(root, tmp_path, monkeypatch):
    """The app's settings for ``root`` (its data root) and a workspace of the test's own; emptied caches around."""
    monkeypatch.setenv("CALIBDASH_DATA_ROOT", str(root))
    monkeypatch.setenv("CALIBDASH_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setattr(large_source, "SYNCHRONOUS", True)
    _restart()
    yield root
    _restart()


def _restart() -> None:
    """What a restarted server keeps of the source: nothing (every cache and store of the process emptied)."""
    st.cache_data.clear()
    st.cache_resource.clear()
    for cache in bounded_cache.CACHES.values():
        cache.clear()
    for store in (large_source.CELLS, large_source.KEYED, large_source.READS):
        store.clear()


def _no_job(*args, **kwargs):
    raise AssertionError("opening a saved run started a job on the lake")


def _table(at: AppTest) -> pd.DataFrame:
    """Compare's measures table as shown: 'value [low, high]' texts."""
    (table,) = [d.value for d in at.main.dataframe if "ECE" in d.value.columns and "Uncalibrated" in d.value.index]
    return table.astype(str)


def _same_as_saved(table: pd.DataFrame, results: dict) -> None:
    """Every value in the table is the saved JSON's value printed as the page prints it (4 decimals)."""
    names = method_labels(results["metrics"])
    assert sorted(table.index) == sorted(names.values()) and len(table.columns) >= 5
    for method, values in results["metrics"].items():
        for measure in table.columns:
            assert table.loc[names[method], measure].split(" [")[0] == f"{values[measure]:.4f}", (method, measure)


def _same_floats(table: pd.DataFrame, results: dict) -> None:
    """Explore's measures table (the numbers themselves) holds the saved JSON's values to float rounding."""
    names = method_labels(results["metrics"])
    assert sorted(table.index) == sorted(names.values()) and len(table.columns) >= 5
    for method, values in results["metrics"].items():
        for measure in table.columns:
            assert table.loc[names[method], measure] == pytest.approx(values[measure], rel=1e-12, abs=1e-12)


def _open_link(run_id: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    return at.run()


def _save(at: AppTest, name: str, page: str = "compare") -> str:
    at.text_input(key=f"runs.{page}.name").set_value(name)
    at.button(key=f"runs.{page}.save").click().run()
    assert_clean(at)
    return at.session_state["runs.last_saved"]


def _aggregated(glob: str) -> AppTest:
    """A session whose active source is the large source ``glob``, aggregated."""
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.session_state["source"] = large_source.LARGE
    at.switch_page("pages/data.py").run()
    at.text_input(key="large.path").set_value(glob).run()
    at.button(key="large.aggregate").click().run()
    assert_clean(at)
    return at


def _forbid_jobs(monkeypatch) -> None:
    """Any job on the lake (aggregating, reading its columns) fails the test from now on."""
    monkeypatch.setattr(LargeSource, "aggregate", _no_job)
    monkeypatch.setattr(LargeSource, "aggregate_keyed", _no_job)
    monkeypatch.setattr(cplan, "read_schema", _no_job)


def _delete(root) -> None:
    for f in (root / "scores").iterdir():
        f.unlink()


def test_a_large_source_s_run_opens_from_its_cells_with_the_saved_numbers(lake, monkeypatch):
    at = _aggregated("scores/part-*.parquet")
    at.number_input(key="scheme.seed").set_value(5).run()              # a new split: aggregated again
    go(at, COMPARE)
    at.multiselect(key="compare.methods").set_value(METHODS).run()
    at.select_slider(key="hp.histogram.n_bins").set_value(7).run()
    assert_clean(at)
    table = _table(at)
    run_id = _save(at, "lake v1")
    run = Workspace().open(run_id)
    assert run.holds == "cells" and sorted(p.name for p in run.folder.iterdir()) == ["cells.parquet", "run.json"]
    assert run.source["spec"] == {"kind": "files", "path": "scores/part-*.parquet",
                                  "roles": {"score": "p", "label": "clicked", "split": ""}}
    assert run.results["engine"] == "duckdb" and run.results["positive"] == 1 and set(run.models) == set(METHODS)
    assert run.results["validation"]["rows_read"] == 12_000 and run.record.dataset.startswith("2 files")
    lake_bytes = sum(f.stat().st_size for f in (lake / "scores").iterdir())
    assert (run.folder / "cells.parquet").stat().st_size < lake_bytes            # cells, not a copy of the rows
    _same_as_saved(table, run.results)
    go(at, "pages/explore.py")
    at.selectbox(key="explore.method").set_value("isotonic").run()
    explored = Workspace().open(_save(at, "lake v1 isotonic", "explore"))
    assert explored.holds == "cells" and explored.view["page"] == "explore"
    _same_floats(at.main.dataframe[0].value, explored.results)

    _forbid_jobs(monkeypatch)
    for gone in (False, True):
        if gone:                                            # the lake's files deleted: the run opens from its cells
            _delete(lake)
        _restart()
        opened = _open_link(run_id)                         # a teammate's fresh session on a restarted server
        assert_clean(opened)
        assert opened.session_state["source"] == large_source.LARGE
        assert opened.multiselect(key="compare.methods").value == METHODS
        assert opened.session_state["hp.histogram.n_bins"] == 7 and opened.session_state["scheme.seed"] == 5
        pd.testing.assert_frame_equal(_table(opened), table)
        _same_as_saved(_table(opened), run.results)
        note = [shown(c.value) for c in opened.main.caption if "saved run's source" in shown(c.value)]
        assert bool(note) == gone and (not gone or "cannot be read now" in note[0])
        again = Workspace().open(_save(opened, f"lake v1 again {gone}"))    # the opened view saves the same JSON
        assert _same_numbers(again.results, run.results) and again.source == run.source
        _restart()
        opened = _open_link(explored.record.id)
        assert_clean(opened)
        assert opened.selectbox(key="explore.method").value == "isotonic"
        _same_floats(opened.main.dataframe[0].value, explored.results)


def test_a_groups_and_time_run_of_a_large_source_opens_from_its_keyed_cells(drift_lake, capsys, monkeypatch):
    """By group and over time: the saved JSON is the shown command's (``--engine duckdb``) to 1e-12, and the links
    open after a restart with the lake deleted, showing the same tables from the saved keyed cells."""
    at = _aggregated("scores/drift-*.parquet")
    go(at, "pages/segments.py")
    saved = {}
    for view, kind, records in (("By group", "groups", "groups"), ("Over time", "drift", "periods")):
        at.segmented_control[0].set_value(view).run()
        assert_clean(at)
        tables = [d.value for d in at.main.dataframe]
        run = Workspace().open(_save(at, f"nightly {kind}", "segments"))
        assert run.holds == "cells" and run.record.kind == kind and run.results["engine"] == "duckdb"
        assert sum(isinstance(c, KeyedCells) for c in run.cells().values()) == 1 and run.rows() is None
        monkeypatch.chdir(drift_lake)                       # the command names the glob under the data root
        got = _cli_json(_commands(at)[-1], drift_lake / "unused", capsys)
        assert _same_numbers(run.results[records], got[records]) and run.results["binning"] == got["binning"]
        _same_as_records(tables[0], run.results[records], NAMES)
        saved[run.record.id] = (view, tables, run.results)
    _delete(drift_lake)
    _forbid_jobs(monkeypatch)
    for run_id, (view, tables, results) in saved.items():
        _restart()
        opened = _open_link(run_id)
        assert_clean(opened)
        assert opened.segmented_control[0].value == view
        for shown_now, shown_then in zip([d.value for d in opened.main.dataframe], tables, strict=True):
            pd.testing.assert_frame_equal(shown_now, shown_then)
        assert any("cannot be read now" in shown(c.value) for c in opened.main.caption)
        again = Workspace().open(_save(opened, "again", "segments"))
        assert _same_numbers(again.results, results)
