"""The bootstrap's result (point values, percentile intervals, the paired resamples) and a plain verdict on it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..holdout import UNCALIBRATED

__all__ = []


@dataclass
class BootstrapResult:
    """Point estimates, intervals at ``level`` and the resampled values: ``table``, methods x (metric, {"value", "low",
    "high"}); ``samples``, metric -> (n_boot, n_methods) resampled values in the table's method order (for paired
    differences); ``note``, how the intervals were drawn when it needs saying.
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


def percentile_result(point: dict, samples: dict, methods: list, level: float, n_boot: int,
                      note: str = "") -> BootstrapResult:
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


def verdict(boot: BootstrapResult, calibration_metric: str = "ECE", labels: dict | None = None,
            discrimination_metric: str | None = None) -> str:
    """One plain sentence: which method calibrates best without losing discrimination.

    A method "keeps discrimination" when the paired interval of its ``discrimination_metric`` (higher is better;
    default AUC when the bootstrap has it, else accuracy) minus the uncalibrated one reaches 0 or above. Among those
    the lowest ``calibration_metric`` wins; the sentence says whether its lead over the runner-up is larger than the
    paired interval allows (the interval of the difference excludes 0).
    """
    labels = labels or {}
    if discrimination_metric is None:
        discrimination_metric = "AUC" if "AUC" in boot.samples else "Accuracy"
    name = lambda m: labels.get(m, m)  # noqa: E731
    t = boot.table
    methods = [m for m in t.index if m != UNCALIBRATED]
    if not methods:
        return "Choose at least one calibrator to compare."
    keeps, lost = [], []
    for m in methods:
        kept = UNCALIBRATED not in t.index or boot.difference(discrimination_metric, m, UNCALIBRATED)[2] >= 0
        (keeps if kept else lost).append(m)
    pool = keeps or methods
    ranked = sorted(pool, key=lambda m: t.loc[m, (calibration_metric, "value")])
    best = ranked[0]
    value = t.loc[best, (calibration_metric, "value")]
    parts = [f"{name(best)} has the lowest {calibration_metric} ({value:.4f})"]
    if keeps:
        parts[0] += f" among the methods that do not lower the raw scores' {discrimination_metric}"
    else:
        parts[0] += f", although every method lowers the {discrimination_metric} beyond its interval"
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
        parts.append(f"{discrimination_metric} clearly lowered by " + ", ".join(name(m) for m in lost))
    return "; ".join(parts) + "."
