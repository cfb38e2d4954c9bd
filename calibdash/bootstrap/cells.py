"""The cells bootstrap (large data): a paired Poisson bootstrap of score cells, vectorised over resamples.

Each method's predictions are sorted once; a resample only changes weights,
so every metric is a weighted sum or a cumulative sum over the sorted cells,
vectorised over resamples, and MVCE comes from the moments of its partition
views (``bench/bench_bootstrap.py`` times it).

Fast without a second copy of the measures: the binned and ranked measures
are written once, in :mod:`calibdash.measures`, over the tied groups of a
sort and a weights array of any number of rows
(:func:`calibdash.measures.binning.group_bin_sums` for ECE and MCE's bins,
:func:`calibdash.measures.calibration.group_auc`); a measure calls them with
its rows' groups as one row, this module with a chunk of resamples as many
rows. What stays here is what only the bootstrap needs: the sort of each
method's cells, done once and reused by every chunk (:func:`_sort`), the
sum of each resample's cell counts over those tied groups (one
``np.add.reduceat``), and the matrix product that gives the linear metrics.
The shared functions work row-wise with numpy (cumulative sums row by row,
which release the GIL, one ``reduceat`` pass per sum), so a chunk costs
what the former hand-written copy cost, and each resample's AUC, ECE and
MCE are those of :func:`calibdash.measures.calibration.auc`, ``ece`` and
``mce`` on its weights exactly (``tests/test_bootstrap.py``).
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
from .draws import Poisson, cell_inputs, weighted_rows
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


class _Sorted(NamedTuple):
    """One method's cells sorted once for every resample: in runs of tied predictions
    (:func:`calibdash.measures.binning.sort_runs`) and, for ``"uniform"``, where its equal-width bins start."""

    runs: binning.SortedRuns
    ties: bool                   # whether two cells tie (else each run is one cell)
    at: np.ndarray | None        # binning.uniform_starts of the runs' values, or None for equal-count bins


def _sort(p: np.ndarray, n_bins: int, strategy: str) -> _Sorted:
    runs = binning.sort_runs(p)
    at = binning.uniform_starts(runs.value, n_bins) if strategy == "uniform" else None
    return _Sorted(runs, runs.start.size < p.size, at)


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
    orders: list                 # one _Sorted per method (empty when no sorted metric is asked for)
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


def _plan(p, pos, neg, n_bins, strategy, names, mvce_views, n_boot: int | None = None) -> _Plan:
    p, pos, neg = _merge(p, pos, neg)
    zero = np.zeros(1, dtype=np.int64)
    sorted_ = _SORTED.intersection(names)
    orders = [_sort(p[:, j], n_bins, strategy) for j in range(p.shape[1])] if sorted_ else []
    return _Plan(p, Poisson(np.concatenate([pos, zero, neg, zero]), draws=n_boot), _terms(p), orders, n_bins, strategy,
                 tuple(names), int(mvce_views))


def _sorted_metrics(plan: _Plan, o: _Sorted, w, wp, total) -> dict:
    """AUC, ECE and MCE of one method on every resample of a chunk: the measures' own functions
    (:func:`calibdash.measures.binning.group_bin_sums`, :func:`calibdash.measures.calibration.group_auc`)
    on each resample's weights of the method's tied groups."""
    ws, ps = w.take(o.runs.order, axis=1), wp.take(o.runs.order, axis=1)
    if o.ties:
        ws, ps = np.add.reduceat(ws, o.runs.start, axis=1), np.add.reduceat(ps, o.runs.start, axis=1)
    bins = binning.group_bin_sums(ws, ps, o.runs.value, plan.n_bins, True, o.at)
    ece, mce = metrics.binned_errors(*bins, total)
    return {"AUC": metrics.group_auc(ws, ps), "ECE": ece, "MCE": mce}


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
    with np.errstate(divide="ignore", invalid="ignore"):
        sq, logl, right, pred = (lin[:, i * k:(i + 1) * k] / total[:, None] for i in range(4))
    out = {"Brier": sq, "RMSE": np.sqrt(sq), "LogLoss": logl, "ACC": right}
    if "MVCE" in plan.names:
        mean = pred - (pos / total)[:, None]                  # of the residuals p - y, whose squares sum to sq
        out["MVCE"] = _mvce_rows(mean, sq - mean ** 2, total, plan.mvce_views)
    if plan.orders:
        cells = plan.p.shape[0]
        wp = x[:, :cells]
        w = wp + x[:, cells + 1:2 * cells + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            each = [_sorted_metrics(plan, o, w, wp, total) for o in plan.orders]
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
    weights. AUC (ties counted one half) and the bins of ECE and MCE (a tied
    group straddling an equal-count edge split in proportion) are the
    measures' own functions on each resample's weights of the tied groups,
    Brier, RMSE, log loss and accuracy come from one matrix product for all
    methods, so each resample's values are those of
    :func:`calibdash.metrics.summary` with the resampled counts as
    ``sample_weight`` (AUC, ECE and MCE exactly, the others to rounding). MVCE's views shuffle rows; its resampled
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
    plan = _plan(p, pos, neg, n_bins, strategy, names, mvce_views, int(n_boot))
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
