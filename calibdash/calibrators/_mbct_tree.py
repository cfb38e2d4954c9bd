"""Private machinery of the MBCT calibrator (``calibdash.calibrators.mbct``).

Three pieces, each usable and testable on its own:

* feature coding (:class:`ColumnCode`, :func:`learn_codes`, :func:`encode`):
  every input column becomes small integer codes: the score in equal-width
  bins, numeric columns in quantile bins, categorical columns as they are;
* the node-local loss (:func:`calibdash.measures.mvce.grouped_mvce`, kept
  in MVCE's one home and imported here): the multi-view calibration error
  for many groups of rows and many candidate predictions at once, on shared
  random views, with or without sample weights (``weighted_mvce``: the
  global loss with weights);
* the calibration tree (:func:`grow_tree`, :class:`Tree`): level-wise growth
  with multiway splits and one scale factor per node, and routing of new rows.

A fitted :class:`Tree` holds what routing and scaling need plus the
node-local losses of its growth; what can be recomputed from it (parents,
depths, the conditions of :func:`node_conditions`) or from the training rows
(rows per node) is not kept.

Sample weights: a row of weight ``v`` counts as ``v`` rows wherever rows
are counted or summed: numeric quantile bins (:func:`weighted_quantiles`),
the least number of rows in a child (its weight), a node's sums and scale,
and the MVCE, whose bins hold equal shares of weight (:func:`grouped_mvce`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import metrics
from ..errors import DataError
from ..measures.mvce import grouped_mvce, iter_views, random_views, weighted_mvce  # noqa: F401  (the tree's loss)

#: Kinds of coded column. "score" and "numeric" codes are ordered (a split
#: cuts them into ranges); "categorical" codes are not (a split groups values).
SCORE, NUMERIC, CATEGORICAL = "score", "numeric", "categorical"


# ----------------------------------------------------------------------------
# Feature coding
# ----------------------------------------------------------------------------
@dataclass
class ColumnCode:
    """How one input column is turned into integer codes ``0 .. n_codes - 1``.

    Attributes
    ----------
    name : str
        Display name (the DataFrame column, or ``"score"``).
    kind : {"score", "numeric", "categorical"}
    n_codes : int
        Number of codes learned at fit time.
    edges : ndarray, optional
        Inner bin edges of a numeric column; a value equal to an edge goes to
        the upper bin. The score's equal-width edges follow from ``n_codes``
        (:attr:`cuts`).
    categories : pandas.Index, optional
        The values seen at fit time, in code order (categorical columns).
    missing_code : int
        Code of a missing value (NaN), or -1 when none was seen at fit time:
        a missing value is then *unseen*.
    """

    name: str
    kind: str
    n_codes: int
    edges: np.ndarray | None = None
    categories: pd.Index | None = None
    missing_code: int = -1

    @property
    def cuts(self) -> np.ndarray:
        """Inner bin edges of an ordered column (the score's: ``k / n_codes``)."""
        if self.kind == SCORE:
            return np.arange(1, self.n_codes) / self.n_codes
        return self.edges

    @property
    def ordered(self) -> bool:
        """Whether codes are ordered (split into ranges rather than groups)."""
        return self.kind != CATEGORICAL

    def encode(self, values) -> np.ndarray:
        """Codes of ``values`` (an array or a Series; int32); -1 marks a value unseen at fit time.

        A categorical column is factorized first (a ``category`` column
        already is: its codes are used as they are), so that only its
        distinct values are looked up among :attr:`categories`: integer
        work per row, no Python object per row.
        """
        if self.kind == SCORE:
            return metrics.bin_assignments(values, self.n_codes, "uniform").astype(np.int32)
        if self.kind == NUMERIC:
            x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
            code = np.searchsorted(self.edges, x, side="right").astype(np.int32)
            code[np.isnan(x)] = self.missing_code
            return code
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            col = pd.Series(values)
            local, distinct = col.cat.codes.to_numpy(), col.cat.categories
        else:
            local, distinct = pd.factorize(pd.Series(values, dtype=getattr(values, "dtype", object)))
        # code of each distinct value, then the code of a missing value (local code -1)
        lookup = np.append(self.categories.get_indexer(distinct), self.missing_code).astype(np.int32)
        return lookup[local]

    def describe(self, codes: np.ndarray) -> str:
        """Plain text for a set of codes: ``"x ∈ [0.2, 0.5)"``, ``"site = 3"``."""
        codes = np.sort(np.asarray(codes, dtype=int))
        missing = self.missing_code >= 0 and codes.size and codes[-1] == self.missing_code
        if missing:
            codes = codes[:-1]
        parts = []
        if codes.size and self.ordered:
            edges = self.cuts
            lo = -np.inf if codes[0] == 0 else edges[codes[0] - 1]
            hi = np.inf if codes[-1] >= edges.size else edges[codes[-1]]
            if self.kind == SCORE:
                lo, hi = max(lo, 0.0), min(hi, 1.0)
            parts.append(f"{self.name} ∈ [{lo:.4g}, {hi:.4g}{']' if hi == 1.0 and self.kind == SCORE else ')'}")
        elif codes.size:
            vals = [str(self.categories[c]) for c in codes]
            if len(vals) == 1:
                parts.append(f"{self.name} = {vals[0]}")
            else:
                shown = ", ".join(vals[:4]) + (f", … (+{len(vals) - 4})" if len(vals) > 4 else "")
                parts.append(f"{self.name} ∈ {{{shown}}}")
        if missing:
            parts.append(f"{self.name} missing")
        return " or ".join(parts)


def column_kind(col: pd.Series) -> str:
    """``"categorical"`` for category, string, object and bool columns; ``"numeric"`` for numbers."""
    dt = col.dtype
    if (isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt)
            or pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt)):
        return CATEGORICAL
    if pd.api.types.is_numeric_dtype(dt):
        return NUMERIC
    raise DataError(f"feature column {col.name!r} has type {dt}, which MBCT cannot use; "
                    "pass numbers, strings or a category column.")


def weighted_quantiles(x: np.ndarray, weights: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Quantiles ``qs`` of ``x`` whose values count ``weights`` times each.

    ``numpy.quantile``'s default (linear) rule on the values repeated by
    their weights: with ``N = sum(weights)`` and ``h = q (N - 1)``, the value
    at position ``floor(h)`` of the sorted repeated values plus the fraction
    ``h - floor(h)`` of the step to the next one; the value at position
    ``j`` is the first whose cumulative weight exceeds ``j``. Integer weights
    give the quantiles of the repeated values (up to numpy's rounding of
    ``h``); other weights use the same cumulative-weight positions.
    """
    order = np.argsort(x, kind="stable")
    xs = np.asarray(x, dtype=float)[order]
    cum = np.cumsum(np.asarray(weights, dtype=float)[order])
    h = np.asarray(qs, dtype=float) * max(cum[-1] - 1.0, 0.0)
    j = np.floor(h)
    lo = xs[np.minimum(np.searchsorted(cum, j, side="right"), xs.size - 1)]
    hi = xs[np.minimum(np.searchsorted(cum, j + 1.0, side="right"), xs.size - 1)]
    return lo + (h - j) * (hi - lo)


def learn_codes(col: pd.Series, n_quantiles: int, weights: np.ndarray | None = None) -> ColumnCode:
    """Learn the coding of one feature column from its training values.

    Numeric columns are cut at their ``n_quantiles``-quantiles (repeated
    quantiles merge, so a column with few distinct values gets fewer bins;
    with ``weights``, the :func:`weighted_quantiles`, so that each bin holds
    an equal share of the weight); categorical columns keep each value seen.
    A missing value seen at fit time gets a code of its own (the last one).
    """
    name = str(col.name)
    has_nan = bool(col.isna().any())
    if column_kind(col) == NUMERIC:
        x = col.to_numpy(dtype=float, na_value=np.nan)
        seen = ~np.isnan(x)
        finite = x[seen]
        qs = np.linspace(0.0, 1.0, int(n_quantiles) + 1)[1:-1]
        if not finite.size:
            edges = np.empty(0)
        elif weights is None:
            edges = np.unique(np.quantile(finite, qs))
        else:
            edges = np.unique(weighted_quantiles(finite, np.asarray(weights)[seen], qs))
        n = edges.size + 1
        return ColumnCode(name, NUMERIC, n + has_nan, edges=edges, missing_code=n if has_nan else -1)
    if isinstance(col.dtype, pd.CategoricalDtype):
        local = col.cat.codes.to_numpy()
        used = np.bincount(local[local >= 0] if has_nan else local, minlength=len(col.cat.categories)) > 0
        cats = pd.Index(col.cat.categories[used])
    else:
        cats = pd.Index(np.asarray(col.dropna().unique(), dtype=object))
        try:
            cats = cats.sort_values()
        except TypeError:
            pass
    n = len(cats)
    return ColumnCode(name, CATEGORICAL, n + has_nan, categories=cats, missing_code=n if has_nan else -1)


def score_code(n_bins: int) -> ColumnCode:
    """The score as a feature: ``n_bins`` equal-width bins on [0, 1] (the paper's 100)."""
    return ColumnCode("score", SCORE, int(n_bins))


def encode(codes: list[ColumnCode], s: np.ndarray, features: pd.DataFrame | None) -> np.ndarray:
    """Code matrix (n, len(codes)), int32: column 0 the score, then the features.

    A feature column absent from ``features`` (or ``features=None``) is coded
    -1 (unseen) on every row.
    """
    out = np.empty((s.size, len(codes)), dtype=np.int32)
    out[:, 0] = codes[0].encode(s)
    for j, c in enumerate(codes[1:], start=1):
        out[:, j] = -1 if features is None else c.encode(features[c.name])
    return out


# ----------------------------------------------------------------------------
# Multiway split of one node on one feature
# ----------------------------------------------------------------------------
def ordered_slots(counts: np.ndarray, min_rows: int, tail_code: int = -1) -> np.ndarray:
    """Child slot of each code of an ordered feature: consecutive ranges of >= ``min_rows`` rows.

    Codes are taken in order and a range is closed as soon as it holds
    ``min_rows`` rows and the codes left hold ``min_rows`` more, so every
    range holds at least ``min_rows`` rows (the last one takes the rest).
    ``counts`` may be weights (a weighted fit): rows are then counted by
    weight.
    Codes without rows in the node join the range around them, so a
    value of the feature's range never falls through. ``tail_code`` (the
    missing-value code) is placed last, and is -1 (unseen) when absent.
    """
    k = counts.size
    order = np.arange(k)
    if tail_code >= 0:
        order = np.concatenate([order[order != tail_code], [tail_code]])
    slots = np.empty(k, dtype=np.int32)
    remaining = counts.sum()
    child, acc = 0, 0
    for code in order:
        c = counts[code]
        slots[code] = child
        acc += c
        remaining -= c
        if acc >= min_rows and remaining >= min_rows:
            child, acc = child + 1, 0
    if tail_code >= 0 and counts[tail_code] == 0:
        slots[tail_code] = -1
    return slots


def categorical_slots(counts: np.ndarray, min_rows: int) -> np.ndarray:
    """Child slot of each code of a categorical feature.

    Each value with at least ``min_rows`` rows in the node is a child; the
    smaller values are pooled into one "other" child, or, when the pool holds
    fewer than ``min_rows`` rows, join the smallest large child. Values
    without rows in the node get -1 (unseen here). ``counts`` may be
    weights, as in :func:`ordered_slots`.
    """
    slots = np.full(counts.size, -1, dtype=np.int32)
    big = np.flatnonzero(counts >= min_rows)
    slots[big] = np.arange(big.size)
    small = (counts > 0) & (counts < min_rows)
    if small.any():
        if counts[small].sum() >= min_rows or big.size == 0:
            slots[small] = big.size
        else:
            slots[small] = slots[big[np.argmin(counts[big])]]
    return slots


# ----------------------------------------------------------------------------
# The tree
# ----------------------------------------------------------------------------
def _floats(values, k: int) -> np.ndarray:
    return np.full(k, np.nan) if values is None else np.asarray(values, dtype=float)


@dataclass(eq=False)
class Tree:
    """One calibration tree: a bin per node, a scale factor per node.

    Nodes are numbered breadth first (the root is 0, a child's number is
    larger than its parent's). A row's output is ``scale[node] * f`` for the
    node it ends at (:meth:`route`).

    Attributes
    ----------
    feature : ndarray of int32, shape (k,)
        Code column node ``k`` splits on, -1 for a leaf.
    table_len : ndarray of int32, shape (k,)
        Length of node ``k``'s routing table (the number of codes of its
        column; 0 for a leaf).
    table : ndarray of int32
        The routing tables of all nodes one after the other: code -> child
        node, -1 for a value not seen in the node (the row stays at the node
        and takes its scale).
    positives, sum_input : ndarray of float, shape (k,)
        Sums over the node's training rows of the label and of the tree's
        input ``f`` (weighted by the rows' weights in a weighted fit); their
        ratio is the node's scale.
    loss_node, loss_split : ndarray of float, shape (k,)
        Node-local MVCE of the node's own calibration / of its chosen split
        (NaN where no split was tried / none was made; NaN everywhere for a
        tree read from a file).
    """

    feature: np.ndarray
    table_len: np.ndarray
    table: np.ndarray
    positives: np.ndarray
    sum_input: np.ndarray
    loss_node: np.ndarray | None = None
    loss_split: np.ndarray | None = None

    def __post_init__(self):
        self.feature = np.asarray(self.feature, dtype=np.int32)
        self.table_len = np.asarray(self.table_len, dtype=np.int32)
        self.table = np.asarray(self.table, dtype=np.int32)
        k = self.feature.size
        self.positives = np.asarray(self.positives, dtype=float)
        self.sum_input = np.asarray(self.sum_input, dtype=float)
        self.loss_node = _floats(self.loss_node, k)
        self.loss_split = _floats(self.loss_split, k)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.size)

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.feature < 0))

    @property
    def scale(self) -> np.ndarray:
        """Scale factor of each node: ``sum(y) / sum(f)`` (1 where ``sum(f) = 0``)."""
        return _ratio(self.positives, self.sum_input)

    @property
    def table_start(self) -> np.ndarray:
        """Where each node's routing table starts in :attr:`table`."""
        return np.concatenate([[0], np.cumsum(self.table_len, dtype=np.int64)[:-1]])

    @property
    def parent(self) -> np.ndarray:
        """Parent of each node (-1 for the root), read off the routing tables."""
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        owner = np.repeat(np.arange(self.n_nodes), self.table_len)
        seen = self.table >= 0
        parent[self.table[seen]] = owner[seen]
        return parent

    @property
    def depth(self) -> np.ndarray:
        """Depth of each node (the root is 0)."""
        parent = self.parent
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in range(1, self.n_nodes):          # parents come first
            depth[node] = depth[parent[node]] + 1
        return depth

    def route(self, codes: np.ndarray, top_code=None) -> np.ndarray:
        """Node each row ends at (a leaf, or the node where its value was unseen).

        Level by level, every row takes one step at once: ``node`` becomes
        the entry of its step table (:meth:`step_tables`) for the row's code
        in the node's column. Integer gathers only, a few passes over the
        rows per level, whatever the number of nodes.

        ``top_code`` (the largest code of each column, e.g. ``n_codes - 1``
        of its :class:`ColumnCode`) saves a pass over ``codes`` to find it.
        """
        n, n_cols = codes.shape
        node = np.zeros(n, dtype=np.int32)
        levels = int(self.depth.max())
        if levels == 0 or n == 0:
            return node.astype(np.int64)
        index = np.int32 if codes.size < 2 ** 31 else np.int64
        column, start, table = self.step_tables(np.asarray(codes.max(axis=0) if top_code is None else top_code))
        flat = np.ascontiguousarray(codes).ravel()    # row i, column j at i * n_cols + j
        row_at = np.arange(0, n * n_cols, n_cols, dtype=index)
        column, start = column.astype(index), start.astype(index)
        for _ in range(levels):
            code = flat[row_at + column[node]]
            code += 1                                  # unseen (-1) -> entry 0: stay
            node = table[start[node] + code]
        return node.astype(np.int64)

    def step_tables(self, top_code: np.ndarray):
        """Routing tables that every code can index: ``(column, start, table)``.

        Node ``k`` reads column ``column[k]`` (a leaf reads column 0); entry
        ``c + 1`` of its table ``table[start[k]:]`` is the node a row with
        code ``c`` goes to, entry 0 (code -1, unseen) is ``k`` itself. A
        leaf's entries are all ``k``, as are the entries of a value unseen
        in the node and of codes beyond its routing table, up to the largest
        code of the column, ``top_code[column]``.
        """
        column = np.maximum(self.feature, 0)
        own = self.table_len.astype(np.int64)
        length = np.maximum(own, top_code[column] + 1) + 1
        start = np.concatenate([[0], np.cumsum(length)[:-1]])
        table = np.repeat(np.arange(self.n_nodes, dtype=np.int32), length)
        routed = np.repeat(start + 1, own) + (np.arange(own.sum()) - np.repeat(np.cumsum(own) - own, own))
        table[routed] = np.where(self.table >= 0, self.table, table[routed])
        return column, start, table


def node_sums(tree: Tree, end: np.ndarray, *values: np.ndarray) -> np.ndarray:
    """Per node, the sum of each of ``values`` over the rows that end at it or below.

    ``end`` is the node each row ends at (:meth:`Tree.route`). Rows that
    stopped at a node (a value unseen there) count at that node and above,
    like the rows below it. Returns an array of shape (len(values), n_nodes).
    """
    k = tree.n_nodes
    sums = np.stack([np.bincount(end, weights=v, minlength=k) for v in values])
    parent = tree.parent
    for node in range(k - 1, 0, -1):              # children are numbered after their parents
        sums[:, parent[node]] += sums[:, node]
    return sums


def node_conditions(tree: Tree, column_codes: list[ColumnCode]) -> list[str]:
    """How rows reach each node of ``tree``: ``"all rows"`` for the root, else the codes of the
    parent's column that lead to it, described by :meth:`ColumnCode.describe`."""
    out = ["all rows"] + [""] * (tree.n_nodes - 1)
    start = tree.table_start
    for node in np.flatnonzero(tree.feature >= 0):
        table = tree.table[start[node]:start[node] + tree.table_len[node]]
        column = column_codes[tree.feature[node]]
        for child in np.unique(table[table >= 0]):
            out[child] = column.describe(np.flatnonzero(table == child))
    return out


def _sums(keys: np.ndarray, size: int, f: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
    """Rows, positives and sum of f per key (with ``w``: weight, sum of w y, sum of w f)."""
    if w is None:
        return (np.bincount(keys, minlength=size), np.bincount(keys, weights=y, minlength=size),
                np.bincount(keys, weights=f, minlength=size))
    return (np.bincount(keys, weights=w, minlength=size), np.bincount(keys, weights=w * y, minlength=size),
            np.bincount(keys, weights=w * f, minlength=size))


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 1.0)


class _Growth:
    """A tree being grown: nodes appended as lists, frozen into a :class:`Tree`."""

    def __init__(self, rows: float, positives: float, sum_input: float):
        self.feature, self.rows, self.positives, self.sum_input = [-1], [rows], [positives], [sum_input]
        self.loss_node, self.loss_split, self.tables = [np.nan], [np.nan], [None]

    def add_node(self, rows: float, positives: float, sum_input: float) -> int:
        for name, value in (("feature", -1), ("rows", rows), ("positives", positives),
                            ("sum_input", sum_input), ("loss_node", np.nan), ("loss_split", np.nan),
                            ("tables", None)):
            getattr(self, name).append(value)
        return len(self.rows) - 1

    def freeze(self) -> Tree:
        tables = [t for t in self.tables if t is not None]
        return Tree(feature=self.feature, table_len=[0 if t is None else t.size for t in self.tables],
                    table=np.concatenate(tables) if tables else np.empty(0, dtype=np.int32),
                    positives=self.positives, sum_input=self.sum_input,
                    loss_node=self.loss_node, loss_split=self.loss_split)


def grow_tree(codes: np.ndarray, column_codes: list[ColumnCode], f: np.ndarray, y: np.ndarray,
              *, max_depth: int, min_rows: int, loss_bin_size: int,
              views: np.ndarray, p: float = 1.0, weights: np.ndarray | None = None) -> tuple[Tree, np.ndarray]:
    """Grow one calibration tree on the rows' current predictions ``f``.

    Level by level, every open node (depth < ``max_depth`` and at least
    ``2 * min_rows`` rows) tries a multiway split on every code column
    (:func:`ordered_slots` / :func:`categorical_slots`: each child holds at
    least ``min_rows`` rows), calibrates each child by its scale
    ``sum(y) / sum(f)`` and scores the node's rows by :func:`grouped_mvce`
    (MBCT Eq. 12). The column with the lowest node-local loss is used if that
    loss is below the loss of the node's own calibration (stopping rule 3);
    a column giving fewer than two children is not a candidate.

    With ``weights`` (positive) a row counts as its weight everywhere: in
    ``min_rows``, in the scales ``sum(w y) / sum(w f)`` and in the MVCE's
    bins of equal weight. Unit weights give the unweighted tree bit for bit.

    Returns
    -------
    tree : Tree
    node_of_row : ndarray, the leaf each training row ends at
    """
    n, n_cols = codes.shape
    w = weights
    if w is None:
        tree = _Growth(n, float(y.sum()), float(f.sum()))
    else:
        tree = _Growth(float(w.sum()), float(np.sum(w * y)), float(np.sum(w * f)))
    node_of_row = np.zeros(n, dtype=np.int64)
    frontier = [0]
    yf = y.astype(float)
    for depth in range(int(max_depth)):
        open_nodes = [k for k in frontier if tree.rows[k] >= 2 * min_rows]
        if not open_nodes:
            break
        n_open = len(open_nodes)
        local = np.full(len(tree.rows), -1, dtype=np.int64)
        local[open_nodes] = np.arange(n_open)
        grp = local[node_of_row]
        act = grp >= 0
        ga = grp[act]
        fa, ya = f[act], yf[act]
        wa = None if w is None else w[act]
        node_scale = _ratio(np.array([tree.positives[k] for k in open_nodes]),
                            np.array([tree.sum_input[k] for k in open_nodes]))
        resid = np.zeros((n_cols + 1, n))
        resid[0, act] = node_scale[ga] * fa - ya
        plans = []                                   # per column: (slots per node, stats per (node, code))
        valid = np.zeros((n_open, n_cols), dtype=bool)
        for j, cc in enumerate(column_codes):
            k = cc.n_codes
            keys = ga * k + codes[act, j]
            stats = _sums(keys, n_open * k, fa, ya, wa)
            cnt = stats[0].reshape(n_open, k)
            slots = np.empty((n_open, k), dtype=np.int32)
            for i in range(n_open):
                slots[i] = (ordered_slots(cnt[i], min_rows, cc.missing_code) if cc.ordered
                            else categorical_slots(cnt[i], min_rows))
            n_child = slots.max(axis=1) + 1
            valid[:, j] = n_child >= 2
            # scale of each (node, slot); invalid nodes keep their own scale
            offset = np.concatenate([[0], np.cumsum(n_child)[:-1]])
            gslot = np.where(slots >= 0, slots + offset[:, None], -1).ravel()
            used = gslot >= 0
            cy = np.bincount(gslot[used], weights=stats[1][used], minlength=n_child.sum())
            cf = np.bincount(gslot[used], weights=stats[2][used], minlength=n_child.sum())
            child_scale = _ratio(cy, cf)
            row_scale = child_scale[gslot[keys]]
            row_scale = np.where(valid[ga, j], row_scale, node_scale[ga])
            resid[j + 1, act] = row_scale * fa - ya
            plans.append((slots, stats))
        loss = grouped_mvce(resid, grp, n_open, views, loss_bin_size, p, w)
        next_frontier = []
        for i, node in enumerate(open_nodes):
            tree.loss_node[node] = loss[i, 0]
            cand = np.where(valid[i], loss[i, 1:], np.inf)
            j = int(np.argmin(cand))
            if not np.isfinite(cand[j]) or not cand[j] < loss[i, 0] * (1 - 1e-12):
                continue
            tree.loss_split[node] = cand[j]
            slots, stats = plans[j]
            k = column_codes[j].n_codes
            sl = slots[i]
            n_child = int(sl.max()) + 1
            child_ids = np.empty(n_child, dtype=np.int64)
            for c in range(n_child):
                sel = i * k + np.flatnonzero(sl == c)
                child_ids[c] = tree.add_node(stats[0][sel].sum(), float(stats[1][sel].sum()),
                                             float(stats[2][sel].sum()))
            tree.feature[node] = j
            tree.tables[node] = np.where(sl >= 0, child_ids[np.maximum(sl, 0)], -1)
            rows = np.flatnonzero(node_of_row == node)
            node_of_row[rows] = tree.tables[node][codes[rows, j]]
            next_frontier.extend(child_ids.tolist())
        frontier = next_frontier
    return tree.freeze(), node_of_row
