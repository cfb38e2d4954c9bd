"""The dashboard's "Large data" source: off without a data root; files, a DuckDB table or a query under the root,
aggregated by DuckDB into score cells that Compare and Explore fit and judge on; refusals are messages."""
import duckdb
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash import engines
from calibdash.engines import Source
from calibdash.evaluation import Scheme, evaluate_cells
from conftest import REPO
from pages.parts import large_source

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
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
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
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
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
    assert any(f"{3 * N_PER_FILE:,} rows summarised into {every.p.nunique():,} score cells (DuckDB)" in c.value
               for c in at.sidebar.caption)
    # Compare: the metrics equal evaluate_cells on the engine's cells computed directly
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error
    assert any("score cells" in c.value and "held-out rows" in c.value for c in at.caption)
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
    assert any("score cells" in c.value for c in at.caption)
    # Groups & time needs rows: a plain message, no traceback
    at.switch_page("pages/segments.py").run()
    assert not at.exception
    assert any("does not work on a large source" in i.value for i in at.info)


def test_table_and_query_sources_give_the_same_cells(app, root):
    at = app
    at.run()
    at.radio(key="large.kind").set_value("DuckDB table").run()
    at.text_input(key="large.database").set_value("warehouse.duckdb").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="large.score").value == "p" and at.selectbox(key="large.label").value == "clicked"
    at.button(key="large.aggregate").click().run()
    assert not at.exception and not at.error
    assert any(m.value.startswith("**table main.preds of warehouse.duckdb**") for m in at.markdown)
    table_metrics = {m.label: m.value for m in at.metric}
    at.radio(key="large.kind").set_value("SQL query").run()
    at.text_area(key="large.query").set_value(f"SELECT p, clicked FROM read_parquet('{root}/scores/*.parquet')")
    at.text_input(key="large.database").set_value("").run()
    at.selectbox(key="large.score").set_value("p")
    at.selectbox(key="large.label").set_value("clicked").run()
    at.radio(key="scheme.kind").set_value("insample")       # a query's rows have no position to hash
    at.button(key="large.aggregate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("**query SELECT p, clicked") for m in at.markdown)     # the query is active
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
    assert any(said in e.value for e in app.error), [e.value for e in app.error]
    keys = {w.key for w in list(app.button) + list(app.selectbox)}
    assert "large.aggregate" not in keys and "large.score" not in keys          # nothing was read


def _source_options(at) -> list:
    return [o.content for o in at.segmented_control(key="source").proto.options]


def test_the_aggregation_runs_in_a_thread_with_its_stage_shown(app, root, monkeypatch):
    """Off the script thread: the first run shows the stage and a Cancel button and stops; once the thread is
    done (joined here: AppTest does not run the polling fragment), the next run shows the source."""
    monkeypatch.setattr(large_source, "SYNCHRONOUS", False)
    app.run()
    assert large_source.LARGE in _source_options(app)
    app.text_input(key="large.path").set_value("scores/part-1.parquet").run()
    app.button(key="large.aggregate").click().run()
    assert not app.exception and not app.error
    jobs = list(large_source._JOBS.values())
    if jobs:                                   # still running when the page drew: the stage and Cancel are shown
        assert any(b.label == "Cancel" for b in app.button)
        assert not app.metric
        jobs[0].done.wait(60)
        app.run()
    assert not app.exception and not app.error
    assert {m.label: m.value for m in app.metric}["Rows"] == f"{N_PER_FILE:,}"
    assert not large_source._JOBS


def test_cancel_interrupts_duckdb(root):
    """Cancel calls interrupt() on the guarded connection: a long query stops at once, as cancelled."""
    droot = large_source.data_root_from_env(str(root))
    spec = {"kind": "query", "query": "SELECT random() AS p, CAST(random() < 0.5 AS INTEGER) AS y "
                                      "FROM range(3000000000)"}
    plan = large_source.resolve_plan(droot, spec)
    job = large_source._Job(key="cancel-test", what="a long query")
    import threading
    import time
    t = threading.Thread(target=large_source._work,
                         args=(job, droot, plan, {"score": "p", "label": "y"}, Scheme(kind="insample"), True))
    start = time.monotonic()
    t.start()
    time.sleep(0.5)
    assert not job.done.is_set()               # 3e9 rows take far longer than half a second
    job.cancel()
    assert job.done.wait(10)
    assert job.error is not None and job.cancelled and job.result is None
    assert time.monotonic() - start < 10
