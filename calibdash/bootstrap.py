"""Bootstrap intervals for a metrics table, and a plain verdict on it.

Rows are resampled with replacement, the same resample for every method
(a *paired* bootstrap), so differences between methods get intervals too: two
methods whose own intervals overlap may still differ clearly, and the verdict
uses the interval of the difference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import metrics
from .evaluation import UNCALIBRATED

__all__ = ["BootstrapResult", "bootstrap_metrics", "resamples_for", "verdict"]


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
    """

    table: pd.DataFrame
    samples: dict
    level: float
    n_boot: int = 0

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


def bootstrap_metrics(predictions: pd.DataFrame, labels, n_boot: int = 200, level: float = 0.95,
                      seed: int = 0, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                      mvce_views: int = 10) -> BootstrapResult:
    """Metrics of every column of ``predictions`` with paired percentile intervals.

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
    alpha = (1 - level) / 2
    cols = {}
    for name in names:
        lo = np.nanquantile(samples[name], alpha, axis=0)
        hi = np.nanquantile(samples[name], 1 - alpha, axis=0)
        cols[(name, "value")] = [point[m][name] for m in predictions.columns]
        cols[(name, "low")] = lo
        cols[(name, "high")] = hi
    table = pd.DataFrame(cols, index=list(predictions.columns))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["metric", "stat"])
    return BootstrapResult(table=table, samples=samples, level=level, n_boot=n_boot)


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
