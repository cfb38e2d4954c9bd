"""Keyed cells of rows in memory: the keys are make_groups' / to_periods' and each key's cells are its rows' cells."""
import numpy as np
import pandas as pd
import pytest

from calibdash.evaluation import cells
from calibdash.monitoring.drift import to_periods
from calibdash.core.errors import DataError, SettingsError
from calibdash.monitoring.grouping import make_groups
from calibdash.monitoring.keyed import Key
from calibdash.monitoring.keyed.from_rows import keyed_cells, row_keys

N = 4000


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    s = np.round(rng.beta(2, 5, N), 3)
    y = (rng.random(N) < s).astype(np.int64)
    seg = pd.Series(rng.choice(["north", " south", "East", "west", "tiny"], N, p=[.4, .3, .2, .095, .005]),
                    dtype=object)
    seg[::50] = None                                 # 80 rows: a group "(missing)" kept
    day = pd.Timestamp("2024-12-20") + pd.to_timedelta(rng.integers(0, 200 * 86400, N), unit="s")
    return {"s": s, "y": y, "columns": {
        "seg": seg, "x": pd.Series(np.round(rng.normal(size=N), 3)), "few": pd.Series(rng.integers(0, 4, N) * 1.5),
        "flag": pd.Series(rng.random(N) < 0.3), "when": pd.Series(day)}}


def _same_as_rows(kc, s, y, row_key, labels):
    """Each key's cells are cells.aggregate of that key's rows (exact cells: the very same numbers)."""
    assert kc.cells.n_rows == sum(kc.cells.n) and np.all(np.diff(kc.key) >= 0)
    for k, name in enumerate(labels):
        ref = cells.aggregate(s[row_key == name], y[row_key == name])
        got = kc.of(k)
        np.testing.assert_array_equal(got.score, ref.score)
        np.testing.assert_array_equal(got.n, ref.n)
        np.testing.assert_array_equal(got.n_pos, ref.n_pos)
        np.testing.assert_allclose(got.score_sum, ref.score_sum, rtol=1e-12)


@pytest.mark.parametrize("col", ["seg", "x", "few", "flag"])
def test_groups_are_make_groups_and_cells_are_each_groups_rows(rows, col):
    values = rows["columns"][col]
    row_labels, order, notes, pooled = make_groups(values, name=col)
    kc = keyed_cells(rows["s"], rows["y"], values, Key(col))
    assert kc.labels == tuple(order) and kc.notes == tuple(notes) and kc.pooled == tuple(pooled)
    _same_as_rows(kc, rows["s"], rows["y"], row_labels, order)
    # weights of the cells sum to the rows of each group
    counts = pd.Series(row_labels).value_counts()
    np.testing.assert_array_equal(np.bincount(kc.key, weights=kc.cells.n), [counts[g] for g in order])


def test_small_groups_pooled_and_missing_last(rows):
    kc = keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"], Key("seg"))
    # "tiny" (about 20 rows) is under 50 rows: pooled into "other"; " south" is trimmed; order ignores case
    assert kc.labels == ("East", "north", "south", "west", "(missing)", "other") and kc.pooled == ("tiny",)


@pytest.mark.parametrize("freq", ["D", "W", "M", "Q"])
def test_periods_are_to_periods(rows, freq):
    when = rows["columns"]["when"]
    if freq == "D":                                  # 60 days at most: keep the first 50 days
        when = when.where(when < pd.Timestamp("2025-02-08"))
    per = to_periods(when, freq, name="when")
    kc = keyed_cells(rows["s"], rows["y"], when, Key("when", kind="period", freq=freq))
    assert kc.labels == tuple(per.labels) and kc.starts == tuple(per.starts) and kc.notes == tuple(per.notes)
    assert kc.n_left_out == per.n_left_out and kc.spec.freq == freq
    keep = per.codes >= 0
    _same_as_rows(kc, rows["s"][keep], rows["y"][keep], np.asarray(per.labels)[per.codes[keep]], per.labels)


def test_auto_period_and_boundaries_by_hand():
    when = pd.Series(pd.to_datetime(["2025-03-30 23:59:59",        # a Sunday: the week of Monday 2025-03-24
                                     "2025-03-31 00:00:00",        # Monday: a new week, still the first quarter
                                     "2025-04-01 00:00:00",        # second quarter
                                     None]))
    kc = keyed_cells([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 0], when, Key("t", kind="period", freq="W"))
    assert kc.labels == ("2025-03-24", "2025-03-31") and kc.n_left_out == 1
    np.testing.assert_array_equal(kc.key, [0, 1, 1]) and np.testing.assert_array_equal(kc.cells.score, [.2, .4, .6])
    q = keyed_cells([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 0], when, Key("t", kind="period", freq="Q"))
    assert q.labels == ("2025Q1", "2025Q2") and list(np.bincount(q.key, weights=q.cells.n)) == [2, 1]
    auto = keyed_cells([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 0], when, Key("t", kind="period"))
    assert auto.spec.freq == "D" and auto.labels == ("2025-03-30", "2025-03-31", "2025-04-01")


def test_row_order_and_parts(rows):
    rng = np.random.default_rng(1)
    perm = rng.permutation(N)
    part = cells.parts_for(N, "kfold", k=3, seed=2)
    a = keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"], Key("seg"), part)
    b = keyed_cells(rows["s"][perm], rows["y"][perm], rows["columns"]["seg"][perm], Key("seg"), part[perm])
    np.testing.assert_array_equal(a.key, b.key)
    np.testing.assert_array_equal(a.cells.part, b.cells.part)
    np.testing.assert_array_equal(a.cells.n, b.cells.n)
    np.testing.assert_allclose(a.cells.score_sum, b.cells.score_sum, rtol=1e-12)   # sums in another order
    order = np.lexsort((a.cells.score, a.cells.part, a.key))
    np.testing.assert_array_equal(order, np.arange(len(a)))                    # sorted by key, part, score


def test_grid_is_decided_on_all_rows(rows):
    kc = keyed_cells(rows["s"], rows["y"], rows["columns"]["flag"], Key("flag"), max_exact=100)
    assert not kc.cells.exact                        # ~1,000 distinct scores over 100: every key on the grid
    ref = cells.aggregate(rows["s"], rows["y"], max_exact=100)
    pooled = pd.DataFrame({"s": kc.cells.score_sum, "n": kc.cells.n}).groupby(np.floor(kc.cells.score * cells.GRID)).sum()
    np.testing.assert_array_equal(pooled["n"].to_numpy(), ref.n)


def test_refusals(rows):
    with pytest.raises(SettingsError, match="more than the 3"):
        keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"], Key("seg", max_groups=3, n_quantiles=2))
    with pytest.raises(DataError, match="does not hold dates"):
        keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"], Key("seg", kind="period"))
    with pytest.raises(DataError, match="values but there are"):
        keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"][:10], Key("seg"))


# -- row_keys: each row's key by the cells' rule ------------------------------------------------------------------
@pytest.mark.parametrize("col, key", [("seg", Key("seg", min_rows=50)), ("x", Key("x", n_quantiles=4)),
                                      ("when", Key("when", "period", "W")), ("when", Key("when", "period"))])
def test_row_keys_give_each_rows_key_as_the_cells_do(rows, col, key):
    """Each key's rows are exactly its cells' rows: same counts and positives, and (exact cells) the same cells;
    shuffling the rows shuffles their keys alike."""
    s, y, v = rows["s"], rows["y"], rows["columns"][col]
    kc = keyed_cells(s, y, v, key)
    got = row_keys(v, kc)
    assert set(got) == set(kc.labels)
    _same_as_rows(kc, s, y, got, kc.labels)
    order = np.random.default_rng(0).permutation(N)
    np.testing.assert_array_equal(row_keys(v.iloc[order], kc), got[order])


def test_row_keys_pooled_missing_and_left_out_rows():
    """By hand: 'b' (1 row) is pooled into 'other' at min_rows 2, the two missing values are '(missing)'; a
    period column's missing date has no key (None), as the cells leave it out."""
    s, y = np.array([.1, .2, .3, .4, .5, .6, .7]), np.array([0, 1, 0, 1, 0, 1, 1])
    v = pd.Series(["a", "a", "b", "c", "c", None, None], dtype=object)
    kc = keyed_cells(s, y, v, Key("g", min_rows=2))
    assert list(row_keys(v, kc)) == ["a", "a", "other", "c", "c", "(missing)", "(missing)"]
    s, y = s[:6], y[:6]
    dates = pd.Series(pd.to_datetime(["2025-01-03", "2025-01-31", None, "2025-02-01", "2025-02-28", "2025-03-01"]))
    kc = keyed_cells(s, y, dates, Key("d", "period", "M"))
    assert kc.n_left_out == 1
    assert list(row_keys(dates, kc)) == ["2025-01", "2025-01", None, "2025-02", "2025-02", "2025-03"]


def test_row_keys_refuse_rows_that_are_not_the_cells(rows):
    kc = keyed_cells(rows["s"], rows["y"], rows["columns"]["seg"], Key("seg"))
    with pytest.raises(DataError, match="not the cells' rows"):
        row_keys(pd.Series(["north", "mars"] * 30), kc)


@pytest.mark.parametrize("kind", ["group", "period"])
def test_rows_grouped_by_one_count_or_by_a_sort_give_the_same_cells(monkeypatch, kind):
    """The dense ``bincount`` pre-reduction and the sorting reduction it falls back to (beyond
    ``_DENSE_CELLS`` combinations) make identical keyed cells, on exact scores and on the grid, whether the
    rows are read in one block or in many (``_BLOCK``)."""
    from calibdash.monitoring.keyed import from_rows as krows

    rng = np.random.default_rng(7)
    n = 6000
    y = (rng.uniform(size=n) < 0.4).astype(np.int8)
    part = rng.integers(0, 3, n)
    values = (pd.Series(rng.choice(["a", " b", "c", None], n)) if kind == "group"
              else pd.Series(pd.Timestamp("2025-01-01") + pd.to_timedelta(rng.integers(0, 60, n), unit="D")))
    key = Key("k", kind, "W") if kind == "period" else Key("k", min_rows=5)
    for s in (np.round(rng.uniform(size=n), 2), rng.uniform(size=n)):          # exact cells, then the grid
        dense = krows.keyed_cells(s, y, values, key, part, max_exact=1000)
        monkeypatch.setattr(krows, "_DENSE_CELLS", 0)
        sorted_ = krows.keyed_cells(s, y, values, key, part, max_exact=1000)
        monkeypatch.setattr(krows, "_BLOCK", 777)                  # blocks of rows merged one by one
        blocks = krows.keyed_cells(s, y, values, key, part, max_exact=1000)
        monkeypatch.undo()
        for f in ("n", "n_pos", "part", "score"):
            np.testing.assert_array_equal(getattr(blocks.cells, f), getattr(sorted_.cells, f))
        np.testing.assert_allclose(blocks.cells.score_sum, sorted_.cells.score_sum, rtol=1e-12)
        assert dense.labels == sorted_.labels and dense.cells.exact == sorted_.cells.exact
        np.testing.assert_array_equal(dense.key, sorted_.key)
        for f in ("n", "n_pos", "part"):
            np.testing.assert_array_equal(getattr(dense.cells, f), getattr(sorted_.cells, f))
        # sums of the same rows in another order: equal to the doubles' rounding (a grid cell's score is its mean)
        np.testing.assert_allclose(dense.cells.score_sum, sorted_.cells.score_sum, rtol=1e-12)
        np.testing.assert_allclose(dense.cells.score, sorted_.cells.score, rtol=1e-12)
