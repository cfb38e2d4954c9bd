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
  with multiway splits and one line per node (:func:`node_line`, from the
  node statistics :data:`STATS`), and routing of new rows.

A fitted :class:`Tree` holds what routing and its lines need plus the
node-local losses of its growth; what can be recomputed from it (parents,
depths, the conditions of :func:`node_conditions`) or from the training rows
(rows per node) is not kept.

Sample weights: a row of weight ``v`` counts as ``v`` rows wherever rows
are counted or summed: numeric quantile bins (:func:`weighted_quantiles`),
the least number of rows in a child (its weight), a node's statistics and
line, and the MVCE, whose bins hold equal shares of weight
(:func:`grouped_mvce`). The calibrator gives whole weights to these
functions as rows repeated (units), so only fractional weights reach the
weighted MVCE.
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
    their weights, computed as numpy computes it: with ``N = sum(weights)``
    and ``h = (N - 1) q``, the values at positions ``floor(h)`` and
    ``floor(h) + 1`` of the sorted repeated values (the last one when
    ``h >= N - 1``) mixed by ``numpy.lib``'s ``_lerp`` with ``t = h - floor(h)``
    (``a + (b - a) t``, or ``b - (b - a)(1 - t)`` when ``t >= 1/2``); the
    value at position ``j`` is the first whose cumulative weight exceeds
    ``j``. Integer weights thus give ``np.quantile(np.repeat(x, weights))``
    bit for bit; other weights use the same cumulative-weight positions.
    Values are sorted by value, then weight, so the result does not depend
    on the order of the rows.
    """
    x = np.asarray(x, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = np.lexsort((w, x))
    xs = x[order]
    cum = np.cumsum(w[order])
    q = np.asarray(qs, dtype=float)
    h = (cum[-1] - 1.0) * q
    j = np.floor(h)
    last = h >= cum[-1] - 1.0
    lo = xs[np.where(last, xs.size - 1, np.minimum(np.searchsorted(cum, j, side="right"), xs.size - 1))]
    hi = xs[np.where(last, xs.size - 1, np.minimum(np.searchsorted(cum, j + 1.0, side="right"), xs.size - 1))]
    t = h - j
    diff = hi - lo
    return np.where(t >= 0.5, hi - diff * (1 - t), lo + diff * t)


def _value_order(values: pd.Index) -> pd.Index:
    """``values`` sorted: by value, else (mixed types that do not compare) by type name, then text."""
    try:
        return values.sort_values()
    except TypeError:
        keys = [(type(v).__name__, str(v)) for v in values]
        return values[sorted(range(len(values)), key=keys.__getitem__)]


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
        cats = _value_order(pd.Index(np.asarray(col.dropna().unique(), dtype=object)))
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


#: Statistics kept per node, in this order: weight (rows), positives ``sum(w y)``, ``sum(w f)``,
#: ``sum(w f^2)``, ``sum(w f y)`` and the least and largest input ``f`` (the tree's input) of its rows;
#: the node's line follows from them (:func:`node_line`). The first five add up over rows, the last two
#: are a minimum and a maximum.
STATS = ("weight", "positives", "sum_input", "sum_input_sq", "sum_input_pos", "input_min", "input_max")
#: A node whose inputs' variance is below this share of their mean square has one input value
#: (up to rounding): no slope can be fitted and the node is scaled (see :func:`node_line`).
FLAT = 1e-12


def node_line(weight, positives, sum_input, sum_input_sq, sum_input_pos, input_min,
              input_max) -> tuple[np.ndarray, np.ndarray]:
    """Slope ``a`` and intercept ``b`` of each node's linear calibrator ``f' = a f + b`` (:data:`STATS`).

    Every node's line passes through its mean point ``(mean f, mean y)``
    (weighted), so its residuals sum to zero and its PUD (MBCT Eq. 6) after
    calibration is 1. Its slope is chosen in three steps:

    1. The scale: the paper's per-node calibration ``a = sum(w y) / sum(w f)``
       (the line through the origin, ``b = 0``).
    2. The least-squares slope ``cov(f, y) / var(f)``, kept non-negative (a
       leaf does not reverse the order of its rows), replaces the scale
       only if the rows reject the scale: when the least-squares line
       lowers the residual sum of squares by more than ``ln(W)`` times its
       residual variance, ``(RSS_scale - RSS_line) (W - 2) / RSS_line >
       ln W`` (``W`` the node's weight: an F test at the BIC's price of one
       parameter). So a node of few positives, or of a straight-through-0
       miscalibration, keeps the scale; a node of two distinct inputs whose
       rates rise, with enough rows, gets the line through both rates.
    3. Either slope is lowered, if need be, so that the line stays in
       [0, 1] on the node's own inputs ``[input_min, input_max]``
       (``a <= mean(y) / (mean f - input_min)`` and ``a <= (1 - mean(y)) /
       (input_max - mean f)``): no training row is clipped, and the PUD is
       1 exactly. A row outside that range (at predict time) can leave
       [0, 1] and is clipped.

    Where the inputs do not vary (variance below ``FLAT`` times their mean
    square) the node is scaled (``a = 1`` where ``sum(w f) = 0``; ``a = 0,
    b = mean(y)`` if the node has weight and its inputs are all 0, or so
    small, subnormal, that the scale overflows). Without
    the other statistics (a tree from a file written before the line:
    ``weight`` NaN) every node is scaled, as those files were. Labels are 0
    or 1, so ``sum(w y^2) = sum(w y)``.
    """
    W, Y, F, FF, FY, lo, hi = (np.asarray(v, dtype=float) for v in (
        weight, positives, sum_input, sum_input_sq, sum_input_pos, input_min, input_max))
    scale = _ratio(Y, F)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mf, my, mff = F / W, Y / W, FF / W
        var = mff - mf * mf
        cov = FY / W - mf * my
        var_y = my - my * my
        spread = var > FLAT * mff                     # False where W is NaN or 0
        top = np.minimum(np.where(mf > lo, my / (mf - lo), np.inf), np.where(hi > mf, (1 - my) / (hi - mf), np.inf))
        top = np.maximum(top, 0.0)
        fitted = np.minimum(np.maximum(cov / var, 0.0), top)
        scaled = np.minimum(scale, top)

        def rss(a):                                   # of the line of slope a through the mean point
            return W * np.maximum(a * a * var - 2 * a * cov + var_y, 0.0)

        gain = (rss(scaled) - rss(fitted)) * (W - 2) / rss(fitted)
        line = spread & (W > 2) & (gain > np.log(np.maximum(W, 1.0)))
        bounded = spread & ~line & (scaled < scale)
        # all inputs 0, or one input so small (subnormal) that the scale sum(w y) / sum(w f) overflows: the
        # node's mean, which is what the scale gives that input when it does not overflow
        zero = ~spread & (W > 0) & ((F == 0) | ~np.isfinite(scale))
        slope = np.where(line, fitted, np.where(bounded, scaled, scale))
        slope = np.where(zero, 0.0, slope)
        intercept = np.where(line | bounded | zero, my - slope * mf, 0.0)
    return slope, intercept


@dataclass(eq=False)
class Tree:
    """One calibration tree: a bin per node, a linear calibrator per node.

    Nodes are numbered breadth first (the root is 0, a child's number is
    larger than its parent's). A row's output is ``slope[node] * f +
    intercept[node]`` for the node it ends at (:meth:`route`), the line of
    :func:`node_line` fitted on the node's sums.

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
        and takes its line).
    positives, sum_input : ndarray of float, shape (k,)
        Sums over the node's training rows of the label and of the tree's
        input ``f`` (weighted by the rows' weights in a weighted fit); their
        ratio is the node's PUD before the tree (:attr:`scale`).
    weight, sum_input_sq, sum_input_pos, input_min, input_max : ndarray of float, shape (k,)
        The node's weight (rows), sums of ``w f^2`` and ``w f y``, and its
        rows' least and largest input: with the two above, what its line
        needs (:data:`STATS`). NaN for a tree read from a file written
        before the line: its nodes are scaled.
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
    weight: np.ndarray | None = None
    sum_input_sq: np.ndarray | None = None
    sum_input_pos: np.ndarray | None = None
    input_min: np.ndarray | None = None
    input_max: np.ndarray | None = None

    def __post_init__(self):
        self.feature = np.asarray(self.feature, dtype=np.int32)
        self.table_len = np.asarray(self.table_len, dtype=np.int32)
        self.table = np.asarray(self.table, dtype=np.int32)
        k = self.feature.size
        self.positives = np.asarray(self.positives, dtype=float)
        self.sum_input = np.asarray(self.sum_input, dtype=float)
        self.loss_node = _floats(self.loss_node, k)
        self.loss_split = _floats(self.loss_split, k)
        for name in STATS[2:]:
            setattr(self, name, _floats(getattr(self, name), k))
        self.weight = _floats(self.weight, k)
        self.slope, self.intercept = node_line(*self.stats())

    def stats(self) -> tuple[np.ndarray, ...]:
        """The node statistics of :data:`STATS`, in that order."""
        return tuple(getattr(self, name) for name in STATS)

    def output(self, node: np.ndarray, f: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The tree's output for rows at ``node`` with input ``f``: their node's line, clipped to [0, 1]
        (``slope * f + intercept``, computed in that order; into ``out`` when given, not ``f``)."""
        out = np.take(self.slope, node, out=out)
        out *= f
        out += self.intercept[node]
        return np.clip(out, 0.0, 1.0, out=out)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.size)

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.feature < 0))

    @property
    def scale(self) -> np.ndarray:
        """Each node's PUD before the tree, ``sum(y) / sum(f)`` (1 where ``sum(f) = 0``): the scale
        factor of a node without spread in its inputs (:func:`node_line`), and of every node of a tree
        read from a file written before the line."""
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


def row_terms(f: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> list:
    """Each row's terms of the node statistics :data:`STATS`: ``w``, ``w y``, ``w f``, ``w f^2``,
    ``w f y`` (summed) and ``f`` twice (least and largest). ``w`` None: 1 each (the first term then
    None, a count); rows of weight 0 take no part in the least and largest."""
    wf = f if w is None else w * f
    return [w, y.astype(float) if w is None else w * y, wf, wf * f, wf * y, f, f]


def group_stats(keys: np.ndarray, size: int, terms: list) -> list:
    """The node statistics :data:`STATS` of each key (0 .. size - 1), from :func:`row_terms`; a key
    without rows has sums 0, least ``inf`` and largest ``-inf``."""
    sums = [np.bincount(keys, weights=v, minlength=size).astype(float) for v in terms[:5]]
    lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
    low, high = terms[5], terms[6]
    if terms[0] is not None and not np.all(terms[0] > 0):
        low, high = np.where(terms[0] > 0, low, np.inf), np.where(terms[0] > 0, high, -np.inf)
    np.minimum.at(lo, keys, low)
    np.maximum.at(hi, keys, high)
    return sums + [lo, hi]


def merge_stats(stats: list, group: np.ndarray, size: int) -> list:
    """Statistics of groups of keys (``group``: the group of each key, -1 for none) from those of
    the keys (:func:`group_stats`)."""
    used = group >= 0
    g = group[used]
    sums = [np.bincount(g, weights=v[used], minlength=size) for v in stats[:5]]
    lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
    np.minimum.at(lo, g, stats[5][used])
    np.maximum.at(hi, g, stats[6][used])
    return sums + [lo, hi]


def node_stats(tree: Tree, end: np.ndarray, f: np.ndarray, y: np.ndarray, w: np.ndarray,
               work: tuple | None = None) -> dict:
    """The node statistics :data:`STATS` of every node of ``tree`` over the rows that end at it or
    below (``end``: :meth:`Tree.route`; ``w``: each row's weight, 0 for a row that takes no part), as a
    dict for :func:`dataclasses.replace`. One pass per statistic through two work arrays of the rows'
    size (``work``: two float arrays to use, so that a fit on millions of rows allocates none per
    tree)."""
    k = tree.n_nodes
    w = np.asarray(w, dtype=float)
    wf, work = (np.empty(w.size), np.empty(w.size)) if work is None else work
    np.multiply(w, f, out=wf)
    np.multiply(w, y, out=work)
    stats = [np.bincount(end, weights=w, minlength=k), np.bincount(end, weights=work, minlength=k),
             np.bincount(end, weights=wf, minlength=k)]
    np.multiply(wf, f, out=work)
    stats.append(np.bincount(end, weights=work, minlength=k))
    np.multiply(wf, y, out=work)
    stats.append(np.bincount(end, weights=work, minlength=k))
    lo, hi = np.full(k, np.inf), np.full(k, -np.inf)
    present = w > 0
    for out, fill, ufunc in ((lo, np.inf, np.minimum), (hi, -np.inf, np.maximum)):
        if present.all():
            ufunc.at(out, end, f)
        else:
            work.fill(fill)
            np.copyto(work, f, where=present)
            ufunc.at(out, end, work)
    stats += [lo, hi]
    parent = tree.parent
    for node in range(k - 1, 0, -1):              # children are numbered after their parents
        up = parent[node]
        for v in stats[:5]:
            v[up] += v[node]
        stats[5][up] = min(stats[5][up], stats[5][node])
        stats[6][up] = max(stats[6][up], stats[6][node])
    return dict(zip(STATS, stats))


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):     # subnormal den: inf, handled by callers
        return np.where(den > 0, num / den, 1.0)


class _Growth:
    """A tree being grown: nodes appended as lists (node statistics: rows of :data:`STATS`), frozen
    into a :class:`Tree`."""

    def __init__(self, sums):
        self.feature, self.sums = [-1], [[float(v) for v in sums]]
        self.loss_node, self.loss_split, self.tables = [np.nan], [np.nan], [None]

    @property
    def rows(self) -> list:
        return [s[0] for s in self.sums]

    def add_node(self, sums) -> int:
        self.feature.append(-1)
        self.sums.append([float(v) for v in sums])
        self.loss_node.append(np.nan)
        self.loss_split.append(np.nan)
        self.tables.append(None)
        return len(self.sums) - 1

    def line(self, nodes) -> tuple[np.ndarray, np.ndarray]:
        """Slope and intercept of ``nodes`` (:func:`node_line`)."""
        return node_line(*np.array([self.sums[k] for k in nodes]).T)

    def freeze(self) -> Tree:
        tables = [t for t in self.tables if t is not None]
        sums = dict(zip(STATS, np.array(self.sums).T))
        return Tree(feature=self.feature, table_len=[0 if t is None else t.size for t in self.tables],
                    table=np.concatenate(tables) if tables else np.empty(0, dtype=np.int32),
                    loss_node=self.loss_node, loss_split=self.loss_split, **sums)


def grow_tree(codes: np.ndarray, column_codes: list[ColumnCode], f: np.ndarray, y: np.ndarray,
              *, max_depth: int, min_rows: int, loss_bin_size: int,
              views: np.ndarray, p: float = 1.0, weights: np.ndarray | None = None) -> tuple[Tree, np.ndarray]:
    """Grow one calibration tree on the rows' current predictions ``f``.

    Level by level, every open node (depth < ``max_depth`` and at least
    ``2 * min_rows`` rows) tries a multiway split on every code column
    (:func:`ordered_slots` / :func:`categorical_slots`: each child holds at
    least ``min_rows`` rows), calibrates each child by its line
    (:func:`node_line`, fitted on the child's rows) and scores the node's
    rows by :func:`grouped_mvce` (MBCT Eq. 12). The column with the lowest
    node-local loss is used if that loss is below the loss of the node's own
    line (stopping rule 3); a column giving fewer than two children is not
    a candidate.

    With ``weights`` (positive) a row counts as its weight everywhere: in
    ``min_rows``, in the node sums of the lines and in the MVCE's bins of
    equal weight. Unit weights give the unweighted tree bit for bit.

    Returns
    -------
    tree : Tree
    node_of_row : ndarray, the leaf each training row ends at
    """
    n, n_cols = codes.shape
    w = weights
    yf = y.astype(float)
    terms = row_terms(f, yf, w)
    tree = _Growth(v[0] for v in group_stats(np.zeros(n, dtype=np.int64), 1, terms))
    node_of_row = np.zeros(n, dtype=np.int64)
    frontier = [0]
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
        terms_a = [None if v is None else v[act] for v in terms]
        node_slope, node_icpt = tree.line(open_nodes)
        resid = np.zeros((n_cols + 1, n))
        resid[0, act] = node_slope[ga] * fa + node_icpt[ga] - ya
        plans = []                                   # per column: (slots per node, sums per (node, code))
        valid = np.zeros((n_open, n_cols), dtype=bool)
        for j, cc in enumerate(column_codes):
            k = cc.n_codes
            keys = ga * k + codes[act, j]
            stats = group_stats(keys, n_open * k, terms_a)
            cnt = stats[0].reshape(n_open, k)
            slots = np.empty((n_open, k), dtype=np.int32)
            for i in range(n_open):
                slots[i] = (ordered_slots(cnt[i], min_rows, cc.missing_code) if cc.ordered
                            else categorical_slots(cnt[i], min_rows))
            n_child = slots.max(axis=1) + 1
            valid[:, j] = n_child >= 2
            # line of each (node, slot); invalid nodes keep their own line
            offset = np.concatenate([[0], np.cumsum(n_child)[:-1]])
            gslot = np.where(slots >= 0, slots + offset[:, None], -1).ravel()
            child_slope, child_icpt = node_line(*merge_stats(stats, gslot, int(n_child.sum())))
            owner = np.repeat(np.arange(n_open), k)       # per (node, code): its child's line, or the node's
            ok = valid[owner, j] & (gslot >= 0)
            slot = np.maximum(gslot, 0)
            key_slope = np.where(ok, child_slope[slot], node_slope[owner])
            key_icpt = np.where(ok, child_icpt[slot], node_icpt[owner])
            resid[j + 1, act] = key_slope[keys] * fa + key_icpt[keys] - ya
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
            child = merge_stats(stats, np.where(np.arange(stats[0].size) // k == i, np.tile(sl, n_open), -1),
                                n_child)
            for c in range(n_child):
                child_ids[c] = tree.add_node([v[c] for v in child])
            tree.feature[node] = j
            tree.tables[node] = np.where(sl >= 0, child_ids[np.maximum(sl, 0)], -1)
            rows = np.flatnonzero(node_of_row == node)
            node_of_row[rows] = tree.tables[node][codes[rows, j]]
            next_frontier.extend(child_ids.tolist())
        frontier = next_frontier
    return tree.freeze(), node_of_row
