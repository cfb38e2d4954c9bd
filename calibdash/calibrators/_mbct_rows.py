"""The rows of the MBCT calibrator in a canonical form (:func:`canonical_rows`: identical rows merged, sorted by
content) and its seeded draws of them in units (a row of whole weight ``k`` is ``k`` units): the holdout split, the
growth sample and each row's weight in each use (:func:`tree_rows`). The calibrator and
:func:`calibdash.explain.mbct.explain` both use these, so they agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = []

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
    """The rows MBCT fits on and their weights: ``(rows, s, y, frame, w)``. Unit weights become ``w = None`` (the
    unweighted path, bit for bit); rows of weight 0 are left out before anything else and ``rows`` holds the indices
    of the rows kept (None when all are)."""
    df = feature_frame(features)
    w = sample_weight
    if w is None or np.all(w == 1.0):
        return None, s, y, df, None
    if np.all(w > 0):
        return None, s, y, df, w
    rows = np.flatnonzero(w > 0)
    return rows, s[rows], y[rows], None if df is None else df.iloc[rows].reset_index(drop=True), w[rows]


def _group_ids(codes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """One int64 per row, ordered as the rows' (codes..., label) lexicographically: equal for equal tuples. Mixed
    radix of the columns (codes from -1), renumbered by ``np.unique`` whenever the next column would overflow."""
    key = np.zeros(labels.size, dtype=np.int64)
    top = 1
    for j in range(codes.shape[1]):
        col = codes[:, j]
        radix = int(col.max(initial=-1)) + 2
        if top * radix >= 2 ** 62:
            values, key = np.unique(key, return_inverse=True)
            key, top = key.astype(np.int64).reshape(-1), values.size
        key *= radix
        key += col
        key += 1
        top *= radix
    key *= 2
    key += np.asarray(labels) == 1
    return key


@dataclass(frozen=True)
class CanonicalRows:
    """The rows MBCT fits on, in a canonical form: rows of equal (score, codes of every feature, label) merged into
    one whose weight is the sum of theirs, sorted by score, then the codes column by column, then the label.

    Per row its ``s``, ``y`` and summed ``weight``, and ``first``, the first row given that it merges (its codes are
    ``source_codes[first]``, :attr:`codes`); ``source_codes`` the code matrix of the rows given (not copied: at
    millions of rows a reordered copy would cost as much memory again); ``units``, whether the weights are whole
    numbers under 2**53 (no weights: ones), so that a row of weight ``k`` is ``k`` rows each drawn on its own (else a
    row is drawn whole); ``inverse``, the canonical row of each row given of positive weight (None unless asked for).
    """

    s: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    units: bool
    inverse: np.ndarray | None
    first: np.ndarray
    source_codes: np.ndarray

    @property
    def size(self) -> int:
        return int(self.s.size)

    @property
    def codes(self) -> np.ndarray:
        """The code matrix of the rows (made on each call)."""
        return self.source_codes[self.first]


def _content_order(s: np.ndarray, gid: np.ndarray, w: np.ndarray | None = None):
    """Indices that sort the rows by score, then ``gid``, then ``w`` (when given); with the sorted scores and where a
    score equals the one before it (a bool per sorted row but the first). A stable sort of the scores by their bits
    (non-negative doubles order as their int64 bit patterns; numpy sorts integers by radix), then, only among rows of
    equal score, a sort by the rest: one sort of the scores when they are distinct, as continuous scores are."""
    order = np.argsort(s.view(np.int64), kind="stable")
    ss = s[order]
    tie = ss[1:] == ss[:-1]
    if tie.any():
        in_run = np.zeros(s.size, dtype=bool)
        in_run[1:] |= tie
        in_run[:-1] |= tie
        pos = np.flatnonzero(in_run)
        run = np.cumsum(np.concatenate([[True], ~tie]))[pos]
        rows = order[pos]
        keys = (gid[rows], run) if w is None else (w[rows], gid[rows], run)
        order[pos] = rows[np.lexsort(keys)]
    return order, ss, tie


def canonical_rows(s: np.ndarray, y: np.ndarray, codes: np.ndarray, weights: np.ndarray | None, *,
                   inverse: bool = False) -> CanonicalRows:
    """The :class:`CanonicalRows` of rows (score ``s``, label ``y``, code matrix ``codes``, positive weights): a
    stable sort by score, feature codes and label (and, for fractional weights, by weight, so that merged weights are
    summed in one order), then equal neighbours merged. Column 0 of ``codes`` (the score's) is implied by the score;
    ``-0.0`` scores become ``0.0``. ``inverse``: also the canonical row of each row given."""
    s = np.ascontiguousarray(s, dtype=float)
    if np.any(np.signbit(s)):                         # -0.0 (scores are checked to be >= 0)
        s = s + 0.0
    y = np.asarray(y)
    n = s.size
    whole = weights is None or bool(np.all(np.floor(weights) == weights))
    gid = _group_ids(codes[:, 1:], y)
    order, ss, tie = _content_order(s, gid, None if whole else np.asarray(weights, dtype=float))
    same = np.flatnonzero(tie)                        # sorted rows whose score is the one before
    same = same[gid[order[same + 1]] == gid[order[same]]] + 1   # ... and so are codes and label: merged
    del gid
    if same.size:
        new = np.ones(n, dtype=bool)
        new[same] = False
        start = np.flatnonzero(new)
        first = order[start]
    else:
        new, start, first = None, None, order
    if weights is None:
        weight = np.ones(n) if start is None else np.diff(np.append(start, n)).astype(float)
    else:
        w = np.asarray(weights, dtype=float)[order]
        weight = w if start is None else np.add.reduceat(w, start)
    back = None
    if inverse:
        back = np.empty(n, dtype=np.int64)
        back[order] = np.arange(n) if new is None else np.cumsum(new) - 1
    units = bool(np.all(np.floor(weight) == weight)) and float(weight.sum()) < 2.0 ** 53
    return CanonicalRows(s=ss if start is None else ss[start], y=y[first], weight=weight, units=units,
                         inverse=back, first=first, source_codes=codes)


def _draw(counts: np.ndarray, take: int, rng) -> np.ndarray:
    """``take`` of the units (``counts`` of each row, one after the other) drawn without replacement
    by ``rng.choice``: how many of each row's units are drawn."""
    if np.all(counts == 1):                           # the same draw, without the cumulative counts
        out = np.zeros(counts.size, dtype=np.int64)
        out[rng.choice(counts.size, int(take), replace=False)] = 1
        return out
    cum = np.cumsum(counts.astype(np.int64))
    total = int(cum[-1]) if cum.size else 0
    chosen = rng.choice(total, int(take), replace=False)
    return np.bincount(np.searchsorted(cum, chosen, side="right"), minlength=counts.size)


def holdout_counts(labels: np.ndarray, counts: np.ndarray, holdout: float, seed: int) -> np.ndarray:
    """MBCT's stratified, seeded holdout: how many of each row's ``counts`` units are held out (the check units, which
    decide how many trees to keep): a share ``holdout`` of each class's units (rounded), drawn without replacement
    with ``numpy.random.default_rng(seed)`` (class 0 first). None (zeros) when ``holdout <= 0`` or when the split
    would leave fewer than two units on a side or one class only among the tree units."""
    y = np.asarray(labels)
    counts = np.asarray(counts)
    none = np.zeros(counts.size, dtype=np.int64)
    if float(holdout) <= 0:
        return none
    rng = np.random.default_rng(seed)
    check = none.copy()
    for cls in (0, 1):
        idx = np.flatnonzero((y == cls) & (counts > 0))
        take = int(round(float(holdout) * int(counts[idx].sum())))
        check[idx] = _draw(counts[idx], take, rng)
    left = counts - check
    if check.sum() < 2 or left.sum() < 2 or np.unique(y[left > 0]).size < 2:
        return none
    return check


def sample_counts(labels: np.ndarray, counts: np.ndarray, size: int, seed: int) -> np.ndarray | None:
    """The seeded, stratified sample of ``size`` units MBCT grows its trees on: how many of each row's ``counts`` units
    are in it (None: all, when there are at most ``size``). Each class gives its share of ``size`` (rounded; at least
    one unit of each class), drawn without replacement by ``default_rng([seed, SAMPLE_STREAM])`` (class 0 first)."""
    y = np.asarray(labels)
    counts = np.asarray(counts)
    n = int(counts.sum())
    size = int(size)
    if n <= size:
        return None
    rng = np.random.default_rng([int(seed), SAMPLE_STREAM])
    pos = y == 1
    n1 = int(counts[pos].sum())
    k1 = min(max(int(round(size * n1 / n)), 1), size - 1, n1)
    k0 = min(size - k1, n - n1)
    out = np.zeros(counts.size)
    for mask, take in ((~pos, k0), (pos, k1)):
        idx = np.flatnonzero(mask)
        got = _draw(counts[idx], take, rng)
        hit = np.flatnonzero(got)
        out[idx[hit]] = got[hit]
    return out


@dataclass(frozen=True)
class TreeRows:
    """What each canonical row weighs in each use MBCT makes of its rows: ``grow`` (the growth of the trees: split
    choice, node-local views, the training loss of ``history_``), ``check`` (held out: the global MVCE on these
    decides how many trees to keep; zeros when none are) and ``fit`` (the node sums that set the lines: the row's
    weight but its check weight; ``grow`` without a growth sample); ``units`` as :attr:`CanonicalRows.units`;
    ``sampled``, whether the trees were grown on a sample."""

    grow: np.ndarray
    check: np.ndarray
    fit: np.ndarray
    units: bool
    sampled: bool

    @property
    def held_out(self) -> bool:
        return bool(np.any(self.check > 0))

    @property
    def judge(self) -> np.ndarray:
        """Weights the boosting decision is judged on: the check weights, else the grow weights."""
        return self.check if self.held_out else self.grow

    def members(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The rows of a use (``weights``: one of the arrays above) as MBCT's kernels take them: with units, each row
        repeated by its count and no weights (a row's copies side by side: the views shuffle them); else the rows of
        positive weight and their weights."""
        rows = np.flatnonzero(weights > 0)
        if self.units:
            return np.repeat(rows, weights[rows].astype(np.int64)), None
        return rows, weights[rows]

    def count(self, weights: np.ndarray) -> int:
        """Rows in a use: units, or rows of positive weight."""
        return int(weights.sum()) if self.units else int(np.count_nonzero(weights))


def tree_rows(rows: CanonicalRows, holdout: float, seed: int, growth_rows: int) -> TreeRows:
    """MBCT's use of its canonical rows: :func:`sample_counts`, then :func:`holdout_counts` of the sample. Without a
    sample the holdout splits all units and the rest are the grow and fit units; with one, the sample is split into
    grow and check units and the fit units are all units but the check units."""
    w = rows.weight
    units = rows.units
    counts = w if units else np.ones(w.size)          # whole numbers, as floats
    sample = sample_counts(rows.y, counts, growth_rows, seed)
    sampled = sample is not None
    if sampled:                                        # the holdout of the sample's rows (the same draw)
        drawn = np.flatnonzero(sample)
        check = np.zeros(w.size)
        check[drawn] = holdout_counts(rows.y[drawn], sample[drawn], holdout, seed)
        grow = sample
        grow -= check
    else:
        check = holdout_counts(rows.y, counts, holdout, seed).astype(float)
        grow = counts - check
    if not units:                                      # rows drawn whole, with their weights
        grow *= w
        check *= w
    return TreeRows(grow=grow, check=check, fit=w - check, units=units, sampled=sampled)
