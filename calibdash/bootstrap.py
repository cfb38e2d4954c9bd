"""Bootstrap intervals for a metrics table, and a plain verdict on it.

Two ways to resample, one result (:class:`BootstrapResult`):

* :func:`bootstrap_metrics` resamples **rows** with replacement and measures
  every resample with :func:`calibdash.metrics.summary` (small data);
* :func:`bootstrap_cells` resamples **score cells** (:mod:`calibdash.cells`),
  a Poisson bootstrap of their rows: each resample draws, for every cell, its
  positives Poisson(``n_pos``) and its negatives Poisson(``n - n_pos``),
  which is the row-level Poisson bootstrap (every row counted Poisson(1)
  times) summed over the cell's rows. Each method's predictions are sorted
  once; a resample only changes weights, so every metric is a weighted sum
  or a cumulative sum over the sorted cells, vectorised over resamples, and
  MVCE comes from the moments of its partition views (large data: 200
  resamples of ten million rows in about half a second on two cores,
  ``bench/bench_bootstrap.py``).

Both are *paired*: the same resample for every method, so differences between
methods get intervals too. Two methods whose own intervals overlap may still
differ clearly, and the verdict uses the interval of the difference.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import special
from threadpoolctl import threadpool_limits

from .errors import DataError, SettingsError
from .evaluation import CELLS_MIN_ROWS, UNCALIBRATED, Evaluation
from .measures import binning, calibration as metrics
from .validation import check_scores

__all__ = ["BootstrapResult", "bootstrap_metrics", "bootstrap_cells", "bootstrap_measures", "bootstrap_evaluation",
           "resamples_for", "verdict"]


@dataclass
class BootstrapResult:
    """Point estimates, 95% intervals and the resampled values.

    Attributes
    ----------
    table : DataFrame
        Index: methods; columns: MultiIndex (metric, {"value", "low", "high"}).
    samples : dict
        metric -> array of shape (n_boot, n_methods): the resampled values, in
        the table's method order (for paired differences).
    level : float
    n_boot : int
    note : str
        How the intervals were drawn, when it needs saying (the cells path
        says how MVCE was resampled).
    """

    table: pd.DataFrame
    samples: dict
    level: float
    n_boot: int = 0
    note: str = ""

    def interval(self, method: str, metric: str) -> tuple[float, float]:
        return (float(self.table.loc[method, (metric, "low")]), float(self.table.loc[method, (metric, "high")]))

    def difference(self, metric: str, a: str, b: str) -> tuple[float, float, float]:
        """Point difference a - b and its paired-bootstrap interval."""
        methods = list(self.table.index)
        d = self.samples[metric][:, methods.index(a)] - self.samples[metric][:, methods.index(b)]
        alpha = (1 - self.level) / 2
        point = float(self.table.loc[a, (metric, "value")] - self.table.loc[b, (metric, "value")])
        lo, hi = np.nanquantile(d, [alpha, 1 - alpha])
        return point, float(lo), float(hi)


def _result(point: dict, samples: dict, methods: list, level: float, n_boot: int, note: str = "") -> BootstrapResult:
    """Percentile intervals of ``samples`` (metric -> (n_boot, methods)) beside ``point`` (method -> metric ->
    value)."""
    alpha = (1 - level) / 2
    cols = {}
    for name, values in samples.items():
        cols[(name, "value")] = [point[m][name] for m in methods]
        cols[(name, "low")] = np.nanquantile(values, alpha, axis=0)
        cols[(name, "high")] = np.nanquantile(values, 1 - alpha, axis=0)
    table = pd.DataFrame(cols, index=list(methods))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["metric", "stat"])
    return BootstrapResult(table=table, samples=samples, level=level, n_boot=n_boot, note=note)


def bootstrap_metrics(predictions: pd.DataFrame, labels, n_boot: int = 200, level: float = 0.95,
                      seed: int = 0, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                      mvce_views: int = 10) -> BootstrapResult:
    """Metrics of every column of ``predictions`` with paired percentile intervals, resampling rows.

    Each resample re-sorts every method's rows; on large data use
    :func:`bootstrap_cells`.

    Parameters
    ----------
    predictions : DataFrame
        One column per method (as :attr:`Evaluation.predictions`).
    labels : array-like
        The rows' 0/1 labels.
    n_boot : int, default 200
        Resamples. Percentile intervals at ``level``.
    mvce_views : int, default 10
        MVCE views per resample (the point estimate uses the metrics module's
        default of 100; fewer views inside the bootstrap keep it fast and add
        only a little variance to each resample).
    """
    y = np.asarray(labels).astype(np.int8)
    p = predictions.to_numpy(dtype=float)
    n, k = p.shape
    names = list(metrics.METRIC_NAMES)
    point = {m: metrics.summary(p[:, j], y, n_bins=n_bins, strategy=strategy) for j, m in
             enumerate(predictions.columns)}
    rng = np.random.default_rng(seed)
    samples = {name: np.full((n_boot, k), np.nan) for name in names}
    for b in range(n_boot):
        idx = rng.integers(0, n, n)
        yb = y[idx]
        if yb.min() == yb.max():
            continue
        for j in range(k):
            out = metrics.summary(p[idx, j], yb, n_bins=n_bins, strategy=strategy, mvce_views=mvce_views)
            for name in names:
                samples[name][b, j] = out[name]
    return _result(point, samples, list(predictions.columns), level, n_boot)


# ---------------------------------------------------------------------------------------------
# Cells: a paired Poisson bootstrap, vectorised over resamples
# ---------------------------------------------------------------------------------------------
#: A Poisson table spans the mean +- _TAIL (sd + 1): the mass left outside is below 1e-25.
_TAIL = 12.0
#: Guide-table slots per CDF entry (more slots: fewer steps after the guide).
_GUIDE = 2
#: CDF entries kept in tables; the means beyond them are drawn with numpy's sampler.
_TABLE_BUDGET = 1 << 21
#: Cells x resamples measured at once (memory: about 8 MB per array); at most _MAX_ROWS resamples.
_CHUNK = 1 << 20
_MAX_ROWS = 25
#: The metrics that need each method's sorted cells.
_SORTED = frozenset({"AUC", "ECE", "MCE"})
#: What BootstrapResult.note says on the cells path.
_MVCE_NOTE = ("MVCE's resamples are measured with the partition views of metrics.mvce ({views} views, seed 0: "
              "the exact moments of a random partition of the resampled rows).")


class _Poisson:
    """Poisson counts of fixed whole means, drawn by inversion of tabulated CDFs.

    Per distinct mean, a table of its CDF over the counts that hold all but
    1e-25 of its mass (``scipy.special.pdtr``) and a guide table (Devroye,
    *Non-Uniform Random Variate Generation*, III.2.4): the slot
    ``floor(u * slots)`` of a uniform ``u`` points at the first count whose
    CDF can exceed ``u``, and a few steps up find the smallest count whose
    CDF does, which is a Poisson draw to the precision of the doubles.
    About three times faster than ``Generator.poisson`` for means above 10.
    The largest means, whose tables would pass ``_TABLE_BUDGET`` entries,
    are drawn with ``Generator.poisson``.
    """

    def __init__(self, means: np.ndarray, budget: int = _TABLE_BUDGET):
        means = np.asarray(means, dtype=np.int64)
        uniq, inv = np.unique(means, return_inverse=True)
        sd = np.sqrt(uniq)
        lo = np.maximum(0, np.floor(uniq - _TAIL * (sd + 1))).astype(np.int64)
        size = np.ceil(uniq + _TAIL * (sd + 1)).astype(np.int64) - lo + 1
        fits = np.cumsum(size) <= budget                      # the smallest means first
        self.n = means.size
        self.small = np.flatnonzero(fits[inv])
        self.big = np.flatnonzero(~fits[inv])
        self.big_means = means[self.big].astype(float)
        self._tables(uniq[fits], lo[fits], size[fits], inv[self.small])

    def _tables(self, mean, lo, size, table_of):
        """The CDF tables (flattened), the guide tables, and each tabled column's place in them."""
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


class _Order(NamedTuple):
    """One method's cells sorted by prediction, once for every resample.

    ``order`` and ``value`` end with the empty cell (index ``C``, value 0),
    so a position ``C`` is inside every sorted row.
    """

    order: np.ndarray            # (C + 1,) cells ascending by prediction, then the empty cell
    value: np.ndarray            # (C + 1,) their predictions
    starts: np.ndarray           # (G,) position of each tied group's first cell
    ends: np.ndarray             # (G,) position after its last cell
    group: np.ndarray | None     # (C,) group of each sorted cell; None when no two cells tie
    uniform: np.ndarray | None   # (n_bins - 1,) where equal-width bins 1 .. n_bins - 1 start


def _sort(p: np.ndarray, n_bins: int, strategy: str) -> _Order:
    """One method's :class:`_Order` (and, for ``"uniform"``, where its equal-width bins start)."""
    order = np.argsort(p, kind="stable")
    v = p[order]
    starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    ends = np.r_[starts[1:], v.size]
    group = None if starts.size == v.size else np.repeat(np.arange(starts.size), ends - starts)
    uniform = None
    if strategy == "uniform":
        uniform = np.searchsorted(binning.uniform_ids(v, n_bins), np.arange(1, n_bins))
    return _Order(np.r_[order, v.size], np.r_[v, 0.0], starts, ends, group, uniform)


def _terms(p: np.ndarray) -> np.ndarray:
    """Per weighted row, what the linear metrics sum: a weighted count times this matrix gives them all.

    Rows: the cells' positive rows, the empty cell, their negative rows, the
    empty cell (the layout of the Poisson draws). Columns: squared error,
    log loss, correct at 0.5, prediction (each one per method), then the
    label and 1.
    """
    ones = np.ones((p.shape[0], 1))                       # each metric's own row terms, for label 1 and for 0
    pos, neg = (np.hstack([metrics.squared_errors(p, y), metrics.log_losses(p, y), metrics.hits(p, y), p, y * ones,
                           ones]) for y in (1.0, 0.0))
    pad = np.zeros((1, pos.shape[1]))
    return np.vstack([pos, pad, neg, pad])


class _Plan(NamedTuple):
    """What every resample reuses: the merged cells, their Poisson sampler, the linear terms and the sorts."""

    p: np.ndarray                # (C, k) predictions of the merged cells
    poisson: _Poisson            # means: positives, 0, negatives, 0
    terms: np.ndarray            # (2C + 2, 4k + 2)
    orders: list                 # one _Order per method (empty when no sorted metric is asked for)
    n_bins: int
    strategy: str
    names: tuple
    mvce_views: int


def _merge(p: np.ndarray, pos: np.ndarray, neg: np.ndarray):
    """Cells with the same prediction under every method, merged, and empty cells dropped.

    A cell's Poisson draw of ``a + b`` rows has the distribution of the sum of
    the draws of ``a`` and ``b`` rows, so merging changes the work, not the
    bootstrap (an evaluation's weighted rows merge back into its cells).
    """
    keep = pos + neg > 0
    p, pos, neg = p[keep], pos[keep], neg[keep]
    order = np.lexsort(p.T[::-1])
    ps = p[order]
    new = np.r_[True, np.any(ps[1:] != ps[:-1], axis=1)]
    group = np.cumsum(new) - 1
    total = lambda x: np.rint(np.bincount(group, weights=x[order])).astype(np.int64)  # noqa: E731
    return ps[new], total(pos), total(neg)


def _plan(p, pos, neg, n_bins, strategy, names, mvce_views) -> _Plan:
    p, pos, neg = _merge(p, pos, neg)
    zero = np.zeros(1, dtype=np.int64)
    sorted_ = _SORTED.intersection(names)
    orders = [_sort(p[:, j], n_bins, strategy) for j in range(p.shape[1])] if sorted_ else []
    return _Plan(p, _Poisson(np.concatenate([pos, zero, neg, zero])), _terms(p), orders, n_bins, strategy,
                 tuple(names), int(mvce_views))


def _prefix(a: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``a[r, :pos[r, j]].sum()`` for positions non-decreasing along each row and below its length.

    One pass over ``a``: the segments between consecutive positions are
    summed (``np.add.reduceat`` on the flattened rows) and accumulated.
    """
    rows, length = a.shape
    idx = np.concatenate([np.zeros((rows, 1), np.int64), pos], axis=1) + length * np.arange(rows)[:, None]
    flat = idx.reshape(-1)
    seg = np.add.reduceat(a.reshape(-1), flat)
    seg[flat == np.r_[flat[1:], a.size]] = 0.0           # reduceat gives an empty segment its first element
    return np.cumsum(seg.reshape(rows, -1)[:, :-1], axis=1)


def _auc(o: _Order, ws, ps, cum, ends, pos, total) -> np.ndarray:
    """Mann-Whitney AUC per resample: ``(sum_g pos_g (W_<g + w_g / 2) - P^2 / 2) / (P N)``.

    ``W_<g`` is the weight below tied group ``g``; the identity follows from
    ``sum_g pos_g pos_<g = (P^2 - sum_g pos_g^2) / 2`` and needs one
    cumulative sum, of the weights.
    """
    if o.group is None:
        num = np.einsum("ij,ij->i", ps, cum) - 0.5 * np.einsum("ij,ij->i", ps, ws)
    else:
        mid = ends - 0.5 * np.diff(ends, axis=1, prepend=0.0)
        num = np.einsum("ij,ij->i", ps[:, :-1], mid.take(o.group, axis=1))
    return (num - 0.5 * pos ** 2) / (pos * (total - pos))


def _quantile_bins(o: _Order, n_bins, ws, ps, ends, pos, total, pred_sum):
    """Per resample and equal-count bin: weight, prediction sum, positives (as
    :func:`calibdash.measures.binning.quantile_bins` on each resample's weights).

    The inner edges (:func:`calibdash.measures.binning.quantile_edges` of each
    resample's total, whole rows) sit at whole-row positions of the cumulative weight; the
    tied group an edge falls in is split in proportion to weight, so each
    sum at an edge is its sum below the group plus the edge's share of the
    group.
    """
    rows = ws.shape[0]
    inner = binning.quantile_edges(total, n_bins, whole=True)[:, 1:-1]
    g = np.stack([np.searchsorted(ends[r], inner[r]) for r in range(rows)])
    g = np.minimum(g, o.starts.size - 1)
    below = np.where(g > 0, np.take_along_axis(ends, np.maximum(g - 1, 0), axis=1), 0.0)
    upto = np.take_along_axis(ends, g, axis=1)
    first, after = o.starts[g], o.ends[g]
    pos_below = _prefix(ps, first)
    share = (inner - below) / (upto - below)
    f_y = pos_below + share * (_prefix(ps, after) - pos_below)
    f_p = _prefix(ws * o.value, first) + o.value[first] * (inner - below)
    return (_steps(inner, total), _steps(f_p, pred_sum), _steps(f_y, pos))


def _uniform_bins(o: _Order, ws, ps, pos, total, pred_sum):
    """Per resample and equal-width bin: weight, prediction sum, positives (bins are fixed runs of sorted cells)."""
    at = np.broadcast_to(o.uniform, (ws.shape[0], o.uniform.size))
    return (_steps(_prefix(ws, at), total), _steps(_prefix(ws * o.value, at), pred_sum),
            _steps(_prefix(ps, at), pos))


def _steps(inner: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Bin sums from cumulative sums at the inner edges and the row's total."""
    return np.diff(np.column_stack([np.zeros(inner.shape[0]), inner, last]), axis=1)


def _sorted_metrics(plan: _Plan, o: _Order, w, wp, pos, total, pred_sum) -> dict:
    """AUC, ECE and MCE of one method on every resample of a chunk, from its cells sorted once."""
    ws, ps = w.take(o.order, axis=1), wp.take(o.order, axis=1)
    cum = np.empty_like(ws)
    for r in range(ws.shape[0]):                          # row by row: numpy's 2-D cumsum holds the GIL
        np.cumsum(ws[r], out=cum[r])
    ends = cum[:, :-1] if o.group is None else cum.take(o.ends - 1, axis=1)
    if plan.strategy == "quantile":
        bins = _quantile_bins(o, plan.n_bins, ws, ps, ends, pos, total, pred_sum)
    else:
        bins = _uniform_bins(o, ws, ps, pos, total, pred_sum)
    ece, mce = metrics.binned_errors(*bins, total)
    return {"AUC": _auc(o, ws, ps, cum, ends, pos, total), "ECE": ece, "MCE": mce}


def _mvce_rows(mean: np.ndarray, var: np.ndarray, total: np.ndarray, views: int) -> np.ndarray:
    """MVCE of every resample (rows) and method (columns) from its residuals' moments
    (:func:`calibdash.measures.calibration.mvce_of_moments`); the caller blanks one-class rows."""
    out = np.full(mean.shape, np.nan)
    for r in np.flatnonzero(total >= 2):
        out[r] = [metrics.mvce_of_moments(m, v, total[r], views) for m, v in zip(mean[r], var[r])]
    return out


def _measure(plan: _Plan, x: np.ndarray) -> dict:
    """Every asked metric on resampled counts ``x`` (rows, 2C + 2: positives, 0, negatives, 0).

    Returns metric -> (rows, k); NaN on a resample without both classes.
    """
    k = plan.p.shape[1]
    lin = x @ plan.terms
    pos, total = lin[:, -2], lin[:, -1]
    pred_sum = lin[:, 3 * k:4 * k]
    with np.errstate(divide="ignore", invalid="ignore"):
        sq, logl, right, pred = (lin[:, i * k:(i + 1) * k] / total[:, None] for i in range(4))
    out = {"Brier": sq, "RMSE": np.sqrt(sq), "LogLoss": logl, "ACC": right}
    if "MVCE" in plan.names:
        mean = pred - (pos / total)[:, None]                  # of the residuals p - y, whose squares sum to sq
        out["MVCE"] = _mvce_rows(mean, sq - mean ** 2, total, plan.mvce_views)
    if plan.orders:
        cells = plan.p.shape[0] + 1
        wp = x[:, :cells]
        w = wp + x[:, cells:]
        with np.errstate(divide="ignore", invalid="ignore"):
            each = [_sorted_metrics(plan, o, w, wp, pos, total, pred_sum[:, j]) for j, o in enumerate(plan.orders)]
        for name in _SORTED:
            out[name] = np.column_stack([e[name] for e in each])
    one_class = (pos <= 0) | (pos >= total)
    result = {name: np.asarray(out[name], dtype=float) for name in plan.names}
    for values in result.values():
        values[one_class] = np.nan
    return result


def _resample(plan: _Plan, rows: int, seed: np.random.SeedSequence) -> dict:
    """``rows`` resamples drawn from their own seed (one chunk of the bootstrap, run by a worker)."""
    return _measure(plan, plan.poisson.draw(np.random.default_rng(seed), rows))


def _chunks(n_boot: int, cells: int) -> list[int]:
    """Resamples per chunk: a function of the sizes alone, so the draws do not depend on the machine."""
    size = int(np.clip(_CHUNK // max(1, cells), 1, _MAX_ROWS))
    return [size] * (n_boot // size) + ([n_boot % size] if n_boot % size else [])


_BLAS_LOCK = threading.Lock()


@contextmanager
def _one_blas_thread():
    """One BLAS thread while the workers run (one such bootstrap at a time).

    Each worker's matrix product is small; OpenBLAS's own threads would
    spin-wait on the cores the workers need (measured at 10^7 rows on two
    cores: 0.83 s -> 0.51 s), and with one BLAS thread the sums do not
    depend on the number of workers, so neither do the results. The lock
    keeps two bootstraps from restoring each other's limits out of order.
    """
    with _BLAS_LOCK, threadpool_limits(limits=1, user_api="blas"):
        yield


def _cell_inputs(predictions: pd.DataFrame, n, n_pos):
    """Checked ``(p (C, k), n_pos, n_neg)`` as float and int64 arrays."""
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


def _weighted_rows(p: np.ndarray, pos: np.ndarray, neg: np.ndarray):
    """``(predictions (R, k), labels, weights)``: each cell's positive row, then each cell's negative row,
    zero weights dropped (the rows of :meth:`calibdash.cells.ScoreCells.weighted_predictions`)."""
    keep = np.concatenate([pos, neg]) > 0
    labels = np.r_[np.ones(len(p)), np.zeros(len(p))]
    return np.vstack([p, p])[keep], labels[keep], np.concatenate([pos, neg])[keep].astype(float)


def _check_names(names) -> tuple:
    names = tuple(names)
    unknown = [m for m in names if m not in metrics.METRIC_NAMES]
    if unknown or not names:
        raise SettingsError(f"metrics must be among {metrics.METRIC_NAMES}, got {list(names)}.")
    return names


def bootstrap_cells(predictions: pd.DataFrame, n, n_pos, n_boot: int = 200, level: float = 0.95, seed: int = 0,
                    n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                    names=metrics.METRIC_NAMES, mvce_views: int = 100, mvce_max_rows: int = CELLS_MIN_ROWS,
                    workers: int | None = None) -> BootstrapResult:
    """Metrics of score cells with paired intervals from a Poisson bootstrap of their rows.

    Each resample draws, for every cell, ``Poisson(n_pos)`` positives and
    ``Poisson(n - n_pos)`` negatives: the row-level Poisson bootstrap (each
    row counted Poisson(1) times), aggregated per cell. The same draw serves
    every method (a paired bootstrap, for :meth:`BootstrapResult.difference`
    and :func:`verdict`).

    Each method's cells are sorted once; a resample changes only their
    weights. AUC (ties counted one half) and the equal-count bins of ECE and
    MCE (a tied group straddling an edge split in proportion) come from one
    cumulative sum of the sorted weights, Brier, RMSE, log loss and accuracy
    from one matrix product for all methods, so each resample's values are
    those of :func:`calibdash.metrics.summary` with the resampled counts as
    ``sample_weight``, to rounding. MVCE's views shuffle rows; its resampled
    values are those of the partition views that :func:`calibdash.metrics.mvce`
    uses above ``max_rows`` (exact moments of a random partition of the rows,
    the same ``mvce_views`` views, seed 0), which depend only on the
    residuals' weighted mean and variance: the values ``summary`` gives on
    the resampled weights when they total more than ``mvce_max_rows``, and
    its normal approximation below.

    Speed: 200 resamples of 5 methods over 50,000 cells (10^7 rows in five
    folds) take about 0.55 s on two cores, points included
    (``bench/bench_bootstrap.py``); the work grows with cells x resamples x
    methods, not with rows. Resamples run in threads, chunk by chunk, each
    chunk from its own seed.

    Parameters
    ----------
    predictions : DataFrame
        One row per cell, one column per method (``"uncalibrated"`` first, as
        in :attr:`Evaluation.predictions`).
    n, n_pos : array-like of whole numbers
        Rows and positives per cell (:class:`calibdash.cells.ScoreCells`).
        An evaluation on cells (whose judged rows are weighted rows) is
        ``bootstrap_cells(ev.predictions, ev.weights, ev.weights * ev.labels)``.
    n_boot : int, default 200
        Resamples; percentile intervals at ``level``.
    seed : int
        The draws, and so the result, depend on ``seed`` and the inputs
        only, not on ``workers``.
    n_bins, strategy
        Binning of ECE and MCE (``"quantile"`` or ``"uniform"``).
    names : sequence of str, default all of :data:`calibdash.metrics.METRIC_NAMES`
        The metrics in the table, in this order.
    mvce_views, mvce_max_rows
        Passed to :func:`calibdash.metrics.summary` for the point values
        (``mvce_views`` also to the resamples). The default
        ``mvce_max_rows`` is that of :func:`calibdash.evaluation.evaluate_cells`,
        so the values are those of its metrics table; below it MVCE's point
        value shuffles rows, which is the slowest part of a small bootstrap
        (0.2 s per method at 10^5 rows).
    workers : int, optional
        Threads (default: the machine's cores).

    Returns
    -------
    BootstrapResult
        Its ``value`` column is ``metrics.summary`` of the cells' weighted
        rows, exactly (positives of weight ``n_pos`` first, then negatives of
        weight ``n - n_pos``, as :meth:`ScoreCells.weighted_predictions`).
    """
    p, pos, neg = _cell_inputs(predictions, n, n_pos)
    names = _check_names(names)
    n_bins = metrics.check_binning(n_bins, strategy, weighted=True)     # refuses the order-dependent "rank"
    if int(n_boot) < 1:
        raise SettingsError(f"n_boot must be at least 1, got {n_boot}.")
    plan = _plan(p, pos, neg, n_bins, strategy, names, mvce_views)
    sizes = _chunks(int(n_boot), plan.p.shape[0] + 1)
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    rows_p, rows_y, rows_w = _weighted_rows(p, pos, neg)
    workers = int(workers or os.cpu_count() or 1)
    views = mvce_views if "MVCE" in names else 1                          # MVCE left out: spend one view on it
    with _one_blas_thread(), ThreadPoolExecutor(max_workers=workers) as pool:
        points = [pool.submit(metrics.summary, rows_p[:, j], rows_y, n_bins=n_bins, strategy=strategy,
                              mvce_views=views, sample_weight=rows_w, mvce_max_rows=mvce_max_rows)
                  for j in range(p.shape[1])]
        parts = list(pool.map(_resample, [plan] * len(sizes), sizes, seeds))
    methods = list(predictions.columns)
    point = {m: f.result() for m, f in zip(methods, points)}
    samples = {name: np.concatenate([part[name] for part in parts]) for name in names}
    note = _MVCE_NOTE.format(views=mvce_views) if "MVCE" in names else ""
    return _result(point, samples, methods, level, int(n_boot), note)


def resamples_for(n_rows: int, n_methods: int, budget: float = 4e6, most: int = 200, least: int = 50) -> int:
    """How many resamples keep the work near ``budget`` row-metric evaluations (between ``least`` and ``most``).

    About 200 resamples are enough for stable 95% percentile intervals; on large
    held-out sets fewer are used so the page stays responsive, and the page
    says how many.
    """
    return int(np.clip(budget / max(1, n_rows * max(1, n_methods)), least, most))


def verdict(boot: BootstrapResult, calibration_metric: str = "ECE", labels: dict | None = None) -> str:
    """One plain sentence: which method calibrates best without losing discrimination.

    A method "keeps discrimination" when the paired interval of its AUC minus
    the uncalibrated AUC reaches 0 or above. Among those, the one with the
    lowest ``calibration_metric`` wins; the sentence then says whether its lead
    over the runner-up is larger than the paired interval allows (the interval
    of the difference excludes 0) or not.
    """
    labels = labels or {}
    name = lambda m: labels.get(m, m)  # noqa: E731
    t = boot.table
    methods = [m for m in t.index if m != UNCALIBRATED]
    if not methods:
        return "Choose at least one calibrator to compare."
    keeps, lost = [], []
    for m in methods:
        if UNCALIBRATED in t.index:
            _, lo, hi = boot.difference("AUC", m, UNCALIBRATED)
            (keeps if hi >= 0 else lost).append(m)
        else:
            keeps.append(m)
    pool = keeps or methods
    ranked = sorted(pool, key=lambda m: t.loc[m, (calibration_metric, "value")])
    best = ranked[0]
    value = t.loc[best, (calibration_metric, "value")]
    parts = [f"{name(best)} has the lowest {calibration_metric} ({value:.4f})"]
    if keeps:
        parts[0] += " among the methods that do not lower the raw scores' AUC"
    else:
        parts[0] += ", although every method lowers the AUC beyond its interval"
    if len(ranked) > 1:
        second = ranked[1]
        diff, lo, hi = boot.difference(calibration_metric, best, second)
        level = int(round(100 * boot.level))
        if hi < 0:
            parts.append(f"its lead over {name(second)} ({-diff:.4f}) is larger than the {level}% paired interval "
                         f"allows ([{-hi:.4f}, {-lo:.4f}])")
        else:
            parts.append(f"but its lead over {name(second)} ({-diff:.4f}) is within the {level}% paired interval "
                         f"([{-hi:.4f}, {-lo:.4f}]): the two cannot be told apart on these rows")
    if lost:
        parts.append("AUC clearly lowered by " + ", ".join(name(m) for m in lost))
    return "; ".join(parts) + "."


def _groups_of(values: np.ndarray, weight: np.ndarray, max_groups: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Group of each cell, and each group's prediction when the groups are the distinct predictions.

    Up to ``max_groups`` distinct predictions, a group is one of them (and
    its value is returned); past that, one of ``max_groups`` runs of
    adjacent predictions holding about equal weight, a tied prediction never
    split (value None: each resample takes the run's weighted mean).
    """
    uniq, inv = np.unique(values, return_inverse=True)
    if uniq.size <= max_groups:
        return inv, uniq
    w = np.bincount(inv, weights=weight)
    below = np.cumsum(w) - w                                  # weight below each distinct prediction
    return np.minimum((below / max(w.sum(), 1e-300) * max_groups).astype(np.int64), max_groups - 1)[inv], None


def _grouped_rows(value, group, group_value, size, w_pos, w_neg):
    """A method's weighted rows after grouping: per group, its positives and its negatives at one prediction
    (the group's own value, or the resample's weighted mean prediction of the run); zero weights dropped."""
    pos = np.bincount(group, weights=w_pos, minlength=size)
    neg = np.bincount(group, weights=w_neg, minlength=size)
    if group_value is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            group_value = np.clip(np.bincount(group, weights=(w_pos + w_neg) * value, minlength=size)
                                  / (pos + neg), 0.0, 1.0)
    keep = np.concatenate([pos, neg]) > 0
    p = np.concatenate([group_value, group_value])[keep]
    y = np.r_[np.ones(size), np.zeros(size)][keep]
    return p, y, np.concatenate([pos, neg])[keep]


#: Nodes of ICI's loess curve in each resample of :func:`bootstrap_measures` (the point value uses the default).
_RESAMPLE_LOESS_POINTS = 100


def bootstrap_measures(predictions: pd.DataFrame, n, n_pos, names=None, n_boot: int = 100, level: float = 0.95,
                       seed: int = 0, max_groups: int = 512, workers: int | None = None) -> BootstrapResult:
    """The measures of :mod:`calibdash.measures` with paired intervals from a Poisson bootstrap of score cells.

    The point values are :func:`calibdash.measures.compute` on the cells'
    weighted rows, exactly. Each resample draws, for every cell,
    ``Poisson(n_pos)`` positives and ``Poisson(n - n_pos)`` negatives (the
    row-level Poisson bootstrap, as :func:`bootstrap_cells`), the same draw
    for every method. The resamples are measured on each method's cells
    grouped by prediction: cells of equal prediction merge (which changes no
    measure), and a method with more than ``max_groups`` distinct predictions
    is measured on ``max_groups`` runs of adjacent predictions of about equal
    weight, each run's rows at the run's mean prediction in that resample.
    That grouping moves a prediction by less than its run's width; it serves the intervals only, which are what it speeds up (the
    loess of ICI, the Newton fits of the slope and the PAV of CORP run on at
    most ``2 max_groups`` weighted rows per resample instead of two per cell),
    as does fitting each resample's loess curve exactly at 100 nodes instead
    of 500 (it is interpolated between them).

    Parameters
    ----------
    predictions : DataFrame
        One row per cell, one column per method.
    n, n_pos : array-like of whole numbers
        Rows and positives per cell.
    names : sequence of str, optional
        Measures (default all of :data:`calibdash.measures.MEASURE_NAMES`).
    n_boot : int, default 100
    level : float, default 0.95
    seed : int
    max_groups : int, default 512
    workers : int, optional
        Threads (default: the machine's cores); the result does not depend on it.

    Returns
    -------
    BootstrapResult
    """
    from . import measures

    p, pos, neg = _cell_inputs(predictions, n, n_pos)
    names = measures.check_names(names)
    if int(n_boot) < 1:
        raise SettingsError(f"n_boot must be at least 1, got {n_boot}.")
    if int(max_groups) < 2:
        raise SettingsError(f"max_groups must be at least 2, got {max_groups}.")
    cells = p.shape[0]
    groups = [_groups_of(p[:, j], (pos + neg).astype(float), int(max_groups)) for j in range(p.shape[1])]
    sizes = [int(g.max()) + 1 if g.size else 0 for g, _ in groups]
    draws = _Poisson(np.concatenate([pos, neg])).draw(np.random.default_rng(seed), int(n_boot))
    rows_p, rows_y, rows_w = _weighted_rows(p, pos, neg)

    def one(r: int) -> np.ndarray:
        w_pos, w_neg = draws[r, :cells], draws[r, cells:]
        if w_pos.sum() <= 0 or w_neg.sum() <= 0:
            return np.full((len(names), p.shape[1]), np.nan)
        cols = []
        for j in range(p.shape[1]):
            gp, gy, gw = _grouped_rows(p[:, j], *groups[j], sizes[j], w_pos, w_neg)
            values = measures.compute(gp, gy, gw, names, loess_points=_RESAMPLE_LOESS_POINTS)
            cols.append([values[m] for m in names])
        return np.array(cols).T

    with ThreadPoolExecutor(max_workers=int(workers or os.cpu_count() or 1)) as pool:
        points = [pool.submit(measures.compute, rows_p[:, j], rows_y, rows_w, names) for j in range(p.shape[1])]
        resampled = np.stack(list(pool.map(one, range(int(n_boot)))))       # (n_boot, measures, methods)
    methods = list(predictions.columns)
    point = {m: f.result() for m, f in zip(methods, points)}
    samples = {name: resampled[:, i, :] for i, name in enumerate(names)}
    note = (f"Intervals from {int(n_boot)} paired Poisson resamples of the judged rows; each method's resamples are "
            f"measured on at most {int(max_groups)} groups of adjacent predictions.")
    return _result(point, samples, methods, level, int(n_boot), note)


def bootstrap_evaluation(ev: Evaluation, n_boot: int | None = None, seed: int = 0) -> BootstrapResult:
    """Paired bootstrap intervals of ``ev``'s metrics, as the Compare page draws them.

    Rows (``ev.weights is None``): :func:`~calibdash.bootstrap.bootstrap_metrics`
    with :func:`~calibdash.bootstrap.resamples_for` resamples unless ``n_boot``
    is given; score cells: :func:`~calibdash.bootstrap.bootstrap_cells` (200
    Poisson resamples unless ``n_boot`` is given), each weighted row being a
    cell's positives or its negatives.
    """
    if ev.weights is not None:
        return bootstrap_cells(ev.predictions, ev.weights, ev.weights * ev.labels, seed=seed,
                                     **({} if n_boot is None else {"n_boot": int(n_boot)}))
    n_boot = resamples_for(len(ev.rows), ev.predictions.shape[1]) if n_boot is None else int(n_boot)
    return bootstrap_metrics(ev.predictions, ev.labels, n_boot=n_boot, seed=seed)
