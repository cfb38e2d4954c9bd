"""MBCT: multiple boosting calibration trees (feature-aware binning)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import metrics
from ..errors import DataError, SettingsError
from ..sql import ClosedForm
from ._mbct_sql import mbct_form
from ._mbct_tree import (CATEGORICAL, NUMERIC, SCORE, ColumnCode, Tree, encode, grouped_mvce, grow_tree,
                         learn_codes, node_sums, random_views, score_code, weighted_mvce)
from .base import Calibrator, HyperParam, check_scores

__all__ = ["MBCTCalibrator", "TreeRows", "tree_rows", "growth_sample", "holdout_split", "weighted_rows",
           "feature_frame", "GLOBAL_VIEWS"]

#: Random views of the global (boosting) loss: the paper's r for evaluation.
GLOBAL_VIEWS = 100
#: Second entry of the seed of the growth sample's draw, ``default_rng([seed, SAMPLE_STREAM])``: a
#: stream of its own, apart from the holdout split's (``seed``) and the views' (``[seed, t]``).
SAMPLE_STREAM = 7_919


def feature_frame(features) -> pd.DataFrame | None:
    """``features`` as a DataFrame with a 0..n-1 index and text column names (None: no columns)."""
    if features is None:
        return None
    df = features if isinstance(features, pd.DataFrame) else pd.DataFrame(features)
    if df.shape[1] == 0:
        return None
    df = df.reset_index(drop=True)
    df.columns = [str(c) for c in df.columns]
    return df


def weighted_rows(s: np.ndarray, y: np.ndarray, features, sample_weight: np.ndarray | None):
    """The rows MBCT fits on and their weights: ``(rows, s, y, frame, w)``.

    Unit weights become ``w = None``: the unweighted path, bit for bit. Rows
    of weight 0 are absent: they are left out before anything else (feature
    coding, holdout split), and ``rows`` holds the indices of the rows kept
    (None when all are). Both :meth:`MBCTCalibrator.fit` and
    :func:`calibdash.explain.mbct.explain` call this, so they agree.
    """
    df = feature_frame(features)
    w = sample_weight
    if w is None or np.all(w == 1.0):
        return None, s, y, df, None
    if np.all(w > 0):
        return None, s, y, df, w
    rows = np.flatnonzero(w > 0)
    return rows, s[rows], y[rows], None if df is None else df.iloc[rows].reset_index(drop=True), w[rows]


def holdout_split(labels: np.ndarray, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MBCT's stratified, seeded split of row indices into (tree rows, check rows).

    A share ``holdout`` of each class (rounded), drawn with
    ``numpy.random.default_rng(seed)``, becomes the check rows, which decide
    how many trees to keep. No rows are held out (an empty check array) when
    ``holdout <= 0`` or when the split would leave fewer than two rows on a
    side or one class only among the tree rows. Both :meth:`MBCTCalibrator.fit`
    and :func:`calibdash.explain.mbct.explain` call this, so they agree.

    Returns
    -------
    fit, check : sorted int arrays of row indices
    """
    y = np.asarray(labels)
    n = y.size
    none = np.arange(n), np.empty(0, dtype=np.int64)
    if float(holdout) <= 0:
        return none
    rng = np.random.default_rng(seed)
    check = []
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        take = int(round(float(holdout) * idx.size))
        check.append(rng.permutation(idx)[:take])
    check = np.sort(np.concatenate(check))
    fit = np.setdiff1d(np.arange(n), check)
    if check.size < 2 or fit.size < 2 or np.unique(y[fit]).size < 2:
        return none
    return fit, check


def growth_sample(labels: np.ndarray, size: int, seed: int) -> np.ndarray | None:
    """The seeded, stratified sample of ``size`` rows MBCT grows its trees on (None: all rows).

    None when there are at most ``size`` rows. Otherwise each class gives
    its share of ``size`` (rounded; at least one row of each class), drawn
    without replacement by ``numpy.random.default_rng([seed, SAMPLE_STREAM])``;
    rows are drawn by count, whatever their weights (which they keep).

    Returns
    -------
    sorted int array of row indices, or None
    """
    y = np.asarray(labels)
    n = y.size
    if n <= int(size):
        return None
    rng = np.random.default_rng([int(seed), SAMPLE_STREAM])
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y != 1)
    k1 = min(max(int(round(int(size) * pos.size / n)), 1), int(size) - 1, pos.size)
    k0 = min(int(size) - k1, neg.size)
    return np.sort(np.concatenate([rng.choice(neg, k0, replace=False), rng.choice(pos, k1, replace=False)]))


@dataclass(frozen=True)
class TreeRows:
    """Which rows MBCT uses for what (sorted indices into the rows it fits on, rows of weight 0 left out).

    Attributes
    ----------
    grow : ndarray
        Rows the trees are grown on: split choice, node-local MVCE views,
        the training loss of ``history_``.
    check : ndarray
        Held-out rows whose global MVCE decides how many trees to keep
        (empty when none are held out).
    fit : ndarray
        Rows whose sums set the node scales: every row but the check rows.
        Without a growth sample these are the grow rows.
    """

    grow: np.ndarray
    check: np.ndarray
    fit: np.ndarray

    @property
    def sampled(self) -> bool:
        """Whether the trees were grown on a sample (then the scales are recomputed on the fit rows)."""
        return self.grow.size < self.fit.size

    @property
    def judge(self) -> np.ndarray:
        """Rows the boosting decision is judged on: the check rows, else the grow rows."""
        return self.check if self.check.size else self.grow

    def scale_weights(self, weights: np.ndarray | None) -> np.ndarray:
        """Weight of every row in the node sums: its weight (1 without weights), 0 on a check row."""
        out = np.ones(self.fit.size + self.check.size) if weights is None else np.array(weights, dtype=float)
        out[self.check] = 0.0
        return out


def tree_rows(labels: np.ndarray, holdout: float, seed: int, growth_rows: int) -> TreeRows:
    """MBCT's use of its rows: :func:`growth_sample`, then :func:`holdout_split` of the sample.

    With at most ``growth_rows`` rows there is no sample: the grow rows and
    the fit rows are the tree rows of :func:`holdout_split`, as they always
    were. Otherwise the sample is split into grow rows and check rows, and
    the fit rows are all rows but the check rows. Both
    :meth:`MBCTCalibrator.fit` and :func:`calibdash.explain.mbct.explain`
    call this, so they agree.
    """
    y = np.asarray(labels)
    sample = growth_sample(y, growth_rows, seed)
    if sample is None:
        fit, check = holdout_split(y, holdout, seed)
        return TreeRows(grow=fit, check=check, fit=fit)
    grow, check = holdout_split(y[sample], holdout, seed)
    outside = np.ones(y.size, dtype=bool)
    outside[sample[check]] = False
    return TreeRows(grow=sample[grow], check=sample[check], fit=np.flatnonzero(outside))


class MBCTCalibrator(Calibrator):
    """Multiple Boosting Calibration Trees (Huang et al., 2022).

    Bins are the leaves of calibration trees grown on the rows' features and
    score; inside a bin the prediction is rescaled linearly; several trees
    are boosted, each calibrating the previous trees' output.

    The method, and where the paper left a choice open
    --------------------------------------------------
    The authors published data but no code (their repositories hold the
    benchmark arrays and a README), so every choice below follows the
    paper's text; where the text is silent the choice is said.

    Features (paper Sec. 5.1 and App. A.1)
        The score is a feature of ``score_bins`` (100) equal-width bins;
        categorical columns (category, string, object or bool dtype) are used
        as they are; numeric columns are cut into ``n_quantiles`` quantile
        bins learned on the training rows. The score feature is the raw
        score in every tree (a fixed input, as the paper's feature list
        reads), while the node calibrator acts on the previous trees'
        output. A missing value seen at fit time
        is a value of its own. Integer columns are numeric: give label-encoded
        categories the ``category`` dtype.
    Node calibrator (the "linear function" of Sec. 4.3)
        ``f' = a f`` with ``a = sum(y) / sum(f)`` over the node's rows, ``f``
        the input of the tree (the raw score for the first tree). This is the
        paper's per-node scale: it sets the node's partition calibration
        error (Eq. 4) to zero, i.e. its PUD (Eq. 6) to 1, and keeps the order
        of the rows inside the node (individual calibration). ``a`` is the
        node's PUD before calibration. A score of 0 stays 0.
    Split (Eq. 12)
        A leaf is split on the feature whose multiway split, each child
        calibrated by its own scale, gives the lowest node-local MVCE (Eq. 10)
        on the node's rows. The paper splits on every value of the feature;
        here each child must hold at least ``bin_size`` rows (the bin size is
        "the least number of rows in a bin"): an ordered feature (score,
        numeric) is cut into consecutive ranges of at least ``bin_size`` rows;
        a categorical value with fewer rows joins an "other" child (or the
        smallest child when "other" would be too small). Without this, a
        value seen on one row would be calibrated to its own label.
    Stopping (Sec. 4.3)
        A node is not split at depth ``max_depth``, with fewer than
        ``2 * bin_size`` rows (no two children of ``bin_size``), when no
        feature gives two children, or when the best split's local loss is
        not below the node's own (the local loss would rise). On the
        training rows a calibrated split almost always lowers the loss a
        little, so in practice ``bin_size`` and ``max_depth`` stop growth.
    Loss (Eq. 10)
        The MVCE of :func:`calibdash.metrics.mvce` with bin size
        ``M = round(mvce_ratio * bin_size)`` (default ratio 1/2, the paper's
        choice, so that a splittable node has at least two loss bins) and
        ``views`` random views. The node-local loss is computed for all nodes of a level and all candidate
        features at once on shared views (a node's view is a random
        permutation of all rows restricted to the node's rows): the same
        definition, tested against ``metrics.mvce``. The paper evaluates with
        100 views; the default here is 20 for training speed, the candidate
        splits of a node being compared on the same views.
    Boosting (Sec. 4.3: "whether to generate a new tree according to the
    change of global loss")
        Tree ``t + 1`` is grown on the output of trees ``1..t``. To keep the
        decision from fitting noise, a stratified share ``holdout`` of the
        calibration rows (seeded by ``seed``) is kept out of the trees: tree
        ``t + 1`` is kept only if it lowers the global MVCE
        (``metrics.mvce``, 100 views, bin size as above) on those rows. The
        first tree is always kept. With ``holdout = 0`` the decision uses the
        training rows, as the paper's text reads.
    Data aggregation (App. A.2)
        Not used: MVCE's random views shuffle rows, not groups of rows, so
        merging rows with equal features would change the loss. Speed comes
        from the shared views instead.
    Sample weights (``fit(..., sample_weight=...)``; not in the paper)
        A row of weight ``v`` counts as ``v`` rows wherever rows are counted:
        numeric quantile bins hold equal shares of weight (numpy's linear
        quantile rule on the rows repeated, for integer weights); a node's
        scale is ``a = sum(w y) / sum(w f)``, so each leaf's weighted PUD is
        1 on the tree rows; ``bin_size`` (and ``2 * bin_size`` for a split)
        is a least *weight*; the MVCE's bins, split and global, hold equal
        weight ``M``: in each random view (a permutation of the rows) the
        rows lay their weights end to end and the line is cut every ``M``, a
        row across a cut putting each part in its bin
        (:func:`~calibdash.measures.mvce.grouped_mvce`; the global
        loss :func:`~calibdash.measures.mvce.weighted_mvce`, with
        ``M`` at most half the check rows' weight). The holdout split stays
        a stratified split of rows. Rows of weight 0 are left out first, and
        unit weights take the unweighted path (the same fit bit for bit).
        Exact equality with the fit on repeated rows is impossible: a view
        shuffles rows, and ``k`` copies of a row land in random places while
        a row of weight ``k`` stays in one place (and on one side of the
        holdout split). With integer weights the two fits agree closely (same
        splits where the data are clear), not exactly. Nor is MBCT invariant
        to scaling the weights: the bin sizes are weights, so weights ``c``
        act as ``bin_size / c`` (weights 2 with ``bin_size = 2 B`` grow the
        trees of unit weights with ``bin_size = B``; numeric quantile edges
        also move a little, as they would for every row repeated ``c``
        times). Score cells (rows (score, label, features) weighted by their
        counts) are integer weights whose rows are lumps: the scales are
        exact sums, but a heavy cell fills whole MVCE bins with one label, so
        below the first, clear splits the trees can differ from the row fit.
    At scale (``growth_rows``; not in the paper)
        With more than ``growth_rows`` rows (after rows of weight 0 are left
        out) the trees are grown on a seeded sample of ``growth_rows`` rows
        (:func:`growth_sample`: stratified by class, rows drawn by count,
        their weights kept). Sampled, everything that *chooses* a tree: the
        holdout split (a share ``holdout`` of the sample becomes the check
        rows), the split choice and its MVCE views (Eq. 10, 12), the least
        rows (weight) ``bin_size`` of a leaf and ``2 * bin_size`` of a split,
        the training loss of ``history_`` and the boosting decision (the
        global MVCE on the sample's check rows). Exact, on all rows: the
        feature coding (score bins, numeric quantiles, categories), and each
        node's scale ``a = sum(w y) / sum(w f)``, recomputed once the tree is
        grown from all rows but the check rows routed through it (O(N) per
        tree), ``f`` being the output of trees ``1..t-1`` on those rows: the
        PUD (Eq. 6) of every leaf is 1 on all of them, as on the tree rows of
        an unsampled fit, and the next tree is grown on the sample's rows of
        that output. A leaf holds at least ``bin_size`` sample rows, about
        ``N / growth_rows`` times as many rows in all. A row whose value did
        not occur at a node in the sample stops there and takes the node's
        scale, to whose sums it counts. With at most ``growth_rows`` rows
        nothing is sampled and the fit is the unsampled one, bit for bit.

    Unseen values at predict time (a category not seen at fit time, or not
    among a node's training rows) stop the row at that node: it takes the
    node's scale, the calibration of the parent of the children it could not
    enter. ``predict`` without features treats every feature value as unseen
    (only score splits are followed). Outputs are clipped to [0, 1] after
    each tree.

    Parameters
    ----------
    max_depth : int, default 5
    bin_size : int, default 500
        Least number of rows in a bin (leaf), the paper's N_min.
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
        Stop adding trees when the check loss stops decreasing (False: grow
        ``n_trees`` trees).
    growth_rows : int, default 200_000
        Most rows the trees are grown on: with more rows, a seeded,
        stratified sample of this many (see "At scale"; the node scales use
        all rows).
    score_bins : int, default 100
        Equal-width bins of the score as a feature.
    seed : int, default 0
        Seed of the growth sample, the holdout split and the random views.

    ``fit``'s ``sample_weight`` counts a row of weight ``v`` as ``v`` rows in
    the bins, the scales and the MVCE (see "Sample weights" above; bin sizes
    are weights, so scaling all weights by ``c`` acts as ``bin_size / c``).

    Attributes
    ----------
    columns_ : list of ColumnCode
        How the score and each feature column are coded.
    trees_ : list of Tree
        The kept trees, in boosting order: routing tables, per-node sums
        (whose ratio is the scale) and node-local losses.
    history_ : dict of str -> ndarray
        One entry per tree tried (tree 0: the raw scores): ``tree``,
        ``leaves``, ``fit_mvce`` (the rows the trees are grown on, the first
        tree's views),
        ``check_mvce`` (check rows, ``metrics.mvce`` with 100 views: the loss
        that decides) and ``kept``.
    loss_bin_size_ : int
        MVCE bin size M of the split loss.

    A calibrator read from a file (:mod:`calibdash.export`) has no
    ``history_`` and its trees' losses are NaN: the file holds what
    ``predict`` needs.

    The rows behind the trees (which were held out, each node's rows, PUD per
    bin beside histogram binning) are not kept: :mod:`calibdash.explain.mbct`
    recomputes them from the training rows.
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
                        "node scales always use all rows."),
    )

    def __init__(self, max_depth: int = 5, bin_size: int = 500, n_trees: int = 8, holdout: float = 0.2,
                 views: int = 20, mvce_ratio: float = 0.5, p: float = 1, n_quantiles: int = 10,
                 early_stopping: bool = True, growth_rows: int = 200_000, score_bins: int = 100, seed: int = 0):
        self.max_depth = max_depth
        self.bin_size = bin_size
        self.n_trees = n_trees
        self.holdout = holdout
        self.views = views
        self.mvce_ratio = mvce_ratio
        self.p = p
        self.n_quantiles = n_quantiles
        self.early_stopping = early_stopping
        self.growth_rows = growth_rows
        self.score_bins = score_bins
        self.seed = seed

    # -- checks ------------------------------------------------------------------
    def _check_params(self) -> None:
        def holds(test, value) -> bool:
            try:
                return bool(test(value))
            except (TypeError, ValueError):
                return False

        for name, low in (("max_depth", 0), ("bin_size", 1), ("n_trees", 1), ("views", 1),
                          ("n_quantiles", 2), ("score_bins", 1), ("growth_rows", 2)):
            value = getattr(self, name)
            if not holds(lambda v: int(v) == v and v >= low, value):
                raise SettingsError(f"MBCT's {name} must be an integer of at least {low}, got {value!r}.")
        if not holds(lambda v: 0.0 <= float(v) < 1.0, self.holdout):
            raise SettingsError(f"MBCT's holdout must be in [0, 1), got {self.holdout!r}.")
        if not holds(lambda v: 0.0 < float(v) <= 1.0, self.mvce_ratio):
            raise SettingsError(f"MBCT's mvce_ratio must be in (0, 1], got {self.mvce_ratio!r}.")
        if not holds(lambda v: float(v) >= 1, self.p):
            raise SettingsError(f"MBCT's p must be at least 1, got {self.p!r}.")

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

    # -- fit / predict -------------------------------------------------------------
    def _fit(self, s, y, features, w):
        self._check_params()
        _, s, y, df, w = weighted_rows(s, y, features, w)
        names = [] if df is None else list(df.columns)
        if len(set(names)) != len(names):
            raise DataError("feature columns must have distinct names.")
        score = score_code(self.score_bins)
        if "score" in names:
            score.name = "score (binned)"
        self.columns_ = [score] + [learn_codes(df[c], self.n_quantiles, w) for c in names]
        codes = self._codes(s, df)
        rows = tree_rows(y, self.holdout, self.seed, self.growth_rows)
        grow, judge = rows.grow, rows.judge
        m = self._loss_bin_size()
        w_grow, w_judge = (None, None) if w is None else (w[grow], w[judge])
        scale_w = rows.scale_weights(w) if rows.sampled else None
        grow_views = random_views(grow.size, int(self.views), [int(self.seed), 0])
        one_group = np.zeros(grow.size, np.int64)

        def check_loss(pred):          # the global loss deciding the number of trees
            return self._global_mvce(pred[judge], y[judge], w_judge, m)

        def fit_loss(pred):            # shown only: the training MVCE on the first tree's views
            resid = pred[grow] - y[grow]
            return float(grouped_mvce(resid, one_group, 1, grow_views, m, float(self.p), w_grow)[0, 0])

        f = s                          # the input of the next tree, on every row
        loss = check_loss(f)
        history = [{"tree": 0, "leaves": 1, "fit_mvce": fit_loss(f), "check_mvce": loss, "kept": True}]
        trees = []
        for t in range(int(self.n_trees)):
            views = grow_views if t == 0 else random_views(grow.size, int(self.views), [int(self.seed), t])
            tree, node = self._grow(codes, f, y, w_grow, rows, views, m)
            if scale_w is not None:
                tree = replace(tree, **self._node_scales(tree, node, f, y, scale_w))
            new = np.clip(tree.scale[node] * f, 0.0, 1.0)
            new_loss = check_loss(new)
            keep = t == 0 or not self.early_stopping or new_loss < loss
            history.append({"tree": t + 1, "leaves": tree.n_leaves, "fit_mvce": fit_loss(new),
                            "check_mvce": new_loss, "kept": keep})
            if not keep:
                break
            trees.append(tree)
            f, loss = new, new_loss
        self.trees_ = trees
        self.loss_bin_size_ = m
        self.history_ = {
            "tree": np.array([h["tree"] for h in history], dtype=np.int64),
            "leaves": np.array([h["leaves"] for h in history], dtype=np.int64),
            "fit_mvce": np.array([h["fit_mvce"] for h in history], dtype=float),
            "check_mvce": np.array([h["check_mvce"] for h in history], dtype=float),
            "kept": np.array([h["kept"] for h in history], dtype=bool),
        }

    def _grow(self, codes, f, y, w_grow, rows: TreeRows, views, m: int):
        """Grow one tree on the grow rows' input ``f[rows.grow]`` (weights ``w_grow``) and return it with
        the node of every row: the grow rows' leaves from the growth, the other rows routed."""
        grow = rows.grow
        tree, leaf = grow_tree(codes[grow], self.columns_, f[grow], y[grow],
                               max_depth=int(self.max_depth), min_rows=int(self.bin_size), loss_bin_size=m,
                               views=views, p=float(self.p), weights=w_grow)
        if rows.sampled:
            return tree, tree.route(codes, self._top_codes())
        node = np.empty(y.size, dtype=np.int64)
        node[grow] = leaf
        node[rows.check] = tree.route(codes[rows.check], self._top_codes())
        return tree, node

    @staticmethod
    def _node_scales(tree: Tree, node: np.ndarray, f: np.ndarray, y: np.ndarray, scale_w: np.ndarray) -> dict:
        """The node sums of a tree grown on a sample, recomputed on all the rows (``scale_w``: each
        row's weight in them, 0 for a check row): ``positives = sum(w y)`` and ``sum_input = sum(w f)``
        over the rows through each node, whose ratio is the node's scale (Eq. 6)."""
        positives, sum_input = node_sums(tree, node, scale_w * y, scale_w * f)
        return {"positives": positives, "sum_input": sum_input}

    def _global_mvce(self, pred, labels, weights, m: int) -> float:
        """The global loss that decides how many trees to keep: MVCE with 100 views and bin size
        ``min(M, half the rows)`` (half the weight with ``weights``; then :func:`weighted_mvce`)."""
        if weights is None:
            return metrics.mvce(pred, labels, bin_size=max(1, min(m, labels.size // 2)), n_views=GLOBAL_VIEWS,
                                p=float(self.p), seed=self.seed)
        return weighted_mvce(pred, labels, weights, min(m, float(weights.sum()) / 2), n_views=GLOBAL_VIEWS,
                             p=float(self.p), seed=self.seed)

    def _top_codes(self) -> np.ndarray:
        """The largest code of each coded column (for :meth:`Tree.route`)."""
        return np.array([c.n_codes - 1 for c in self.columns_])

    def _stages(self, s: np.ndarray, codes: np.ndarray):
        """Yield, tree by tree, the node each row ends at and the output after the tree."""
        f, top = s, self._top_codes()
        for tree in self.trees_:
            node = tree.route(codes, top)
            f = np.clip(tree.scale[node] * f, 0.0, 1.0)
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
        """What ``predict`` needs (for :mod:`calibdash.export`): how each column is coded and,
        per tree, each node's split column (-1 for a leaf), its routing table (code -> child,
        -1 for a value unseen there; the tables of all nodes one after the other, ``table_len``
        entries each) and the sums whose ratio is its scale; not the losses of the growth."""
        trees = [{"feature": t.feature.tolist(), "table_len": t.table_len.tolist(), "table": t.table.tolist(),
                  "positives": t.positives.tolist(), "sum_input": t.sum_input.tolist()} for t in self.trees_]
        return {"columns": self._column_states(), "trees": trees}

    def _import_state(self, state) -> None:
        """Restore the state of :meth:`_export_state` (``state``: a :class:`calibdash.export.State`)."""
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
            trees.append(Tree(feature=feature, table_len=table_len, table=flat,
                              positives=t.array("positives", size=k), sum_input=t.array("sum_input", size=k)))
        self.columns_, self.trees_ = columns, trees
        self.loss_bin_size_ = self._loss_bin_size()

    def _checked(self, scores, features):
        """Checked scores and their code matrix, for the public methods below."""
        self._check_fitted()
        s = check_scores(scores)
        if features is not None and len(features) != s.size:
            raise DataError(f"features has {len(features)} rows but scores has {s.size}.")
        return s, self._codes(s, features)

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
