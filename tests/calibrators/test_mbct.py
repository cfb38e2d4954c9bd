"""MBCT: the node-local loss, the trees' invariants, feature awareness, its explanation and figures."""
import pickle

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.io import export
from calibdash.calibrators._mbct_codes import (ColumnCode, categorical_slots, learn_codes, ordered_slots,
                                               weighted_quantiles)
from calibdash.calibrators._mbct_tree import Tree, grow_tree
from calibdash.measures.mvce import grouped_mvce, random_views, weighted_mvce
from calibdash.calibrators.mbct import (GLOBAL_VIEWS, MBCTCalibrator, canonical_rows, holdout_counts,
                                        sample_counts, tree_rows)
from calibdash.core.errors import DataError, ProgrammingError, SettingsError
from calibdash.explain import explain
from calibdash.explain import mbct as explain_mbct
from calibdash.explain.mbct import MBCTExplanation, leaf_paths
from calibdash.figures import inner_figures
from calibdash.figures.methods import mbct as fig_mbct


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


def tree_tables(m, s, y, df=None):
    """The explanation's table of each kept tree."""
    return explain(m, s, y, df).trees


def subtree(parent, node) -> list:
    """``node`` and its descendants, from the parent of each node (children numbered after parents)."""
    below = {node}
    for k in range(node + 1, len(parent)):
        if parent[k] in below:
            below.add(k)
    return sorted(below)


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
    """Fitted on 20,000 rows, judged on 20,000 others (on 6,000 rows the margin below depends on the
    draw of the holdout and the views: MBCT's seeds 0-3 give MVCE ratios .80-.95 there)."""
    _, (s, y, df) = grouped
    s2, y2, df2 = group_data(20000, 3)
    mbct = calibrators.get("mbct", bin_size=300).fit(s, y, df)
    table = tree_tables(mbct, s, y, df)[0]
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
    table = tree_tables(m, s, y, pd.DataFrame({"x": x}))[0]
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
    assert set(tree_tables(m, s, y)[0]["split_on"]) <= {"score", ""}
    assert metrics.mvce(m.predict(s2), y2) < 0.9 * metrics.mvce(s2, y2)
    assert metrics.ece(m.predict(s2), y2) < 0.3 * metrics.ece(s2, y2)


# -- invariants of the trees ----------------------------------------------------------------------------
def test_leaf_pud_is_one_on_training_rows():
    """Each leaf maps its input by its line ``slope f + intercept`` (``scale f`` unless the rows reject
    the scale); the line goes through the leaf's mean point, so the leaf's PUD after it is 1."""
    s, y, df = group_data(6000, 4, low=0.05, high=0.3)
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False, holdout=0).fit(s, y, df)
    nodes = m.apply(s, df)
    f = s.copy()
    for t, tree in enumerate(m.trees_):
        out = tree.slope[nodes[:, t]] * f + tree.intercept[nodes[:, t]]
        assert 0 <= out.min() and out.max() <= 1        # the lines stay in [0, 1] on the tree rows: no clipping
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
    assert len(m.history_["tree"]) == n_trees + 1 and m.history_["kept"].all()
    tables = tree_tables(m, s, y, df)
    for table in tables:
        assert table["depth"].max() <= depth
        assert (table["rows"] >= bin_size).all()
        inner = table[table["split_on"] != ""]
        assert (inner["rows"] >= 2 * bin_size).all()
        assert (inner["depth"] < depth).all()
        for node in inner["node"]:                        # children partition their parent's rows
            assert table.loc[table["parent"] == node, "rows"].sum() == table.loc[node, "rows"]
    if binds:                                             # the depth limit is what stops growth here
        assert tables[0]["depth"].max() == depth
    stopped = calibrators.get("mbct", max_depth=depth, bin_size=bin_size, n_trees=n_trees).fit(s, y, df)
    assert 1 <= len(stopped.trees_) <= n_trees


def test_tree_table_matches_the_rows(grouped):
    """Per node: rows and PUD of the raw scores on the tree rows; on the held-out rows, the PUD of
    each tree's input and output over the rows that end at or below the node."""
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False).fit(s, y, df)
    ex = explain(m, s, y, df)
    fit, chk = ex.fit_rows, ex.check_rows
    assert ex.held_out and chk.size > 0 and np.intersect1d(fit, chk).size == 0 and fit.size + chk.size == s.size
    nodes_fit = m.apply(s[fit], df.iloc[fit])
    nodes_chk = m.apply(s[chk], df.iloc[chk])
    stages = np.column_stack([s[chk], *m.staged_predict(s[chk], df.iloc[chk])])
    for t, table in enumerate(ex.trees):
        parent = table["parent"].to_numpy()
        for node in table["node"]:
            below = subtree(parent, node)
            at_fit = np.isin(nodes_fit[:, t], below)
            at_chk = np.isin(nodes_chk[:, t], below)
            row = table.loc[node]
            assert row["rows"] == at_fit.sum() and row["check_rows"] == at_chk.sum()
            assert row["positives"] == y[fit][at_fit].sum()
            assert row["pud_score"] == pytest.approx(metrics.pud(s[fit][at_fit], y[fit][at_fit]))
            assert row["check_pud_before"] == pytest.approx(metrics.pud(stages[at_chk, t], y[chk][at_chk]))
            assert row["check_pud_after"] == pytest.approx(metrics.pud(stages[at_chk, t + 1], y[chk][at_chk]))
    assert ex.trees[0].loc[0, "check_rows"] == chk.size
    np.testing.assert_allclose(stages[:, -1], m.predict(s[chk], df.iloc[chk]))


def test_explainer_split_is_the_one_fit_used(grouped):
    """The trees were grown on the explanation's fit rows (the root's sums) and the number of trees
    was judged on its check rows (tree 0's check MVCE is that of the raw scores on them)."""
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, holdout=0.3, seed=5).fit(s, y, df)
    ex = explain(m, s, y, df)
    data = canonical_rows(s, y, m._codes(s, df), None, inverse=True)
    assert data.size == s.size and data.units             # distinct rows of unit weight: each its own unit
    check = holdout_counts(data.y, np.ones(data.size), 0.3, 5)
    chk = np.flatnonzero(check[data.inverse] > 0)
    fit = np.setdiff1d(np.arange(s.size), chk)
    np.testing.assert_array_equal(ex.fit_rows, fit)
    np.testing.assert_array_equal(ex.check_rows, chk)
    np.testing.assert_array_equal(ex.check_weight, (check[data.inverse] > 0).astype(float))
    root = m.trees_[0]
    assert root.positives[0] == y[fit].sum() and root.sum_input[0] == pytest.approx(s[fit].sum(), rel=1e-12)
    m_global = min(m.loss_bin_size_, chk.size // 2)
    in_order = chk[np.argsort(s[chk])]                   # the check rows in canonical order: by score
    assert m.history_["check_mvce"][0] == metrics.mvce(s[in_order], y[in_order], bin_size=m_global,
                                                       n_views=GLOBAL_VIEWS, p=1.0, seed=5)
    for cls in (0, 1):                                   # stratified: 30% of each class held out
        assert (y[chk] == cls).sum() == round(0.3 * (y == cls).sum())
    none = calibrators.get("mbct", bin_size=300, holdout=0).fit(s, y, df)
    ex0 = explain(none, s, y, df)
    assert not ex0.held_out and ex0.check_rows.size == 0 and ex0.fit_rows.size == s.size
    assert ex0.trees[0].loc[0, "check_rows"] == s.size                     # judged on the training rows
    assert any("No rows were held out" in n for n in ex0.notes)


def test_explainer_refuses_other_rows_and_explains_a_loaded_model(grouped):
    (s, y, df), (s2, y2, df2) = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=2).fit(s, y, df)
    with pytest.raises(ProgrammingError, match="fitted on"):
        explain(m, s2, y2, df2)                                            # other rows, other size
    flipped = y.copy()
    flipped[:50] = 1 - flipped[:50]
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(m, s, flipped, df)                                         # same size, other labels
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(m, s, y)                                                   # the features left out
    ex = explain(m, s, y, df)
    assert isinstance(ex, MBCTExplanation) and ex.method == "mbct"
    loaded = explain(export.loads(export.dumps(m)), s, y, df)
    for a, b in zip(ex.trees, loaded.trees):
        pd.testing.assert_frame_equal(a.drop(columns=["loss_node", "loss_split"]),
                                      b.drop(columns=["loss_node", "loss_split"]))
        assert b["loss_node"].isna().all()                                 # a file holds no losses
    assert loaded.boosting.empty and any("read from a file" in n for n in loaded.notes)
    assert len(inner_figures(loaded)) == 2                                 # no boosting curve to draw


def test_unseen_category_falls_back_to_the_parent(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=1, max_depth=1).fit(s, y, df)
    tree = m.trees_[0]
    table = tree_tables(m, s, y, df)[0]
    assert table.loc[0, "split_on"] == "group"
    new = df.head(5).copy()
    new["group"] = "C"
    root = tree.slope[0] * s[:5] + tree.intercept[0]
    np.testing.assert_allclose(m.predict(s[:5], new), root)
    np.testing.assert_allclose(m.predict(s[:5]), root)                       # no features: all unseen
    known = m.predict(s[:5], df.head(5))
    child = {c: k for k, c in zip(table["node"], table["condition"])}
    leaf = np.array([child[f"group = {g}"] for g in df["group"][:5]])
    np.testing.assert_allclose(known, tree.slope[leaf] * s[:5] + tree.intercept[leaf])


def test_bad_input_is_refused(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=1).fit(s, y, df)
    with pytest.raises(DataError, match="group"):
        m.predict(s[:5], df.drop(columns="group").head(5))
    with pytest.raises(SettingsError, match="bin_size"):
        calibrators.get("mbct", bin_size=0).fit(s, y)
    with pytest.raises(SettingsError, match="holdout"):
        calibrators.get("mbct", holdout=1.0).fit(s, y)
    with pytest.raises(SettingsError, match="pud_tree"):
        explain_mbct.explain(m, s, y, df, pud_tree=1)


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
    # what predict needs and small summaries only: no copy of the rows
    assert len(pickle.dumps(m)) <= 2 * len(export.dumps(m).encode()) + 4096
    assert not any(np.size(v) >= 100 for k, v in vars(m).items() if k.endswith("_") and k != "trees_")


# -- PUD and figures -----------------------------------------------------------------------------------
def test_pud_bars_data_and_figure(grouped):
    (s, y, df), (s2, y2, df2) = grouped
    m = calibrators.get("mbct", bin_size=300).fit(s, y, df)
    ex = explain(m, s, y, df)
    data = ex.pud
    n_leaves = m.trees_[0].n_leaves
    mb, hb = data[data["method"] == "mbct"], data[data["method"] == "histogram"]
    assert len(mb) == n_leaves and len(hb) == n_leaves          # same number of bins side by side
    chk = ex.check_rows
    assert mb["rows"].sum() == chk.size == hb["rows"].sum() and ex.pud_rows == "held-out rows"
    nodes = m.apply(s[chk], df.iloc[chk])[:, 0]
    after = m.predict(s[chk], df.iloc[chk])
    for b, path in zip(mb["bin"], mb["path"]):
        sel = nodes == int(b[1:])
        row = mb[mb["bin"] == b].iloc[0]
        assert row["pud_before"] == pytest.approx(metrics.pud(s[chk][sel], y[chk][sel]))
        assert row["pud_after"] == pytest.approx(metrics.pud(after[sel], y[chk][sel]))
        assert path.startswith("group = ")
    # histogram binning with as many bins, fitted on the tree rows, judged on the same check rows
    hist = calibrators.get("histogram", n_bins=n_leaves).fit(s[ex.fit_rows], y[ex.fit_rows])
    hbin = np.searchsorted(hist.cuts_, s[chk], side="right")
    for b in hb["bin"]:
        sel = hbin == int(b[1:])
        row = hb[hb["bin"] == b].iloc[0]
        assert row["pud_after"] == pytest.approx(metrics.pud(hist.predict(s[chk][sel]), y[chk][sel]))
    given = explain_mbct.explain(m, s, y, df, judge_scores=s2, judge_labels=y2, judge_features=df2)
    assert given.pud["rows"].sum() == 2 * s2.size and given.pud_rows == "given rows"
    a = given.pud[(given.pud["method"] == "mbct") & given.pud["path"].str.startswith("group = A")]
    assert (a["pud_before"] > 1.4).all()                         # group A under-estimated by the raw score
    fig = fig_mbct.pud_figure(data, ex.pud_rows)
    hlines = [sh for sh in fig.layout.shapes if sh.y0 == 1.0 and sh.y1 == 1.0]
    assert len(hlines) == 2
    assert sum(len(tr.x) for tr in fig.data) == 2 * len(data)
    assert "held-out rows" in fig.layout.xaxis.title.text


def test_leaf_pud_is_one_on_the_tree_rows_in_the_explanation(grouped):
    """Each tree's scale sets its leaves' PUD to 1 on the rows it was grown on (no clipping here)."""
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=2, early_stopping=False).fit(s, y, df)
    ex = explain(m, s, y, df)
    fit = ex.fit_rows
    nodes = m.apply(s[fit], df.iloc[fit])
    stages = np.column_stack([s[fit], *m.staged_predict(s[fit], df.iloc[fit])])
    assert stages.max() < 1
    for t, table in enumerate(ex.trees):
        leaves = table[table["split_on"] == ""]
        np.testing.assert_allclose(leaves["scale"], [metrics.pud(stages[nodes[:, t] == k, t], y[fit][nodes[:, t] == k])
                                                     for k in leaves["node"]], rtol=1e-12)
        for k in leaves["node"]:
            sel = nodes[:, t] == k
            assert metrics.pud(stages[sel, t + 1], y[fit][sel]) == pytest.approx(1.0, rel=1e-12)


def test_tree_figure_and_inner_figures(grouped):
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False).fit(s, y, df)
    ex = explain(m, s, y, df)
    figs = inner_figures(ex)
    assert len(figs) == 3 and all(isinstance(f, go.Figure) for _, f in figs)
    tree_fig = figs[1][1]
    assert len(tree_fig.data) == 3 and [tr.visible for tr in tree_fig.data] == [True, False, False]
    for table, tr in zip(ex.trees, tree_fig.data):
        assert list(tr.values) == table["rows"].tolist()
        assert list(tr.parents).count("") == 1
    paths = leaf_paths(ex.trees[0])
    assert paths[0] == "all rows" and paths[1] == ex.trees[0].loc[1, "condition"]
    assert ex.boosting["tree"].tolist() == [0, 1, 2, 3] and ex.boosting["kept"].all()
    boost_fig = figs[2][1]
    np.testing.assert_allclose(np.array(boost_fig.data[1].y, dtype=float), ex.boosting["check_mvce"])
    assert set(ex.tables) == {"boosting", "features", "tree 1", "tree 2", "tree 3", "PUD per bin"}
    assert ex.features["feature"].tolist() == ["score", "group", "noise", "colour"]
    assert ex.notes[0].startswith("Trees split on the score") and "3 of at most 3 tree(s) kept." in ex.notes[2]


# -- sample weights -------------------------------------------------------------------------------------
def restrict(views, keep):
    """Each view restricted to the rows ``keep`` (a boolean mask), renumbered 0 .. keep.sum() - 1."""
    new = np.cumsum(keep) - 1
    return np.array([new[perm[keep[perm]]] for perm in views])


def test_weighted_kernel_hand_worked():
    """Rows laid end to end in the view's order, cut every M = 2 of weight; a row across a cut puts
    each part in its bin. Residuals d = (0.3, -0.2, 0.5)."""
    d = np.array([[0.3, -0.2, 0.5]])
    one = np.zeros(3, int)
    # weights (1, 2.5, 0.5), W = 4: bins [0, 2), [2, 4)
    #   view (0, 1, 2): bin 0 = |1(0.3) + 1(-0.2)| / 2 = 0.05, bin 1 = |1.5(-0.2) + 0.5(0.5)| / 2 = 0.025
    #   view (2, 0, 1): bin 0 = |0.5(0.5) + 1(0.3) + 0.5(-0.2)| / 2 = 0.225, bin 1 = |2(-0.2)| / 2 = 0.2
    views = np.array([[0, 1, 2], [2, 0, 1]])
    got = grouped_mvce(d, one, 1, views, 2, 1.0, np.array([1.0, 2.5, 0.5]))
    assert got[0, 0] == pytest.approx(((0.05 + 0.025) / 2 + (0.225 + 0.2) / 2) / 2, rel=1e-12)
    # a row across two cuts: weights (0.5, 5, 0.5), W = 6, three bins: 0.075, 0.2, 0.025
    got = grouped_mvce(d, one, 1, views[:1], 2, 1.0, np.array([0.5, 5.0, 0.5]))
    assert got[0, 0] == pytest.approx((0.075 + 0.2 + 0.025) / 3, rel=1e-12)
    # W = 5: two bins, the last one of weight 3: |0.3 - 0.2| / 2 = 0.05 and |1.5(-0.2) + 1.5(0.5)| / 3 = 0.15
    got = grouped_mvce(d, one, 1, views[:1], 2, 2.0, np.array([1.0, 2.5, 1.5]))
    assert got[0, 0] == pytest.approx(np.sqrt((0.05 ** 2 + 0.15 ** 2) / 2), rel=1e-12)


def test_weighted_kernel_is_the_repeated_rows_with_copies_side_by_side():
    """Integer weights (0 included) = each row repeated, its copies next to each other in the view;
    unit weights = no weights, bit for bit."""
    rng = np.random.default_rng(12)
    n, m = 400, 15
    group = rng.integers(-1, 3, n)
    resid = rng.normal(size=(2, n))
    k = rng.integers(0, 4, n)
    k[np.flatnonzero(group == 0)[:20]] = 1                      # every group keeps weight
    views = random_views(n, 5, 4)
    weighted = grouped_mvce(resid, group, 3, views, m, 1.0, k.astype(float))
    rep = np.repeat(np.arange(n), k)                            # copy -> its row
    first = np.concatenate([[0], np.cumsum(k)[:-1]])
    rep_views = np.array([np.concatenate([first[r] + np.arange(k[r]) for r in perm]) for perm in views])
    repeated = grouped_mvce(resid[:, rep], group[rep], 3, rep_views, m, 1.0)
    np.testing.assert_allclose(weighted, repeated, rtol=1e-12)
    np.testing.assert_array_equal(grouped_mvce(resid, group, 3, views, m, 1.5, np.ones(n)),
                                  grouped_mvce(resid, group, 3, views, m, 1.5))
    keep = k > 0                                                # weight 0: as if the row were not there
    np.testing.assert_allclose(weighted, grouped_mvce(resid[:, keep], group[keep], 3, restrict(views, keep), m, 1.0,
                                                      k[keep].astype(float)), rtol=1e-12)


def test_weighted_global_loss_with_unit_weights_is_metrics_mvce():
    rng = np.random.default_rng(2)
    probs = rng.uniform(size=1500)
    labels = (rng.uniform(size=1500) < probs).astype(int)
    for m, p in ((100, 1.0), (70, 2.0)):
        assert weighted_mvce(probs, labels, np.ones(1500), m, 30, p, seed=7) == pytest.approx(
            metrics.mvce(probs, labels, bin_size=m, n_views=30, p=p, seed=7), rel=1e-12)


def test_weighted_quantiles_are_those_of_the_repeated_values():
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=300), 1)                       # ties
    k = rng.integers(0, 5, 300)
    qs = np.arange(1, 10) / 10
    np.testing.assert_allclose(weighted_quantiles(x, k, qs), np.quantile(np.repeat(x, k), qs), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(weighted_quantiles(x, np.ones(300), qs), np.quantile(x, qs), rtol=1e-12, atol=1e-15)
    col = pd.Series(np.where(rng.uniform(size=300) < 0.1, np.nan, x), name="x")
    codes = learn_codes(col, 10, k.astype(float))
    seen = ~col.isna().to_numpy()
    np.testing.assert_allclose(codes.edges, np.unique(np.quantile(np.repeat(x[seen], k[seen]), qs)), rtol=1e-12)
    assert codes.missing_code == codes.n_codes - 1


def test_unit_weights_are_no_weights_bit_for_bit(grouped):
    (s, y, df), (s2, _, df2) = grouped
    plain = calibrators.get("mbct", bin_size=300).fit(s, y, df)
    unit = calibrators.get("mbct", bin_size=300).fit(s, y, df, sample_weight=np.ones(s.size))
    np.testing.assert_array_equal(unit.predict(s2, df2), plain.predict(s2, df2))
    for key in plain.history_:
        np.testing.assert_array_equal(unit.history_[key], plain.history_[key])
    # the weighted tree growth itself, given unit weights, grows the same tree bit for bit
    codes = plain._codes(s, df)
    views = random_views(s.size, 5, 0)
    a, leaf_a = grow_tree(codes, plain.columns_, s, y, max_depth=3, min_rows=300, loss_bin_size=150, views=views)
    b, leaf_b = grow_tree(codes, plain.columns_, s, y, max_depth=3, min_rows=300, loss_bin_size=150, views=views,
                          weights=np.ones(s.size))
    np.testing.assert_array_equal(leaf_a, leaf_b)
    for attr in ("feature", "table", "positives", "sum_input", "loss_node", "loss_split"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))


def test_weight_zero_rows_are_absent(grouped):
    (s, y, df), (s2, _, df2) = grouped
    w = np.random.default_rng(8).uniform(0.5, 2.0, s.size)
    w[::7] = 0.0
    keep = w > 0
    a = calibrators.get("mbct", bin_size=300).fit(s, y, df, sample_weight=w)
    b = calibrators.get("mbct", bin_size=300).fit(s[keep], y[keep], df[keep], sample_weight=w[keep])
    np.testing.assert_array_equal(a.predict(s2, df2), b.predict(s2, df2))


def test_constant_weights_act_as_dividing_the_bin_size():
    """Whole weights are rows: weights 2 are every row twice (more weight per bin, smaller bins fit).
    Fractional weights are weights: bin sizes count weight, so weights 0.5 with bin_size 150 grow
    the trees of unit weights with bin_size 300 (categorical features: numeric quantile edges would
    move too); the nodes' lines are the same but for the price ln(W) of a line (see node_line), which
    here changes no choice."""
    s, y, df = group_data(8000, 6)
    df = df.drop(columns="noise")
    s2, _, df2 = group_data(3000, 7)
    plain = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False).fit(s, y, df)
    c = 0.5
    scaled = calibrators.get("mbct", bin_size=150, n_trees=3, early_stopping=False).fit(
        s, y, df, sample_weight=np.full(s.size, c))
    assert len(scaled.trees_) == len(plain.trees_) == 3
    for a, b in zip(plain.trees_, scaled.trees_):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.table, b.table)
        np.testing.assert_allclose(b.positives, c * a.positives, rtol=1e-12)
        np.testing.assert_allclose(b.scale, a.scale, rtol=1e-12)
        np.testing.assert_allclose(b.slope, a.slope, rtol=1e-9)
    np.testing.assert_allclose(scaled.predict(s2, df2), plain.predict(s2, df2), rtol=1e-9)
    np.testing.assert_allclose(scaled.history_["fit_mvce"], plain.history_["fit_mvce"], rtol=1e-12)
    twice = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False)
    doubled = twice.fit(s, y, df, sample_weight=np.full(s.size, 2.0))
    repeated = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False).fit(
        np.repeat(s, 2), np.repeat(y, 2), df.loc[df.index.repeat(2)].reset_index(drop=True))
    np.testing.assert_array_equal(doubled.predict(s2, df2), repeated.predict(s2, df2))
    assert doubled.trees_[0].n_leaves > plain.trees_[0].n_leaves          # twice the weight: smaller bins fit


def test_weighted_node_sums_and_leaf_pud_recomputed_by_hand():
    s, y, df = group_data(6000, 4, low=0.05, high=0.3)
    w = np.random.default_rng(1).uniform(0.2, 3.0, s.size)
    m = calibrators.get("mbct", bin_size=300, n_trees=3, early_stopping=False, holdout=0).fit(
        s, y, df, sample_weight=w)
    nodes = m.apply(s, df)
    stages = np.column_stack([s, *m.staged_predict(s, df)])
    ex = explain(m, s, y, df, sample_weight=w)
    for t, tree in enumerate(m.trees_):
        table = ex.trees[t]
        for leaf in np.flatnonzero(tree.feature < 0):
            sel = nodes[:, t] == leaf
            assert tree.positives[leaf] == pytest.approx(np.dot(w[sel], y[sel]), rel=1e-12)
            assert tree.sum_input[leaf] == pytest.approx(np.dot(w[sel], stages[sel, t]), rel=1e-12)
            assert tree.scale[leaf] == pytest.approx(np.dot(w[sel], y[sel]) / np.dot(w[sel], stages[sel, t]),
                                                     rel=1e-12)
            assert np.dot(w[sel], y[sel]) / np.dot(w[sel], stages[sel, t + 1]) == pytest.approx(1.0, rel=1e-12)
            line = tree.slope[leaf] * stages[sel, t] + tree.intercept[leaf]
            np.testing.assert_array_equal(np.clip(line, 0, 1), stages[sel, t + 1])
            assert 0 <= line.min() and line.max() <= 1           # no clipping on the tree rows: PUD exactly 1
            assert table.loc[leaf, "rows"] == pytest.approx(w[sel].sum(), rel=1e-12)
            assert w[sel].sum() >= 300                           # the bin size counts weight
        inner = table[table["split_on"] != ""]
        assert len(inner) and (inner["rows"] >= 600).all()     # a split needs twice the bin size, in weight


@pytest.mark.parametrize("whole", [True, False])
def test_explanation_of_a_weighted_fit(grouped, whole):
    """Whole weights: a row of weight k is k units, some of which may be held out (``check_weight``);
    fractional weights: rows are held out whole. The tables' sums are those of the explanation's
    weights, and the check MVCE is that of the check units (rows) in canonical order (by score here)."""
    (s, y, df), _ = grouped
    rng = np.random.default_rng(4)
    if whole:
        w = rng.integers(0, 4, s.size).astype(float)
    else:
        w = np.where(rng.random(s.size) < 0.2, 0, 0.5 + rng.random(s.size))
    m = calibrators.get("mbct", bin_size=300, n_trees=2).fit(s, y, df, sample_weight=w)
    ex = explain(m, s, y, df, sample_weight=w)
    fw, cw = ex.fit_weight, ex.check_weight
    np.testing.assert_array_equal(fw + cw, w)
    np.testing.assert_array_equal(ex.fit_rows, np.flatnonzero(fw > 0))
    np.testing.assert_array_equal(ex.check_rows, np.flatnonzero(cw > 0))
    if whole:
        assert np.intersect1d(ex.fit_rows, ex.check_rows).size > 0    # units of a row on both sides
        assert np.all(cw == np.round(cw))
    else:
        assert np.intersect1d(ex.fit_rows, ex.check_rows).size == 0   # rows held out whole
    assert ex.trees[0].loc[0, "rows"] == pytest.approx(fw.sum())
    assert m.trees_[0].positives[0] == pytest.approx(np.dot(fw, y), rel=1e-12)
    assert ex.trees[0].loc[0, "check_rows"] == pytest.approx(cw.sum())
    chk = ex.check_rows[np.argsort(s[ex.check_rows])]
    if whole:
        units = np.repeat(chk, cw[chk].astype(int))
        m_global = max(1, min(m.loss_bin_size_, units.size // 2))
        expect = metrics.mvce(s[units], y[units], bin_size=m_global, n_views=GLOBAL_VIEWS, p=1.0, seed=0)
    else:
        m_global = min(m.loss_bin_size_, cw.sum() / 2)
        expect = weighted_mvce(s[chk], y[chk], cw[chk], m_global, GLOBAL_VIEWS, 1.0, 0)
    assert m.history_["check_mvce"][0] == pytest.approx(expect, rel=1e-12)
    mb = ex.pud[ex.pud["method"] == "mbct"]
    assert mb["rows"].sum() == pytest.approx(cw.sum())
    node = m.apply(s[chk], df.iloc[chk])[:, 0]
    after = m.predict(s[chk], df.iloc[chk])
    for b, row in zip(mb["bin"], mb.itertuples()):
        sel = node == int(b[1:])
        ws = cw[chk][sel]
        assert row.pud_before == pytest.approx(np.dot(ws, y[chk][sel]) / np.dot(ws, s[chk][sel]), rel=1e-12)
        assert row.pud_after == pytest.approx(np.dot(ws, y[chk][sel]) / np.dot(ws, after[sel]), rel=1e-12)
    assert any("weighted" in n and "weight 0" in n for n in ex.notes)
    with pytest.raises(ProgrammingError, match="sample_weight"):
        explain(m, s, y, df)                                                  # the weights left out


# -- coding and routing at scale -------------------------------------------------------------------------
def walk(tree, codes):
    """Reference routing, one row at a time: follow the table while the code is known there."""
    out = np.zeros(len(codes), dtype=np.int64)
    start = tree.table_start
    for i, row in enumerate(codes):
        node = 0
        while tree.feature[node] >= 0:
            code = row[tree.feature[node]]
            if not 0 <= code < tree.table_len[node] or tree.table[start[node] + code] < 0:
                break
            node = tree.table[start[node] + code]
        out[i] = node
    return out


def test_routing_equals_walking_each_row(grouped):
    """Level-wise routing of all rows at once = the row-by-row walk, with unseen values (-1), values
    unseen in a node (-1 in its table) and codes beyond a table (a file's shorter table)."""
    (s, y, df), _ = grouped
    m = calibrators.get("mbct", bin_size=100, n_trees=3, early_stopping=False).fit(s, y, df)
    rng = np.random.default_rng(3)
    codes = m._codes(s[:3000], df.iloc[:3000]).copy()
    codes[rng.random(codes.shape) < 0.05] = -1
    stopped = 0
    for tree in m.trees_:
        end = walk(tree, codes)
        np.testing.assert_array_equal(tree.route(codes), end)
        np.testing.assert_array_equal(tree.route(codes, m._top_codes()), end)
        stopped += int((tree.feature[end] >= 0).sum())
    assert stopped > 0                                          # some rows did stop at an inner node
    # a hand-made tree whose routing tables are shorter than the codes: those rows stay at the node
    tree = Tree(feature=[1, -1, 0, -1, -1], table_len=[2, 0, 2, 0, 0], table=[1, 2, 3, 4], positives=np.ones(5),
                sum_input=np.ones(5))
    codes = rng.integers(-1, 4, (500, 2))
    np.testing.assert_array_equal(tree.route(codes), walk(tree, codes))


def test_category_codes_are_the_values_codes():
    """A category column is coded from its integer codes, other columns after factorizing: the same
    codes as looking up every value (unseen: -1, missing: its own code when seen at fit time)."""
    rng = np.random.default_rng(0)
    values = np.where(rng.random(400) < 0.1, None, rng.choice(["a", "b", "c"], 400)).astype(object)
    code = learn_codes(pd.Series(values, name="v"), 10)
    assert list(code.categories) == ["a", "b", "c"] and code.missing_code == 3
    new = np.array(["c", None, "z", "a", np.nan, "b"], dtype=object)
    expect = [2, 3, -1, 0, 3, 1]
    for given in (new, pd.Series(new), pd.Series(pd.Categorical(new)), pd.Series(new, dtype="string"),
                  pd.Series(pd.Categorical(new, categories=["z", "b", "a", "c", "q"]))):
        assert code.encode(given).tolist() == expect
    cat = learn_codes(pd.Series(pd.Categorical([3, 1, 3], categories=[1, 2, 3]), name="k"), 10)
    assert list(cat.categories) == [1, 3] and cat.missing_code == -1          # only the values seen
    assert cat.encode(pd.Series(pd.Categorical([2, 3, 1]))).tolist() == [-1, 1, 0]
    assert cat.encode(np.array([3, None], dtype=object)).tolist() == [1, -1]  # missing unseen at fit: -1
    assert isinstance(cat, ColumnCode)


# -- growth on a sample ------------------------------------------------------------------------------------
def test_growth_sample_is_seeded_stratified_and_drawn_by_unit():
    y = (np.random.default_rng(0).random(50_000) < 0.07).astype(np.int8)
    ones = np.ones(y.size, dtype=np.int64)
    a = sample_counts(y, ones, 5000, seed=3)
    assert a.sum() == 5000 and set(np.unique(a)) == {0, 1}
    assert abs(y[a > 0].sum() - 5000 * y.mean()) <= 0.5                 # each class its share, rounded
    np.testing.assert_array_equal(a, sample_counts(y, ones, 5000, seed=3))
    assert not np.array_equal(a, sample_counts(y, ones, 5000, seed=4))
    assert sample_counts(y, ones, y.size, seed=3) is None               # no more units than the sample: none
    rare = np.zeros(10_000, dtype=np.int8)
    rare[7] = 1
    assert sample_counts(rare, np.ones(10_000), 100, seed=0)[7] == 1    # each class keeps a unit
    # whole counts are units: the draw of a row of count k is the draw of its k copies (same unit order)
    k = np.random.default_rng(1).integers(1, 5, y.size)
    by_count = sample_counts(y, k, 5000, seed=3)
    by_copy = sample_counts(np.repeat(y, k), np.ones(k.sum()), 5000, seed=3)
    np.testing.assert_array_equal(by_count, np.bincount(np.repeat(np.arange(y.size), k), weights=by_copy))
    assert np.all(by_count <= k) and by_count.sum() == 5000
    check = holdout_counts(y, k, 0.2, seed=3)
    np.testing.assert_array_equal(check, np.bincount(np.repeat(np.arange(y.size), k),
                                                     weights=holdout_counts(np.repeat(y, k), np.ones(k.sum()), 0.2, 3)))
    for cls in (0, 1):
        assert check[y == cls].sum() == round(0.2 * k[y == cls].sum())
    s = np.random.default_rng(2).random(y.size)
    rows = tree_rows(canonical_rows(s, y, np.zeros((y.size, 1), np.int32), None), 0.2, 3, 5000)
    assert rows.units and rows.sampled and rows.grow.sum() + rows.check.sum() == 5000
    np.testing.assert_array_equal(rows.fit, 1 - rows.check)             # every unit but the check units
    assert np.all(rows.grow <= rows.fit) and rows.judge is rows.check


def scale_data(n, seed, n_sites=40):
    """``group_data`` with distractors of many values: a 40-site category and a 300-value text column."""
    s, y, df = group_data(n, seed)
    rng = np.random.default_rng(seed + 50)
    df["site"] = pd.Categorical(rng.integers(0, n_sites, n))
    df["user"] = pd.Series(rng.integers(0, 300, n)).astype(str)
    return s, y, df


@pytest.fixture(scope="module")
def sampled():
    """A weighted fit of 20,000 rows grown on a sample of 4,000 (no clipping: the identities are exact)."""
    s, y, df = scale_data(20_000, 11)
    s = 0.5 * s
    w = np.random.default_rng(5).uniform(0.2, 3.0, s.size)
    w[::13] = 0.0
    m = calibrators.get("mbct", bin_size=150, n_trees=3, early_stopping=False, growth_rows=4000).fit(
        s, y, df, sample_weight=w)
    return m, s, y, df, w


def test_sampled_growth_leaves_leaf_pud_one_on_all_tree_rows(sampled):
    """The lines are refitted on all rows but the check rows: each leaf's weighted PUD is 1 there,
    for every tree (its input being the previous trees' output on all rows), with no clipping."""
    m, s, y, df, w = sampled
    ex = explain(m, s, y, df, sample_weight=w)
    assert ex.grow_rows.size < 4000 < ex.fit_rows.size
    fit = ex.fit_rows
    nodes, stages = m.trace(s[fit], df.iloc[fit])
    wf, yf = ex.fit_weight[fit], y[fit]
    np.testing.assert_array_equal(wf, w[fit])                            # fractional weights: rows whole
    for t, tree in enumerate(m.trees_):
        ends = np.unique(nodes[:, t])
        assert set(ends) >= set(np.flatnonzero(tree.feature < 0))      # every leaf holds tree rows
        line = tree.slope[nodes[:, t]] * stages[:, t] + tree.intercept[nodes[:, t]]
        assert 0 <= line.min() and line.max() <= 1
        for leaf in np.flatnonzero(tree.feature < 0):
            sel = nodes[:, t] == leaf
            assert np.dot(wf[sel], yf[sel]) / np.dot(wf[sel], stages[sel, t + 1]) == pytest.approx(1.0, rel=1e-12)


def test_sampled_scales_are_the_sums_over_all_tree_rows(sampled):
    """Per node, the statistics of its line are those of every tree row through it (rows that end at
    it or below), not of the sample; the explanation's tables show those sums."""
    m, s, y, df, w = sampled
    ex = explain(m, s, y, df, sample_weight=w)
    fit, grow = ex.fit_rows, ex.grow_rows
    assert np.isin(grow, fit).all() and grow.size < 4000 and fit.size + ex.check_rows.size == (w > 0).sum()
    nodes, stages = m.trace(s[fit], df.iloc[fit])
    wf, yf = w[fit], y[fit]
    for t, tree in enumerate(m.trees_):
        for node in range(tree.n_nodes):
            sel = np.isin(nodes[:, t], subtree(tree.parent, node))
            f = stages[sel, t]
            assert tree.positives[node] == pytest.approx(np.dot(wf[sel], yf[sel]), rel=1e-12)
            assert tree.sum_input[node] == pytest.approx(np.dot(wf[sel], f), rel=1e-12)
            assert tree.sum_input_sq[node] == pytest.approx(np.dot(wf[sel], f * f), rel=1e-12)
            assert tree.sum_input_pos[node] == pytest.approx(np.dot(wf[sel], f * yf[sel]), rel=1e-12)
            assert (tree.input_min[node], tree.input_max[node]) == (f.min(), f.max())
            assert ex.trees[t].loc[node, "rows"] == pytest.approx(wf[sel].sum(), rel=1e-12)
            assert ex.trees[t].loc[node, "positives"] == pytest.approx(np.dot(wf[sel], yf[sel]), rel=1e-12)
    root = ex.trees[0].loc[0]
    assert root["rows"] == pytest.approx(w[fit].sum()) and root["rows"] > 4 * w[grow].sum()
    note = (f"Trees were grown on a seeded sample of {grow.size:,} of {fit.size:,} rows; "
            f"node lines use all {fit.size:,} rows.")
    assert note in ex.notes
    titles = [title for title, _ in inner_figures(ex)]
    assert any(f"sample of {grow.size:,} of {fit.size:,} rows" in title for title in titles)


def test_sampled_node_losses_are_those_of_the_sample(sampled):
    """The split choice is the sample's: tree 1 is the tree grown on the grow rows (same routing and
    losses), only its statistics differ; the training MVCE of the history is on the grow rows."""
    m, s, y, df, w = sampled
    keep = w > 0
    sk, yk, dk, wk = s[keep], y[keep], df[keep].reset_index(drop=True), w[keep]
    data = canonical_rows(sk, yk, m._codes(sk, dk), wk)
    rows = tree_rows(data, m.holdout, m.seed, m.growth_rows)
    assert not data.units and rows.sampled
    g, wg = rows.members(rows.grow)
    views = random_views(g.size, m.views, [m.seed, 0])
    tree, _ = grow_tree(data.codes[g], m.columns_, data.s[g], data.y[g], max_depth=m.max_depth,
                        min_rows=m.bin_size, loss_bin_size=m.loss_bin_size_, views=views, weights=wg)
    got = m.trees_[0]
    for attr in ("feature", "table", "loss_node", "loss_split"):
        np.testing.assert_array_equal(getattr(got, attr), getattr(tree, attr))
    assert not np.allclose(got.positives, tree.positives)
    expect = grouped_mvce(data.s[g] - data.y[g], np.zeros(g.size, int), 1, views, m.loss_bin_size_, 1.0, wg)[0, 0]
    assert m.history_["fit_mvce"][0] == pytest.approx(expect, rel=1e-12)


def test_no_more_rows_than_growth_rows_is_the_unsampled_fit_bit_for_bit(grouped):
    """growth_rows >= N: nothing sampled: tree 1 is the tree grown on the holdout split's tree rows
    (its statistics summed again over the same rows: equal to rounding); every growth_rows >= N gives
    the same fit, bit for bit."""
    (s, y, df), (s2, _, df2) = grouped
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
    for weights in (None, w):
        fits = [calibrators.get("mbct", bin_size=300, n_trees=3, growth_rows=g).fit(s, y, df, sample_weight=weights)
                for g in (s.size, 10 * s.size, 200_000)]
        for other in fits[1:]:
            np.testing.assert_array_equal(other.predict(s2, df2), fits[0].predict(s2, df2))
            for key in fits[0].history_:
                np.testing.assert_array_equal(other.history_[key], fits[0].history_[key])
        m = fits[0]
        data = canonical_rows(s, y, m._codes(s, df), weights)
        rows = tree_rows(data, m.holdout, m.seed, m.growth_rows)
        assert not rows.sampled and data.units == (weights is None)
        np.testing.assert_array_equal(rows.grow, rows.fit)
        g, wg = rows.members(rows.grow)
        tree, _ = grow_tree(data.codes[g], m.columns_, data.s[g], data.y[g], max_depth=5, min_rows=300,
                            loss_bin_size=150, views=random_views(g.size, m.views, [m.seed, 0]), weights=wg)
        for attr in ("feature", "table", "loss_node", "loss_split", "input_min", "input_max"):
            np.testing.assert_array_equal(getattr(m.trees_[0], attr), getattr(tree, attr))
        for attr in ("weight", "positives", "sum_input", "sum_input_sq", "sum_input_pos"):
            np.testing.assert_allclose(getattr(m.trees_[0], attr), getattr(tree, attr), rtol=1e-12)
    smaller = calibrators.get("mbct", bin_size=300, n_trees=3, growth_rows=s.size - 1).fit(s, y, df)
    assert not np.array_equal(smaller.trees_[0].positives, fits[0].trees_[0].positives)


def test_the_growth_sample_is_seeded():
    s, y, df = scale_data(30_000, 4)
    s2, _, df2 = scale_data(2000, 5)
    fit = [calibrators.get("mbct", bin_size=200, n_trees=2, growth_rows=5000, seed=seed).fit(s, y, df)
           for seed in (1, 1, 2)]
    np.testing.assert_array_equal(fit[0].predict(s2, df2), fit[1].predict(s2, df2))
    for a, b in zip(fit[0].trees_, fit[1].trees_):
        for attr in ("feature", "table", "positives", "sum_input", "loss_node"):
            np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr), err_msg=attr)
    assert not np.array_equal(fit[0].predict(s2, df2), fit[2].predict(s2, df2))


def test_a_strong_feature_is_found_at_a_million_rows_from_a_small_sample():
    """1e6 rows grown on 50,000: the first split is on the miscalibrated column (not on the 40-site or
    300-value distractors), and the held-out groups' PUD is close to 1 after calibration."""
    s, y, df = scale_data(1_000_000, 8)
    m = calibrators.get("mbct", n_trees=2, growth_rows=50_000).fit(s, y, df)
    names = [c.name for c in m.columns_]
    assert names[m.trees_[0].feature[0]] == "group"
    assert m.trees_[0].positives[0] > 0.9 * y.sum()                      # the root's sums: all rows
    s2, y2, df2 = scale_data(200_000, 9)
    p = m.predict(s2, df2)
    for g in ("A", "B"):
        sel = df2["group"].to_numpy() == g
        assert abs(metrics.pud(p[sel], y2[sel]) - 1) < 0.03
        assert abs(metrics.pud(s2[sel], y2[sel]) - 1) > 0.5


def test_growth_rows_is_a_log_scale_hyperparameter_and_checked():
    h = {h.name: h for h in MBCTCalibrator.hyperparams}["growth_rows"]
    assert h.kind == "int" and h.log and h.default == MBCTCalibrator().growth_rows == 200_000
    assert h.low <= h.default <= h.high
    s, y = np.array([0.2, 0.4, 0.6, 0.8]), np.array([0, 1, 0, 1])
    with pytest.raises(SettingsError, match="growth_rows"):
        calibrators.get("mbct", growth_rows=1).fit(s, y)


# -- order of the rows, repeated rows, the node's line, the single leaf ------------------------------------
def tied_data(n, seed):
    """Heavy ties: scores on a 0.01 grid, a 3-value category and a numeric column on a 0.5 grid, so
    that many rows repeat one another exactly (score, features and label)."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 5, n), 2)
    g = rng.choice(list("abc"), n)
    y = (rng.random(n) < np.clip(s * np.where(g == "a", 1.6, 0.8), 0, 1)).astype(int)
    return s, y, pd.DataFrame({"g": g, "k": np.round(rng.normal(size=n) * 2) / 2})


def shuffled(perm, s, y, df, w=None):
    return (s[perm], y[perm], None if df is None else df.iloc[perm].reset_index(drop=True),
            None if w is None else w[perm])


@pytest.mark.parametrize("case", ["features", "ties", "ties and features", "fractional weights", "sampled"])
def test_shuffled_rows_give_the_same_model(case):
    """The same rows in another order: the same trees, history and predictions, bit for bit (MBCT sorts
    and merges its rows first; before, shuffles moved predictions by up to 0.11 on these data)."""
    w, params = None, {}
    if case == "features":
        s, y, df = group_data(6000, 1)
    elif case == "ties":
        s, y, df = tied_data(6000, 2)
        df = None
    elif case == "ties and features":
        s, y, df = tied_data(6000, 3)
    elif case == "fractional weights":
        s, y, df = tied_data(6000, 4)
        w = np.random.default_rng(4).choice([0.0, 0.25, 0.5, 1.5], s.size)
    else:
        s, y, df = scale_data(20_000, 5)
        s = np.round(s, 3)
        params = {"growth_rows": 4000, "bin_size": 150}
    if case.startswith("ties"):                                            # rows repeat one another
        assert pd.concat([pd.Series(s), pd.Series(y), df], axis=1).duplicated().mean() > 0.3
    first = calibrators.get("mbct", **params).fit(s, y, df, sample_weight=w)
    grid = np.linspace(0, 1, 1001)
    for seed in (1, 2):
        perm = np.random.default_rng(seed).permutation(s.size)
        other = calibrators.get("mbct", **params).fit(*shuffled(perm, *(s, y, df))[:3],
                                                      sample_weight=None if w is None else w[perm])
        np.testing.assert_array_equal(other.predict(s, df), first.predict(s, df))
        np.testing.assert_array_equal(other.predict(grid), first.predict(grid))
        for key in first.history_:
            np.testing.assert_array_equal(other.history_[key], first.history_[key])
        for a, b in zip(first.trees_, other.trees_):
            for attr in ("feature", "table", "slope", "intercept", "loss_node"):
                np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    ex = explain(first, s, y, df, sample_weight=w)                      # and its explanation agrees
    assert ex.trees[0].loc[0, "rows"] == pytest.approx(first.trees_[0].weight[0], rel=1e-12)


@pytest.mark.parametrize("with_features", [False, True])
def test_a_heavy_weight_equals_that_row_repeated(with_features):
    """A weight of 1e5 on one row is that row given 1e5 times: the same model, bit for bit (before:
    predictions up to 0.41 apart). Also the whole-weights contract of tests/test_weights.py."""
    s, y, df = tied_data(3000, 6)
    if not with_features:
        df = None
    k = np.ones(s.size, dtype=np.int64)
    k[17] = 100_000
    heavy = calibrators.get("mbct").fit(s, y, df, sample_weight=k)
    rdf = None if df is None else df.loc[df.index.repeat(k)].reset_index(drop=True)
    repeated = calibrators.get("mbct").fit(np.repeat(s, k), np.repeat(y, k), rdf)
    grid = np.linspace(0, 1, 1001)
    np.testing.assert_array_equal(heavy.predict(grid), repeated.predict(grid))
    np.testing.assert_array_equal(heavy.predict(s, df), repeated.predict(s, df))
    for key in heavy.history_:
        np.testing.assert_array_equal(heavy.history_[key], repeated.history_[key])
    assert heavy.trees_[0].weight[0] > 100_000 * (1 - heavy.holdout) - 10   # the heavy row's units count


def test_canonical_rows_merge_repeats_and_sort_by_content():
    s = np.array([0.5, 0.2, 0.5, 0.2, 0.5, -0.0])
    y = np.array([1, 0, 1, 1, 0, 0])
    codes = np.array([[5, 1], [2, 0], [5, 1], [2, 0], [5, 0], [0, 0]], dtype=np.int32)
    data = canonical_rows(s, y, codes, None, inverse=True)
    assert data.units and data.s.tolist() == [0.0, 0.2, 0.2, 0.5, 0.5]
    assert not np.signbit(data.s[0])                                        # -0.0 became 0.0
    assert data.y.tolist() == [0, 0, 1, 0, 1] and data.weight.tolist() == [1, 1, 1, 1, 2]
    assert data.codes[:, 1].tolist() == [0, 0, 0, 0, 1]
    np.testing.assert_array_equal(data.s[data.inverse], s + 0.0)
    np.testing.assert_array_equal(data.y[data.inverse], y)
    frac = canonical_rows(s, y, codes, np.array([0.5, 1, 0.25, 1, 1, 2]))
    assert not frac.units and frac.weight.tolist() == [2, 1, 1, 1, 0.75]
    halves = canonical_rows(s, y, codes, np.array([0.5, 1, 0.5, 1, 1, 2]))
    assert halves.units and halves.weight.tolist() == [2, 1, 1, 1, 1]       # merged weights are whole


@pytest.mark.parametrize("n,rates", [(600, (0.1, 0.8)), (900, (0.3, 0.35)), (4000, (0.02, 0.9))])
def test_two_distinct_scores_get_their_observed_rates(n, rates):
    """One leaf (fewer than 2 bin_size rows), two distinct scores: the leaf's line goes through both
    observed rates (the paper's scale f' = a f could not: it would give 0.2 a and 0.7 a). With
    holdout = 0 the rates are those of all rows; with the default holdout, of the tree rows."""
    rng = np.random.default_rng(n)
    s = rng.choice([0.2, 0.7], n)
    y = (rng.random(n) < np.where(s == 0.2, *rates)).astype(int)
    m = calibrators.get("mbct", holdout=0, bin_size=n).fit(s, y)
    assert m.trees_[0].n_leaves == 1
    observed = [y[s == 0.2].mean(), y[s == 0.7].mean()]
    np.testing.assert_allclose(m.predict([0.2, 0.7]), observed, rtol=1e-12)
    held = calibrators.get("mbct", bin_size=n).fit(s, y)
    fw = explain(held, s, y).fit_weight
    on_tree_rows = [np.dot(fw, y * (s == v)) / np.dot(fw, s == v) for v in (0.2, 0.7)]
    np.testing.assert_allclose(held.predict([0.2, 0.7]), on_tree_rows, rtol=1e-12)


def test_a_line_needs_the_rows_to_reject_the_scale():
    """Few rows, or a miscalibration through 0: the node keeps the paper's scale (intercept 0); a
    leaf's slope is never negative; a node whose inputs are one value is scaled."""
    rng = np.random.default_rng(0)
    s = rng.choice([0.2, 0.7], 40)
    y = (rng.random(40) < np.where(s == 0.2, 0.2, 0.5)).astype(int)  # 40 rows cannot tell this from a scale
    few = calibrators.get("mbct", holdout=0).fit(s, y)
    assert few.trees_[0].intercept[0] == 0.0
    assert few.trees_[0].slope[0] == pytest.approx(y.sum() / s.sum(), rel=1e-12)
    s = rng.uniform(0.05, 0.5, 20_000)
    y = (rng.random(s.size) < 0.6 * s).astype(int)                     # a scale is right: p = 0.6 s
    through_zero = calibrators.get("mbct", holdout=0, bin_size=20_000).fit(s, y)
    assert through_zero.trees_[0].intercept[0] == 0.0
    y = (rng.random(s.size) < 0.5 - 0.8 * (s - 0.05)).astype(int)      # falling rates: a flat leaf
    falling = calibrators.get("mbct", holdout=0, bin_size=20_000).fit(s, y)
    assert falling.trees_[0].slope[0] == 0.0
    assert falling.predict([0.1, 0.4]).tolist() == [y.mean()] * 2
    one = calibrators.get("mbct", holdout=0).fit(np.full(50, 0.3), np.r_[np.ones(10), np.zeros(40)].astype(int))
    assert one.trees_[0].intercept[0] == 0.0 and one.predict([0.3])[0] == pytest.approx(0.2, rel=1e-12)


def training_losses(m, s, y, df=None):
    """The training loss of ``m`` and of its single-leaf linear calibrator, recomputed: MVCE (bin size
    M, p = 1) of the grow units in canonical order on the first tree's views."""
    from calibdash.calibrators._mbct_tree import node_line, node_stats
    data = canonical_rows(s, y, m._codes(s, df), None, inverse=True)
    rows = tree_rows(data, m.holdout, m.seed, m.growth_rows)
    g, _ = rows.members(rows.grow)
    views = random_views(g.size, m.views, [m.seed, 0])
    pred = np.empty(data.size)
    pred[data.inverse] = m.predict(s, df)

    def loss(p):
        return grouped_mvce(p[g] - data.y[g], np.zeros(g.size, int), 1, views, m.loss_bin_size_, 1.0)[0, 0]

    root = Tree(feature=[-1], table_len=[0], table=[], positives=[0.0], sum_input=[0.0])
    stats = node_stats(root, np.zeros(data.size, np.int64), data.s, data.y, rows.fit)
    a, b = node_line(*(stats[k] for k in ("weight", "positives", "sum_input", "sum_input_sq", "sum_input_pos",
                                          "input_min", "input_max")))
    return loss(pred), loss(np.clip(a[0] * data.s + b[0], 0, 1))


@pytest.mark.parametrize("seed", range(6))
def test_training_loss_never_above_the_single_leaf_linear_calibrator(seed):
    """On random data (calibrated, over-confident, two scores, pure noise; with features): MBCT's
    training MVCE is at most its single leaf's, up to the fallback rule's rounding margin
    (FALLBACK_RTOL = 1e-9, FALLBACK_ATOL = 1e-15)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(500, 5000))
    s = [rng.uniform(size=n), np.round(rng.beta(2, 5, n), 2), rng.choice([0.2, 0.7], n), rng.uniform(size=n)][seed % 4]
    p = [s, np.clip(1.5 * s - 0.1, 0, 1), np.where(s == 0.2, 0.1, 0.8), np.full(n, 0.3)][seed % 4]
    y = (rng.random(n) < p).astype(int)
    df = pd.DataFrame({"g": rng.choice(list("abc"), n), "x": rng.normal(size=n)})
    for params in ({"bin_size": 50, "early_stopping": False}, {"bin_size": 100}):
        m = calibrators.get("mbct", seed=seed, **params).fit(s, y, df)
        model, single = training_losses(m, s, y, df)
        assert model <= single * (1 + 1e-9) + 1e-15
        assert m.single_leaf_mvce_ == pytest.approx(single, rel=1e-12)


def test_boosting_above_the_single_leaf_falls_back_to_it():
    """Two distinct scores, 532 rows, bin size 50, 8 trees grown: the trees after the first (which
    does not split) raise the training MVCE, so MBCT is its single leaf, whose line reaches the rates
    of the tree rows; the explanation says so."""
    rng = np.random.default_rng(34)
    n = int(rng.integers(300, 4000))
    s = rng.choice([0.2, 0.7], n)
    y = (rng.random(n) < np.where(s == 0.2, 0.1, 0.8)).astype(int)
    df = pd.DataFrame({"g": rng.choice(list("abc"), n), "x": rng.normal(size=n)})
    m = calibrators.get("mbct", seed=34, bin_size=50, early_stopping=False).fit(s, y, df)
    assert m.fallback_ and len(m.trees_) == 1 and m.trees_[0].n_nodes == 1
    assert m.history_["fit_mvce"][-1] > m.single_leaf_mvce_
    model, single = training_losses(m, s, y, df)
    assert model == pytest.approx(single, rel=1e-12) and single == pytest.approx(m.single_leaf_mvce_, rel=1e-12)
    ex = explain(m, s, y, df)
    fw = ex.fit_weight
    np.testing.assert_allclose(m.predict([0.2, 0.7], df.head(2)),
                               [np.dot(fw, y * (s == v)) / np.dot(fw, s == v) for v in (0.2, 0.7)], rtol=1e-12)
    assert any("single leaf" in note for note in ex.notes)
    again = export.loads(export.dumps(m))
    np.testing.assert_array_equal(again.predict(s, df), m.predict(s, df))


def test_files_keep_the_lines_and_older_files_scale():
    """The file holds every node's statistics, so a loaded model predicts bit for bit; a file written
    before the lines (positives and sum_input only) scales its nodes, as it did; a partial set is
    refused."""
    s, y, df = group_data(6000, 4)
    m = calibrators.get("mbct", bin_size=300, n_trees=2).fit(s, y, df)
    assert sum(int(np.sum(t.intercept != 0)) for t in m.trees_) >= 1      # some node has a line
    text = export.dumps(m)
    np.testing.assert_array_equal(export.loads(text).predict(s, df), m.predict(s, df))
    import json
    doc = json.loads(text)
    for tree in doc["state"]["trees"]:
        for key in ("weight", "sum_input_sq", "sum_input_pos", "input_min", "input_max"):
            del tree[key]
    old = export.loads(json.dumps(doc))
    f = s
    for tree, node in zip(m.trees_, old.apply(s, df).T):
        f = np.clip(tree.scale[node] * f, 0, 1)
    np.testing.assert_array_equal(old.predict(s, df), f)
    del doc["state"]["trees"][0]["positives"]
    doc["state"]["trees"][0]["weight"] = [1.0] * len(doc["state"]["trees"][0]["feature"])
    doc["state"]["trees"][0]["positives"] = [1.0] * len(doc["state"]["trees"][0]["feature"])
    with pytest.raises(DataError, match="together or none"):
        export.loads(json.dumps(doc))
