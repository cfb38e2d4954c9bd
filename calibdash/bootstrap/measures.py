"""The further measures (:mod:`calibdash.measures`) with paired intervals from a Poisson bootstrap of score cells,
each resample measured on the cells grouped by prediction."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ..errors import SettingsError
from .draws import Poisson, cell_inputs, weighted_rows
from .result import BootstrapResult, percentile_result

__all__ = ["bootstrap_measures"]


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
    from .. import measures

    p, pos, neg = cell_inputs(predictions, n, n_pos)
    names = measures.check_names(names)
    if int(n_boot) < 1:
        raise SettingsError(f"n_boot must be at least 1, got {n_boot}.")
    if int(max_groups) < 2:
        raise SettingsError(f"max_groups must be at least 2, got {max_groups}.")
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
    return percentile_result(point, samples, methods, level, int(n_boot), note)
