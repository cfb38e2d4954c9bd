"""The calibration tree of the MBCT calibrator: level-wise growth with multiway splits and one line per node
(:func:`grow_tree`), routing (:class:`Tree`: what routing and the lines need, and its growth's node-local losses; not
what can be recomputed from it or the training rows), and the node statistics (:data:`STATS`, per row, group, group of
groups and node) from which each node's line follows (:func:`node_line`). A row of weight ``v`` counts as ``v`` rows;
the calibrator passes whole weights as rows repeated (units), so only fractional weights reach the weighted MVCE.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..measures.mvce import grouped_mvce
from ._mbct_codes import ColumnCode, categorical_slots, ordered_slots

__all__ = ["node_conditions", "node_sums"]


#: Statistics kept per node, in this order: weight (rows), positives ``sum(w y)``, ``sum(w f)``, ``sum(w f^2)``,
#: ``sum(w f y)`` and the least and largest input ``f`` (the tree's input) of its rows; the node's line follows from
#: them (:func:`node_line`). The first five add up over rows, the last two are a minimum and a maximum.
STATS = ("weight", "positives", "sum_input", "sum_input_sq", "sum_input_pos", "input_min", "input_max")
#: A node whose inputs' variance is below this share of their mean square has one input value
#: (up to rounding): no slope can be fitted and the node is scaled (see :func:`node_line`).
FLAT = 1e-12


def node_line(weight, positives, sum_input, sum_input_sq, sum_input_pos, input_min,
              input_max) -> tuple[np.ndarray, np.ndarray]:
    """Slope ``a`` and intercept ``b`` of each node's linear calibrator ``f' = a f + b`` (:data:`STATS`).

    Every node's line passes through its mean point ``(mean f, mean y)`` (weighted), so its residuals sum to zero and
    its PUD (MBCT Eq. 6) after calibration is 1. Its slope is chosen in three steps:

    1. The scale: the paper's per-node calibration ``a = sum(w y) / sum(w f)``
       (the line through the origin, ``b = 0``).
    2. The least-squares slope ``cov(f, y) / var(f)``, kept non-negative (a leaf does not reverse the order of its
       rows), replaces the scale only if the rows reject the scale: when the least-squares line lowers the residual
       sum of squares by more than ``ln(W)`` times its residual variance, ``(RSS_scale - RSS_line) (W - 2) / RSS_line
       > ln W`` (``W`` the node's weight: an F test at the BIC's price of one parameter). So a node of few positives,
       or of a straight-through-0 miscalibration, keeps the scale; a node of two distinct inputs whose rates rise,
       with enough rows, gets the line through both rates.
    3. Either slope is lowered, if need be, so that the line stays in [0, 1] on the node's own inputs ``[input_min,
       input_max]`` (``a <= mean(y) / (mean f - input_min)`` and ``a <= (1 - mean(y)) / (input_max - mean f)``): no
       training row is clipped, and the PUD is 1 exactly. A row outside that range (at predict time) can leave [0, 1]
       and is clipped.

    Where the inputs do not vary (variance below ``FLAT`` times their mean square) the node is scaled (``a = 1`` where
    ``sum(w f) = 0``; ``a = 0, b = mean(y)`` if the node has weight and its inputs are all 0, or so small, subnormal,
    that the scale overflows). Without the other statistics (a tree from a file written before the line: ``weight``
    NaN) every node is scaled, as those files were. Labels are 0 or 1, so ``sum(w y^2) = sum(w y)``.
    """
    W, Y, F, FF, FY, lo, hi = (np.asarray(v, dtype=float) for v in (
        weight, positives, sum_input, sum_input_sq, sum_input_pos, input_min, input_max))
    scale = safe_ratio(Y, F)
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


def safe_ratio(num, den):
    """``num / den`` where ``den > 0``, else 1 (a node's scale: its PUD before the tree); inf where a
    subnormal ``den`` makes it overflow (:func:`node_line` then takes the node's mean)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.where(den > 0, num / den, 1.0)


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
    """Statistics of groups of keys (``group``: the group of each key, -1 for none) from those of the keys
    (:func:`group_stats`; a key of weight 0 already has least ``inf`` and largest ``-inf``)."""
    used = group >= 0
    return group_stats(group[used], size, [v[used] for v in stats])


def node_stats(tree: Tree, end: np.ndarray, f: np.ndarray, y: np.ndarray, w: np.ndarray,
               work: tuple | None = None) -> dict:
    """The node statistics :data:`STATS` of every node of ``tree`` over the rows that end at it or below (``end``:
    :meth:`Tree.route`; ``w``: each row's weight, 0 for a row that takes no part), as a dict for
    :func:`dataclasses.replace`. One pass per statistic through two work arrays of the rows' size (``work``: two float
    arrays to use, so that a fit on millions of rows allocates none per tree)."""
    k = tree.n_nodes
    w = np.asarray(w, dtype=float)
    wf, work = (np.empty(w.size), np.empty(w.size)) if work is None else work
    np.multiply(w, f, out=wf)
    stats = [np.bincount(end, weights=v, minlength=k) for v in (w, np.multiply(w, y, out=work), wf)]
    stats += [np.bincount(end, weights=np.multiply(wf, v, out=work), minlength=k) for v in (f, y)]
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


@dataclass(eq=False)
class Tree:
    """One calibration tree: a bin per node, a linear calibrator per node.

    Nodes are numbered breadth first (the root is 0, a child after its parent). A row's output is ``slope[node] * f +
    intercept[node]`` for the node it ends at (:meth:`route`), the line of :func:`node_line` fitted on the node's
    sums. Per node ``k``: ``feature``, the code column it splits on (-1 for a leaf); ``table_len``, the length of its
    routing table (the number of codes of its column; 0 for a leaf), the tables of all nodes one after the other in
    ``table`` (code -> child node, -1 for a value not seen in the node: the row stays and takes its line); the
    statistics :data:`STATS` of its training rows (``positives`` and ``sum_input``, whose ratio is the node's PUD
    before the tree, :attr:`scale`, and the others, NaN for a tree read from a file written before the lines, whose
    nodes are scaled); and the node-local MVCE of its own calibration and of its chosen split, ``loss_node`` and
    ``loss_split`` (NaN where none was tried or made, and everywhere for a tree read from a file).
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
        for name in ("loss_node", "loss_split") + STATS:
            values = getattr(self, name)
            setattr(self, name, np.full(self.feature.size, np.nan) if values is None else np.asarray(values, float))
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
        return safe_ratio(self.positives, self.sum_input)

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
        """Node each row ends at (a leaf, or the node where its value was unseen): level by level every row takes one
        step at once through the node's step table (:meth:`step_tables`), integer gathers only. ``top_code`` (the
        largest code of each column) saves a pass over ``codes`` to find it."""
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
        """Routing tables that every code can index: ``(column, start, table)``. Node ``k`` reads column ``column[k]``
        (a leaf: column 0); entry ``c + 1`` of ``table[start[k]:]`` is the node a row with code ``c`` goes to, and
        ``k`` itself for code -1 (unseen), a value unseen in the node, codes beyond its routing table up to
        ``top_code[column]``, and every entry of a leaf."""
        column = np.maximum(self.feature, 0)
        own = self.table_len.astype(np.int64)
        length = np.maximum(own, top_code[column] + 1) + 1
        start = np.concatenate([[0], np.cumsum(length)[:-1]])
        table = np.repeat(np.arange(self.n_nodes, dtype=np.int32), length)
        routed = np.repeat(start + 1, own) + (np.arange(own.sum()) - np.repeat(np.cumsum(own) - own, own))
        table[routed] = np.where(self.table >= 0, self.table, table[routed])
        return column, start, table


def node_sums(tree: Tree, end: np.ndarray, *values: np.ndarray) -> np.ndarray:
    """Per node, the sum of each of ``values`` over the rows that end at it or below (``end``: :meth:`Tree.route`; a
    row that stopped at a node counts there and above): shape (len(values), n_nodes)."""
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


class _Growth:
    """A tree being grown: nodes appended as lists (node statistics: rows of :data:`STATS`), frozen
    into a :class:`Tree`."""

    def __init__(self, sums):
        self.feature, self.sums, self.loss_node, self.loss_split, self.tables = [], [], [], [], []
        self.add_node(sums)

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
    """Grow one calibration tree on the rows' current predictions ``f``; returns the tree and the node each training row
    ends at. Level by level, every open node (depth < ``max_depth`` and at least ``2 * min_rows`` rows, or weight) tries
    a multiway split on every code column (:func:`ordered_slots` / :func:`categorical_slots`), calibrates each child by
    its line (:func:`node_line`) and scores the node's rows by :func:`grouped_mvce` (MBCT Eq. 12). The column with the
    lowest node-local loss is used if that loss is below the loss of the node's own line (stopping rule 3); a column
    giving fewer than two children is not a candidate. Unit weights give the unweighted tree bit for bit."""
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
