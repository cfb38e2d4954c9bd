"""The cells bootstrap (large data): a paired Poisson bootstrap of score cells, for every binary measure.

A measure with a statistics form (:mod:`calibdash.measures.registry`) is resampled vectorised: each method's
predictions are sorted once and a resample only changes weights, so each such measure is a weighted sum (``Mean``, one
matrix product), a cumulative sum over the sorted cells (``Sorted``) or, for MVCE, the moments of its partition views
(``Moments``). The binned and ranked measures are written once, over the tied groups of a sort and a weights array
of any number of rows (``group_bin_sums``, ``group_auc``): a measure calls them with one row, this module with a chunk
of resamples, so each resample's AUC, ECE and MCE are the measures' own on its weights. A measure without a form
(the further measures: loess, Newton fits, PAV) is measured on each resample's cells grouped by prediction.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ...core.errors import SettingsError
from ..holdout import CELLS_MIN_ROWS
from ...measures import binning, calibration as metrics, compute as compute_measures
from ...measures.registry import BINARY, Mean, Moments, Sorted, select_names, view
from .draws import Poisson, cell_inputs, weighted_rows
from .result import BootstrapResult, percentile_result

__all__ = []

#: The binary measures: the records each name stands for; the further measures' names.
_RECORDS = view(BINARY)
_FURTHER = tuple(view(BINARY, metric=False))

#: Cells x resamples measured at once (memory: about 8 MB per array); at most _MAX_ROWS resamples.
_CHUNK = 1 << 20
_MAX_ROWS = 25
#: What BootstrapResult.note says on the cells path.
_MVCE_NOTE = ("MVCE's resamples are measured with the partition views of metrics.mvce ({views} views, seed 0: "
              "the exact moments of a random partition of the resampled rows).")


class _Sorted(NamedTuple):
    """One method's cells sorted once for every resample: in runs of tied predictions
    (:func:`calibdash.measures.binning.sort_runs`) and, for ``"uniform"``, where its equal-width bins start."""

    runs: binning.SortedRuns
    ties: bool                   # whether two cells tie (else each run is one cell)
    at: np.ndarray | None        # binning.uniform_starts of the runs' values, or None for equal-count bins


def _prediction(p, y):
    """The prediction itself, the term whose mean with the Brier score's gives MVCE's moments."""
    return p


class _Plan(NamedTuple):
    """What every resample reuses: the merged cells, their Poisson sampler, the linear terms and the sorts."""

    p: np.ndarray                # (C, k) predictions of the merged cells
    poisson: Poisson             # means: positives, 0, negatives, 0
    terms: np.ndarray            # (2C + 2, len(term_list) k + 2)
    term_list: list              # the per-row terms of the columns of ``terms``
    orders: list                 # one _Sorted per method (empty when no Sorted measure is asked for)
    n_bins: int
    strategy: str
    names: tuple
    mvce_views: int


def _merge(p: np.ndarray, pos: np.ndarray, neg: np.ndarray):
    """Cells with the same prediction under every method merged, empty cells dropped: a Poisson draw of ``a + b``
    rows is distributed as the sum of draws of ``a`` and ``b``, so merging changes the work, not the bootstrap."""
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
    orders = []
    if any(isinstance(_RECORDS[n].statistics, Sorted) for n in names):
        for j in range(p.shape[1]):
            runs = binning.sort_runs(p[:, j])
            at = binning.uniform_starts(runs.value, n_bins) if strategy == "uniform" else None
            orders.append(_Sorted(runs, runs.start.size < p.shape[0], at))
    # the per-row terms the asked measures sum (shared ones once), with MVCE's squared error and prediction
    forms = [_RECORDS[n].statistics for n in names]
    terms = [f.term for f in forms if isinstance(f, Mean)]
    if any(isinstance(f, Moments) for f in forms):
        terms += [metrics.squared_errors, _prediction]
    terms = list(dict.fromkeys(terms))
    # per weighted row (positive rows, an empty cell, negative rows, an empty cell: the Poisson draws' layout), each
    # term per method, then the label and 1: a weighted count times this gives every linear measure
    ones = np.ones((p.shape[0], 1))
    pos_t, neg_t = (np.hstack([term(p, y) for term in terms] + [y * ones, ones]) for y in (1.0, 0.0))
    pad = np.zeros((1, pos_t.shape[1]))
    return _Plan(p, Poisson(np.concatenate([pos, zero, neg, zero]), draws=n_boot), np.vstack([pos_t, pad, neg_t, pad]),
                 terms, orders, n_bins, strategy, tuple(names), int(mvce_views))


def _sorted_metrics(plan: _Plan, o: _Sorted, w, wp, total) -> dict:
    """AUC, ECE and MCE of one method on every resample of a chunk, from each resample's weights of its tied groups."""
    ws, ps = w.take(o.runs.order, axis=1), wp.take(o.runs.order, axis=1)
    if o.ties:
        ws, ps = np.add.reduceat(ws, o.runs.start, axis=1), np.add.reduceat(ps, o.runs.start, axis=1)
    bins = binning.group_bin_sums(ws, ps, o.runs.value, plan.n_bins, True, o.at)
    ece, mce = metrics.binned_errors(*bins, total)
    return {"AUC": metrics.group_auc(ws, ps), "ECE": ece, "MCE": mce}


def _measure(plan: _Plan, x: np.ndarray) -> dict:
    """Every asked metric -> (rows, k) on resampled counts ``x`` (rows, 2C + 2); NaN where a class is missing."""
    k = plan.p.shape[1]
    lin = x @ plan.terms
    pos, total = lin[:, -2], lin[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        means = {term: lin[:, i * k:(i + 1) * k] / total[:, None] for i, term in enumerate(plan.term_list)}
    out = {}
    for name in plan.names:
        form = _RECORDS[name].statistics
        if isinstance(form, Mean):
            out[name] = means[form.term] if form.then is None else form.then(means[form.term])
        elif isinstance(form, Moments):
            sq = means[metrics.squared_errors]
            mean = means[_prediction] - (pos / total)[:, None]   # of the residuals p - y, whose squares sum to sq
            out[name] = np.full(mean.shape, np.nan)           # per resample (rows) and method, from the moments
            for r in np.flatnonzero(total >= 2):
                out[name][r] = [metrics.mvce_of_moments(m, v, total[r], plan.mvce_views)
                                for m, v in zip(mean[r], sq[r] - mean[r] ** 2)]
    if plan.orders:
        cells = plan.p.shape[0]
        wp = x[:, :cells]
        w = wp + x[:, cells + 1:2 * cells + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            each = [_sorted_metrics(plan, o, w, wp, total) for o in plan.orders]
        for name in plan.names:
            if isinstance(_RECORDS[name].statistics, Sorted):
                out[name] = np.column_stack([e[_RECORDS[name].statistics.part] for e in each])
    one_class = (pos <= 0) | (pos >= total)
    result = {name: np.asarray(out[name], dtype=float) for name in plan.names}
    for values in result.values():
        values[one_class] = np.nan
    return result


def _resample(plan: _Plan, rows: int, seed: np.random.SeedSequence) -> dict:
    """``rows`` resamples drawn from their own seed (one chunk of the bootstrap, run by a worker)."""
    return _measure(plan, plan.poisson.draw(np.random.default_rng(seed), rows))


#: One BLAS thread while the workers run, one such bootstrap at a time: OpenBLAS's threads would spin-wait on the
#: workers' cores (10^7 rows, two cores: 0.83 s -> 0.51 s), and the sums then do not depend on the number of
#: workers. The lock keeps two bootstraps from restoring each other's limits out of order.
_BLAS_LOCK = threading.Lock()


def _groups_of(values: np.ndarray, weight: np.ndarray, max_groups: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Group of each cell: a distinct prediction (whose values are returned) up to ``max_groups`` of them, else one
    of ``max_groups`` runs of adjacent predictions of about equal weight, ties never split (values None)."""
    uniq, inv = np.unique(values, return_inverse=True)
    if uniq.size <= max_groups:
        return inv, uniq
    w = np.bincount(inv, weights=weight)
    below = np.cumsum(w) - w                                  # weight below each distinct prediction
    return np.minimum((below / max(w.sum(), 1e-300) * max_groups).astype(np.int64), max_groups - 1)[inv], None


def _grouped_rows(value, group, group_value, size, w_pos, w_neg):
    """A method's weighted rows after grouping: per group its positives and negatives at the group's value (or the
    run's weighted mean prediction in this resample); zero weights dropped."""
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


def _grouped(p, pos, neg, names, n_boot: int, seed: int, max_groups: int, pool):
    """The measures without a statistics form: point values on the cells' weighted rows, resamples on each
    method's grouped cells."""
    cells = p.shape[0]
    groups = [_groups_of(p[:, j], (pos + neg).astype(float), int(max_groups)) for j in range(p.shape[1])]
    sizes = [int(g.max()) + 1 if g.size else 0 for g, _ in groups]
    draws = Poisson(np.concatenate([pos, neg])).draw(np.random.default_rng(seed), int(n_boot))
    rows_p, rows_y, rows_w = weighted_rows(p, pos, neg)

    def one(r: int) -> np.ndarray:
        w_pos, w_neg = draws[r, :cells], draws[r, cells:]
        if w_pos.sum() <= 0 or w_neg.sum() <= 0:
            return np.full((len(names), p.shape[1]), np.nan)
        cols = []
        for j in range(p.shape[1]):
            gp, gy, gw = _grouped_rows(p[:, j], *groups[j], sizes[j], w_pos, w_neg)
            values = compute_measures(gp, gy, gw, names, loess_points=_RESAMPLE_LOESS_POINTS)
            cols.append([values[m] for m in names])
        return np.array(cols).T

    points = [pool.submit(compute_measures, rows_p[:, j], rows_y, rows_w, names) for j in range(p.shape[1])]
    resampled = np.stack(list(pool.map(one, range(int(n_boot)))))       # (n_boot, measures, methods)
    note = (f"Intervals from {int(n_boot)} paired Poisson resamples of the judged rows; each method's resamples are "
            f"measured on at most {int(max_groups)} groups of adjacent predictions.")
    return [f.result() for f in points], {name: resampled[:, i, :] for i, name in enumerate(names)}, note


def bootstrap_cells(predictions: pd.DataFrame, n, n_pos, n_boot: int = 200, level: float = 0.95, seed: int = 0,
                    n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                    names=metrics.METRIC_NAMES, mvce_views: int = 100, mvce_max_rows: int = CELLS_MIN_ROWS,
                    workers: int | None = None, max_groups: int = 512) -> BootstrapResult:
    """Binary measures of score cells with paired intervals from a Poisson bootstrap of their rows.

    Each resample draws, for every cell, ``Poisson(n_pos)`` positives and ``Poisson(n - n_pos)`` negatives (the
    row-level Poisson bootstrap aggregated per cell), the same draw for every method. Each resample's values are
    :func:`calibdash.metrics.summary`'s with the resampled counts as ``sample_weight``: AUC, ECE and MCE exactly,
    Brier, RMSE, log loss and accuracy to rounding; MVCE's are its partition views (exact moments of a random
    partition, the same ``mvce_views`` views, seed 0), ``summary``'s own above ``mvce_max_rows`` rows. The measures
    without a statistics form have exact point values; their resamples are measured on each method's cells grouped
    into at most ``max_groups`` runs of adjacent predictions of about equal weight, each at its mean prediction in
    that resample (ICI's loess at 100 nodes). 200 resamples of 5 methods over 50,000 cells take about 0.55 s on two
    cores (``bench/bench_bootstrap.py``).

    Parameters
    ----------
    predictions : DataFrame
        One row per cell, one column per method (``"uncalibrated"`` first).
    n, n_pos : array-like of whole numbers
        Rows and positives per cell; for an evaluation on cells ``ev.weights`` and ``ev.weights * ev.labels``.
    n_boot, level, seed, workers
        Resamples, percentile level, the seed the result depends on (with the inputs, not the ``workers`` threads,
        default the machine's cores).
    n_bins, strategy
        Binning of ECE and MCE (``"quantile"`` or ``"uniform"``).
    names : sequence of str, default :data:`calibdash.measures.calibration.METRIC_NAMES`
        Measures (any of :data:`calibdash.measures.ALL_NAMES`).
    mvce_views, mvce_max_rows
        Passed to :func:`calibdash.metrics.summary` for the point values (the default as ``evaluate_cells``).

    Returns
    -------
    BootstrapResult
        Its ``value`` column is ``metrics.summary`` of the cells' weighted rows, exactly.
    """
    p, pos, neg = cell_inputs(predictions, n, n_pos)
    names = tuple(names)
    if not names or any(m not in _RECORDS for m in names):
        raise SettingsError(f"measures must be among {tuple(_RECORDS)}, got {list(names)}.")
    n_bins = metrics.check_binning(n_bins, strategy, weighted=True)     # refuses the order-dependent "rank"
    if int(n_boot) < 1:
        raise SettingsError(f"n_boot must be at least 1, got {n_boot}.")
    if int(max_groups) < 2:
        raise SettingsError(f"max_groups must be at least 2, got {max_groups}.")
    fast = tuple(m for m in names if _RECORDS[m].statistics is not None)
    slow = tuple(m for m in names if _RECORDS[m].statistics is None)
    methods = list(predictions.columns)
    point = {m: {} for m in methods}
    samples, notes = {}, []
    with (_BLAS_LOCK, threadpool_limits(limits=1, user_api="blas"),
          ThreadPoolExecutor(max_workers=int(workers or os.cpu_count() or 1)) as pool):
        if fast:
            plan = _plan(p, pos, neg, n_bins, strategy, fast, mvce_views, int(n_boot))
            # resamples per chunk: a function of the sizes alone, so the draws do not depend on the machine
            size = int(np.clip(_CHUNK // (plan.p.shape[0] + 1), 1, _MAX_ROWS))
            sizes = [size] * (int(n_boot) // size) + ([int(n_boot) % size] if int(n_boot) % size else [])
            seeds = np.random.SeedSequence(seed).spawn(len(sizes))
            rows_p, rows_y, rows_w = weighted_rows(p, pos, neg)
            views = mvce_views if "MVCE" in fast else 1                   # MVCE left out: spend one view on it
            points = [pool.submit(metrics.summary, rows_p[:, j], rows_y, n_bins=n_bins, strategy=strategy,
                                  mvce_views=views, sample_weight=rows_w, mvce_max_rows=mvce_max_rows)
                      for j in range(p.shape[1])]
            parts = list(pool.map(_resample, [plan] * len(sizes), sizes, seeds))
            for j, (m, f) in enumerate(zip(methods, points)):
                point[m].update(f.result())
                point[m].update({name: _RECORDS[name].compute(rows_p[:, j], rows_y, rows_w) for name in fast
                                 if _RECORDS[name].family != "summary"})     # a record outside the papers' metrics
            samples.update({name: np.concatenate([part[name] for part in parts]) for name in fast})
            notes.append(_MVCE_NOTE.format(views=mvce_views) if "MVCE" in fast else "")
        if slow:
            values, resampled, note = _grouped(p, pos, neg, slow, int(n_boot), seed, int(max_groups), pool)
            for m, v in zip(methods, values):
                point[m].update(v)
            samples.update(resampled)
            notes.append(note)
    return percentile_result(point, samples, methods, level, int(n_boot), " ".join(n for n in notes if n))


def bootstrap_measures(predictions: pd.DataFrame, n, n_pos, names=None, n_boot: int = 100, level: float = 0.95,
                       seed: int = 0, max_groups: int = 512, workers: int | None = None) -> BootstrapResult:
    """:func:`bootstrap_cells` of the further measures (default all of :data:`calibdash.measures.MEASURE_NAMES`,
    in table order; a name among them only, else SettingsError), 100 resamples unless ``n_boot`` says."""
    return bootstrap_cells(predictions, n, n_pos, n_boot, level, seed, names=select_names(names, _FURTHER),
                           max_groups=max_groups, workers=workers)
