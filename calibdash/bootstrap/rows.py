"""The row bootstrap (small data): rows resampled with replacement, every resample measured with
:func:`calibdash.metrics.summary`; and how many resamples keep the page responsive."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from .result import BootstrapResult, percentile_result

__all__ = ["bootstrap_metrics", "resamples_for"]


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
    return percentile_result(point, samples, list(predictions.columns), level, n_boot)



def resamples_for(n_rows: int, n_methods: int, budget: float = 4e6, most: int = 200, least: int = 50) -> int:
    """How many resamples keep the work near ``budget`` row-metric evaluations (between ``least`` and ``most``).

    About 200 resamples are enough for stable 95% percentile intervals; on large
    held-out sets fewer are used so the page stays responsive, and the page
    says how many.
    """
    return int(np.clip(budget / max(1, n_rows * max(1, n_methods)), least, most))
