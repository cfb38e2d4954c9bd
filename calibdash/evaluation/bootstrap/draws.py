"""The bootstrap's two draws: rows drawn with replacement, and the Poisson counts of score cells.

Rows (:func:`row_draws`): resample ``b`` draws ``n`` row indices uniformly with replacement, so the counts are
``Multinomial(n; 1/n, ..., 1/n)`` (Efron's bootstrap); the binary and the K-class row bootstraps read the same stream.
Cells (:class:`Poisson`): a resample draws, for every cell, its positives Poisson(``n_pos``) and its negatives
Poisson(``n - n_pos``): the row-level Poisson bootstrap summed over the cell's rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from ...core.errors import DataError
from ...core.validation import check_scores

__all__ = []

#: A Poisson table spans the mean +- _TAIL (sd + 1): the mass left outside is below 1e-25.
_TAIL = 12.0
#: Guide-table slots per CDF entry (more slots: fewer steps after the guide).
_GUIDE = 2
#: CDF entries kept in tables; the means beyond them are drawn with numpy's sampler.
_TABLE_BUDGET = 1 << 21


class Poisson:
    """Poisson counts of fixed whole means, drawn by inversion of tabulated CDFs.

    Per distinct mean, its CDF over the counts holding all but 1e-25 of its mass (``scipy.special.pdtr``) and a guide
    table (Devroye, *Non-Uniform Random Variate Generation*, III.2.4): slot ``floor(u * slots)`` of a uniform ``u``
    points at the first count whose CDF can exceed ``u``, a few steps up the smallest that does; about three times
    faster than ``Generator.poisson`` for means above 10. Means whose tables would pass ``budget`` entries, or hold more
    entries than their ``draws``, are drawn with ``Generator.poisson``.
    """

    def __init__(self, means: np.ndarray, budget: int = _TABLE_BUDGET, draws: int | None = None):
        means = np.asarray(means, dtype=np.int64)
        uniq, inv = np.unique(means, return_inverse=True)
        sd = np.sqrt(uniq)
        lo = np.maximum(0, np.floor(uniq - _TAIL * (sd + 1))).astype(np.int64)
        size = np.ceil(uniq + _TAIL * (sd + 1)).astype(np.int64) - lo + 1
        fits = np.cumsum(size) <= budget                      # the smallest means first
        if draws is not None:
            fits &= size <= np.maximum(int(draws) * np.bincount(inv, minlength=uniq.size), 1)
        self.n = means.size
        self.small = np.flatnonzero(fits[inv])
        self.big = np.flatnonzero(~fits[inv])
        self.big_means = means[self.big].astype(float)
        table_of = (np.cumsum(fits) - 1)[inv[self.small]]     # each tabled column's table among those built
        self._tables(uniq[fits], lo[fits], size[fits], table_of)

    def _tables(self, mean, lo, size, table_of):
        start = np.r_[0, np.cumsum(size)[:-1]].astype(np.int64)
        table = np.repeat(np.arange(mean.size), size)
        self.cdf = special.pdtr(np.arange(size.sum()) - start[table] + lo[table], mean[table].astype(float))
        self.cdf[start + size - 1] = 1.0                     # u < 1 always stops there
        slots = _GUIDE * size                                 # slot i covers u in [i / slots, (i + 1) / slots)
        width = slots + 1                                     # one more for u * slots rounding up to slots
        gstart = np.r_[0, np.cumsum(width)[:-1]].astype(np.int64)
        gtable = np.repeat(np.arange(mean.size), width)
        q = (np.arange(width.sum()) - gstart[gtable]) / slots[gtable]
        # first entry whose CDF exceeds q (less a margin, so rounding keeps it a lower bound), within its table
        guide = np.searchsorted(table + self.cdf, gtable + q - 1e-9, side="right")
        self.guide = np.maximum(guide, start[gtable])
        self.slots = slots[table_of].astype(float)
        self.gstart = gstart[table_of]
        self.shift = (start - lo)[table_of]

    def _invert(self, u: np.ndarray) -> np.ndarray:
        """Index into the CDF tables of the smallest count whose CDF exceeds ``u``."""
        k = self.guide.take((u * self.slots).astype(np.int64) + self.gstart)    # take: fancy indexing holds the GIL
        flat_k, flat_u = k.reshape(-1), u.reshape(-1)
        todo = np.flatnonzero(self.cdf.take(flat_k) <= flat_u)
        while todo.size:
            flat_k[todo] += 1
            todo = todo[self.cdf[flat_k[todo]] <= flat_u[todo]]
        return k

    def draw(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        """``rows`` independent draws of every mean: float array (rows, n_means)."""
        k = self._invert(rng.random((rows, self.small.size)))
        counts = np.subtract(k, self.shift, out=np.empty(k.shape), casting="unsafe")
        if not self.big.size:
            return counts
        out = np.empty((rows, self.n))
        out[:, self.small] = counts
        out[:, self.big] = rng.poisson(self.big_means, (rows, self.big.size))
        return out


def cell_inputs(predictions: pd.DataFrame, n, n_pos):
    if not isinstance(predictions, pd.DataFrame) or predictions.shape[1] == 0:
        raise DataError("predictions must be a DataFrame with one column per method.")
    p = np.column_stack([check_scores(predictions[c], f"predictions[{c!r}]") for c in predictions.columns])
    counts = []
    for name, x in (("n", n), ("n_pos", n_pos)):
        x = np.asarray(x, dtype=float).reshape(-1)
        if x.size != p.shape[0]:
            raise DataError(f"{name} has {x.size} values but predictions has {p.shape[0]} cells.")
        if not np.all(np.isfinite(x)) or np.any(x < 0) or np.any(x != np.floor(x)):
            raise DataError(f"{name} must hold whole, non-negative row counts.")
        counts.append(x.astype(np.int64))
    n, n_pos = counts
    if np.any(n_pos > n):
        raise DataError(f"{int(np.sum(n_pos > n))} cells hold more positives (n_pos) than rows (n).")
    return p, n_pos, n - n_pos


def weighted_rows(p: np.ndarray, pos: np.ndarray, neg: np.ndarray):
    """``(predictions (R, k), labels, weights)`` of the cells' weighted rows, as
    :meth:`~calibdash.evaluation.cells.ScoreCells.weighted_predictions` orders them."""
    keep = np.concatenate([pos, neg]) > 0
    labels = np.r_[np.ones(len(p)), np.zeros(len(p))]
    return np.vstack([p, p])[keep], labels[keep], np.concatenate([pos, neg])[keep].astype(float)


def row_draws(n: int, n_boot: int, seed=0):
    """The row indices of each of ``n_boot`` resamples of ``n`` rows: ``Generator.integers(0, n, n)`` of
    ``numpy.random.default_rng(seed)``, one resample after the other."""
    rng = np.random.default_rng(seed)
    for _ in range(int(n_boot)):
        yield rng.integers(0, n, n)


def resample_blocks(n: int, n_boot: int, seed=0, size: int = 16):
    """How often each of ``n`` rows is drawn in each of ``n_boot`` resamples (:func:`row_draws`), ``size``
    resamples at a time: yields ``(first resample, counts)``, the counts as floats (rows x resamples of the block,
    as the sparse products take them)."""
    draws = row_draws(n, n_boot, seed)
    for lo in range(0, int(n_boot), int(size)):
        block = np.empty((n, min(int(n_boot), lo + int(size)) - lo))
        for i in range(block.shape[1]):
            block[:, i] = np.bincount(next(draws), minlength=n)
        yield lo, block
