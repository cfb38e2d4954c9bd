"""AppTest of "Groups & time" (pages/segments.py) on a large source: keyed cells aggregated by DuckDB as a job on
the data root's connection, the same views as on an upload, and the numbers of the command the page names.

The data root holds the drift sample (20,000 rows: a date, a segment, a score, a label) as two Parquet files. The
page runs through app.py with the large source active (``SYNCHRONOUS``: AppTest cannot poll the job's fragment).
Tolerances: the page and ``groups``/``drift --engine duckdb`` aggregate the same rows into the same exact keyed
cells and measure them with the same code and seeds (tests/cli/test_cli_monitor.py), so the page's 4-decimal text is
the command's value printed the same way.
"""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from calibdash.monitoring.group_metrics import STATS
from calibdash.monitoring.keyed import Key
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.samples.drifting_score import make_drift
from tests.conftest import APPTEST_TIMEOUT, REPO
from pages.parts import large_source
from tests.pages.test_app import shown
from tests.pages.test_app_segments import _assert_clean, _charts, _cli_json, _commands, _same_as_records, _select

#: The page's heading of each measure.
NAMES = {s: {"positive_rate": "positive rate", "mean_score": "mean score", "LogLoss": "log-loss"}.get(s, s)
         for s in STATS}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    d = tmp_path_factory.mktemp("root")
    df = make_drift()
    for i, part in enumerate(np.array_split(np.arange(len(df)), 2)):
        df.iloc[part].to_parquet(d / f"drift-{i}.parquet", index=False)
    return d


@pytest.fixture
def app(root, monkeypatch):
    monkeypatch.setenv("CALIBDASH_DATA_ROOT", str(root))
    monkeypatch.setattr(large_source, "SYNCHRONOUS", True)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.session_state["source"] = large_source.LARGE
    at.switch_page("pages/data.py").run()
    at.text_input(key="large.path").set_value("drift-*.parquet").run()
    at.button(key="large.aggregate").click().run()
    assert not at.exception and not at.error
    return at


def test_groups_and_time_run_on_a_large_source(app, root, capsys, monkeypatch):
    at = app.switch_page("pages/segments.py").run()
    _assert_clean(at)
    assert not any("does not work on a large source" in shown(i.value) for i in at.info)
    group = _select(at, "Group column")
    assert group.value == "segment" and set(group.options) == {"date", "segment"}     # from the schema's types
    assert {"segments.forest", "segments.grid", "segments.fix"} <= _charts(at)
    table = at.dataframe[0].value
    assert list(table.index) == ["app", "partner", "store", "web"]
    # the rows' keyed cells give the same group sizes (DuckDB's keyed cells are the rows' cells)
    df = make_drift()
    rows = keyed_cells(df.score, df.label, df.segment, Key("segment"))
    assert list(table["rows"]) == [f"{int(rows.of(k).n.sum()):,}" for k in range(len(rows.labels))]
    assert any("least calibrated group is **partner**" in shown(i.value) for i in at.info)
    fixed = at.dataframe[1].value
    assert fixed.loc["partner", "MBCT"] < fixed.loc["partner", "uncalibrated"]
    plain, _ = _commands(at)
    assert plain[:4] == ["groups", "drift-*.parquet", "--engine", "duckdb"]
    monkeypatch.chdir(root)                                  # the command names the glob under the data root
    got = _cli_json(plain, root / "unused", capsys)
    assert got["engine"] == "duckdb"
    _same_as_records(table, got["groups"], NAMES)

    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert _select(at, "Date column").value == "date"                 # named like a date (its type is text)
    assert {"segments.drift", "segments.stale", "segments.stale_matrix"} <= _charts(at)
    assert any("grouped by month (12 periods" in shown(c.value) for c in at.caption)
    stale = at.dataframe[1].value
    assert 0.15 < stale["fitted on 2025-01"].iloc[-1] < 0.21                 # the drift sample's story
    assert stale["refitted on the period before"].max() <= 0.04
    (over,) = _commands(at)
    got = _cli_json(over, root / "unused", capsys)
    _same_as_records(at.dataframe[0].value, got["periods"], NAMES)
