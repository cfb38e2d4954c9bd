"""The dashboard's "Large data" source: off without a data root; files, a DuckDB table or a query under the root,
aggregated by DuckDB into score cells that Compare and Explore fit and judge on; refusals are messages."""
import subprocess
import sys
import textwrap
import threading
import time

import duckdb
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash import engines
from calibdash.core import jobs
from calibdash.engines import Source
from calibdash.engines.plan import aggregate_plan
from calibdash.evaluation.holdout import Scheme, evaluate_cells
from tests.conftest import APPTEST_TIMEOUT, REPO
from pages.parts import large_source
from tests.pages.test_app import shown as _shown

N_PER_FILE = 17_000                # 3 files: 51,000 rows
METHODS = ["platt", "histogram", "isotonic"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A data root holding a 3-file Parquet glob and a DuckDB database with the same rows as a table."""
    d = tmp_path_factory.mktemp("root")
    (d / "scores").mkdir()
    rng = np.random.default_rng(7)
    frames = []
    for i in range(3):
        s = np.round(rng.beta(2, 5, N_PER_FILE), 3)               # 1,000 distinct scores: exact cells
        y = (rng.random(N_PER_FILE) < np.clip(1.3 * s, 0, 1)).astype(int)
        df = pd.DataFrame({"p": s, "clicked": y, "region": rng.choice(["n", "s"], N_PER_FILE)})
        df.to_parquet(d / "scores" / f"part-{i}.parquet", index=False)
        frames.append(df)
    every = pd.concat(frames, ignore_index=True)
    con = duckdb.connect(str(d / "warehouse.duckdb"))
    con.register("every", every)
    con.execute("CREATE TABLE preds AS SELECT * FROM every")
    con.close()
    return d


@pytest.fixture
def app(root, monkeypatch):
    monkeypatch.setenv("CALIBDASH_DATA_ROOT", str(root))
    monkeypatch.setattr(large_source, "SYNCHRONOUS", True)      # AppTest cannot wait on the thread's fragment
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.session_state["source"] = large_source.LARGE
    at.switch_page("pages/data.py")
    return at


def _aggregate(at, **inputs):
    at.run()
    for key, value in inputs.items():
        (at.text_area if key == "large.query" else at.text_input)(key=key).set_value(value)
    at.run()
    assert not at.exception
    at.button(key="large.aggregate").click().run()
    assert not at.exception
    return at


def _values(frame: pd.DataFrame) -> pd.DataFrame:
    """The values of Compare's 'value [low, high]' table."""
    return frame.map(lambda t: float(t.split(" [")[0]))


def test_large_data_is_absent_without_a_data_root(monkeypatch):
    monkeypatch.delenv("CALIBDASH_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.switch_page("pages/data.py").run()
    assert not at.exception
    assert _source_options(at) == ["Sample", "Upload"]
    at.session_state["source"] = large_source.LARGE           # an old choice: falls back to the sample
    at.run()
    assert not at.exception and at.session_state["source"] == "Sample"


def test_glob_aggregates_and_compare_explore_work_on_its_cells(app, root):
    at = _aggregate(app, **{"large.path": "scores/part-*.parquet"})
    assert not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == f"{3 * N_PER_FILE:,}"
    every = pd.concat([pd.read_parquet(f) for f in sorted((root / "scores").glob("*.parquet"))])
    assert metrics["Score cells"] == f"{every.p.nunique():,}"                 # the distinct scores, exactly
    assert metrics["Positive rate"] == f"{every.clicked.mean():.1%}"
    assert any(f"{3 * N_PER_FILE:,} rows summarised into {every.p.nunique():,} score cells (DuckDB)"
               in _shown(c.value) for c in at.sidebar.caption)
    # Compare: the metrics equal evaluate_cells on the engine's cells computed directly
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error
    assert any("score cells" in _shown(c.value) and "held-out rows" in _shown(c.value) for c in at.caption)
    shown = _values(at.dataframe[0].value)
    scheme = Scheme()                                            # the page's default: random split by row hash
    files = sorted(str(f) for f in (root / "scores").glob("*.parquet"))
    cells = engines.aggregate(Source(path=files, score="p", label="clicked"), scheme, engine="duckdb", features=[])
    direct = evaluate_cells(cells, {m: {} for m in METHODS}, scheme).metrics
    assert list(shown.columns) == [c for c in direct.columns if c in shown.columns] and len(shown.columns) >= 5
    np.testing.assert_allclose(shown.to_numpy(), direct[shown.columns].to_numpy(), atol=5.1e-5)
    # Explore fits one method on the same cells
    at.switch_page("pages/explore.py").run()
    assert not at.exception and not at.error
    assert any("score cells" in _shown(c.value) for c in at.caption)
    # Groups & time works on the source's keyed cells (aggregated by DuckDB as a job): the regions' rows
    at.switch_page("pages/segments.py").run()
    assert not at.exception and not at.error
    groups = at.dataframe[0].value
    assert list(groups.index) == ["n", "s"]
    assert list(groups["rows"]) == [f"{(every.region == r).sum():,}" for r in ("n", "s")]


def test_table_and_query_sources_give_the_same_cells(app, root):
    at = app
    at.run()
    at.radio(key="large.kind").set_value("DuckDB table").run()
    at.text_input(key="large.database").set_value("warehouse.duckdb").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="large.score").value == "p" and at.selectbox(key="large.label").value == "clicked"
    at.button(key="large.aggregate").click().run()
    assert not at.exception and not at.error
    assert any(_shown(m.value).startswith("**table main.preds of warehouse.duckdb**") for m in at.markdown)
    table_metrics = {m.label: m.value for m in at.metric}
    at.radio(key="large.kind").set_value("SQL query").run()
    at.text_area(key="large.query").set_value(f"SELECT p, clicked FROM read_parquet('{root}/scores/*.parquet')")
    at.text_input(key="large.database").set_value("").run()
    at.selectbox(key="large.score").set_value("p")
    at.selectbox(key="large.label").set_value("clicked").run()
    at.radio(key="scheme.kind").set_value("insample")       # a query's rows have no position to hash
    at.button(key="large.aggregate").click().run()
    assert not at.exception and not at.error, [_shown(e.value) for e in at.error]
    assert any(_shown(m.value).startswith("**query SELECT p, clicked") for m in at.markdown)     # the query is active
    query_metrics = {m.label: m.value for m in at.metric}
    assert table_metrics == query_metrics and table_metrics["Rows"] == f"{3 * N_PER_FILE:,}"


@pytest.mark.parametrize("inputs, said", [
    ({"large.path": "../outside/*.parquet"}, "outside the data root"),
    ({"large.path": "/etc/passwd"}, "outside the data root"),
    ({"large.kind": "SQL query", "large.query": "SELECT * FROM read_csv('/etc/passwd')"}, "outside the data root"),
    ({"large.kind": "SQL query", "large.query": "COPY (SELECT 1) TO 'x.csv'"}, "only a SELECT query"),
    ({"large.kind": "SQL query", "large.query": "SELECT 0.5 AS p, 1 AS y",
      "large.order_by": "p; COPY (SELECT 1) TO 'x.csv'"}, "ORDER BY list"),
])
def test_paths_and_queries_outside_the_root_are_refused(app, inputs, said):
    app.run()
    if "large.kind" in inputs:
        app.radio(key="large.kind").set_value(inputs.pop("large.kind")).run()
    for key, value in inputs.items():
        (app.text_area if key == "large.query" else app.text_input)(key=key).set_value(value)
    app.run()
    assert not app.exception
    assert any(said in _shown(e.value) for e in app.error), [_shown(e.value) for e in app.error]
    keys = {w.key for w in list(app.button) + list(app.selectbox)}
    assert "large.aggregate" not in keys and "large.score" not in keys          # nothing was read


def _source_options(at) -> list:
    return [o.content for o in at.segmented_control(key="source").proto.options]


def _settle(at, deadline_s: float = APPTEST_TIMEOUT) -> None:
    """Wait until no job of the server's registry is unfinished (AppTest does not run the polling fragment) and
    rerun, until a run shows no job in progress (reading the columns, then aggregating, each start one)."""
    reg = large_source.registry()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for job in [j for j in reg.jobs() if not j.finished]:
            job.done.wait(max(0.1, end - time.monotonic()))
        at.run()
        if not any(b.label == "Cancel" for b in at.button):
            return
    raise AssertionError("the jobs did not finish")


def test_the_aggregation_runs_in_a_thread_with_its_stage_shown(app, root, monkeypatch):
    """Off the script thread: a run while a job works shows its stage and a Cancel button and stops; once the job
    is done (waited on here: AppTest does not run the polling fragment), the next run shows the source."""
    monkeypatch.setattr(large_source, "SYNCHRONOUS", False)
    app.run()
    assert large_source.LARGE in _source_options(app)
    app.text_input(key="large.path").set_value("scores/part-1.parquet").run()
    if any(b.label == "Cancel" for b in app.button):          # still reading the columns: shown, with Cancel
        assert not [b for b in app.button if b.key == "large.aggregate"]
    _settle(app)
    app.button(key="large.aggregate").click().run()
    assert not app.exception and not app.error
    if not app.metric:                                         # still aggregating when the page drew
        assert any(b.label == "Cancel" for b in app.button)
        assert any("Aggregating" in s.label for s in app.status)
        _settle(app)
    assert not app.exception and not app.error
    assert {m.label: m.value for m in app.metric}["Rows"] == f"{N_PER_FILE:,}"
    assert not [j for j in large_source.registry().jobs() if not j.finished]


def test_cancel_interrupts_duckdb(root):
    """Cancel (the last owner letting go) calls interrupt() on the guarded connection: a long query stops, as
    cancelled, and its slot is free again."""
    droot = large_source.data_root_from_env(str(root))
    spec = {"kind": "query", "query": "SELECT random() AS p, CAST(random() < 0.5 AS INTEGER) AS y "
                                      "FROM range(3000000000)"}
    plan = large_source.resolve_plan(droot, spec)
    reg = jobs.JobRegistry(max_jobs=1, lease_s=None)
    job = reg.submit("cancel-test", lambda j: aggregate_plan(j, droot, plan, {"score": "p", "label": "y"},
                                                             Scheme(kind="insample"), True), owner="me")
    end = time.monotonic() + APPTEST_TIMEOUT
    while not (job.state == jobs.RUNNING and job.stage.startswith("1. statistics")) and time.monotonic() < end:
        time.sleep(0.01)                       # poll until the first query has started
    assert job.stage.startswith("1. statistics") and not job.finished
    reg.release("cancel-test", "me")
    assert job.done.wait(APPTEST_TIMEOUT)
    assert job.state == jobs.CANCELLED and isinstance(job.error, jobs.Cancelled) and job.result is None
    assert reg.counts() == (0, 0)


SLOW = "SELECT random() AS p, CAST(random() < 0.5 AS INTEGER) AS y FROM range(3000000000)"


def _session(root, monkeypatch, query: str) -> AppTest:
    """A Data-page session that typed ``query`` and read its columns (the jobs off the script thread)."""
    monkeypatch.setenv("CALIBDASH_DATA_ROOT", str(root))
    monkeypatch.setattr(large_source, "SYNCHRONOUS", False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.session_state["source"] = large_source.LARGE
    at.switch_page("pages/data.py")
    at.run()
    at.radio(key="large.kind").set_value("SQL query").run()
    at.text_area(key="large.query").set_value(query).run()
    _settle(at)
    assert not at.exception and at.button(key="large.aggregate")
    return at


def _cancel_button(at):
    return next(b for b in at.button if b.label == "Cancel")


def test_a_cancel_in_one_session_leaves_the_shared_job_running_for_the_other(root, monkeypatch):
    """Two sessions aggregate the same source: one job, two owners. A's Cancel withdraws A only; B's Cancel, the
    last owner's, stops DuckDB."""
    a, b = _session(root, monkeypatch, SLOW), _session(root, monkeypatch, SLOW)
    a.button(key="large.aggregate").click().run()
    b.button(key="large.aggregate").click().run()
    reg = large_source.registry()
    (job,) = [j for j in reg.jobs() if not j.finished]
    assert len(job.owners) == 2 and job.what.startswith("Aggregating query")
    _cancel_button(a).click().run()
    assert not a.exception and any("cancelled" in _shown(w.value) and "1 other session" in _shown(w.value)
                                   for w in a.warning)
    assert not job.cancelled and not job.finished and len(job.owners) == 1
    assert any(s.label.startswith("Aggregating") for s in b.status)      # B still waits, with its Cancel
    _cancel_button(b).click().run()
    assert job.done.wait(APPTEST_TIMEOUT) and job.state == "cancelled"
    assert any("cancelled" in _shown(w.value) for w in b.warning) and not b.metric
    a.button(key=next(x.key for x in a.button if x.label == "Try again")).click().run()   # A may start it again
    assert any(s.label.startswith("Aggregating") for s in a.status)
    _cancel_button(a).click().run()
    assert reg.get(job.key) is None or reg.get(job.key).cancelled


def test_a_queued_job_shows_its_place_and_runs_when_a_slot_frees(root, monkeypatch):
    """With CALIBDASH_MAX_JOBS=1 and the slot taken, reading a source's columns waits in line, and says so."""
    monkeypatch.setenv("CALIBDASH_MAX_JOBS", "1")
    monkeypatch.setenv("CALIBDASH_DATA_ROOT", str(root))
    monkeypatch.setattr(large_source, "SYNCHRONOUS", False)
    reg = large_source.registry()
    release = threading.Event()
    blocker = reg.submit("blocker", lambda job: release.wait(APPTEST_TIMEOUT), owner="test")
    try:
        assert blocker.state == "running" and reg.limits.max_jobs == 1
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)
        at.session_state["source"] = large_source.LARGE
        at.switch_page("pages/data.py")
        at.run()
        at.text_input(key="large.path").set_value("scores/part-2.parquet").run()
        assert not at.exception
        assert any("Waiting for a free slot" in _shown(m.value) and "number 1 in line" in _shown(m.value)
                   for m in at.markdown)
        assert any(b.label == "Cancel" for b in at.button)
    finally:
        release.set()
        reg.release("blocker", "test")
    _settle(at)
    assert at.button(key="large.aggregate") and at.selectbox(key="large.score").value == "p"


@pytest.mark.parametrize("inputs, said", [
    ({"large.kind": "SQL query", "large.query": "SELECT CAST(content AS DOUBLE) AS p, 1 AS y FROM read_text("
                                                "'{root}/rows.txt')"}, "Conversion"),
    ({"large.path": "a" * 300 + ".parquet"}, "too long"),
    ({"large.kind": "SQL query", "large.query": "SELECT * FROM duckdb_settings()"}, None),
])
def test_engine_errors_reach_the_page_as_short_messages_without_rows(app, root, inputs, said):
    """The whole file in a conversion error, an over-long name, a query with list columns: a short message (or the
    columns), never the rows and never a traceback."""
    (root / "rows.txt").write_text("\n".join(f"hunter2,{i}" for i in range(20_000)))
    app.run()
    inputs = dict(inputs)
    if "large.kind" in inputs:
        app.radio(key="large.kind").set_value(inputs.pop("large.kind")).run()
    for key, value in inputs.items():
        (app.text_area if key == "large.query" else app.text_input)(key=key).set_value(
            value.format(root=root)).run()
    assert not app.exception
    shown = " ".join(_shown(e.value) for e in app.error)
    assert "hunter2" not in shown and "Traceback" not in shown and "Something went wrong" not in shown
    if said is None:
        assert not app.error and app.button(key="large.aggregate")
    else:
        assert said in shown and len(shown) < 800


def test_large_data_from_the_library_works_without_streamlit(root):
    """calibdash.data.LargeData is library code: a script without Streamlit builds one from an engine's all-rows
    cells and gets a scheme's cells through the aggregation it passes."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["streamlit"] = None                    # any import of streamlit now fails
        from calibdash import engines
        from calibdash.data import LargeData
        from calibdash.evaluation.holdout import Scheme

        src = engines.Source(path={str(root / "scores" / "part-*.parquet")!r}, score="p", label="clicked")
        every = engines.aggregate(src, None, engine="duckdb", features=[])
        ld = LargeData.from_aggregate("scores", {{"score": "p", "label": "clicked", "split": ""}},
                                      {{"cells": every, "positive": 1, "range": None, "splits": []}}, key="k",
                                      aggregate=lambda s: engines.aggregate(src, s, engine="duckdb", features=[]))
        folds = ld.cells(Scheme("kfold", n_folds=3))
        s, y, w = ld.weighted_rows()
        print(ld.describe())
        print(int(folds.n.sum()), sorted(set(folds.part.tolist())), ld.n_pos, int(round(float((y * w).sum()))))
        print(ld.split is None, ld.report_view().n_rows, ld.with_score("p") is ld)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    every = pd.concat([pd.read_parquet(f) for f in sorted((root / "scores").glob("*.parquet"))])
    described, counts, rest = done.stdout.splitlines()
    assert described == f"{len(every):,} rows summarised into {every.p.nunique():,} score cells (DuckDB)"
    assert counts == f"{len(every)} [0, 1, 2] {int(every.clicked.sum())} {int(every.clicked.sum())}"
    assert rest == f"True {len(every)} True"


def test_the_large_source_s_page_parts_hold_widgets_only():
    """The page parts of large sources are short, import no private name and no job or SQL machinery of their own:
    the planning, the reading, the jobs' logic and LargeData live in calibdash."""
    import ast

    for name in ("large_source", "job_panel", "server_settings"):
        path = REPO / "pages" / "parts" / f"{name}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 300, name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                assert not node.module.split(".")[-1].startswith("_"), (name, node.module)
                assert not [a.name for a in node.names if a.name.startswith("_")], (name, node.module)
        assert not {"duckdb", "threading"} & {a.name.split(".")[0] for n in ast.walk(tree)
                                              if isinstance(n, ast.Import) for a in n.names}, name
    from calibdash.data import LargeData

    assert large_source.LargeData is LargeData


def test_keyed_cells_of_a_large_source_are_the_engines_on_the_locked_connection(tmp_path):
    """LargeSource.aggregate_keyed (the Groups & time page's job) gives DuckDB's keyed cells of the same files,
    exactly (same engine, same SQL: only the connection differs), parts included; and the data root's locked
    connection reads zoned timestamps in UTC: 23:30 at -05:00 on 31 January is 1 February."""
    from calibdash.data.guard import DataRoot
    from calibdash.engines.plan import LargeSource
    from calibdash.engines.plan import NO_JOB
    from calibdash.monitoring.keyed import Key

    rng = np.random.default_rng(5)
    n = 3000
    stamps = pd.Series(pd.Timestamp("2025-01-31 23:30", tz="America/Bogota")
                       + pd.to_timedelta(rng.integers(0, 40, n), unit="D"))
    frame = pd.DataFrame({"p": np.round(rng.random(n), 3), "y": rng.integers(0, 2, n), "at": stamps,
                          "seg": rng.choice(["a", "b", "c"], n)})
    frame.to_parquet(tmp_path / "rows.parquet", index=False)
    src = LargeSource.resolve(DataRoot(tmp_path), {"kind": "files", "path": "rows.parquet",
                                                   "roles": {"score": "p", "label": "y", "split": ""}})
    scheme = Scheme()
    direct = Source(path=str(tmp_path / "rows.parquet"), score="p", label="y")
    for key, sch in ((Key("seg"), scheme), (Key("at", "period", "M"), None)):
        got = src.aggregate_keyed(NO_JOB, key, sch)
        ref = engines.aggregate_keyed(direct, key, sch, engine="duckdb")
        assert got.labels == ref.labels and got.spec == ref.spec
        for name in ("score", "n", "n_pos", "part"):
            np.testing.assert_array_equal(getattr(got.cells, name), getattr(ref.cells, name))
        np.testing.assert_array_equal(got.key, ref.key)
        assert src.keyed_key(key, sch) != src.keyed_key(Key("other"), sch) != src.key(sch)
    periods = src.aggregate_keyed(NO_JOB, Key("at", "period", "M"))
    assert periods.labels == ("2025-02", "2025-03")           # every stamp is on or after 1 February in UTC
    assert int(periods.cells.n.sum()) == n
