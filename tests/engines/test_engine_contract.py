"""The engine contract: every registered engine (:func:`calibdash.engines.available`) gives the same answers.

Each test runs once per engine the registry finds, so a new engine's package is checked by adding it: the same
score cells, keyed cells, K-class cells, row samples, refusals and applied models as the references, which are
computed here independently of the engines (:func:`calibdash.evaluation.cells.aggregate`,
:func:`calibdash.monitoring.keyed.from_rows.keyed_cells`, :func:`calibdash.evaluation.cells.class_cells` and ``predict`` on the
rows concatenated in sorted file order, parts from :func:`calibdash.evaluation.holdout.cell_parts`). Integer counts are
equal, score sums to rounding (rtol 1e-9: sums of the same <= 10^4 doubles in another order differ by a few ulps),
exact cells' scores equal; values through ``exp`` (margins, logits) to 1e-12, since numpy, a database's C library
and the JVM may differ in the last bit.

An engine that needs a session declares its keyword (:attr:`calibdash.engines.base.Engine.session`); the
session is started by :data:`SESSIONS` (Spark: :func:`conftest.spark_with_workers`, which skips where Java or
pyspark is missing, except in CI).
"""
import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from tests.engines import test_engines as B
from tests.engines import test_engines_classes as C
from tests.engines import test_keyed_engines as KD
from tests.conftest import REPO, spark_with_workers

from calibdash import calibrators, engines
from calibdash.evaluation import cells
from calibdash.engines import Source, aggregate, aggregate_keyed
from calibdash.engines.apply import apply_model
from calibdash.engines.classes import ClassSource, aggregate_classes, content_key, open_class_rows
from calibdash.engines.source import SAMPLE_SALT
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import cell_parts
from calibdash.monitoring.keyed import Key
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.measures import class_measures as M

# pyspark's own use of pandas (toPandas, createDataFrame) warns under pandas 3; not calibdash's code
pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")

#: How to start the session an engine asks for, by its session keyword: a generator that yields the session,
#: then stops it (Spark's Python workers run this interpreter on this checkout, for the pandas UDFs).
SESSIONS = {"spark": lambda: spark_with_workers("calibdash-engine-contract", "local[2]", **{
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.codegen.wholeStage": "false",          # tiny data: compiling costs more than it saves
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.files.maxPartitionBytes": str(64 * 1024)})}     # several splits per CSV file


@pytest.fixture(scope="module", params=engines.available())
def engine(request):
    """``(name, options)``: a registered engine and the options it needs (a session)."""
    eng = engines.get(request.param)
    if not eng.session:
        yield eng.name, {}
        return
    started = SESSIONS[eng.session]()
    yield eng.name, {eng.session: next(started)}
    next(started, None)


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return B.write_files(tmp_path_factory.mktemp("contract_binary"))


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    return C.write_files(tmp_path_factory.mktemp("contract_classes"))


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    return KD.write_files(tmp_path_factory.mktemp("contract_keyed"))


def test_the_registry_and_the_published_schema_name_the_same_engines():
    names = engines.available()
    assert names[:3] == ["memory", "duckdb", "spark"] and len(set(names)) == len(names)
    for name in names:
        eng = engines.get(name)
        assert eng.name == name and type(eng).__module__ == f"calibdash.engines.{name}"   # one package each
        assert eng.dialect is None or eng.dialect in ("duckdb", "spark", "ansi")
    common = json.loads((REPO / "calibdash" / "io" / "schemas" / "common.json").read_text())
    assert common["$defs"]["engine"]["enum"] == names
    assert engines.default_engine() == "duckdb" and engines.find(out_of_core=False) == "memory"
    with pytest.raises(SettingsError, match="engine must be one of memory, duckdb, spark"):
        engines.get("pandas")


# -- score cells --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", list(B.SCHEMES))
@pytest.mark.parametrize("max_exact", [B.EXACT, B.GRID_FORCED])
def test_score_cells_are_the_in_memory_paths(binary, engine, kind, scheme, max_exact):
    name, opts = engine
    got = aggregate(B._source(binary, kind), B.SCHEMES[scheme], engine=name, max_exact=max_exact, features=[],
                    memory_limit="200MB", threads=2, **opts)
    assert got.exact == (max_exact == B.EXACT) and got.n_rows == sum(B.SIZES.values())
    B.assert_same_cells(got, B._reference(binary["rows"], B.SCHEMES[scheme], max_exact))


def test_grid_cells_are_the_floor_of_score_times_grid(binary, engine):
    name, opts = engine
    got = aggregate(B._source(binary, "parquet"), B.SCHEMES["kfold"], engine=name, max_exact=B.GRID_FORCED, **opts)
    rows = binary["rows"]
    step = np.minimum(np.floor(rows["score"].to_numpy() * cells.GRID), cells.GRID - 1)
    part = cells.parts_for(len(rows), "kfold", seed=4, k=3)
    direct = pd.DataFrame({"part": part, "step": step, "s": rows["score"], "y": rows["label"]}).groupby(
        ["part", "step"]).agg(n=("y", "size"), n_pos=("y", "sum"), s=("s", "sum")).reset_index()
    np.testing.assert_array_equal(got.n, direct["n"])
    np.testing.assert_array_equal(got.n_pos, direct["n_pos"])
    np.testing.assert_allclose(got.score, direct["s"] / direct["n"], rtol=1e-12)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_feature_codes_match_a_direct_groupby(binary, engine, kind):
    name, opts = engine
    got = aggregate(B._source(binary, kind, features=("device", "x")), B.SCHEMES["split"], engine=name,
                    feature_bins=4, **opts)
    rows = binary["rows"]
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


@pytest.mark.parametrize("scheme", ["kfold", "split"])
def test_row_sample_is_the_smallest_hashes(binary, engine, scheme):
    name, opts = engine
    _, got = aggregate(B._source(binary, "parquet", features=("device",)), B.SCHEMES[scheme], engine=name,
                       sample_rows=300, seed=3, **opts)
    rows, n = binary["rows"], len(binary["rows"])
    h = cells.row_hash(np.arange(n), 3 + SAMPLE_SALT)
    expect = np.sort(np.lexsort((np.arange(n), h))[:300])
    assert list(got.columns) == ["key", "score", "label", "part", "device"]
    np.testing.assert_array_equal(got["key"], expect)
    np.testing.assert_array_equal(got["score"], rows["score"].to_numpy()[expect])
    np.testing.assert_array_equal(got["label"], rows["label"].to_numpy()[expect])
    np.testing.assert_array_equal(got["device"], rows["device"].to_numpy()[expect])
    np.testing.assert_array_equal(got["part"], cell_parts(n, B.SCHEMES[scheme], rows["split"].to_numpy())[expect])


def test_margins_are_mapped_by_the_logistic_function(binary, engine):
    name, opts = engine
    got = aggregate(B._source(binary, "parquet", score="margin"), B.SCHEMES["kfold"], engine=name, **opts)
    rows = binary["rows"]
    ref = cells.aggregate(expit(rows["margin"].to_numpy()), rows["label"].to_numpy(),
                          cells.parts_for(len(rows), "kfold", seed=4, k=3))
    np.testing.assert_array_equal(got.n, ref.n)
    np.testing.assert_array_equal(got.n_pos, ref.n_pos)
    np.testing.assert_allclose(got.score, ref.score, rtol=1e-12)          # exp() may differ by an ulp
    with pytest.raises(DataError, match="outside"):
        aggregate(B._source(binary, "parquet", score="margin", transform="probability"), engine=name, **opts)


def test_text_labels_with_a_chosen_positive(binary, engine):
    name, opts = engine
    c = aggregate(B._source(binary, "csv", label="word", positive="no"), engine=name, **opts)
    assert int(c.n_pos.sum()) == int((binary["rows"]["word"] == "no").sum())


def test_bad_rows_are_refused_with_counts(tmp_path, engine):
    name, opts = engine
    n = 50
    base = pd.DataFrame({"score": np.linspace(0, 1, n), "label": np.arange(n) % 2})
    cases = [
        (base.assign(score=base["score"].where(np.arange(n) % 10 != 3)), "5 missing or non-finite"),
        (base.assign(label=0), "one class only"),
        (base.assign(label=np.arange(n) % 3),
         "more than two values: 17 rows hold values other than its smallest and its largest"),      # no value
        (base.assign(label=base["label"].astype(float).where(np.arange(n) != 4)), "1 missing values"),
        (base.assign(score=base["score"] * 1.5), None),
    ]
    for i, (df, message) in enumerate(cases):
        path = tmp_path / f"bad{i}.parquet"
        df.to_parquet(path, index=False)
        if message is None:
            with pytest.raises(DataError, match="17 of 50 values outside"):
                aggregate(Source(str(path), transform="probability"), engine=name, **opts)
            continue
        with pytest.raises(DataError, match=message):
            aggregate(Source(str(path)), engine=name, **opts)
    with pytest.raises(SettingsError, match="order_by"):
        aggregate(Source(query="SELECT 1 AS score, 0 AS label"), B.SCHEMES["kfold"], engine=name, **opts)


# -- keyed cells --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_keyed_cells_are_the_rows_keyed_cells(keyed, engine, fmt):
    name, opts = engine
    for case, key in KD.KEYS.items():
        got = aggregate_keyed(KD._source(keyed, fmt), key, engine=name, **opts)
        KD.assert_same_keyed(got, KD._reference(keyed["rows"], key))


@pytest.mark.parametrize("scheme", list(KD.SCHEMES))
def test_keyed_cells_in_parts(keyed, engine, scheme):
    name, opts = engine
    for key in (KD.KEYS["text segment, missing, pooled"], KD.KEYS["week"]):
        got = aggregate_keyed(KD._source(keyed, "parquet"), key, KD.SCHEMES[scheme], engine=name, **opts)
        KD.assert_same_keyed(got, KD._reference(keyed["rows"], key, KD.SCHEMES[scheme]))
        assert set(np.unique(got.cells.part)) == ({0, 1, 2} if scheme == "kfold" else {0, 1})


def test_keyed_zones_grid_and_row_order(keyed, engine):
    name, opts = engine
    rows = keyed["rows"]
    src = Source(keyed["zoned"], split="split")
    # the zoned column holds the UTC instants written in New York time: its periods are the UTC ones
    zoned = aggregate_keyed(src, Key("tz", kind="period", freq="W"), engine=name, **opts)
    KD.assert_same_keyed(zoned, KD._reference(rows.assign(tz=rows["when"]), Key("tz", kind="period", freq="W")))
    # ~1,000 distinct scores over max_exact = 100: every key's cells on the grid, decided on all rows
    grid = aggregate_keyed(src, KD.KEYS["boolean"], engine=name, max_exact=100, **opts)
    ref = keyed_cells(rows["score"], rows["label"], rows["flag"], KD.KEYS["boolean"], max_exact=100)
    assert not grid.cells.exact and not ref.cells.exact
    np.testing.assert_array_equal(grid.key, ref.key)
    np.testing.assert_array_equal(grid.cells.n, ref.cells.n)
    np.testing.assert_array_equal(grid.cells.n_pos, ref.cells.n_pos)
    np.testing.assert_allclose(grid.cells.score, ref.cells.score, rtol=1e-9)     # means of the same rows
    for key in (KD.KEYS["numeric quantiles"], KD.KEYS["month"]):                 # the file's row order
        KD.assert_same_keyed(aggregate_keyed(Source(keyed["shuffled"]), key, engine=name, **opts),
                             KD._reference(rows, key))


def test_keyed_refusals(keyed, engine):
    name, opts = engine
    src = KD._source(keyed, "parquet")
    with pytest.raises(SettingsError, match="more than the 2 that can be compared"):
        aggregate_keyed(src, Key("seg", max_groups=2, n_quantiles=2), engine=name, **opts)
    with pytest.raises(DataError, match="does not hold dates"):
        aggregate_keyed(src, Key("seg", kind="period"), engine=name, **opts)
    with pytest.raises(DataError, match="does not hold dates"):
        aggregate_keyed(src, Key("x", kind="period"), engine=name, **opts)


# -- K-class cells and rows -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("scheme", list(C.SCHEMES))
@pytest.mark.parametrize("max_exact", [C.EXACT, C.GRID_FORCED])
def test_class_cells_are_the_in_memory_paths(classes, engine, kind, scheme, max_exact):
    name, opts = engine
    got = aggregate_classes(C._source(classes, kind), C.SCHEMES[scheme], engine=name, max_exact=max_exact,
                            memory_limit="200MB", threads=2, **opts)
    assert got.exact == (max_exact == C.EXACT)
    C.assert_same_class_cells(got, C._reference(classes["rows"], C.SCHEMES[scheme], max_exact))


def test_class_cells_of_logits(classes, engine):
    name, opts = engine
    got = aggregate_classes(C._source(classes, "parquet", logits=True), C.SCHEMES["split"], engine=name, **opts)
    C.assert_same_class_cells(got, C._reference(classes["rows"], C.SCHEMES["split"], C.EXACT, logits=True),
                              exact_scores=False)


def test_class_rows_are_refused_with_counts(tmp_path, engine):
    name, opts = engine
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
            aggregate_classes(src, engine=name, **opts)


def test_class_rows_counts_batches_and_candidates(classes, engine):
    name, opts = engine
    rows, scheme = classes["rows"], C.SCHEMES["kfold"]
    part = cell_parts(len(rows), scheme)
    X, y = rows[[f"p_{k}" for k in range(C.K)]].to_numpy(), rows["label"].to_numpy()
    with open_class_rows(C._source(classes, "parquet"), scheme, name, **opts) as got:
        counts = np.zeros((3, C.K), dtype=np.int64)
        np.add.at(counts, (part, y), 1)
        np.testing.assert_array_equal(got.counts(), counts)
        seen = [np.column_stack([b[0], b[1], b[2]]) for b in got.batches([0, 2], batch_rows=1000)]
        seen = np.concatenate(seen)
        expect = np.column_stack([X, y, part])[np.isin(part, [0, 2])]
        order = lambda a: a[np.lexsort(a.T[::-1])]
        np.testing.assert_array_equal(order(seen), order(expect))
        cX, cy, cpart, ckey = got.candidates(np.full((3, C.K), 2 ** 31, dtype=np.int64), seed=5)
    key = content_key(X, y, 5)
    keep = key < np.uint64(2 ** 31)
    np.testing.assert_array_equal(np.sort(ckey), np.sort(key[keep]))
    np.testing.assert_array_equal(np.bincount(cpart, minlength=3), np.bincount(part[keep], minlength=3))


def test_evaluate_class_source_measures_the_held_out_rows(classes, engine):
    from calibdash.engines.class_fit import evaluate_class_source

    name, opts = engine
    scheme = C.SCHEMES["split"]
    res = evaluate_class_source(classes["glob"], probs="p_", split="split", scheme=scheme, engine=name, **opts)
    rows = classes["rows"]
    held = cell_parts(len(rows), scheme) == 1
    P, y = rows[[f"p_{k}" for k in range(C.K)]].to_numpy()[held], rows["label"].to_numpy()[held]
    expect = M.compute(P, y)
    assert res.exact and res.cells.n_rows == int(held.sum()) and list(res.metrics.index) == ["uncalibrated"]
    for key in expect:
        assert res.metrics.loc["uncalibrated", key] == pytest.approx(expect[key], rel=1e-12, abs=1e-15), key


# -- applying a model ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["isotonic", "histogram"])
def test_apply_writes_predict_on_every_row(binary, engine, tmp_path, model):
    name, opts = engine
    rows = binary["rows"]
    fit = rows.iloc[:4000]
    if model == "isotonic":
        cal = calibrators.get("isotonic").fit(fit["score"], fit["label"])
        fitted_on, s = {"score": "score", "score_transform": "identity", "features": []}, rows["score"].to_numpy()
    else:
        cal = calibrators.get("histogram", n_bins=50).fit(expit(fit["margin"]), fit["label"])
        fitted_on, s = ({"score": "margin", "score_transform": "logistic", "features": []},
                        expit(rows["margin"].to_numpy()))
    res = apply_model(cal, binary["glob"], tmp_path / "out.parquet", engine=name, fitted_on=fitted_on, **opts)
    assert (res.engine, res.n_rows, res.n_calibrated) == (name, len(rows), len(rows))
    assert res.mapped == (model == "histogram") and res.score_column == fitted_on["score"]
    got = pd.read_parquet(tmp_path / "out.parquet")
    assert sorted(got.columns) == sorted([*rows.columns, "calibrated"])
    # rows in file order, or (an engine writing part files) matched back by their content
    keys = ["score", "margin", "x", "device", "split", "word", "label"]
    got = got.sort_values(keys, kind="stable").reset_index(drop=True)
    ref = rows.assign(calibrated=cal.predict(s)).sort_values(keys, kind="stable").reset_index(drop=True)
    np.testing.assert_allclose(got["calibrated"].to_numpy(), ref["calibrated"].to_numpy(), rtol=1e-12, atol=1e-15)
