"""Calibration over time: per-period metrics with intervals, and when a fitted calibrator goes stale.

Two questions monitoring users ask of a deployed score:

* *is it still calibrated?* :func:`over_time` groups the rows by period of a
  date column (day, week, month or quarter, chosen to give about
  :data:`MIN_PERIODS`-:data:`MAX_AUTO_PERIODS` periods, or given) and gives,
  per period, rows, positive rate, mean score, ECE, Brier score, log-loss and
  AUC with bootstrap intervals (:func:`calibdash.monitoring.groups.group_stats`: a
  Poisson bootstrap of the period's rows), and each period's reliability
  table;
* *how long does a calibrator stay good?* :func:`staleness` fits a
  calibrator on each period's rows and judges it on every later period: the
  matrix of held-out ECE by (fitted on, judged on), a table per judged period
  of the ECE of the raw scores, of the calibrator fitted on the first period
  (never refitted) and of the one refitted on the period just before, and the
  mean held-out ECE by the calibrator's age in periods. A calibrator whose
  ECE rises with age while the refitted one stays low has gone stale.

A calibrator here is always judged on periods after the one it was fitted on
(rows it never saw): the honest deployment protocol for data that drifts. A
random split mixing all periods, as :mod:`calibdash.evaluation.holdout` uses, would
hide the drift.

The periods are made by :mod:`calibdash.monitoring.periods` (:func:`~calibdash.monitoring.periods.to_periods`: dates, date-times,
whole numbers written ``YYYYMMDD``, pandas periods or ordered codes; day, week, month, quarter or year,
chosen by ``freq="auto"``); the staleness is :mod:`calibdash.monitoring.staleness`'s. Their names are importable from
here too.

A period holding one class only has no calibration metrics (NaN with a
note), as a group in :mod:`calibdash.monitoring.groups`; in :func:`staleness` a
calibrator cannot be fitted on such a period (its row of the matrix is NaN,
and "refitted" keeps the last calibrator that could be fitted).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from .group_metrics import cell_rows, group_stats
from .periods import (FREQ_NAMES, MAX_AUTO_PERIODS, YMD_RANGE, Periods, as_dates, check_rows, choose_freq,
                      freq_from_days, periods_of, to_periods)
from .staleness import FRESH_COL, RAW_COL, STALE_COL, staleness

__all__ = [
    "FREQ_NAMES", "MAX_AUTO_PERIODS", "as_dates", "freq_from_days", "YMD_RANGE", "RAW_COL", "STALE_COL",
    "FRESH_COL", "choose_freq", "to_periods", "staleness"
]


@dataclass
class DriftReport:
    """Per-period calibration of one score (see :func:`over_time`).

    Attributes
    ----------
    table : DataFrame
        One row per period (index: its label, in time order): ``start``,
        ``rows``, ``weight``, ``positives``, every name of
        :data:`calibdash.monitoring.groups.STATS` with ``<name>_low`` and ``<name>_high``,
        and ``note``.
    reliability : dict
        Period -> its reliability table.
    periods : Periods
    notes : list of str
    n_bins, strategy, n_boot, level
    """

    table: pd.DataFrame
    reliability: dict
    periods: Periods
    notes: list
    n_bins: int = metrics.DEFAULT_N_BINS
    strategy: str = metrics.DEFAULT_STRATEGY
    n_boot: int = 200
    level: float = 0.95

    @property
    def binning(self) -> str:
        return metrics.binning_label(self.n_bins, self.strategy)


def over_time(scores, labels, dates, sample_weight=None, freq: str = "auto", n_bins: int = metrics.DEFAULT_N_BINS,
              strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, seed: int = 0, level: float = 0.95,
              *, column: str = "the date column") -> DriftReport:
    """Calibration of ``scores`` in every period of ``dates``.

    Parameters
    ----------
    scores, labels : array-like
        Scores in [0, 1] and 0/1 labels.
    dates : array-like, Series or :class:`Periods`
        The date (or period) column (see :func:`to_periods`).
    sample_weight : array-like, optional
        A row of weight ``w`` counts as ``w`` rows.
    freq : str, default "auto"
    n_bins, strategy
        Binning of ECE and the reliability tables.
    n_boot, seed, level
        Poisson-bootstrap resamples of each period's rows (each period from
        its own seed, derived from ``seed``); percentile intervals.
    column : str
        The column's name, for notes.

    Returns
    -------
    DriftReport
    """
    s, y, w = check_rows(scores, labels, sample_weight)
    per = periods_of(dates, s.size, freq, column)
    return period_report(s, y, w, per, n_bins=n_bins, strategy=strategy, n_boot=n_boot, seed=seed, level=level)


def period_report(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, per: Periods, *,
                  n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200,
                  seed: int = 0, level: float = 0.95, cells: bool = False) -> DriftReport:
    """The :class:`DriftReport` of rows whose periods are made (what :func:`over_time` returns).

    Parameters
    ----------
    s, y : ndarray
        Checked scores and labels.
    sample_weight : ndarray or None
        Row weights (None: unweighted rows).
    per : Periods
        Each row's period (``per.codes`` aligned with ``s``).
    n_bins, strategy, n_boot, seed, level
        As for :func:`over_time`.
    cells : bool, default False
        The rows are score cells' weighted rows (each stands for ``sample_weight`` real rows): ``rows`` then counts
        the real rows, the sum of the weights (:func:`calibdash.monitoring.group_metrics.cell_rows`).
    """
    seeds = np.random.SeedSequence(seed).generate_state(len(per.labels))
    rows, tables = {}, {}
    notes = list(per.notes)
    one = []
    for k, (lab, sd) in enumerate(zip(per.labels, seeds)):
        m = per.codes == k
        if not m.any():
            continue
        wk = None if sample_weight is None else sample_weight[m]
        st = group_stats(s[m], y[m], wk, n_bins=n_bins, strategy=strategy, n_boot=n_boot, level=level,
                         seed=int(sd))
        if cells:
            st["rows"] = int(cell_rows(st["weight"]))
        rows[lab] = {"start": per.starts[k], **st}
        tables[lab] = metrics.reliability_table(s[m], y[m], n_bins, strategy, sample_weight=wk)
        if st["note"]:
            one.append(lab)
    if one:
        notes.append(f"{len(one)} period{'s' if len(one) > 1 else ''} ({', '.join(one[:6])}"
                     f"{', ...' if len(one) > 6 else ''}) hold one class only: "
                     "their ECE, Brier, log-loss and AUC are not computed (NaN).")
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "period"
    return DriftReport(table=table, reliability=tables, periods=per, notes=notes, n_bins=n_bins,
                       strategy=strategy, n_boot=int(n_boot), level=level)
