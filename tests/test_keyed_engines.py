"""Keyed cells from memory, DuckDB and Spark: the same keys, key codes, parts and counts on the same files.

The reference is :func:`calibdash.keyed.rows.keyed_cells` on the rows concatenated in sorted file order (whose keys
are make_groups' / to_periods', ``tests/test_keyed_rows.py``); every engine must give it: labels, notes, key codes,
parts and integer counts equal, score sums to rounding (rtol 1e-9: sums of the same <= 10^4 doubles in another
order differ by a few ulps).
"""
import numpy as np
import pandas as pd
import pytest

from conftest import start_spark

from calibdash.engines import Source, aggregate_keyed
from calibdash.errors import DataError, SettingsError
from calibdash.evaluation import Scheme, cell_parts
from calibdash.grouping import make_groups
from calibdash.keyed import Key
from calibdash.keyed.rows import keyed_cells

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
SIZES = {"part-b.parquet": 1500, "part-c.parquet": 1200, "part-a.parquet": 2000}   # written out of name order
SCHEMES = {"kfold": Scheme("kfold", n_folds=3, seed=4), "split": Scheme("split", test_size=0.3, seed=9),
           "column": Scheme("column")}
# boundaries written into every file: a Sunday at 23:59:59 and the Monday after (two weeks), the last second
# of a quarter and the first of the next
EDGES = ["2025-03-30 23:59:59", "2025-03-31 00:00:00", "2025-03-31 23:59:59", "2025-04-01 00:00:00"]
KEYS = {
    "text segment, missing, pooled": Key("seg"),
    "numeric quantiles": Key("x"),
    "numeric few values": Key("few"),
    "boolean": Key("flag"),
    "day": Key("when", kind="period", freq="D"),
    "week": Key("when", kind="period", freq="W"),
    "month": Key("when", kind="period", freq="M"),
    "quarter": Key("when", kind="period", freq="Q"),
    "auto": Key("when", kind="period"),
    "YYYYMMDD, unreadable left out": Key("ymd", kind="period", freq="W"),
    "ISO text, unreadable left out": Key("iso", kind="period", freq="M"),
}


def _frame(rng, n):
    s = np.round(rng.beta(2, 5, n), 3)                         # ~1,000 distinct scores
    when = pd.Timestamp("2025-02-20") + pd.to_timedelta(rng.integers(0, 55 * 86400, n), unit="s")
    when = pd.Series(when)
    when[:len(EDGES)] = pd.to_datetime(EDGES)
    df = pd.DataFrame({
        "score": s, "label": (rng.random(n) < s).astype(np.int64),
        "split": rng.choice(["train", "test"], n, p=[0.7, 0.3]),
        "seg": rng.choice(["north", " south", "East", "tiny"], n, p=[.5, .3, .195, .005]),
        "x": np.round(rng.normal(size=n), 3), "few": rng.integers(0, 4, n) * 1.5, "flag": rng.random(n) < 0.3,
        "when": when, "ymd": when.dt.strftime("%Y%m%d").astype(np.int64),
        "iso": when.dt.strftime("%Y-%m-%dT%H:%M:%S")})
    df.loc[::37, "seg"] = None
    df.loc[5::41, "x"] = np.nan
    df.loc[7::53, "ymd"] = 20250231                              # no such day: left out
    df.loc[9::61, "iso"] = "soon"                                # not a date: left out
    return df


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keyed")
    rng = np.random.default_rng(11)
    frames = {}
    for name, n in SIZES.items():
        frames[name] = _frame(rng, n)
        frames[name].to_parquet(folder / name, index=False, row_group_size=500)
    rows = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    rows.to_csv(folder / "all.csv", index=False)
    zoned = rows.assign(tz=rows["when"].dt.tz_localize("UTC").dt.tz_convert("America/New_York"))
    zoned.to_parquet(folder / "zoned.parquet", index=False)
    shuffled = rows.sample(frac=1.0, random_state=3).reset_index(drop=True)
    shuffled.to_parquet(folder / "shuffled.parquet", index=False)
    return {"glob": str(folder / "part-*.parquet"), "csv": str(folder / "all.csv"), "rows": rows,
            "zoned": str(folder / "zoned.parquet"), "shuffled": str(folder / "shuffled.parquet")}


def _source(files, fmt):
    return Source(files["glob"] if fmt == "parquet" else files["csv"], split="split")


def _reference(rows, key, scheme=None):
    part = None if scheme is None else cell_parts(len(rows), scheme, rows["split"].to_numpy())
    return keyed_cells(rows["score"].to_numpy(), rows["label"].to_numpy(), rows[key.column], key, part)


def assert_same_keyed(a, b):
    assert (a.labels, a.notes, a.pooled, a.starts, a.spec, a.n_left_out) == \
        (b.labels, b.notes, b.pooled, b.starts, b.spec, b.n_left_out)
    assert a.cells.exact == b.cells.exact and a.cells.n_rows == b.cells.n_rows and len(a) == len(b)
    np.testing.assert_array_equal(a.key, b.key)
    np.testing.assert_array_equal(a.cells.part, b.cells.part)
    np.testing.assert_array_equal(a.cells.n, b.cells.n)
    np.testing.assert_array_equal(a.cells.n_pos, b.cells.n_pos)
    np.testing.assert_allclose(a.cells.score_sum, b.cells.score_sum, rtol=1e-9)
    np.testing.assert_array_equal(a.cells.score, b.cells.score)           # exact cells: the very scores


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("case", list(KEYS))
def test_engines_give_the_rows_keyed_cells(files, engine, fmt, case):
    key = KEYS[case]
    got = aggregate_keyed(_source(files, fmt), key, engine=engine)
    assert_same_keyed(got, _reference(files["rows"], key))


def test_the_cases_cover_what_they_name(files):
    ref = {case: _reference(files["rows"], key) for case, key in KEYS.items()}
    assert ref["text segment, missing, pooled"].labels == ("East", "north", "south", "(missing)", "other")
    assert ref["text segment, missing, pooled"].pooled == ("tiny",)
    assert len(ref["numeric quantiles"].labels) == 6 and ref["numeric quantiles"].labels[-1] == "(missing)"
    assert ref["numeric few values"].labels == ("0", "1.5", "3", "4.5")
    assert ref["boolean"].labels == ("False", "True")
    week = ref["week"]
    sunday, monday = week.labels.index("2025-03-24"), week.labels.index("2025-03-31")
    assert monday == sunday + 1
    quarter = ref["quarter"]
    assert quarter.labels == ("2025Q1", "2025Q2")
    # rows: the 4 boundary rows of each of 3 files fall 1 per week before, 3 in the week of Monday 31 March,
    # 2 per quarter; the cells' weights sum to each key's rows
    rows = files["rows"]
    per_week = pd.to_datetime(rows["when"]).dt.to_period("W").dt.start_time.value_counts()
    np.testing.assert_array_equal(np.bincount(week.key, weights=week.cells.n),
                                  [per_week[pd.Timestamp(d)] for d in week.labels])
    lab, order, _, _ = make_groups(rows["seg"], name="seg")
    np.testing.assert_array_equal(np.bincount(ref["text segment, missing, pooled"].key,
                                              weights=ref["text segment, missing, pooled"].cells.n),
                                  [np.sum(lab == g) for g in order])
    assert ref["YYYYMMDD, unreadable left out"].n_left_out == sum(len(range(7, n, 53)) for n in SIZES.values())
    assert ref["ISO text, unreadable left out"].n_left_out == sum(len(range(9, n, 61)) for n in SIZES.values())
    assert ref["auto"].spec.freq == "W"                          # 55 days: 9 weeks, the finest under 30 periods


@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_parts_with_a_scheme(files, engine, scheme):
    for key in (KEYS["text segment, missing, pooled"], KEYS["week"]):
        got = aggregate_keyed(_source(files, "parquet"), key, SCHEMES[scheme], engine=engine)
        assert_same_keyed(got, _reference(files["rows"], key, SCHEMES[scheme]))
        assert set(np.unique(got.cells.part)) == ({0, 1, 2} if scheme == "kfold" else {0, 1})


def test_zoned_timestamps_and_the_grid(files):
    rows = files["rows"]
    src = Source(files["zoned"], split="split")
    for engine in ("memory", "duckdb"):
        # the zoned column holds the UTC instants written in New York time: its periods are the UTC ones
        zoned = aggregate_keyed(src, Key("tz", kind="period", freq="W"), engine=engine)
        assert_same_keyed(zoned, _reference(rows.assign(tz=rows["when"]), Key("tz", kind="period", freq="W")))
        # ~1,000 distinct scores over max_exact = 100: every key's cells on the grid, decided on all rows
        grid = aggregate_keyed(src, KEYS["boolean"], engine=engine, max_exact=100)
        ref = keyed_cells(rows["score"], rows["label"], rows["flag"], KEYS["boolean"], max_exact=100)
        assert not grid.cells.exact and not ref.cells.exact
        np.testing.assert_array_equal(grid.key, ref.key)
        np.testing.assert_array_equal(grid.cells.n, ref.cells.n)
        np.testing.assert_array_equal(grid.cells.n_pos, ref.cells.n_pos)
        np.testing.assert_allclose(grid.cells.score, ref.cells.score, rtol=1e-9)     # means of the same rows


def test_row_order_of_the_file_does_not_matter(files):
    for key in (KEYS["numeric quantiles"], KEYS["month"]):
        a = aggregate_keyed(Source(files["shuffled"]), key, engine="duckdb")
        assert_same_keyed(a, _reference(files["rows"], key))


def test_refusals_are_the_same(files):
    for engine in ("memory", "duckdb"):
        src = _source(files, "parquet")
        with pytest.raises(SettingsError, match="more than the 2 that can be compared"):
            aggregate_keyed(src, Key("seg", max_groups=2, n_quantiles=2), engine=engine)
        with pytest.raises(DataError, match="does not hold dates"):
            aggregate_keyed(src, Key("seg", kind="period"), engine=engine)
        with pytest.raises(DataError, match="does not hold dates"):
            aggregate_keyed(src, Key("x", kind="period"), engine=engine)
    stages = []
    aggregate_keyed(_source(files, "parquet"), KEYS["numeric quantiles"], engine="duckdb", on_stage=stages.append)
    assert stages == ["statistics", "key quantiles", "aggregation"]


# -- Spark ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    session = start_spark("calibdash-keyed-tests")
    yield session
    session.stop()


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_spark_gives_the_same_keyed_cells(spark, files, fmt):
    cases = list(KEYS) if fmt == "parquet" else ["text segment, missing, pooled", "numeric quantiles", "boolean",
                                                  "week", "YYYYMMDD, unreadable left out",
                                                  "ISO text, unreadable left out"]
    for case in cases:
        got = aggregate_keyed(_source(files, fmt), KEYS[case], engine="spark", spark=spark)
        assert_same_keyed(got, _reference(files["rows"], KEYS[case]))


def test_spark_parts_and_zones(spark, files):
    key = KEYS["text segment, missing, pooled"]
    got = aggregate_keyed(_source(files, "parquet"), key, SCHEMES["kfold"], engine="spark", spark=spark)
    assert_same_keyed(got, _reference(files["rows"], key, SCHEMES["kfold"]))
    zoned = aggregate_keyed(Source(files["zoned"]), Key("tz", kind="period", freq="W"), engine="spark", spark=spark)
    assert_same_keyed(zoned, _reference(files["rows"].assign(tz=files["rows"]["when"]),
                                        Key("tz", kind="period", freq="W")))


def test_duckdb_refuses_a_text_key_of_too_many_values_before_listing_them(tmp_path, monkeypatch):
    """A text column whose estimated distinct values pass MAX_TEXT_KEYS is refused with a SettingsError that
    names the column, before DuckDB lists (and holds) every value."""
    from calibdash.engines.duckdb import keyed as duckdb_keyed
    from calibdash.engines.source import Source
    from calibdash.errors import SettingsError

    n = 500
    pd.DataFrame({"score": np.linspace(0.01, 0.99, n), "label": np.arange(n) % 2,
                  "user": [f"u{i}" for i in range(n)]}).to_parquet(tmp_path / "ids.parquet", index=False)
    monkeypatch.setattr(duckdb_keyed, "MAX_TEXT_KEYS", 100)
    with pytest.raises(SettingsError, match="user has about .* distinct values"):
        duckdb_keyed.aggregate_keyed(Source(path=str(tmp_path / "ids.parquet"), score="score", label="label"),
                                     Key("user"))
