"""The Groups & time measures of keyed cells: per group, per period, staleness and the calibrator that fixes groups.

Each function takes :class:`~calibdash.monitoring.keyed.KeyedCells` and returns the report of its row function
(:func:`by_key`: ``by_group``'s ``GroupReport``; :func:`over_periods`: ``over_time``'s ``DriftReport``;
:func:`staleness_of`: ``staleness``'s; :func:`fix_keys`: ``fix_groups``' ``GroupFix``), measuring the cells as
weighted rows by the row functions' own code. So point values equal the rows' (to rounding) on exact cells, and move
by the bounds of :mod:`calibdash.evaluation.cells` on grid cells; intervals are the same Poisson bootstrap (a cell of
``n`` rows drawn Poisson(``n``) is the sum of its rows' Poisson(1) counts, and cells are merged and sorted as rows
are, so exact cells get *the same draws*); calibrators are fitted on the cells as weighted rows, which is the fit on
their rows. ``rows`` in every table counts real rows; the reports' per-row arrays are per weighted row.
"""
from __future__ import annotations

import numpy as np

from ...measures import calibration as metrics
from ..drift import DriftReport, period_report
from ..periods import Periods
from ..staleness import Staleness, staleness
from ...core.errors import DataError, SettingsError
from ..group_metrics import GroupReport, group_report
from ..groups import GroupFix, fix_made_groups
from ...evaluation.scheme import Scheme
from . import KeyedCells

__all__ = ["by_key", "over_periods", "staleness_of", "fix_keys"]


def _rows_of(kc: KeyedCells, kind: str, what: str):
    """``(scores, labels, weights, key)`` of the cells' weighted rows, after checking the key's kind."""
    if not isinstance(kc, KeyedCells):
        raise SettingsError(f"{what} takes keyed cells (calibdash.monitoring.keyed.KeyedCells), "
                            f"got {type(kc).__name__}.")
    if kc.spec.kind != kind:
        other = {"group": "by_key / fix_keys", "period": "over_periods / staleness_of"}[kc.spec.kind]
        raise SettingsError(f"{what} needs cells keyed by a {kind}; these are keyed by the {kc.spec.kind} column "
                            f"{kc.spec.column!r} (use {other}).")
    s, y, w, k = kc.weighted_rows()
    if s.size == 0:
        raise DataError(f"no rows to measure: the cells keyed by {kc.spec.column!r} are empty.")
    return s, y, w, k


def periods_of(kc: KeyedCells, k: np.ndarray) -> Periods:
    """The :class:`~calibdash.monitoring.drift.Periods` of period-keyed cells, ``k`` the key of each weighted row
    (:func:`_rows_of`)."""
    return Periods(codes=k.astype(np.int64), labels=list(kc.labels), starts=list(kc.starts), freq=kc.spec.freq,
                   notes=list(kc.notes), left_out=int(kc.n_left_out))


def by_key(kc: KeyedCells, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
           n_boot: int = 200, seed: int = 0, level: float = 0.95) -> GroupReport:
    """:func:`~calibdash.monitoring.group_metrics.by_group`'s report of cells keyed by a group column, with its
    ``n_bins``, ``strategy``, ``n_boot``, ``seed`` and ``level``."""
    s, y, w, k = _rows_of(kc, "group", "by_key")
    names = np.asarray(kc.labels, dtype=object)
    return group_report(s, y, w, True, names[k], list(kc.labels), list(kc.notes), list(kc.pooled), kc.spec.column,
                        n_bins, strategy, n_boot, level, seed, cells=True)


def over_periods(kc: KeyedCells, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                 n_boot: int = 200, seed: int = 0, level: float = 0.95) -> DriftReport:
    """:func:`~calibdash.monitoring.drift.over_time`'s report of cells keyed by a date column (its
    ``periods.n_left_out`` the rows without a readable date)."""
    s, y, w, k = _rows_of(kc, "period", "over_periods")
    return period_report(s, y, w, periods_of(kc, k), n_bins=n_bins, strategy=strategy, n_boot=n_boot, seed=seed,
                         level=level, cells=True)


def staleness_of(kc: KeyedCells, method: str = "isotonic", params: dict | None = None, *,
                 n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                 min_rows: float = 20) -> Staleness:
    """:func:`~calibdash.monitoring.staleness.staleness` of cells keyed by a date column, with its parameters."""
    s, y, w, k = _rows_of(kc, "period", "staleness_of")
    return staleness(s, y, periods_of(kc, k), method, sample_weight=w, params=params, n_bins=n_bins, strategy=strategy,
                     min_rows=min_rows, column=kc.spec.column)


def key_pairs(part: np.ndarray, y: np.ndarray, sample_weight: np.ndarray,
              scheme: Scheme) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, judged rows) positions of weighted rows from their cells' parts under ``scheme``; DataError when
    the parts do not come from ``scheme`` or a fitting part holds one class only."""
    part = np.asarray(part, dtype=np.int64)
    present = np.unique(part)
    if scheme.kind == "insample":
        every = np.arange(part.size)
        pairs = [(every, every)]
    elif scheme.kind == "kfold":
        if present.max() >= scheme.n_folds or present.size < 2:
            raise DataError(f"the cells' parts ({', '.join(map(str, present[:8]))}) are not the folds of "
                            f"{scheme.n_folds}-fold cross-fitting: aggregate them with that scheme.")
        pairs = [(np.flatnonzero(part != f), np.flatnonzero(part == f)) for f in range(scheme.n_folds)]
    else:
        if not np.array_equal(present, [0, 1]):
            raise DataError("the cells have no fitting part and held-out part (parts 0 and 1): aggregate them "
                            "with a split scheme to judge a calibrator on rows it was not fitted on.")
        pairs = [(np.flatnonzero(part == 0), np.flatnonzero(part == 1))]
    for i, (fit, judged) in enumerate(pairs):
        pos, total = float(sample_weight[fit][y[fit] == 1].sum()), float(sample_weight[fit].sum())
        if judged.size == 0 or pos <= 0 or pos >= total:
            where = f" of fold {i + 1}" if scheme.kind == "kfold" else ""
            what = "is empty" if judged.size == 0 else f"({total:,.0f} rows) holds one class only"
            raise DataError(f"the {'held-out' if judged.size == 0 else 'fitting'} part{where} {what}; "
                            "calibrators need both classes to fit and rows to judge.")
    return pairs


def fix_keys(kc: KeyedCells, method: str = "isotonic", scheme: Scheme | None = None, *, params: dict | None = None,
             mbct_params: dict | None = None, n_bins: int = metrics.DEFAULT_N_BINS,
             strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, seed: int = 0) -> GroupFix:
    """:func:`~calibdash.monitoring.groups.fix_groups` on cells keyed by a group column whose ``part`` was set for
    ``scheme`` (:func:`~calibdash.evaluation.scheme.cell_parts`), with its other parameters."""
    scheme = scheme or Scheme()
    s, y, w, k = _rows_of(kc, "group", "fix_keys")
    part, _, _ = kc.cells.weighted_predictions(kc.cells.part.astype(float))   # each weighted row's part
    pairs = key_pairs(part, y, w, scheme)
    names = np.asarray(kc.labels, dtype=object)
    return fix_made_groups(s, y, w, True, names[k], list(kc.labels), kc.spec.column, pairs, scheme, method,
                           params=params, mbct_params=mbct_params, n_bins=n_bins, strategy=strategy, n_boot=n_boot,
                           seed=seed, cells=True)
