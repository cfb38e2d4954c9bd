"""Private machinery of the MBCT calibrator (``calibdash.calibrators.mbct``).

Three pieces, each usable and testable on its own:

* feature coding (:class:`ColumnCode`, :func:`learn_codes`, :func:`encode`):
  every input column becomes small integer codes: the score in equal-width
  bins, numeric columns in quantile bins, categorical columns as they are;
* the node-local loss (:func:`grouped_mvce`): the multi-view calibration
  error of :func:`calibdash.metrics.mvce`, for many groups of rows and many
  candidate predictions at once, on shared random views, with or without
  sample weights (:func:`weighted_mvce`: the global loss with weights);
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
# Node-local loss
# ----------------------------------------------------------------------------
def iter_views(n: int, n_views: int, seed):
    """Yield ``n_views`` random permutations of ``range(n)``, drawn as :func:`metrics.mvce` draws them."""
    rng = np.random.default_rng(seed)
    for _ in range(int(n_views)):
        yield rng.permutation(n)


def random_views(n: int, n_views: int, seed) -> np.ndarray:
    """The permutations of :func:`iter_views` as one array (int32), to be reused."""
    out = np.empty((int(n_views), n), dtype=np.int32 if n < 2 ** 31 else np.int64)
    for v, perm in enumerate(iter_views(n, n_views, seed)):
        out[v] = perm
    return out


def _spill(rows, g, start, end, b0, b1, last, bin_start, m):
    """How rows whose weight reaches past their first bin correct the sums that put all of it there.

    Returns (row, bin, weight) triples: per such row, minus the weight it
    has beyond its first bin, taken from that bin, and the weight it puts in
    each later bin it reaches (a full ``m``, or what is left of it in the
    last one; the group's last bin has no upper end). Bins are global
    numbers.
    """
    extra = b1 - b0
    owner = np.repeat(np.arange(rows.size), extra)
    step = np.arange(int(extra.sum())) - np.repeat(np.cumsum(extra) - extra, extra) + 1
    j = b0[owner] + step
    upper = np.where(j < last[owner], (j + 1) * m, np.inf)
    amount = np.maximum(np.minimum(end[owner], upper) - j * m, 0.0)
    beyond = end - (b0 + 1) * m
    bins = np.concatenate([b0, j]) + bin_start[np.concatenate([g, g[owner]])]
    return np.concatenate([rows, rows[owner]]), bins, np.concatenate([-beyond, amount])


def grouped_mvce(residuals: np.ndarray, group: np.ndarray, n_groups: int, views,
                 bin_size: float, p: float = 1.0, weights: np.ndarray | None = None) -> np.ndarray:
    """MVCE (MBCT Eq. 10) of each group of rows, for each column of residuals.

    The definition is :func:`calibdash.metrics.mvce`'s: in each view the
    rows are taken in a random order and cut into bins of ``bin_size`` rows
    (the last ``N mod bin_size`` rows join the last bin, a group with fewer
    than ``bin_size`` rows is one bin); the loss is the mean over views of
    the l_p mean over bins of ``|mean(prediction - label)|``. Here a group's
    view is the view of all rows restricted to the group (a uniformly random
    order of the group's rows, as a fresh shuffle would be), and all columns
    share the views, so candidate predictions of one node are compared on the
    same partitions. With one group and ``views = random_views(n, r, seed)``
    the result equals ``metrics.mvce(pred, labels, bin_size, r, p, seed)``.

    With ``weights`` the bins hold equal shares of weight: the group's rows,
    in the view's order, lay their weights end to end; bin ``b`` is the
    stretch ``[b M, (b + 1) M)`` of that line (the last bin runs to the
    group's total weight ``W``, so there are ``max(1, floor(W / M))`` bins)
    and a row whose weight straddles a boundary puts each part in its bin. A
    bin's error is ``|sum(part * residual)| / (its weight)``. Integer weights
    thus act as the row repeated, its copies kept next to each other in the
    view (a fresh shuffle of the repeated rows would scatter them: the two
    agree on average, not exactly). Unit weights give the unweighted result
    bit for bit.

    Parameters
    ----------
    residuals : ndarray, shape (C, n)
        Prediction minus label of every row, one row per candidate prediction.
    group : ndarray of int, shape (n,)
        Group of each row, 0 .. n_groups - 1, or -1 for a row that takes no part.
    views : ndarray of shape (r, n), or an iterable of permutations
        Each one a permutation of ``range(n)``.
    bin_size, p :
        The MVCE's bin size M (rows, or weight with ``weights``) and norm p.
    weights : ndarray of shape (n,), optional
        Non-negative weight of each row (None: 1 each); every group needs a
        positive total weight.

    Returns
    -------
    ndarray, shape (n_groups, C)
    """
    d = np.ascontiguousarray(residuals, dtype=float)
    if d.ndim == 1:
        d = d[None, :]
    n_cols, n = d.shape
    group = np.asarray(group)
    rows_in = np.bincount(group[group >= 0], minlength=n_groups)
    if weights is None:
        m, sizes = int(bin_size), rows_in
        if m < 1:
            raise DataError(f"the MVCE bin size must be at least 1, got {bin_size}.")
    else:
        w = np.asarray(weights, dtype=float)
        m = float(bin_size)
        if not m > 0:
            raise DataError(f"the MVCE bin size must be positive, got {bin_size}.")
        sizes = np.bincount(group[group >= 0], weights=w[group >= 0], minlength=n_groups)
        wd = w * d                                         # every row's whole weight in its first bin...
    if np.any(sizes <= 0):
        raise ValueError("every group needs at least one row (of positive weight)")
    n_active = int(rows_in.sum())
    starts = np.concatenate([[0], np.cumsum(rows_in)[:-1]])
    n_bins = np.maximum(1, sizes // m).astype(np.int64)
    bin_start = np.concatenate([[0], np.cumsum(n_bins)])
    total = int(bin_start[-1])
    # every view has the same bin sizes: m rows (weight), the remainder in each group's last bin
    counts = np.full(total, float(m))
    counts[bin_start[1:] - 1] += sizes - n_bins * m
    label = np.where(group >= 0, group, n_groups).astype(np.int16 if n_groups < 32767 else np.int32)
    rank = np.arange(n_active)
    bin_of_row = np.full(n, total, dtype=np.intp)          # rows outside every group: a spare bin
    acc = np.zeros((n_groups, n_cols))
    n_views = 0
    one_group = n_groups == 1 and n_active == n
    for perm in views:
        n_views += 1
        if one_group:                                      # every row in group 0: the view as it is
            rows, g = perm, np.zeros(n, dtype=np.intp)
        else:
            lab = label[perm]
            order = np.argsort(lab, kind="stable")[:n_active]  # by group, random order within
            g = lab[order].astype(np.intp)
            rows = perm[order]
        if weights is None:
            pos = rank - starts[g]
            bin_of_row[rows] = np.minimum(pos // m, n_bins[g] - 1) + bin_start[g]
            pce = np.stack([np.bincount(bin_of_row, weights=d[c], minlength=total + 1)[:total]
                            for c in range(n_cols)])
        else:
            wo = w[rows]
            before = np.concatenate([[0.0], np.cumsum(wo)])
            start = before[:-1] - before[starts[g]]        # weight laid down before the row, in its group
            end = before[1:] - before[starts[g]]
            last = n_bins[g] - 1
            b0 = np.minimum(np.floor_divide(start, m).astype(np.intp), last)
            b1 = np.maximum(np.minimum(np.ceil(end / m).astype(np.intp) - 1, last), b0)
            bin_of_row[rows] = b0 + bin_start[g]
            pce = np.stack([np.bincount(bin_of_row, weights=wd[c], minlength=total + 1)[:total]
                            for c in range(n_cols)])
            cross = np.flatnonzero(b1 > b0)                # ... but these rows reach past it
            if cross.size:
                r, b, amount = _spill(rows[cross], g[cross], start[cross], end[cross], b0[cross], b1[cross],
                                      last[cross], bin_start, m)
                for c in range(n_cols):
                    pce[c] += np.bincount(b, weights=amount * d[c, r], minlength=total)[:total]
        pce = np.abs(pce) / counts
        if p == 1:
            per_group = np.add.reduceat(pce, bin_start[:-1], axis=1) / n_bins
        else:
            per_group = (np.add.reduceat(pce ** p, bin_start[:-1], axis=1) / n_bins) ** (1.0 / p)
        acc += per_group.T
    return acc / max(1, n_views)


def weighted_mvce(probs: np.ndarray, labels: np.ndarray, weights: np.ndarray, bin_size: float,
                  n_views: int = 100, p: float = 1.0, seed: int = 0) -> float:
    """:func:`calibdash.metrics.mvce` with sample weights: bins of equal weight ``bin_size``.

    The same random views as ``metrics.mvce(probs, labels, ..., seed=seed)``
    (permutations of the rows), each cut into stretches of equal weight as
    :func:`grouped_mvce` describes. With unit weights it equals
    ``metrics.mvce`` up to the order of summation (1e-12 relative).
    """
    d = np.asarray(probs, dtype=float) - np.asarray(labels, dtype=float)
    one = np.zeros(d.size, dtype=np.int64)
    return float(grouped_mvce(d[None], one, 1, iter_views(d.size, n_views, seed), bin_size, p, weights)[0, 0])


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
