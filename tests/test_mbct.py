"""MBCT: the node-local loss, the trees' invariants, feature awareness, and its figures."""
import pickle

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from calibdash import calibrators, metrics
from calibdash.calibrators._mbct_tree import (categorical_slots, grouped_mvce, ordered_slots,
                                              random_views)
from calibdash.calibrators.mbct import MBCTCalibrator
from calibdash.errors import DataError
from calibdash.figures import inner_figures
from calibdash.figures import mbct as fig_mbct


def group_data(n, seed, low=0.2, high=0.5):
    """Scores calibrated on average, but group A is under-estimated (p = 1.8 s) and
    group B over-estimated (p = 0.2 s) at the same score; two noise columns."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["A", "B"], n)
    s = rng.uniform(low, high, n)
    p = np.where(g == "A", 1.8 * s, 0.2 * s)
    y = (rng.uniform(size=n) < p).astype(int)
    df = pd.DataFrame({"group": g, "noise": rng.normal(size=n),
                       "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    return s, y, df


@pytest.fixture(scope="module")
def grouped():
    return group_data(6000, 1), group_data(20000, 2)


# -- the node-local loss --------------------------------------------------------------------------------
@pytest.mark.parametrize("n,m,views,p,seed", [(1000, 100, 7, 1.0, 0), (1037, 100, 5, 1.0, 3),
                                              (250, 40, 9, 2.0, 11), (30, 50, 4, 1.0, 5)])
def test_kernel_equals_metrics_mvce(n, m, views, p, seed):
    """One group and the same random permutations: exactly metrics.mvce (remainder rows, n < M, p = 2)."""
    rng = np.random.default_rng(seed + 100)
    probs = rng.uniform(size=n)
    labels = (rng.uniform(size=n) < probs ** 2).astype(int)
    fast = grouped_mvce((probs - labels)[None], np.zeros(n, int), 1, random_views(n, views, seed), m, p)
    assert fast.shape == (1, 1)
    assert fast[0, 0] == pytest.approx(metrics.mvce(probs, labels, bin_size=m, n_views=views, p=p, seed=seed),
                                       rel=1e-12, abs=1e-15)


def test_kernel_groups_match_brute_force():
    """Several groups, rows outside any group, two candidate columns: each group's MVCE is the
    definition applied to the group's rows in the order the view gives them."""
    rng = np.random.default_rng(7)
    n, m, p = 500, 30, 1.5
    group = rng.integers(-1, 4, n)
    resid = rng.normal(size=(2, n))
    views = random_views(n, 6, 1)
    got = grouped_mvce(resid, group, 4, views, m, p)
    for g in range(4):
        for c in range(2):
            per_view = []
            for perm in views:
                rows = perm[group[perm] == g]
                nb = max(1, rows.size // m)
                ids = np.minimum(np.arange(rows.size) // m, nb - 1)
                pce = [abs(resid[c, rows[ids == b]].mean()) for b in range(nb)]
                per_view.append(np.mean(np.power(pce, p)) ** (1 / p))
            assert got[g, c] == pytest.approx(np.mean(per_view), rel=1e-12)


def test_split_slots_keep_every_child_at_least_bin_size():
    counts = np.array([0, 5, 3, 9, 2, 0, 1, 8])
    slots = ordered_slots(counts, 8)
    assert slots.tolist() == [0, 0, 0, 1, 2, 2, 2, 2]          # ranges closed as soon as they hold 8 rows
    assert [counts[slots == c].sum() for c in range(3)] == [8, 9, 11]
    assert ordered_slots(np.array([8, 9, 7]), 8).tolist() == [0, 1, 1]   # a short last range joins the previous
    tail = ordered_slots(np.array([10, 10, 0]), 5, tail_code=2)  # the missing code, absent: unseen
    assert tail.tolist() == [0, 1, -1]
    cat = categorical_slots(np.array([12, 0, 3, 10, 2, 2]), 8)
    assert cat.tolist() == [0, -1, 1, 1, 1, 1]                  # small values pooled into the smallest big one
    cat = categorical_slots(np.array([12, 0, 3, 10, 4, 2, 5]), 8)
    assert cat.tolist() == [0, -1, 2, 1, 2, 2, 2]               # pool >= 8 rows: an "other" child


# -- feature awareness --------------------------------------------------------------------------------
def test_splits_on_the_miscalibrated_feature_and_beats_histogram(grouped):
    (s, y, df), (s2, y2, df2) = grouped
    mbct = calibrators.get("mbct", bin_size=300).fit(s, y, df)
    table = mbct.tree_frame(0)
    assert table.loc[0, "split_on"] == "group"
    assert sorted(table[table["parent"] == 0]["condition"]) == ["group = A", "group = B"]
    hist = calibrators.get("histogram").fit(s, y)
    p_mbct, p_hist = mbct.predict(s2, df2), hist.predict(s2)
    assert metrics.mvce(p_mbct, y2) < 0.85 * metrics.mvce(p_hist, y2)
    for g in ("A", "B"):
        sel = df2["group"].to_numpy() == g
        assert abs(metrics.pud(p_mbct[sel], y2[sel]) - 1) < 0.08
        assert abs(metrics.pud(p_hist[sel], y2[sel]) - 1) > 0.5


def test_numeric_feature_is_split_by_quantile_ranges():
    rng = np.random.default_rng(3)
    n = 8000
    x = rng.normal(size=n)
    s = rng.uniform(0.1, 0.5, n)
    y = (rng.uniform(size=n) < np.where(x > 0.3, 1.6 * s, 0.6 * s)).astype(int)
    m = calibrators.get("mbct", bin_size=400, n_trees=1, max_depth=1, holdout=0).fit(
        s, y, pd.DataFrame({"x": x}))
    table = m.tree_frame(0)
    assert table.loc[0, "split_on"] == "x"
    assert all(c.startswith("x ∈ [") for c in table["condition"][1:])
    codes = m.columns_[1]
    assert codes.kind == "numeric" and codes.n_codes <= 10
    np.testing.assert_allclose(codes.edges, np.quantile(x, np.arange(1, 10) / 10))


def test_score_only_improves_a_miscalibrated_score(noisy):
    s, y = noisy
    rng = np.random.default_rng(9)
    s2 = rng.uniform(size=20000)
    y2 = (rng.uniform(size=20000) < s2 ** 2).astype(int)
    m = calibrators.get("mbct", bin_size=200).fit(s, y)
    assert set(m.tree_frame(0)["split_on"]) <= {"score", ""}
    assert metrics.mvce(m.predict(s2), y2) < 0.9 * metrics.mvce(s2, y2)
    assert metrics.ece(m.predict(s2), y2) < 0.3 * metrics.ece(s2, y2)


# -- invariants of the trees ----------------------------------------------------------------------------
def test_leaf_pud_is_one_on_training_rows():
    s, y, df = group_data(6000, 4, low=0.05, high=0.3)
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False, holdout=0).fit(s, y, df)
    assert m.predict(s, df).max() < 1                   # no clipping, so the identity is exact
    nodes = m.apply(s, df)
    f = s.copy()
    for t, tree in enumerate(m.trees_):
        out = np.clip(tree.scale[nodes[:, t]] * f, 0, 1)
        for leaf in np.unique(nodes[:, t]):
            sel = nodes[:, t] == leaf
            assert tree.scale[leaf] == pytest.approx(metrics.pud(f[sel], y[sel]), rel=1e-12)
            assert metrics.pud(out[sel], y[sel]) == pytest.approx(1.0, rel=1e-12)
        f = out
    np.testing.assert_allclose(f, m.predict(s, df))
    last = nodes[:, -1]
    for leaf in np.unique(last):
        assert metrics.pud(m.predict(s, df)[last == leaf], y[last == leaf]) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("depth,bin_size,n_trees,binds", [(1, 200, 2, True), (2, 300, 3, True),
                                                          (4, 150, 1, False)])
def test_depth_bin_size_and_tree_limits(grouped, depth, bin_size, n_trees, binds):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", max_depth=depth, bin_size=bin_size, n_trees=n_trees,
                        early_stopping=False).fit(s, y, df)
    assert len(m.trees_) == n_trees
    assert len(m.history_) == n_trees + 1
    for t in range(n_trees):
        table = m.tree_frame(t)
        assert table["depth"].max() <= depth
        assert (table["rows"] >= bin_size).all()
        inner = table[table["split_on"] != ""]
        assert (inner["rows"] >= 2 * bin_size).all()
        assert (inner["depth"] < depth).all()
        for node in inner["node"]:                        # children partition their parent's rows
            assert table.loc[table["parent"] == node, "rows"].sum() == table.loc[node, "rows"]
    if binds:                                             # the depth limit is what stops growth here
        assert m.tree_frame(0)["depth"].max() == depth
    stopped = calibrators.get("mbct", max_depth=depth, bin_size=bin_size, n_trees=n_trees).fit(s, y, df)
    assert 1 <= len(stopped.trees_) <= n_trees


def test_tree_table_matches_the_rows(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=1).fit(s, y, df)
    fit = m.fit_rows_
    leaves = m.apply(s[fit], df.iloc[fit])[:, 0]
    table = m.tree_frame(0)
    for leaf in np.unique(leaves):
        sel = leaves == leaf
        assert table.loc[leaf, "rows"] == sel.sum()
        assert table.loc[leaf, "pud_score"] == pytest.approx(metrics.pud(s[fit][sel], y[fit][sel]))
    check = m.diagnostics()["check"]
    chk = m.check_rows_
    np.testing.assert_array_equal(check["nodes"], m.apply(s[chk], df.iloc[chk]))
    np.testing.assert_allclose(check["predictions"], m.predict(s[chk], df.iloc[chk]))
    assert table.loc[0, "check_rows"] == chk.size and check["held_out"]


def test_unseen_category_falls_back_to_the_parent(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=1, max_depth=1).fit(s, y, df)
    tree = m.trees_[0]
    assert m.tree_frame(0).loc[0, "split_on"] == "group"
    new = df.head(5).copy()
    new["group"] = "C"
    np.testing.assert_allclose(m.predict(s[:5], new), tree.scale[0] * s[:5])
    np.testing.assert_allclose(m.predict(s[:5]), tree.scale[0] * s[:5])     # no features: all unseen
    known = m.predict(s[:5], df.head(5))
    child = {c: k for k, c in zip(m.tree_frame(0)["node"], m.tree_frame(0)["condition"])}
    expect = [tree.scale[child[f"group = {g}"]] for g in df["group"][:5]] * s[:5]
    np.testing.assert_allclose(known, expect)


def test_bad_input_is_refused(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=1).fit(s, y, df)
    with pytest.raises(DataError, match="group"):
        m.predict(s[:5], df.drop(columns="group").head(5))
    with pytest.raises(DataError, match="bin_size"):
        calibrators.get("mbct", bin_size=0).fit(s, y)
    with pytest.raises(DataError, match="holdout"):
        calibrators.get("mbct", holdout=1.0).fit(s, y)


def test_registry_params_and_pickle(grouped):
    (s, y, df), (s2, _, df2) = grouped
    assert "mbct" in calibrators.available()
    cls = calibrators.get_class("mbct")
    assert cls.uses_features
    params = cls().get_params()
    for h in cls.hyperparams:
        assert params[h.name] == h.default
    m = calibrators.get("mbct", bin_size=300, n_trees=2).fit(s, y, df)
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(again.predict(s2, df2), m.predict(s2, df2))
    same = MBCTCalibrator(bin_size=300, n_trees=2).fit(s, y, df)   # seeded: reproducible
    np.testing.assert_array_equal(same.predict(s2, df2), m.predict(s2, df2))


# -- figures --------------------------------------------------------------------------------------------
def test_pud_bars_data_and_figure(grouped):
    (s, y, df), (s2, y2, df2) = grouped
    m = calibrators.get("mbct", bin_size=300).fit(s, y, df)
    data = fig_mbct.pud_data(m)
    n_leaves = m.trees_[0].n_leaves
    mb, hb = data[data["method"] == "mbct"], data[data["method"] == "histogram"]
    assert len(mb) == n_leaves and len(hb) == n_leaves          # same number of bins side by side
    assert mb["rows"].sum() == m.check_rows_.size == hb["rows"].sum()
    check = m.diagnostics()["check"]
    for b, path in zip(mb["bin"], mb["path"]):
        sel = check["nodes"][:, 0] == int(b[1:])
        row = mb[mb["bin"] == b].iloc[0]
        assert row["pud_before"] == pytest.approx(metrics.pud(check["scores"][sel], check["labels"][sel]))
        assert path.startswith("group = ")
    given = fig_mbct.pud_data(m, scores=s2, labels=y2, features=df2)
    assert given["rows"].sum() == 2 * s2.size and given.attrs["rows"] == "given rows"
    a = given[(given["method"] == "mbct") & given["path"].str.startswith("group = A")]
    assert (a["pud_before"] > 1.4).all()                         # group A under-estimated by the raw score
    fig = fig_mbct.pud_figure(data)
    hlines = [sh for sh in fig.layout.shapes if sh.y0 == 1.0 and sh.y1 == 1.0]
    assert len(hlines) == 2
    assert sum(len(tr.x) for tr in fig.data) == 2 * len(data)


def test_tree_figure_and_inner_figures(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False).fit(s, y, df)
    figs = inner_figures(m)
    assert len(figs) == 3 and all(isinstance(f, go.Figure) for _, f in figs)
    tree_fig = figs[1][1]
    assert len(tree_fig.data) == 3 and [tr.visible for tr in tree_fig.data] == [True, False, False]
    for t, tr in enumerate(tree_fig.data):
        table = fig_mbct.tree_table(m, t)
        assert list(tr.values) == table["rows"].tolist()
        assert list(tr.parents).count("") == 1
    paths = fig_mbct.leaf_paths(fig_mbct.tree_table(m, 0))
    assert paths[0] == "all rows" and paths[1] == fig_mbct.tree_table(m, 0).loc[1, "condition"]
    boost = fig_mbct.boosting_data(m)
    assert boost["tree"].tolist() == [0, 1, 2, 3] and boost["kept"].all()
