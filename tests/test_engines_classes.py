"""K-class engines: the same multi-class score cells from memory, DuckDB and Spark on the same files.

The reference is :func:`calibdash.cells.class_cells` on the rows concatenated in sorted file
order with parts from :func:`calibdash.evaluation.cell_parts`, computed independently of the engines.
"""
import numpy as np
import pandas as pd
import pytest

from conftest import shared_file, start_spark
from test_engines import assert_same_cells

from calibdash.engines.classes import ClassSource, aggregate_classes, class_source, softmax_rows
from calibdash.engines.source import Source
from calibdash.errors import DataError
from calibdash.evaluation import Scheme, cell_parts
from calibdash.multiclass import metrics as M
from calibdash.cells import cell_measures, class_cells

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
K = 4
SIZES = {"part-b.parquet": 1500, "part-a.parquet": 2000, "part-c.parquet": 1000}     # written out of name order
SCHEMES = {"kfold": Scheme("kfold", n_folds=3, seed=4), "split": Scheme("split", test_size=0.3, seed=9),
           "column": Scheme("column")}
EXACT, GRID_FORCED = 10 ** 6, 200          # max_exact: ~1,000 distinct values per reduction exact, or the grid


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class_engines")
    rng = np.random.default_rng(11)
    frames = {}
    for name, n in SIZES.items():
        P = np.round(rng.dirichlet(np.full(K, 0.8), n), 3)           # ties; rows sum to 1 within 2e-3
        y = np.array([rng.choice(K, p=p / p.sum()) for p in P])
        df = pd.DataFrame(P, columns=[f"p_{k}" for k in range(K)])
        for k in range(K):
            df[f"logit_{k}"] = np.round(rng.normal(0, 2, n), 2)
        df["label"] = y
        df["split"] = rng.choice(["train", "test"], n, p=[0.7, 0.3])
        df.to_parquet(folder / name, index=False, row_group_size=600)
        frames[name] = df
    rows = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    rows.to_csv(folder / "all.csv", index=False)
    return {"glob": str(folder / "part-*.parquet"), "csv": str(folder / "all.csv"), "rows": rows, "dir": folder}


def _source(files, kind, logits=False):
    path = files["glob"] if kind == "parquet" else files["csv"]
    cols = tuple(f"{'logit' if logits else 'p'}_{k}" for k in range(K))
    return ClassSource(Source(path, score=cols[0], label="label", split="split"), cols, tuple(range(K)), logits)


def _reference(rows, scheme, max_exact, logits=False):
    part = cell_parts(len(rows), scheme, rows["split"].to_numpy())
    X = rows[[f"{'logit' if logits else 'p'}_{k}" for k in range(K)]].to_numpy()
    return class_cells(softmax_rows(X) if logits else X, rows["label"].to_numpy(), part, max_exact=max_exact)


def assert_same_class_cells(a, b, exact_scores=True):
    assert a.n_rows == b.n_rows and a.k == b.k
    for x, z in zip(a.reductions, b.reductions):
        if exact_scores:
            assert_same_cells(x, z)
        else:              # logits: exp() of numpy, DuckDB and the JVM may differ in the last bit
            assert x.exact == z.exact and len(x) == len(z)
            np.testing.assert_array_equal(x.n, z.n)
            np.testing.assert_array_equal(x.n_pos, z.n_pos)
            np.testing.assert_allclose(x.score, z.score, rtol=1e-13)


def test_class_source_finds_the_columns(files):
    cs = class_source(files["glob"], split="split")
    assert cs.columns == tuple(f"p_{k}" for k in range(K)) and cs.classes == tuple(range(K)) and not cs.logits
    assert class_source(files["csv"], logits="logit_").logits


@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_memory_engine_is_the_in_memory_path(files, kind, scheme):
    got = aggregate_classes(_source(files, kind), SCHEMES[scheme], engine="memory")
    assert_same_class_cells(got, _reference(files["rows"], SCHEMES[scheme], 2 ** 16))
    assert got.exact


@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", ["kfold", "column"])
@pytest.mark.parametrize("max_exact", [EXACT, GRID_FORCED])
def test_duckdb_equals_memory(files, kind, scheme, max_exact):
    src = _source(files, kind)
    got = aggregate_classes(src, SCHEMES[scheme], engine="duckdb", max_exact=max_exact, memory_limit="200MB",
                            threads=2)
    assert got.exact == (max_exact == EXACT)
    assert_same_class_cells(got, _reference(files["rows"], SCHEMES[scheme], max_exact))
    assert_same_class_cells(got, aggregate_classes(src, SCHEMES[scheme], engine="memory", max_exact=max_exact))


def test_duckdb_softmax_of_logits(files):
    src = _source(files, "parquet", logits=True)
    got = aggregate_classes(src, SCHEMES["split"], engine="duckdb")
    assert_same_class_cells(got, aggregate_classes(src, SCHEMES["split"], engine="memory"), exact_scores=False)
    # the softmax written left to right is scipy's to rounding
    from scipy.special import softmax
    X = files["rows"][[f"logit_{k}" for k in range(K)]].to_numpy()
    np.testing.assert_allclose(softmax_rows(X), softmax(X, axis=1), rtol=1e-14)


def test_cifar_through_duckdb_gives_the_row_measures(tmp_path):
    d = np.load(shared_file("multiclass-cifar", "wideresnet-16-4-cifar-10.npz"))
    P, y = d["predictions"], d["ground_truth"]
    df = pd.DataFrame(P, columns=[f"p_{k}" for k in range(P.shape[1])]).assign(label=y)
    df.iloc[:6000].to_parquet(tmp_path / "a.parquet", index=False)
    df.iloc[6000:].to_parquet(tmp_path / "b.parquet", index=False)
    got = cell_measures(aggregate_classes(class_source(str(tmp_path / "*.parquet")), engine="duckdb"))
    rows = M.compute(P, y)
    for key in rows:        # exact cells: equal to the order of summation (see tests/test_cells.py)
        assert got[key] == pytest.approx(rows[key], rel=1e-12, abs=1e-15), key
    assert round(got["ECE"], 5) == 0.05372 and got["Accuracy"] == 0.9109


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_bad_rows_are_refused_with_counts(tmp_path, engine):
    n = 60
    P = np.tile([0.5, 0.3, 0.2], (n, 1))
    base = pd.DataFrame(P, columns=["p_a", "p_b", "p_c"]).assign(label=np.array(["a", "b", "c"])[np.arange(n) % 3])
    cases = [
        (base.assign(p_b=base["p_b"].where(np.arange(n) % 10 != 3)), "6 of 60 rows have a missing or non-finite"),
        (base.assign(label=base["label"].where(np.arange(n) != 4)), "1 missing values"),
        (base.assign(label=np.where(np.arange(n) < 5, "d", base["label"])), "5 rows have a label that names no class"),
        (base.assign(p_a=np.where(np.arange(n) < 7, 0.9, 0.5)), "7 of 60 rows .* do not sum to 1"),
        (base.assign(label="a"), "one class only"),
    ]
    for i, (df, message) in enumerate(cases):
        path = tmp_path / f"bad{i}.parquet"
        df.to_parquet(path, index=False)
        src = ClassSource(Source(str(path), score="p_a", label="label"), ("p_a", "p_b", "p_c"), ("a", "b", "c"))
        with pytest.raises(DataError, match=message):
            aggregate_classes(src, engine=engine)


# -- Spark = memory ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    session = start_spark("calibdash-class-engine-tests", "local[2]", **{
        "spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false",
        "spark.sql.files.maxPartitionBytes": str(64 * 1024)})
    yield session
    session.stop()


@pytest.mark.parametrize("kind, scheme, max_exact, logits", [
    ("parquet", "kfold", EXACT, False),
    ("csv", "column", GRID_FORCED, False),
    ("parquet", "split", EXACT, True),
])
def test_spark_equals_memory(files, spark, kind, scheme, max_exact, logits):
    src = _source(files, kind, logits)
    got = aggregate_classes(src, SCHEMES[scheme], engine="spark", spark=spark, max_exact=max_exact)
    assert_same_class_cells(got, aggregate_classes(src, SCHEMES[scheme], engine="memory", max_exact=max_exact),
                            exact_scores=not logits)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_evaluate_class_source_measures_the_held_out_rows(files, engine):
    from calibdash.multiclass.large import evaluate_class_source

    scheme = SCHEMES["split"]
    res = evaluate_class_source(files["glob"], probs="p_", split="split", scheme=scheme, engine=engine)
    rows = files["rows"]
    held = cell_parts(len(rows), scheme) == 1
    P, y = rows[[f"p_{k}" for k in range(K)]].to_numpy()[held], rows["label"].to_numpy()[held]
    expect = M.compute(P, y)
    assert res.exact and res.cells.n_rows == int(held.sum()) and list(res.metrics.index) == ["uncalibrated"]
    for key in expect:
        assert res.metrics.loc["uncalibrated", key] == pytest.approx(expect[key], rel=1e-12, abs=1e-15), key
