"""Text columns held as categories (calibdash.data.read): same values, less memory, the same results.

The reading keeps a text column of few distinct values as sorted categories (CSV and Parquet alike), leaves
columns of mostly distinct values as strings, and nothing downstream can tell: roles, score sets, groups and
keyed cells come out as from the plain strings. A score set keeps the score column's own array when every row
is used, read-only, so a page sharing it cannot change the cached table.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from calibdash.data import build_score_set, guess_roles, read_table
from calibdash.data.read import MAX_SHARE, compact_text, keep_as_categories
from calibdash.monitoring.group_metrics import by_group
from calibdash.samples import sample_path


def _table(n: int = 4_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 5, n), 4)
    segment = np.array(["web", "app", "store", "partner"], dtype=object)[rng.integers(0, 4, n)]
    segment[rng.uniform(size=n) < 0.05] = None                     # missing entries stay missing
    return pd.DataFrame({
        "score": s,
        "label": (rng.uniform(size=n) < s).astype(int),
        "segment": segment,
        "day": (pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 30, n), unit="D")).strftime("%Y-%m-%d"),
        "id": [f"u{i:06d}" for i in rng.permutation(n)],            # every value distinct
    })


def _csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


def _parquet(df: pd.DataFrame, row_group_size: int | None = None) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False, row_group_size=row_group_size)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_few_distinct_values_are_held_as_sorted_categories_and_read_back_the_same(fmt):
    df = _table()
    data = _csv(df) if fmt == "csv" else _parquet(df, row_group_size=700)    # several row groups
    got, _ = read_table(data, filename=f"t.{fmt}")
    for c in ("segment", "day"):
        assert isinstance(got[c].dtype, pd.CategoricalDtype), c
        cats = list(got[c].cat.categories)
        assert cats == sorted(cats) == sorted(df[c].dropna().unique())
        # the same entries, missing ones included
        np.testing.assert_array_equal(got[c].isna(), df[c].isna())
        assert got[c].dropna().astype(str).tolist() == df[c].dropna().tolist()
    assert not isinstance(got["id"].dtype, pd.CategoricalDtype)          # mostly distinct: strings
    assert got["id"].tolist() == df["id"].tolist()
    assert got[["segment", "day"]].memory_usage(deep=True).sum() < df[["segment", "day"]].astype(str).memory_usage(
        deep=True).sum() / 4


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_another_row_order_gives_the_same_column_types_and_categories(fmt):
    df = _table()
    shuffled = df.sample(frac=1.0, random_state=3).reset_index(drop=True)
    enc = _csv if fmt == "csv" else _parquet
    a, _ = read_table(enc(df), filename=f"a.{fmt}")
    b, _ = read_table(enc(shuffled), filename=f"b.{fmt}")
    assert a.dtypes.astype(str).tolist() == b.dtypes.astype(str).tolist()
    for c in ("segment", "day"):
        assert list(a[c].cat.categories) == list(b[c].cat.categories)


def test_the_share_rule():
    assert keep_as_categories(50, 100) and not keep_as_categories(51, 100)
    assert not keep_as_categories(1, 1)                    # a single entry: nothing to share
    n = 10
    distinct = int(MAX_SHARE * n) + 1
    df = pd.DataFrame({"t": pd.Series([f"v{i % distinct}" for i in range(n)], dtype=str)})
    assert not isinstance(compact_text(df)["t"].dtype, pd.CategoricalDtype)


def test_mixed_object_columns_are_left_alone():
    df = pd.DataFrame({"m": pd.Series(["a", 1, "a", 1, "a", 1], dtype=object)})
    assert compact_text(df)["m"].dtype == object


def test_roles_score_set_and_groups_are_the_same_as_from_strings():
    """The drift sample read (text as categories) against pandas' own reading (text as strings)."""
    path = sample_path("drift")
    compacted, info = read_table(path)
    plain = pd.read_csv(path, skipinitialspace=True)
    held = [c for c in compacted.columns if isinstance(compacted[c].dtype, pd.CategoricalDtype)]
    assert held                                              # the sample has text columns held so
    ra, rb = guess_roles(compacted), guess_roles(plain)
    assert (ra.label, ra.scores, ra.features, ra.split) == (rb.label, rb.scores, rb.features, rb.split)
    a = build_score_set(compacted, info=info)
    b = build_score_set(plain, info=info)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.feature_columns == b.feature_columns and a.report.messages == b.report.messages
    for col in held:
        ga = by_group(a.scores, a.labels, compacted[col], n_boot=20, seed=1, max_groups=400)
        gb = by_group(b.scores, b.labels, plain[col], n_boot=20, seed=1, max_groups=400)
        pd.testing.assert_frame_equal(ga.table, gb.table)


def test_a_score_set_keeps_the_score_column_itself_read_only():
    df, info = read_table(_csv(_table()), filename="t.csv")
    ss = build_score_set(df, info=info, score="score", label="label")
    assert np.shares_memory(ss.scores, df["score"].to_numpy())          # no copy of the scores
    with pytest.raises(ValueError, match="read-only"):
        ss.scores[0] = 0.5                                             # nor a way to change the shared table
    dropped = df.copy()
    dropped.loc[3, "score"] = np.nan
    ss2 = build_score_set(dropped, score="score", label="label")
    assert ss2.n_rows == len(df) - 1 and not np.shares_memory(ss2.scores, dropped["score"].to_numpy())
