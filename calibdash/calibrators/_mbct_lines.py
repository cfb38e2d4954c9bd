"""Node statistics (:data:`STATS`, per row, group, group of groups and node of a grown tree) and node lines
(:func:`node_line`) of the MBCT calibrator's trees; a row of weight ``v`` counts as ``v`` rows in all of them."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ._mbct_tree import Tree

__all__ = []


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
    """The node statistics :data:`STATS` of every node of ``tree`` over the rows that end at it or below (``end``:
    :meth:`Tree.route`; ``w``: each row's weight, 0 for a row that takes no part), as a dict for
    :func:`dataclasses.replace`. One pass per statistic through two work arrays of the rows' size (``work``: two float
    arrays to use, so that a fit on millions of rows allocates none per tree)."""
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

