"""The cells bootstrap (large data): a paired Poisson bootstrap of score cells, vectorised over resamples.

Each method's predictions are sorted once; a resample only changes weights,
so every metric is a weighted sum or a cumulative sum over the sorted cells,
vectorised over resamples, and MVCE comes from the moments of its partition
views (200 resamples of ten million rows in about half a second on two
cores, ``bench/bench_bootstrap.py``).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..errors import SettingsError
from ..evaluation import CELLS_MIN_ROWS
from ..measures import binning, calibration as metrics
from .poisson import Poisson, cell_inputs, weighted_rows
from .result import BootstrapResult, percentile_result

__all__ = ["bootstrap_cells"]

#: Cells x resamples measured at once (memory: about 8 MB per array); at most _MAX_ROWS resamples.
_CHUNK = 1 << 20
_MAX_ROWS = 25
#: The metrics that need each method's sorted cells.
_SORTED = frozenset({"AUC", "ECE", "MCE"})
#: What BootstrapResult.note says on the cells path.
_MVCE_NOTE = ("MVCE's resamples are measured with the partition views of metrics.mvce ({views} views, seed 0: "
              "the exact moments of a random partition of the resampled rows).")


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
    poisson: Poisson             # means: positives, 0, negatives, 0
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
    return _Plan(p, Poisson(np.concatenate([pos, zero, neg, zero])), _terms(p), orders, n_bins, strategy,
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
    p, pos, neg = cell_inputs(predictions, n, n_pos)
    names = _check_names(names)
    n_bins = metrics.check_binning(n_bins, strategy, weighted=True)     # refuses the order-dependent "rank"
    if int(n_boot) < 1:
        raise SettingsError(f"n_boot must be at least 1, got {n_boot}.")
    plan = _plan(p, pos, neg, n_bins, strategy, names, mvce_views)
    sizes = _chunks(int(n_boot), plan.p.shape[0] + 1)
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    rows_p, rows_y, rows_w = weighted_rows(p, pos, neg)
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
    return percentile_result(point, samples, methods, level, int(n_boot), note)
