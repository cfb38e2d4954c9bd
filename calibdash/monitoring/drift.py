"""Calibration over time: per-period metrics with intervals (:func:`over_time`), and when a fitted calibrator goes
stale (:func:`staleness`, fitted on each period, judged on every later one: the honest protocol for data that drifts,
which a random split mixing all periods would hide). A one-class period has no calibration metrics, as a group.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from .group_metrics import BinnedReport, cell_rows, stats_table
from .periods import (FREQ_NAMES, MAX_AUTO_PERIODS, YMD_RANGE, Periods, as_dates, check_rows,
                      freq_from_days, periods_of, to_periods)
from .staleness import FRESH_COL, RAW_COL, STALE_COL, staleness

__all__ = [
    "FREQ_NAMES", "MAX_AUTO_PERIODS", "as_dates", "freq_from_days", "YMD_RANGE", "RAW_COL", "STALE_COL",
    "FRESH_COL", "to_periods", "staleness"
]


@dataclass
class DriftReport(BinnedReport):
    """Per-period calibration of one score (see :func:`over_time`): ``table``, one row per period (index: its label, in
    time order) of ``start`` and :func:`~calibdash.monitoring.group_metrics.group_stats`' values; ``reliability``,
    period -> its reliability table; the ``periods``, ``notes``, and how ECE was binned and the intervals drawn.
    """

    table: pd.DataFrame
    reliability: dict
    periods: Periods
    notes: list
    n_bins: int = metrics.DEFAULT_N_BINS
    strategy: str = metrics.DEFAULT_STRATEGY
    n_boot: int = 200
    level: float = 0.95


def over_time(scores, labels, dates, sample_weight=None, freq: str = "auto", n_bins: int = metrics.DEFAULT_N_BINS,
              strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, seed: int = 0, level: float = 0.95,
              *, column: str = "the date column") -> DriftReport:
    """Calibration of ``scores`` in every period of ``dates`` (a date or period column, or :class:`Periods`; made by
    :func:`to_periods` with ``freq``, ``column`` its name). ``labels``, ``sample_weight``, ``n_bins``, ``strategy``,
    ``n_boot``, ``seed`` and ``level`` as :func:`calibdash.monitoring.group_metrics.by_group` takes them, each period
    drawing from its own seed.
    """
    s, y, w = check_rows(scores, labels, sample_weight)
    per = periods_of(dates, s.size, freq, column)
    return period_report(s, y, w, per, n_bins=n_bins, strategy=strategy, n_boot=n_boot, seed=seed, level=level)


def period_report(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, per: Periods, *,
                  n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200,
                  seed: int = 0, level: float = 0.95, cells: bool = False) -> DriftReport:
    """:func:`over_time` of checked rows whose periods ``per`` are made; ``cells``: the rows are score cells'
    weighted rows, and ``rows`` counts the real rows (the weights' sum)."""
    table, tables = stats_table(s, y, per.codes, range(len(per.labels)), sample_weight, n_bins, strategy, n_boot,
                                level, seed)
    if cells:
        table["rows"] = cell_rows(table["weight"])
    one = [per.labels[k] for k in table.index if table.loc[k, "note"]]
    notes = list(per.notes)
    if one:
        notes.append(f"{len(one)} period{'s' if len(one) > 1 else ''} ({', '.join(one[:6])}"
                     f"{', ...' if len(one) > 6 else ''}) hold one class only: "
                     "their ECE, Brier, log-loss and AUC are not computed (NaN).")
    table.insert(0, "start", [per.starts[k] for k in table.index])
    table.index = pd.Index([per.labels[k] for k in table.index], name="period")
    tables = {per.labels[k]: v for k, v in tables.items()}
    return DriftReport(table=table, reliability=tables, periods=per, notes=notes, n_bins=n_bins,
                       strategy=strategy, n_boot=int(n_boot), level=level)
