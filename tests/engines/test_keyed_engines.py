"""Keyed cells: what the reference gives on the test files, and DuckDB's own stages and limits.

Every engine's keyed cells (the same keys, key codes, parts and counts on the same files) are checked in
``tests/engines/test_engine_contract.py`` against the reference defined here.

The reference is :func:`calibdash.monitoring.keyed.from_rows.keyed_cells` on the rows concatenated in sorted file order (whose keys
are make_groups' / to_periods', ``tests/monitoring/test_keyed_rows.py``); every engine must give it: labels, notes, key codes,
parts and integer counts equal, score sums to rounding (rtol 1e-9: sums of the same <= 10^4 doubles in another
order differ by a few ulps).
"""
import numpy as np
import pandas as pd
import pytest

from calibdash.engines import Source, aggregate_keyed
from calibdash.evaluation.holdout import Scheme, cell_parts
from calibdash.monitoring.grouping import make_groups
from calibdash.monitoring.keyed import Key
from calibdash.monitoring.keyed.from_rows import keyed_cells

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
    return write_files(tmp_path_factory.mktemp("keyed"))


def write_files(folder):
    """Three Parquet files with group and date columns (written out of name order), the same rows as one CSV,
    the rows with a zoned timestamp column, and the rows shuffled."""
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


# -- DuckDB's own ------------------------------------------------------------------------------------
def test_duckdb_reports_its_stages(files):
    stages = []
    aggregate_keyed(_source(files, "parquet"), KEYS["numeric quantiles"], engine="duckdb", on_stage=stages.append)
    assert stages == ["statistics", "key quantiles", "aggregation"]


def test_duckdb_refuses_a_text_key_of_too_many_values_before_listing_them(tmp_path, monkeypatch):
    """A text column whose estimated distinct values pass MAX_TEXT_KEYS is refused with a SettingsError that
    names the column, before DuckDB lists (and holds) every value."""
    from calibdash.engines.duckdb import keyed as duckdb_keyed
    from calibdash.engines.source import Source
    from calibdash.core.errors import SettingsError

    n = 500
    pd.DataFrame({"score": np.linspace(0.01, 0.99, n), "label": np.arange(n) % 2,
                  "user": [f"u{i}" for i in range(n)]}).to_parquet(tmp_path / "ids.parquet", index=False)
    monkeypatch.setattr(duckdb_keyed, "MAX_TEXT_KEYS", 100)
    with pytest.raises(SettingsError, match="user has about .* distinct values"):
        duckdb_keyed.aggregate_keyed(Source(path=str(tmp_path / "ids.parquet"), score="score", label="label"),
                                     Key("user"))
