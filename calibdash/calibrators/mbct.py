"""MBCT: multiple boosting calibration trees (feature-aware binning). The rows and their seeded draws are in
:mod:`._mbct_rows` (re-exported here), the column coding in :mod:`._mbct_codes`, the trees in :mod:`._mbct_tree`."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from ..core.errors import DataError
from ..core.sql_forms import ClosedForm
from ._mbct_rows import (CanonicalRows, TreeRows, canonical_rows, feature_frame, holdout_counts, sample_counts,
                         tree_rows, weighted_rows)
from ._mbct_sql import mbct_form
from ..measures.mvce import grouped_mvce, random_views, weighted_mvce
from ._mbct_codes import CATEGORICAL, NUMERIC, SCORE, ColumnCode, encode, learn_codes, score_code
from ._mbct_tree import STATS, Tree, grow_tree, node_stats
from .base import Calibrator, HyperParam, check_feature_rows, check_scores, check_setting

__all__ = ["MBCTCalibrator", "CanonicalRows", "canonical_rows", "TreeRows", "tree_rows", "weighted_rows",
           "holdout_counts", "sample_counts"]

#: Random views of the global (boosting) loss: the paper's r for evaluation.
GLOBAL_VIEWS = 100
#: The boosted trees give way to the single leaf when their training MVCE exceeds the single leaf's by
#: more than this share plus ``FALLBACK_ATOL``: a margin for rounding only (two fits that are the same
#: in exact arithmetic, such as trees that never split, differ in the last bits of their losses).
FALLBACK_RTOL, FALLBACK_ATOL = 1e-9, 1e-15


class MBCTCalibrator(Calibrator):
    """Multiple Boosting Calibration Trees (Huang et al., 2022).

    Bins are the leaves of calibration trees grown on the rows' features and score; inside a bin a line maps the
    prediction; several trees are boosted, each calibrating the previous trees' output.

    The authors published no code (their repositories
    ``huangsg1/Tree-Based-Feature-Aware-Binning-for-Individual-Uncertainty-Calibration`` and
    ``huangsg1/uncertainty-calibration`` hold a README and a reading list), so every choice follows the paper's text;
    where it is silent, or where reading it literally would make the fit depend on row order, the choice is said below.

    Features (Sec. 5.1, App. A.1)
        The raw score (a fixed input, as the feature list reads, while node lines act on the previous trees' output) in
        ``score_bins`` (100) equal-width bins; categorical columns (category, string, object or bool dtype) as they
        are, coded in sorted order (types that do not compare: by type name, then text); numeric columns in
        ``n_quantiles`` training quantile bins. Integer columns are numeric: give label-encoded categories the
        ``category`` dtype. A missing value seen at fit time is a value of its own.
    Canonical rows (not in the paper)
        Before any draw, rows with the same score, codes and label merge into one row of their summed weight, sorted by
        content (:func:`canonical_rows`): the same rows in another order give the same model, bit for bit. Whole
        weights (none: 1) count *units*: a row of weight ``k`` is ``k`` rows, each drawn on its own by the holdout, the
        growth sample and the views (copies land in random places of a view, as in a shuffle of the repeated rows), so
        the fit equals that on the rows repeated (``tests/test_weights.py``). This is the paper's aggregation (App.
        A.2) for rows agreeing on all MBCT sees; rows agreeing only on codes are not merged: the line uses each score.
    Node calibrator (Sec. 4.3's "linear function", whose form the paper does not give)
        ``f' = a f + b``, ``f`` the tree's input, by :func:`~calibdash.calibrators._mbct_tree.node_line`: through the
        node's mean point (partition calibration error, Eq. 4, zero; PUD, Eq. 6, 1), the paper's per-node scale ``sum(y)
        / sum(f)`` as slope unless an F test prefers the least-squares slope, bounded to stay in [0, 1]. The scale alone
        cannot reach rates 0.1 and 0.8 at scores 0.2 and 0.7, a line can; the least-squares line alone would go below 0
        at the low end of a node whose rates are convex in ``f`` (79 Avazu test rows predicted 0).
    Split (Eq. 12)
        A leaf splits on the feature whose multiway split, each child with its own line, gives the lowest node-local
        MVCE (Eq. 10). The paper splits on every value; here each child holds at least ``bin_size`` rows ("the least
        number of rows in a bin"), or a value seen on one row would be calibrated to its own label: an ordered feature
        is cut into consecutive ranges of at least ``bin_size`` rows; a smaller categorical value joins an "other"
        child (or the smallest child when "other" would be too small).
    Stopping (Sec. 4.3)
        No split at depth ``max_depth``, below ``2 * bin_size`` rows, when no feature gives two children, or when the
        best split's local loss is not below the node's own.
    Loss (Eq. 10)
        :func:`calibdash.metrics.mvce` with bin size ``M = round(mvce_ratio * bin_size)`` (the paper's ratio 1/2, so a
        splittable node has at least two loss bins) on ``views`` seeded permutations of the units in canonical order
        (the paper's "randomly shuffle the samples"), for all nodes of a level and all candidate features at once on
        shared views (tested against ``metrics.mvce``). The paper evaluates with 100 views; the default 20 is for
        training speed, a node's candidate splits being compared on the same views.
    Boosting (Sec. 4.3: "whether to generate a new tree according to the change of global loss")
        Tree ``t + 1`` is grown on the output of trees ``1..t`` and kept only if it lowers the global MVCE
        (``metrics.mvce``, 100 views) on a stratified, seeded share ``holdout`` of the units kept out of the trees, so
        the decision does not fit noise; the first tree is always kept. ``holdout = 0`` decides on the training rows,
        as the text reads.
    Never worse than one leaf (not in the paper)
        If the kept trees' training loss (``history_``'s ``fit_mvce``) exceeds the single-leaf linear calibrator's (the
        first tree's root) beyond ``FALLBACK_RTOL``, ``FALLBACK_ATOL`` of rounding, the model is that leaf
        (``fallback_``): greedy growth on node-local losses, and later trees on other views, can raise the global
        training loss (on two distinct scores the single leaf already reaches both rates).
    Sample weights (not in the paper)
        A row of weight ``v`` counts as ``v`` rows wherever rows are counted: quantile bins hold equal weight (numpy's
        linear rule on the rows repeated), lines use weighted sums, ``bin_size`` is a least *weight*. Whole weights are
        units (above); score cells give the row fit. Fractional weights are not: a row is held out, sampled and placed
        in a view whole, and the MVCE's bins hold equal weight ``M``, a row across a cut putting each part in its bin
        (:func:`~calibdash.measures.mvce.grouped_mvce`; the global loss :func:`~calibdash.measures.mvce.weighted_mvce`,
        ``M`` at most half the check weight), so weights ``c`` act as ``bin_size / c``. Rows of weight 0 are left out
        first; unit weights are no weights (the same fit bit for bit).
    At scale (``growth_rows``; not in the paper)
        Beyond ``growth_rows`` units the trees grow on a seeded sample of that many (:func:`sample_counts`: stratified
        by class, drawn in canonical order). Sampled: all that *chooses* a tree (holdout split, split choice and its
        views, ``bin_size``, ``history_``'s training loss, the boosting decision). Exact, on all rows: the feature
        coding and each node's line, refitted from all rows but the check units routed through the grown tree (O(N)
        per tree), so every leaf's PUD is 1 on them; the next tree grows on the sample's rows of that output. A row
        whose value did not occur at a node in the sample stops there and takes its line. The canonical form costs a
        sort of the scores and one reordering of the rows (about 3 s at 10 million rows).

    A value unseen at predict time (a category unseen at fit time, or absent from a node's training rows) stops the row
    at that node, which takes the node's line; ``predict`` without features follows only score splits. Outputs are
    clipped to [0, 1] after each tree (a line leaves [0, 1] only outside its node's training inputs).

    Parameters
    ----------
    max_depth : int, default 5
    bin_size : int, default 500
        Least number of rows (weight) in a bin (leaf), the paper's N_min.
    n_trees : int, default 8
        Most trees grown.
    holdout : float, default 0.2
        Share of rows that decide the number of trees (0: the training rows).
    views : int, default 20
        Random views r of the node-local MVCE.
    mvce_ratio : float, default 0.5
        MVCE bin size M of the training loss, as a share of ``bin_size``.
    p : {1, 2}, default 1
        Norm of the MVCE over bins.
    n_quantiles : int, default 10
        Quantile bins of a numeric feature column.
    early_stopping : bool, default True
        Stop adding trees when the check loss stops decreasing (False: grow ``n_trees`` trees).
    growth_rows : int, default 200_000
        Most rows (units) the trees are grown on: with more, a seeded, stratified sample (see "At scale").
    score_bins : int, default 100
        Equal-width bins of the score as a feature.
    seed : int, default 0
        Seed of the growth sample, the holdout split and the random views.

    Attributes
    ----------
    columns_ : list of ColumnCode
        How the score and each feature column are coded.
    trees_ : list of Tree
        The kept trees, in boosting order (one tree of one leaf after a fallback).
    history_ : dict of str -> ndarray
        One entry per tree tried (tree 0: the raw scores): ``tree``, ``leaves``, ``fit_mvce`` (the rows the trees are
        grown on, the first tree's views), ``check_mvce`` (check rows, ``metrics.mvce`` with 100 views: the loss that
        decides) and ``kept``.
    loss_bin_size_ : int
        MVCE bin size M of the split loss.
    single_leaf_mvce_ : float
        Training loss (as ``fit_mvce``) of the single-leaf linear calibrator.
    fallback_ : bool
        Whether the model is that single leaf.

    A calibrator read from a file (:mod:`calibdash.io.export`) has no ``history_`` and its trees' losses are NaN. The
    rows behind the trees are not kept: :mod:`calibdash.explain.mbct` recomputes them from the training rows.
    """

    name = "mbct"
    order = 80
    color = "#882255"   # wine (Tol)
    label = "MBCT"
    summary = "feature-aware boosting calibration trees"
    paper = ("Huang, Wang, Mou, Zhang, Cheng, Shen & Wu (2022), MBCT: Tree-Based Feature-Aware Binning "
             "for Individual Uncertainty Calibration, WWW '22")
    uses_features = True
    hyperparams = (
        HyperParam("max_depth", "depth", "int", 5, low=1, high=10,
                   help="Deepest level of a calibration tree (the root is level 0)."),
        HyperParam("bin_size", "N_min", "int", 500, low=20, high=5000, log=True,
                   help="Least number of rows in a bin (tree leaf); nodes with fewer than twice this are not split."),
        HyperParam("n_trees", "N", "int", 8, low=1, high=20,
                   help="Most boosted trees; each calibrates the output of the previous ones."),
        HyperParam("holdout", "", "float", 0.2, low=0.0, high=0.5,
                   help="Share of rows kept out of the trees to decide whether another tree helps (0: training rows)."),
        HyperParam("views", "r", "int", 20, low=1, high=200, log=True,
                   help="Random views of the node-local MVCE used to choose splits."),
        HyperParam("mvce_ratio", "M/N_min", "float", 0.5, low=0.05, high=1.0,
                   help="Rows per bin of the split loss (MVCE), as a share of the bin size (the paper: 1/2)."),
        HyperParam("p", "p", "choice", 1, choices=(1, 2),
                   help="Norm of the MVCE over bins (the paper's main results use 1)."),
        HyperParam("n_quantiles", "", "int", 10, low=2, high=50,
                   help="Quantile bins of each numeric feature column."),
        HyperParam("early_stopping", "", "bool", True,
                   help="Stop adding trees when the held-out MVCE stops decreasing."),
        HyperParam("growth_rows", "", "int", 200_000, low=10_000, high=10_000_000, log=True,
                   help="Most rows the trees are grown on (beyond: a seeded, stratified sample of this many); "
                        "node lines always use all rows."),
    )

    def __init__(self, max_depth: int = 5, bin_size: int = 500, n_trees: int = 8, holdout: float = 0.2,
                 views: int = 20, mvce_ratio: float = 0.5, p: float = 1, n_quantiles: int = 10,
                 early_stopping: bool = True, growth_rows: int = 200_000, score_bins: int = 100, seed: int = 0):
        self._keep(locals())

    def _loss_bin_size(self) -> int:
        """MVCE bin size M of the split loss: ``round(mvce_ratio * bin_size)``, at least 1."""
        return max(1, int(round(float(self.mvce_ratio) * int(self.bin_size))))

    def _codes(self, s: np.ndarray, features) -> np.ndarray:
        df = feature_frame(features)
        if df is not None:
            missing = [c.name for c in self.columns_[1:] if c.name not in df.columns]
            if missing:
                raise DataError(f"features lack the column(s) {missing} MBCT was fitted with.")
        return encode(self.columns_, s, df)

    def _fit(self, s, y, features, w):
        for name, low in (("max_depth", 0), ("bin_size", 1), ("n_trees", 1), ("views", 1),
                          ("n_quantiles", 2), ("score_bins", 1), ("growth_rows", 2)):
            check_setting(lambda v: int(v) == v and v >= low, getattr(self, name),
                          f"MBCT's {name} must be an integer of at least {low}")
        check_setting(lambda v: 0.0 <= float(v) < 1.0, self.holdout, "MBCT's holdout must be in [0, 1)")
        check_setting(lambda v: 0.0 < float(v) <= 1.0, self.mvce_ratio, "MBCT's mvce_ratio must be in (0, 1]")
        check_setting(lambda v: float(v) >= 1, self.p, "MBCT's p must be at least 1")
        _, s, y, df, w = weighted_rows(s, y, features, w)
        names = [] if df is None else list(df.columns)
        if len(set(names)) != len(names):
            raise DataError("feature columns must have distinct names.")
        score = score_code(self.score_bins)
        if "score" in names:
            score.name = "score (binned)"
        self.columns_ = [score] + [learn_codes(df[c], self.n_quantiles, w) for c in names]
        data = canonical_rows(s, y, self._codes(s, df), w)
        self._boost(data, tree_rows(data, self.holdout, self.seed, self.growth_rows))

    def _boost(self, data: CanonicalRows, rows: TreeRows) -> None:
        """Grow and keep the trees on the canonical rows ``data`` used as ``rows`` says; then the
        single-leaf check (see "Never worse than one leaf")."""
        s, y, first = data.s, data.y, data.first
        y_float = y.astype(float)
        m = self._loss_bin_size()
        grow, w_grow = rows.members(rows.grow)
        grow_codes = data.source_codes[first[grow]]
        judge, w_judge = rows.members(rows.judge)
        fit_weight = rows.fit
        del rows                       # at millions of rows, the grow and check weights are large

        grow_views = random_views(grow.size, int(self.views), [int(self.seed), 0])
        one_group = np.zeros(grow.size, np.int64)
        top = self._top_codes()

        def check_loss(pred):          # the global loss deciding the number of trees: MVCE, 100 views, bin size
            if w_judge is None:        # min(M, half the rows), or half the weight (then weighted_mvce)
                return metrics.mvce(pred[judge], y[judge], bin_size=max(1, min(m, judge.size // 2)),
                                    n_views=GLOBAL_VIEWS, p=float(self.p), seed=self.seed)
            return weighted_mvce(pred[judge], y[judge], w_judge, min(m, float(w_judge.sum()) / 2), n_views=GLOBAL_VIEWS,
                                 p=float(self.p), seed=self.seed)

        def fit_loss(pred_grow):       # the training loss: MVCE of the grow rows on the first tree's views
            resid = pred_grow - y[grow]
            return float(grouped_mvce(resid, one_group, 1, grow_views, m, float(self.p), w_grow)[0, 0])

        # work arrays of the rows' size, reused tree after tree (at millions of rows, fresh arrays cost more than the
        # arithmetic): two for the outputs in turn, the free one also a work array of the statistics, with one more
        outputs, spare = [np.empty(s.size), np.empty(s.size)], np.empty(s.size)

        def fitted(tree, f):           # the tree's node sums over the fit rows, its output on every row
            node = tree.route(data.source_codes, top)[first]      # routed as given, then in canonical order
            out = outputs[0] if outputs[0] is not f else outputs[1]
            tree = replace(tree, **node_stats(tree, node, f, y_float, fit_weight, (spare, out)))
            return tree, tree.output(node, f, out=out)

        f = s                          # the input of the next tree, on every row
        loss, trained = check_loss(f), fit_loss(f[grow])
        history = [{"tree": 0, "leaves": 1, "fit_mvce": trained, "check_mvce": loss, "kept": True}]
        trees = []
        for t in range(int(self.n_trees)):
            views = grow_views if t == 0 else random_views(grow.size, int(self.views), [int(self.seed), t])
            tree, _ = grow_tree(grow_codes, self.columns_, f[grow], y[grow], max_depth=int(self.max_depth),
                                min_rows=int(self.bin_size), loss_bin_size=m, views=views, p=float(self.p),
                                weights=w_grow)
            tree, new = fitted(tree, f)
            new_loss, new_trained = check_loss(new), fit_loss(new[grow])
            keep = t == 0 or not self.early_stopping or new_loss < loss
            history.append({"tree": t + 1, "leaves": tree.n_leaves, "fit_mvce": new_trained,
                            "check_mvce": new_loss, "kept": keep})
            if not keep:
                break
            trees.append(tree)
            f, loss, trained = new, new_loss, new_trained
        # the single leaf: the root of the first tree (its statistics are those of all tree rows, input s)
        leaf = Tree(feature=[-1], table_len=[0], table=[], **{name: getattr(trees[0], name)[:1] for name in STATS})
        self.single_leaf_mvce_ = fit_loss(leaf.output(np.zeros(grow.size, np.int64), s[grow]))
        self.fallback_ = bool(trained > self.single_leaf_mvce_ * (1 + FALLBACK_RTOL) + FALLBACK_ATOL)
        self.trees_ = [leaf] if self.fallback_ else trees
        self.loss_bin_size_ = m
        types = {"tree": np.int64, "leaves": np.int64, "fit_mvce": float, "check_mvce": float, "kept": bool}
        self.history_ = {key: np.array([h[key] for h in history], dtype=dtype) for key, dtype in types.items()}

    def _top_codes(self) -> np.ndarray:
        """The largest code of each coded column (for :meth:`Tree.route`)."""
        return np.array([c.n_codes - 1 for c in self.columns_])

    def _stages(self, s: np.ndarray, codes: np.ndarray):
        """Yield, tree by tree, the node each row ends at and the output after the tree (two arrays
        used in turn: an output is overwritten two trees later, so callers copy what they keep)."""
        f, top = s, self._top_codes()
        outputs = [np.empty(s.size), np.empty(s.size)]
        for t, tree in enumerate(self.trees_):
            node = tree.route(codes, top)
            f = tree.output(node, f, out=outputs[t % 2])
            yield node, f

    def _trace(self, s: np.ndarray, codes: np.ndarray):
        """Node of each row in each tree (n, n_trees) and the output after each tree (n, n_trees + 1;
        column 0: the scores)."""
        nodes = np.empty((s.size, len(self.trees_)), dtype=np.int64)
        stages = np.empty((s.size, len(self.trees_) + 1))
        stages[:, 0] = s
        for t, (node, f) in enumerate(self._stages(s, codes)):
            nodes[:, t], stages[:, t + 1] = node, f
        return nodes, stages

    def _predict(self, s, features):
        f = s
        for _, f in self._stages(s, self._codes(s, features)):
            pass
        return f

    def sql_map(self) -> ClosedForm:
        """The trees as nested ``CASE``s over the score and the features: a closed form
        (:func:`~._mbct_sql.mbct_form`)."""
        return mbct_form(self._column_states(), self.trees_)

    def _column_states(self) -> list[dict]:
        """How each column is coded, as the model file holds it (:meth:`_export_state`)."""
        columns = []
        for c in self.columns_:
            col = {"name": c.name, "kind": c.kind, "n_codes": int(c.n_codes), "missing_code": int(c.missing_code)}
            if c.kind == CATEGORICAL:
                values = [v.item() if isinstance(v, np.generic) else v for v in c.categories.tolist()]
                bad = [v for v in values if not isinstance(v, (str, bool, int, float))]
                if bad:
                    raise DataError(f"MBCT's feature column {c.name!r} holds values of type "
                                    f"{type(bad[0]).__name__} ({bad[0]!r}), which a JSON file cannot hold; "
                                    "convert the column to text first.")
                col.update(categories=values, dtype=str(c.categories.dtype))
            elif c.kind != SCORE:
                col["edges"] = c.edges.tolist()
            columns.append(col)
        return columns

    def _export_state(self) -> dict:
        """How each column is coded and, per tree, each node's split column (-1 for a leaf), its routing table (code ->
        child, -1 for a value unseen there; all nodes' tables one after the other, ``table_len`` entries each) and the
        statistics its line follows from (``STATS``). A tree read from a file written before the lines has only
        ``positives`` and ``sum_input`` and is written back so."""
        trees = [{"feature": t.feature.tolist(), "table_len": t.table_len.tolist(), "table": t.table.tolist(),
                  **{name: getattr(t, name).tolist() for name in STATS
                     if name in ("positives", "sum_input") or np.all(np.isfinite(t.weight))}}
                 for t in self.trees_]
        return {"columns": self._column_states(), "trees": trees}

    def _import_state(self, state) -> None:
        columns = []
        for c in state.records("columns"):
            kind, name = c.text("kind"), c.text("name")
            n_codes, missing = c.integer("n_codes"), c.integer("missing_code")
            if kind == SCORE:
                code = score_code(n_codes)
                code.name = name
            elif kind == NUMERIC:
                code = ColumnCode(name, NUMERIC, n_codes, edges=c.array("edges", sorted=True), missing_code=missing)
            elif kind == CATEGORICAL:
                try:
                    cats = pd.Index(c.list("categories"), dtype=c.text("dtype"))
                except (TypeError, ValueError) as exc:
                    raise c.error(f"categories cannot be read: {exc}") from None
                code = ColumnCode(name, CATEGORICAL, n_codes, categories=cats, missing_code=missing)
            else:
                raise c.error(f"kind must be {SCORE!r}, {NUMERIC!r} or {CATEGORICAL!r}, got {kind!r}")
            columns.append(code)
        if not columns or columns[0].kind != SCORE:
            raise state.error("the first column must be the score")
        trees = []
        for t in state.records("trees"):
            feature = t.array("feature", dtype=np.int64)
            k = feature.size
            if k == 0:
                raise t.error("a tree needs at least its root node")
            table_len = t.array("table_len", dtype=np.int64, size=k)
            flat = t.array("table", dtype=np.int64, size=int(table_len.sum()))
            parent = np.repeat(np.arange(k), table_len)
            if (np.any(feature >= len(columns)) or np.any((feature < 0) != (table_len == 0))
                    or np.any((flat >= k) | ((flat >= 0) & (flat <= parent)) | (flat < -1))):
                raise t.error("the routing tables do not describe a tree (children numbered after their parent)")
            extra = [name for name in STATS if name not in ("positives", "sum_input") and name in t]
            if extra and len(extra) != len(STATS) - 2:
                raise t.error(f"a tree holds {', '.join(STATS[:1] + STATS[3:])} together or none of them "
                              "(none: a file written before the nodes' lines, whose nodes are scaled)")
            trees.append(Tree(feature=feature, table_len=table_len, table=flat,
                              positives=t.array("positives", size=k), sum_input=t.array("sum_input", size=k),
                              **{name: t.array(name, size=k) for name in extra}))
        self.columns_, self.trees_ = columns, trees
        self.loss_bin_size_ = self._loss_bin_size()

    def _checked(self, scores, features):
        """Checked scores and their code matrix, for the public methods below."""
        self._check_fitted()
        s = check_scores(scores)
        return s, self._codes(s, check_feature_rows(features, s.size))

    def apply(self, scores, features=None) -> np.ndarray:
        """Node each row ends at in each tree, shape (n, n_trees) (cf. scikit-learn's ``apply``)."""
        return self._trace(*self._checked(scores, features))[0]

    def trace(self, scores, features=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`apply` and the output after each tree at once: ``(nodes, stages)``, shapes
        (n, n_trees) and (n, n_trees + 1), column 0 of ``stages`` the scores (what
        :mod:`calibdash.explain.mbct` needs, the rows coded and routed once)."""
        return self._trace(*self._checked(scores, features))

    def staged_predict(self, scores, features=None):
        """Yield the output after each tree: after tree ``t`` it is the input of tree ``t + 1``,
        after the last one ``predict``'s (cf. scikit-learn's ``staged_predict``)."""
        stages = self._trace(*self._checked(scores, features))[1]
        for t in range(1, stages.shape[1]):
            yield stages[:, t]
