"""Engines: the same score cells from memory, DuckDB and Spark on the same files, and the same refusals.

The reference is the in-memory path of :mod:`calibdash.cells` on the rows concatenated in sorted file order
(``cells.aggregate`` with ``evaluation.cell_parts``), computed here independently of the engines' code.
"""
import os

import numpy as np
import pandas as pd
import pytest

from conftest import start_spark

from calibdash import cells
from calibdash.engines import Source, aggregate, default_engine
from calibdash.engines.duckdb import rows as duck_engine
from calibdash.engines.source import SAMPLE_SALT
from calibdash.errors import DataError, SettingsError
from calibdash.evaluation import Scheme, cell_parts

# pyspark's own use of pandas (toPandas, createDataFrame) warns under pandas 3; not calibdash's code
pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
SIZES = {"part-b.parquet": 3000, "part-c.parquet": 2500, "part-a.parquet": 4000}   # written in this order
SCHEMES = {"kfold": Scheme("kfold", n_folds=3, seed=4), "split": Scheme("split", test_size=0.3, seed=9),
           "column": Scheme("column")}
EXACT, GRID_FORCED = 10 ** 6, 200        # max_exact: ~1,000 distinct scores are exact, or forced to the grid


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three Parquet files (written out of name order), the same rows as one CSV, and the rows in key order."""
    folder = tmp_path_factory.mktemp("engines")
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


# -- memory engine = the in-memory path -----------------------------------------------------------
@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_memory_engine_is_the_in_memory_path(files, kind, scheme):
    got = aggregate(_source(files, kind), SCHEMES[scheme], engine="memory")
    assert_same_cells(got, _reference(files["rows"], SCHEMES[scheme], cells.MAX_EXACT))
    assert got.n_rows == sum(SIZES.values()) and got.exact


# -- DuckDB = memory ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("max_exact", [EXACT, GRID_FORCED])
def test_duckdb_equals_memory(files, kind, scheme, max_exact):
    src = _source(files, kind)
    ref = _reference(files["rows"], SCHEMES[scheme], max_exact)
    got = aggregate(src, SCHEMES[scheme], engine="duckdb", max_exact=max_exact, memory_limit="200MB", threads=2)
    assert got.exact == (max_exact == EXACT)
    assert_same_cells(got, ref)
    assert_same_cells(got, aggregate(src, SCHEMES[scheme], engine="memory", max_exact=max_exact))


def test_grid_cells_are_the_floor_of_score_times_grid(files):
    got = aggregate(_source(files, "parquet"), SCHEMES["kfold"], engine="duckdb", max_exact=GRID_FORCED)
    rows = files["rows"]
    step = np.minimum(np.floor(rows["score"].to_numpy() * cells.GRID), cells.GRID - 1)
    part = cells.parts_for(len(rows), "kfold", seed=4, k=3)
    direct = pd.DataFrame({"part": part, "step": step, "s": rows["score"], "y": rows["label"]}).groupby(
        ["part", "step"]).agg(n=("y", "size"), n_pos=("y", "sum"), s=("s", "sum")).reset_index()
    np.testing.assert_array_equal(got.n, direct["n"])
    np.testing.assert_array_equal(got.n_pos, direct["n_pos"])
    np.testing.assert_allclose(got.score, direct["s"] / direct["n"], rtol=1e-12)


def test_feature_codes_match_a_direct_groupby(files):
    src = _source(files, "parquet", features=("device", "x"))
    got = aggregate(src, SCHEMES["split"], engine="duckdb", feature_bins=4)
    assert_same_cells(got, aggregate(src, SCHEMES["split"], engine="memory", feature_bins=4))
    rows = files["rows"]
    edges = np.unique(np.quantile(rows["x"], [0.25, 0.5, 0.75]))
    np.testing.assert_allclose(got.features.attrs["edges"]["x"], edges)
    direct = pd.DataFrame({"part": cells.parts_for(len(rows), "split", seed=9, test_size=0.3),
                           "score": rows["score"], "device": rows["device"],
                           "x": np.searchsorted(edges, rows["x"], side="right").astype(float), "y": rows["label"]})
    direct = direct.groupby(["part", "score", "device", "x"]).agg(n=("y", "size"), n_pos=("y", "sum")).reset_index()
    assert len(got) == len(direct)
    mine = pd.DataFrame({"part": got.part, "score": got.score, "device": got.features["device"].astype(str),
                         "x": got.features["x"], "n": got.n, "n_pos": got.n_pos})
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), direct, check_dtype=False)
    assert list(got.features["device"].cat.categories) == ["desktop", "mobile", "tablet"]   # dense ranks
    assert got.features["x"].max() == edges.size


def test_row_sample_is_the_smallest_hashes_in_every_engine(files):
    src = _source(files, "parquet", features=("device",))
    _, mem = aggregate(src, SCHEMES["kfold"], engine="memory", sample_rows=300, seed=3)
    _, duck = aggregate(src, SCHEMES["kfold"], engine="duckdb", sample_rows=300, seed=3)
    pd.testing.assert_frame_equal(mem, duck, check_dtype=False)
    n = len(files["rows"])
    h = cells.row_hash(np.arange(n), 3 + SAMPLE_SALT)
    expect = np.sort(np.lexsort((np.arange(n), h))[:300])
    np.testing.assert_array_equal(duck["key"], expect)
    np.testing.assert_array_equal(duck["label"], files["rows"]["label"].to_numpy()[expect])
    np.testing.assert_array_equal(duck["part"], cells.parts_for(n, "kfold", seed=4, k=3)[expect])


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


def test_margins_are_mapped_by_the_logistic_function(files):
    src = _source(files, "parquet", score="margin")
    mem = aggregate(src, SCHEMES["kfold"], engine="memory")
    duck = aggregate(src, SCHEMES["kfold"], engine="duckdb")
    np.testing.assert_array_equal(mem.n, duck.n)
    np.testing.assert_array_equal(mem.n_pos, duck.n_pos)
    np.testing.assert_allclose(duck.score, mem.score, rtol=1e-12)     # exp() may differ by an ulp
    m = np.unique(files["rows"]["margin"])
    np.testing.assert_allclose(np.unique(mem.score), 1 / (1 + np.exp(-m)), rtol=1e-14)
    with pytest.raises(DataError, match="outside"):
        aggregate(_source(files, "parquet", score="margin", transform="probability"), engine="duckdb")


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_text_labels_with_a_chosen_positive(files, engine):
    c = aggregate(_source(files, "csv", label="word", positive="no"), engine=engine)
    assert int(c.n_pos.sum()) == int((files["rows"]["word"] == "no").sum())


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_bad_rows_are_refused_with_counts(tmp_path, engine):
    n = 50
    base = pd.DataFrame({"score": np.linspace(0, 1, n), "label": np.arange(n) % 2})
    cases = [
        (base.assign(score=base["score"].where(np.arange(n) % 10 != 3)), "5 missing or non-finite"),
        (base.assign(label=0), "one class only"),
        (base.assign(label=np.arange(n) % 3),
         "more than two values: 17 rows hold values other than its smallest and its largest"),      # no value
        (base.assign(label=base["label"].astype(float).where(np.arange(n) != 4)), "1 missing values"),
    ]
    for i, (df, message) in enumerate(cases):
        path = tmp_path / f"bad{i}.parquet"
        df.to_parquet(path, index=False)
        with pytest.raises(DataError, match=message):
            aggregate(Source(str(path)), engine=engine)
    path = tmp_path / "outside.parquet"
    base.assign(score=base["score"] * 1.5).to_parquet(path, index=False)
    with pytest.raises(DataError, match="17 of 50 values outside"):
        aggregate(Source(str(path), transform="probability"), engine=engine)


def test_dispatch_and_default_engine(files):
    assert default_engine(_source(files, "csv")) == "memory"
    assert default_engine(_source(files, "parquet")) == "duckdb"      # several files
    with pytest.raises(SettingsError):
        aggregate(_source(files, "csv"), engine="pandas")
    with pytest.raises(SettingsError, match="two roles"):
        Source("x.parquet", score="s", label="s")


# -- Spark = memory ---------------------------------------------------------------------------------
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
    from calibdash.engines.spark.rows import to_pandas, row_hash_column, with_row_hash
    from pyspark.sql import functions as F

    df = spark.range(0, 50_000).union(spark.range(2 ** 32 - 25_000, 2 ** 32 + 25_000))     # 1e5 keys across 2^32
    df = with_row_hash(df, "id", 2 ** 31 + 7, "h").withColumn("h1", row_hash_column(F.col("id"), 1))
    got = to_pandas(spark, df, ["id", "h", "h1"]).sort_values("id")
    keys = got["id"].to_numpy().astype(np.uint64)
    assert keys.size == 100_000
    np.testing.assert_array_equal(got["h"].to_numpy().astype(np.uint64), cells.row_hash(keys, 2 ** 31 + 7))
    np.testing.assert_array_equal(got["h1"].to_numpy().astype(np.uint64), cells.row_hash(keys, 1))


@pytest.mark.parametrize("kind, scheme, max_exact, features", [
    ("parquet", "kfold", EXACT, ("device", "x")),
    ("parquet", "split", GRID_FORCED, ()),
    ("csv", "kfold", GRID_FORCED, ()),
    ("csv", "column", EXACT, ("device",)),
])
def test_spark_equals_memory(files, spark, kind, scheme, max_exact, features):
    src = _source(files, kind, features=features)
    got = aggregate(src, SCHEMES[scheme], engine="spark", spark=spark, max_exact=max_exact, feature_bins=4)
    assert_same_cells(got, aggregate(src, SCHEMES[scheme], engine="memory", max_exact=max_exact, feature_bins=4))
    if not features:
        assert_same_cells(got, _reference(files["rows"], SCHEMES[scheme], max_exact))


def test_spark_sample_query_and_refusal(files, spark, tmp_path):
    rows = files["rows"].assign(pos=np.arange(len(files["rows"])))
    spark.createDataFrame(rows.sample(frac=1.0, random_state=0)).createOrReplaceTempView("engine_rows")
    query = Source(query="SELECT * FROM engine_rows", order_by="pos", split="split")
    assert_same_cells(aggregate(query, SCHEMES["kfold"], engine="spark", spark=spark),
                      _reference(files["rows"], SCHEMES["kfold"], EXACT))
    with pytest.raises(SettingsError, match="order_by"):
        aggregate(Source(table="engine_rows"), SCHEMES["split"], engine="spark", spark=spark)
    src = _source(files, "parquet")
    _, mem = aggregate(src, SCHEMES["split"], engine="memory", sample_rows=100, seed=1)
    _, got = aggregate(src, SCHEMES["split"], engine="spark", spark=spark, sample_rows=100, seed=1)
    pd.testing.assert_frame_equal(mem, got, check_dtype=False)
    path = tmp_path / "one_class.parquet"
    pd.DataFrame({"score": np.linspace(0, 1, 30), "label": 1}).to_parquet(path, index=False)
    with pytest.raises(DataError, match="one class only"):
        aggregate(Source(str(path)), engine="spark", spark=spark)
