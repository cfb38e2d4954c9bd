"""Multi-class calibrators fitted and judged on large sources (calibdash.engines.class_fit, calibdash.engines.classes).

References computed independently of the engines: parts from :func:`calibdash.evaluation.holdout.cell_parts` on the rows
concatenated in sorted file order, the content key from :func:`calibdash.engines.classes.content_key` in numpy,
the methods fitted directly on those rows and measured by :func:`calibdash.measures.class_measures.compute`.
"""
import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import spark_with_workers

from calibdash import calibrators
from calibdash.cli import main
from calibdash.engines.classes import content_key, fit_samples, open_class_rows
from calibdash.engines.classes import ClassSource
from calibdash.engines.source import Source
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import Scheme, cell_parts
from calibdash.measures import class_measures as M
from calibdash.evaluation.cells import ClassCellAccumulator, cell_measures, class_cells
from calibdash.evaluation.holdout import evaluate_classes
from calibdash.engines.class_fit import evaluate_class_source
from calibdash.evaluation.scheme import class_quotas

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
K = 4
SIZES = {"part-b.parquet": 1200, "part-a.parquet": 1500, "part-c.parquet": 900}    # written out of name order
METHODS = "temperature,vector,dirichlet,ovr:isotonic"
EXACT = 10 ** 7                      # max_exact: every reduction's distinct scores kept


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class_large")
    rng = np.random.default_rng(5)
    frames = {}
    for name, n in SIZES.items():
        truth = rng.dirichlet(np.full(K, 0.7), n)
        y = (truth.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, K - 1)
        P = truth ** 1.6
        P /= P.sum(axis=1, keepdims=True)               # overconfident; continuous (no ties)
        df = pd.DataFrame(P, columns=[f"p_{k}" for k in range(K)])
        for k in range(K):
            df[f"logit_{k}"] = np.log(P[:, k]) + rng.normal(0, 0.1, n)
        df["label"] = y
        df["split"] = rng.choice(["train", "test"], n, p=[0.7, 0.3])
        df.to_parquet(folder / name, index=False, row_group_size=500)
        frames[name] = df
    rows = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    shuffled = folder / "shuffled"
    shuffled.mkdir()
    rows.sample(frac=1.0, random_state=3).to_parquet(shuffled / "all.parquet", index=False)
    return {"glob": str(folder / "part-*.parquet"), "shuffled": str(shuffled / "all.parquet"), "rows": rows,
            "dir": folder}


def _source(path, logits=False):
    cols = tuple(f"{'logit' if logits else 'p'}_{k}" for k in range(K))
    return ClassSource(Source(path, score=cols[0], label="label", split="split"), cols, tuple(range(K)), logits)


def _values(rows, logits=False):
    return rows[[f"{'logit' if logits else 'p'}_{k}" for k in range(K)]].to_numpy(), rows["label"].to_numpy()


def _same_tables(a: pd.DataFrame, b: pd.DataFrame, rel: float):
    assert list(a.index) == list(b.index) and list(a.columns) == list(b.columns)
    for m in a.index:
        for c in a.columns:
            assert a.loc[m, c] == pytest.approx(b.loc[m, c], rel=rel, abs=rel * 1e-3), (m, c)


# -- the pieces --------------------------------------------------------------------------------------------
def test_accumulated_batches_are_the_cells_of_all_rows(files):
    X, y = _values(files["rows"])
    part = cell_parts(len(y), Scheme("kfold", n_folds=3, seed=1))
    for max_exact in (EXACT, 300):        # exact, and a move to the grid in the middle of the batches
        acc = ClassCellAccumulator(K, max_exact)
        for start in range(0, len(y), 777):
            acc.add(X[start:start + 777], y[start:start + 777], part[start:start + 777])
        got, want = acc.result(), class_cells(X, y, part, max_exact=max_exact)
        assert got.exact == want.exact == (max_exact == EXACT)
        for a, b in zip(got.reductions, want.reductions):
            np.testing.assert_array_equal(a.n, b.n)
            np.testing.assert_array_equal(a.n_pos, b.n_pos)
            np.testing.assert_array_equal(a.part, b.part)
            np.testing.assert_allclose(a.score, b.score, rtol=1e-13)     # grid: sums in another order


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("logits", [False, True])
def test_fit_sample_is_the_content_keyed_stratified_sample(files, engine, logits):
    """Each fold's sample is the first Hamilton quota of each class in (key, values) order, computed directly."""
    scheme = Scheme("kfold", n_folds=3, seed=7)
    X, y = _values(files["rows"], logits)
    part = cell_parts(len(y), scheme)
    key = content_key(X, y, seed=11)
    fit_parts = [[1, 2], [0, 2], [0, 1]]
    with open_class_rows(_source(files["glob"], logits), scheme, engine) as rows:
        samples, counts = fit_samples(rows, fit_parts, 250, seed=11)
    np.testing.assert_array_equal(counts, np.array([np.bincount(y[part == p], minlength=K) for p in range(3)]))
    for (Xs, ys), fp in zip(samples, fit_parts):
        inside = np.flatnonzero(np.isin(part, fp))
        quota = class_quotas(np.bincount(y[inside], minlength=K), 250)
        order = inside[np.lexsort(tuple(X[inside, j] for j in range(K - 1, -1, -1)) + (key[inside], y[inside]))]
        want = np.concatenate([order[y[order] == c][:quota[c]] for c in range(K)])
        assert ys.size == 250 and np.array_equal(np.bincount(ys, minlength=K), quota)
        np.testing.assert_array_equal(Xs, X[want])        # the same values, in the same order
        np.testing.assert_array_equal(ys, y[want])


def test_content_key_in_duckdb_is_numpys(files):
    X, y = _values(files["rows"], logits=True)
    with open_class_rows(_source(files["glob"], logits=True), Scheme("insample"), "duckdb") as rows:
        Xc, yc, _, keys = rows.candidates(np.full((1, K), 2 ** 32, dtype=np.int64), seed=3)
    order = np.lexsort((Xc[:, 0], yc))
    want = np.lexsort((X[:, 0], y))
    np.testing.assert_array_equal(keys[order], content_key(X, y, seed=3)[want])


# -- evaluate_class_source ---------------------------------------------------------------------------------
@pytest.mark.parametrize("logits", [False, True])
def test_duckdb_equals_memory(files, logits):
    src = _source(files["glob"], logits)
    scheme = Scheme("split", test_size=0.3, seed=2)
    for max_exact in (EXACT, 200):
        got = {e: evaluate_class_source(src, scheme=scheme, engine=e, methods=METHODS, max_fit_rows=600,
                                        max_exact=max_exact, threads=2, batch_rows=500)
               for e in ("memory", "duckdb")}
        a, b = got["memory"], got["duckdb"]
        assert a.exact == b.exact == (max_exact == EXACT)
        assert a.fit_rows == b.fit_rows == [600]
        # the same sample, fits and rows: cells equal but for the order of summation of grid cells' scores
        _same_tables(a.metrics, b.metrics, rel=1e-12)
        for key in a.method_cells:
            for x, z in zip(a.method_cells[key].reductions, b.method_cells[key].reductions):
                np.testing.assert_array_equal(x.n, z.n)
                np.testing.assert_array_equal(x.n_pos, z.n_pos)


def test_methods_rows_are_a_direct_computation_on_the_same_parts(files):
    """Parts by row hash: fit every method on the part-0 rows in (class, key, values) order, judge part 1."""
    scheme = Scheme("split", test_size=0.3, seed=4)
    res = evaluate_class_source(files["glob"], probs="p_", split="split", scheme=scheme, engine="duckdb",
                                methods=METHODS, max_fit_rows=None, max_exact=EXACT)
    X, y = _values(files["rows"])
    part = cell_parts(len(y), scheme)
    fit = np.flatnonzero(part == 0)
    fit = fit[np.lexsort(tuple(X[fit, j] for j in range(K - 1, -1, -1)) + (content_key(X[fit], y[fit], 4), y[fit]))]
    held = part == 1
    assert res.exact and res.cells.n_rows == int(held.sum()) and res.fit_rows == [fit.size]
    assert list(res.metrics.index) == ["uncalibrated", *METHODS.split(",")]
    want = {"uncalibrated": M.compute(X[held], y[held])}
    for name in METHODS.split(","):
        cal = calibrators.get(name, "classes").fit(X[fit], y[fit])
        want[name] = M.compute(cal.predict_proba(X[held]), y[held])
    # the same rows in the same order give the same fit; exact cells give the rows' measures up to the order
    # of summation (and the batches' matrix products): a relative 1e-10
    _same_tables(res.metrics, pd.DataFrame(want).T[res.metrics.columns], rel=1e-10)
    assert res.metrics.loc["temperature", "ECE"] < 0.5 * res.metrics.loc["uncalibrated", "ECE"]
    assert "fitted on every fitting row" in "; ".join(res.notes)


def test_small_source_equals_evaluate_classes(files):
    """The file's split column: the same parts as in memory, so the same table as evaluate_classes."""
    scheme = Scheme("column")
    res = evaluate_class_source(files["glob"], probs="p_", split="split", scheme=scheme, engine="duckdb",
                                methods=METHODS, max_exact=EXACT)
    X, y = _values(files["rows"])
    ev = evaluate_classes(X, y, METHODS, scheme, split=files["rows"]["split"].to_numpy())
    # the fitting rows are the same set in another order: the scaling family's L-BFGS fits stop at the
    # solver's gradient tolerance from another start of the summation, so their parameters (and the
    # measures) agree to about 1e-7 relative, not bit for bit; isotonic regression does not depend on the order
    _same_tables(res.metrics, ev.metrics, rel=1e-6)


def test_row_order_does_not_change_the_result(files):
    """Parts from the split column, a content-keyed sample: the same rows in another order, the same table."""
    kw = dict(probs="p_", split="split", scheme=Scheme("column"), engine="duckdb", methods="temperature,ovr:isotonic",
              max_fit_rows=700, max_exact=EXACT)
    a = evaluate_class_source(files["glob"], **kw)
    b = evaluate_class_source(files["shuffled"], **kw)
    assert a.fit_rows == b.fit_rows == [700] and "sample of 700" in "; ".join(a.notes)
    _same_tables(a.metrics, b.metrics, rel=1e-12)      # sums over cells in another order only


def test_grid_cells_stay_within_their_bounds(files):
    scheme = Scheme("split", seed=1)
    kw = dict(probs="p_", split="split", scheme=scheme, engine="memory", methods="temperature,dirichlet")
    exact = evaluate_class_source(files["glob"], max_exact=EXACT, **kw)
    grid = evaluate_class_source(files["glob"], max_exact=100, **kw)
    assert exact.exact and not grid.exact and "on the grid" in "; ".join(grid.notes)
    for m in exact.metrics.index:
        assert grid.metrics.loc[m, "Accuracy"] == exact.metrics.loc[m, "Accuracy"]          # counts
        # a row's score moves by less than 2^-16 in each of the K class reductions: |(p-y)^2 - (s-y)^2| <= 2|p-s|
        assert abs(grid.metrics.loc[m, "Brier"] - exact.metrics.loc[m, "Brier"]) <= K * 2 * 2.0 ** -16
        assert grid.metrics.loc[m, "Overconfidence"] == pytest.approx(exact.metrics.loc[m, "Overconfidence"],
                                                                      rel=1e-12)   # score sums are kept


def test_kfold_judges_every_row_with_one_model_per_fold(files):
    res = evaluate_class_source(files["glob"], probs="p_", scheme=Scheme("kfold", n_folds=3), engine="memory",
                                methods="temperature", max_exact=EXACT)
    X, y = _values(files["rows"])
    part = cell_parts(len(y), Scheme("kfold", n_folds=3))
    assert res.cells.n_rows == len(y) and len(res.models["temperature"]) == 3
    P = np.empty_like(X)
    for f, model in enumerate(res.models["temperature"]):
        P[part == f] = model.predict_proba(X[part == f])
    want = M.compute(P, y)
    for key in want:
        assert res.metrics.loc["temperature", key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key


def test_refusals(files, tmp_path):
    with pytest.raises(SettingsError, match="max_fit_rows"):
        evaluate_class_source(files["glob"], probs="p_", engine="memory", methods="temperature", max_fit_rows=0)
    with pytest.raises(SettingsError, match="unknown multi-class method"):
        evaluate_class_source(files["glob"], probs="p_", engine="memory", methods="nope")
    rows = files["rows"].copy()
    rows.loc[rows["split"] == "train", "label"] = 2                    # the fitting part holds one class
    rows.to_parquet(tmp_path / "one.parquet", index=False)
    with pytest.raises(DataError, match="holds one class only"):
        evaluate_class_source(str(tmp_path / "one.parquet"), probs="p_", split="split", scheme=Scheme("column"),
                              engine="duckdb", methods="temperature")


# -- Spark = memory --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    # the content key runs in a pandas UDF: Spark's Python workers need this interpreter and this checkout
    yield from spark_with_workers("calibdash-class-large-tests", "local[2]", **{
        "spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false",
        "spark.sql.files.maxPartitionBytes": str(64 * 1024)})


def test_spark_equals_memory(files, spark):
    src = _source(files["glob"], logits=True)
    kw = dict(scheme=Scheme("split", seed=6), methods="temperature,ovr:isotonic", max_fit_rows=500,
              max_exact=EXACT, batch_rows=700)
    a = evaluate_class_source(src, engine="memory", **kw)
    b = evaluate_class_source(src, engine="spark", spark=spark, **kw)
    assert a.fit_rows == b.fit_rows == [500]
    _same_tables(a.metrics, b.metrics, rel=1e-12)


# -- the command line --------------------------------------------------------------------------------------
def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_evaluate_with_duckdb(files, capsys):
    code, out, err = _run(capsys, ["evaluate", files["glob"], "--probs", "p_", "--methods", "temperature,dirichlet",
                                   "--scheme", "column", "--split", "split", "--json"])
    assert code == 0
    doc = json.loads(out)
    res = evaluate_class_source(files["glob"], probs="p_", split="split", scheme=Scheme("column"), engine="duckdb",
                                methods="temperature,dirichlet")
    assert doc["engine"] == "duckdb" and doc["rows_judged"] == res.cells.n_rows
    assert doc["validation"]["rows_read"] == len(files["rows"])
    assert list(doc["metrics"]) == ["uncalibrated", "temperature", "dirichlet"]
    assert doc["metrics"]["dirichlet"]["ECE"] == pytest.approx(res.metrics.loc["dirichlet", "ECE"], rel=1e-12)
    assert any("judged on score cells" in n for n in doc["notes"])
    # the in-memory evaluate's JSON keys, and the engine's own
    code, mem, _ = _run(capsys, ["evaluate", str(files["shuffled"]), "--methods", "temperature", "--json",
                                 "--engine", "memory"])
    assert set(json.loads(mem)) <= set(doc)
    assert "5. calibrating the judged rows" in err and "Evaluating" in err        # the progress line
    code, out, err = _run(capsys, ["evaluate", files["glob"], "--methods", "temperature"])   # a glob: DuckDB
    assert code == 0 and "(aggregated by duckdb)" in out and "temperature" in out and "ECE" in out


def test_cli_refusals(files, capsys):
    for argv, message in [
        (["--boot", "10"], "--boot resamples the judged rows"),
        (["--measures"], "--measures adds the binary measures"),
        (["--scheme", "column"], "--scheme column needs a split column"),
    ]:
        code, _, err = _run(capsys, ["evaluate", files["glob"], "--probs", "p_", *argv])
        assert code == 2 and message in err, err
