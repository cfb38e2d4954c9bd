"""Engines: the rows' positions and their hash in each engine's own terms (SQL, Spark columns), and the dispatch.

The same score cells from every engine are checked in ``tests/engines/test_engine_contract.py``, which uses the files,
the reference and the comparison defined here.

The reference is the in-memory path of :mod:`calibdash.evaluation.cells` on the rows concatenated in sorted file order
(``cells.aggregate`` with ``evaluation.cell_parts``), computed here independently of the engines' code.
"""
import os

import numpy as np
import pandas as pd
import pytest

from tests.conftest import start_spark

from calibdash.evaluation import cells
from calibdash.engines import Source, aggregate, default_engine
from calibdash.engines.duckdb import rows as duck_engine
from calibdash.core.errors import SettingsError
from calibdash.evaluation.holdout import Scheme, cell_parts

# pyspark's own use of pandas (toPandas, createDataFrame) warns under pandas 3; not calibdash's code
pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
SIZES = {"part-b.parquet": 3000, "part-c.parquet": 2500, "part-a.parquet": 4000}   # written in this order
SCHEMES = {"kfold": Scheme("kfold", n_folds=3, seed=4), "split": Scheme("split", test_size=0.3, seed=9),
           "column": Scheme("column")}
EXACT, GRID_FORCED = 10 ** 6, 200        # max_exact: ~1,000 distinct scores are exact, or forced to the grid


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_files(tmp_path_factory.mktemp("engines"))


def write_files(folder):
    """Three Parquet files (written out of name order), the same rows as one CSV, and the rows in key order."""
    rng = np.random.default_rng(7)
    frames = {}
    for name, n in SIZES.items():
        s = np.round(rng.beta(2, 5, n), 3)                        # ties: about 1,000 distinct scores
        frames[name] = pd.DataFrame({
            "score": s, "label": (rng.random(n) < s).astype(np.int64),
            "split": rng.choice(["train", "test", "valid"], n, p=[0.6, 0.3, 0.1]),
            "device": rng.choice(["mobile", "desktop", "tablet"], n),
            "x": np.round(rng.normal(size=n), 2),
            "margin": np.round(rng.normal(0, 2, n), 2),
            "word": rng.choice(["yes", "no"], n),
        })
        frames[name].to_parquet(folder / name, index=False, row_group_size=700)
    rows = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    rows.to_csv(folder / "all.csv", index=False)
    return {"glob": str(folder / "part-*.parquet"), "csv": str(folder / "all.csv"), "rows": rows, "dir": folder}


def _source(files, kind, **roles):
    roles.setdefault("split", "split")
    return Source(files["glob"] if kind == "parquet" else files["csv"], **roles)


def _reference(rows, scheme, max_exact):
    """cells.aggregate on the rows in key order, parts from evaluation.cell_parts (the in-memory path)."""
    part = cell_parts(len(rows), scheme, rows["split"].to_numpy())
    return cells.aggregate(rows["score"].to_numpy(), rows["label"].to_numpy(), part, max_exact=max_exact)


def assert_same_cells(a, b):
    assert a.exact == b.exact and a.n_rows == b.n_rows and len(a) == len(b)
    np.testing.assert_array_equal(a.part, b.part)
    np.testing.assert_array_equal(a.n, b.n)
    np.testing.assert_array_equal(a.n_pos, b.n_pos)
    np.testing.assert_allclose(a.score_sum, b.score_sum, rtol=1e-9)
    np.testing.assert_allclose(a.score, b.score, rtol=1e-9)
    if a.exact:
        np.testing.assert_array_equal(a.score, b.score)            # exact cells: the very scores
    assert (a.features is None) == (b.features is None)
    if a.features is not None:
        pd.testing.assert_frame_equal(a.features, b.features, check_dtype=False, check_categorical=True)


# -- the hash in SQL ------------------------------------------------------------------------------
def test_sql_row_hash_equals_cells_row_hash():
    import duckdb

    keys = np.r_[np.arange(40_000), 2 ** 32 - 30_000 + np.arange(60_000)].astype(np.int64)   # 1e5, across 2^32
    con = duckdb.connect()
    for seed in (0, 1, 12345, 2 ** 31 + 7):
        got = con.execute(f"SELECT {duck_engine.row_hash_sql('k', seed)} AS h FROM (SELECT unnest(?) AS k)",
                          [keys.tolist()]).fetchnumpy()["h"]
        np.testing.assert_array_equal(got.astype(np.uint64), cells.row_hash(keys.astype(np.uint64), seed))
    assert cells.row_hash([2 ** 32 - 1], 0)[0] != cells.row_hash([2 ** 32 - 2], 0)[0]


# -- DuckDB's and Spark's own ways to the rows' positions (every engine's cells: test_engine_contract.py) --------
def test_duckdb_table_and_ordered_query_keep_the_row_positions(files):
    import duckdb

    db = str(files["dir"] / "scores.duckdb")
    if not os.path.exists(db):
        with duckdb.connect(db) as con:
            con.execute(f"CREATE TABLE scores AS SELECT *, row_number() OVER () - 1 AS pos "
                        f"FROM read_parquet({sorted(map(str, files['dir'].glob('part-*.parquet')))!r})")
    ref = _reference(files["rows"], SCHEMES["kfold"], EXACT)
    table = Source(database=db, table="scores", split="split")
    assert_same_cells(aggregate(table, SCHEMES["kfold"], engine="duckdb"), ref)
    assert_same_cells(aggregate(table, SCHEMES["kfold"], engine="memory"), ref)
    query = Source(database=db, query="SELECT * FROM scores WHERE pos >= 0", order_by="pos", split="split")
    assert_same_cells(aggregate(query, SCHEMES["kfold"], engine="duckdb"), ref)
    with pytest.raises(SettingsError, match="order_by"):
        aggregate(Source(database=db, query="SELECT * FROM scores"), SCHEMES["kfold"], engine="duckdb")


def test_dispatch_and_default_engine(files):
    assert default_engine(_source(files, "csv")) == "memory"
    assert default_engine(_source(files, "parquet")) == "duckdb"      # several files
    with pytest.raises(SettingsError):
        aggregate(_source(files, "csv"), engine="pandas")
    with pytest.raises(SettingsError, match="two roles"):
        Source("x.parquet", score="s", label="s")


@pytest.fixture(scope="module")
def spark():
    session = start_spark("calibdash-tests", "local[2]", **{
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.codegen.wholeStage": "false",          # tiny data: compiling costs more than it saves
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.files.maxPartitionBytes": str(64 * 1024)})     # several splits per CSV file
    yield session
    session.stop()


def test_spark_row_hash_equals_cells_row_hash(spark):
    from calibdash.engines.spark.rows import to_pandas, with_row_hash

    df = spark.range(0, 50_000).union(spark.range(2 ** 32 - 25_000, 2 ** 32 + 25_000))     # 1e5 keys across 2^32
    df = with_row_hash(with_row_hash(df, "id", 2 ** 31 + 7, "h"), "id", 1, "h1")
    got = to_pandas(spark, df, ["id", "h", "h1"]).sort_values("id")
    keys = got["id"].to_numpy().astype(np.uint64)
    assert keys.size == 100_000
    np.testing.assert_array_equal(got["h"].to_numpy().astype(np.uint64), cells.row_hash(keys, 2 ** 31 + 7))
    np.testing.assert_array_equal(got["h1"].to_numpy().astype(np.uint64), cells.row_hash(keys, 1))


def test_spark_query_with_order_by_keeps_the_row_positions(files, spark):
    rows = files["rows"].assign(pos=np.arange(len(files["rows"])))
    spark.createDataFrame(rows.sample(frac=1.0, random_state=0)).createOrReplaceTempView("engine_rows")
    query = Source(query="SELECT * FROM engine_rows", order_by="pos", split="split")
    assert_same_cells(aggregate(query, SCHEMES["kfold"], engine="spark", spark=spark),
                      _reference(files["rows"], SCHEMES["kfold"], EXACT))
    with pytest.raises(SettingsError, match="order_by"):
        aggregate(Source(table="engine_rows"), SCHEMES["split"], engine="spark", spark=spark)
