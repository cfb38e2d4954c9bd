"""The Groups & time measures of keyed cells: per group, per period, staleness and the calibrator that fixes the groups.

Each function takes a :class:`~calibdash.monitoring.keyed.KeyedCells` and returns the
report the row functions return, so the pages, the figures and the command
line draw them unchanged:

======================  ==========================================  ===================
keyed cells             rows                                        report
======================  ==========================================  ===================
:func:`by_key`          :func:`calibdash.monitoring.groups.by_group`           ``GroupReport``
:func:`over_periods`    :func:`calibdash.monitoring.drift.over_time`           ``DriftReport``
:func:`staleness_of`    :func:`calibdash.monitoring.drift.staleness`           ``Staleness``
:func:`fix_keys`        :func:`calibdash.monitoring.groups.fix_groups`         ``GroupFix``
======================  ==========================================  ===================

The cells are measured as weighted rows (each cell a positive row of weight
``n_pos`` and a negative row of weight ``n - n_pos``), with the groups or
periods the cells' keys already hold, by the row functions' own code
(:func:`calibdash.monitoring.group_metrics.group_report`,
:func:`calibdash.monitoring.drift.period_report`, :func:`calibdash.monitoring.drift.staleness`,
:func:`calibdash.monitoring.groups.fix_made_groups`). So:

* point values equal the row functions' on the same rows (to the weighted
  metrics' rounding) when the cells are exact; on grid cells they move by
  the bounds of :mod:`calibdash.evaluation.cells`;
* intervals are the same Poisson bootstrap: a cell of ``n`` rows counted
  Poisson(``n``) times is the sum of its rows' Poisson(1) counts, and a group's
  cells are merged and sorted by (score, label) before they are drawn, as its
  rows are, so the intervals of exact cells are *the same draws* as the rows';
* calibrators are fitted on the cells as weighted rows, which is the fit on
  their rows (``tests/test_weights.py``), MBCT with the key as its one
  categorical feature included;
* ``rows`` in every table is the number of real rows (the cells' counts), not
  of weighted rows. The reports' per-row arrays (``GroupReport.groups``,
  ``GroupFix.predictions``, ``Periods.codes``) are per weighted row.
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
        raise SettingsError(f"{what} takes keyed cells (calibdash.monitoring.keyed.KeyedCells), got {type(kc).__name__}.")
    if kc.spec.kind != kind:
        other = {"group": "by_key / fix_keys", "period": "over_periods / staleness_of"}[kc.spec.kind]
        raise SettingsError(f"{what} needs cells keyed by a {kind}; these are keyed by the {kc.spec.kind} column "
                            f"{kc.spec.column!r} (use {other}).")
    s, y, w, k = kc.weighted_rows()
    if s.size == 0:
        raise DataError(f"no rows to measure: the cells keyed by {kc.spec.column!r} are empty.")
    return s, y, w, k


def periods_of(kc: KeyedCells) -> Periods:
    """The :class:`~calibdash.monitoring.drift.Periods` of period-keyed cells, one code per weighted row."""
    _, _, _, k = _rows_of(kc, "period", "periods_of")
    return Periods(codes=k.astype(np.int64), labels=list(kc.labels), starts=list(kc.starts), freq=kc.spec.freq,
                   notes=list(kc.notes), left_out=int(kc.n_left_out))


def by_key(kc: KeyedCells, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
           n_boot: int = 200, seed: int = 0, level: float = 0.95) -> GroupReport:
    """Per group of group-keyed cells: rows, positives, positive rate, mean score, ECE, Brier, log-loss and AUC
    with Poisson-bootstrap intervals, and each group's reliability table (as :func:`calibdash.monitoring.groups.by_group`).

    Parameters
    ----------
    kc : KeyedCells
        Cells keyed by a group column (``kc.spec.kind == "group"``).
    n_bins, strategy
        Binning of ECE and of the reliability tables.
    n_boot : int, default 200
        Poisson-bootstrap resamples per group (0: no intervals).
    seed : int, default 0
        Each group draws from its own seed, derived from ``seed`` as :func:`~calibdash.monitoring.groups.by_group` does.
    level : float, default 0.95

    Returns
    -------
    GroupReport
        ``rows`` counts real rows; ``groups`` holds each weighted row's group.
    """
    s, y, w, k = _rows_of(kc, "group", "by_key")
    names = np.asarray(kc.labels, dtype=object)
    return group_report(s, y, w, True, names[k], list(kc.labels), list(kc.notes), list(kc.pooled), kc.spec.column,
                        n_bins, strategy, n_boot, level, seed, cells=True)


def over_periods(kc: KeyedCells, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                 n_boot: int = 200, seed: int = 0, level: float = 0.95) -> DriftReport:
    """Per period of period-keyed cells: the measures of :func:`by_key` (as :func:`calibdash.monitoring.drift.over_time`).

    Parameters
    ----------
    kc : KeyedCells
        Cells keyed by a date column (``kc.spec.kind == "period"``).
    n_bins, strategy, n_boot, seed, level
        As for :func:`by_key`.

    Returns
    -------
    DriftReport
        ``rows`` counts real rows; ``periods.n_left_out`` the rows without a readable date.
    """
    s, y, w, _ = _rows_of(kc, "period", "over_periods")
    return period_report(s, y, w, periods_of(kc), n_bins=n_bins, strategy=strategy, n_boot=n_boot, seed=seed,
                         level=level, cells=True)


def staleness_of(kc: KeyedCells, method: str = "isotonic", params: dict | None = None, *,
                 n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
                 min_rows: float = 20) -> Staleness:
    """Fit ``method`` on each period's cells and judge it on every later period (:func:`calibdash.monitoring.drift.staleness`).

    Parameters
    ----------
    kc : KeyedCells
        Cells keyed by a date column.
    method : str, default "isotonic"
        A registered calibrator of the score.
    params : dict, optional
        Its hyperparameters.
    n_bins, strategy
        Binning of ECE.
    min_rows : float, default 20
        A period with fewer rows, or with one class only, is not fitted on.

    Returns
    -------
    Staleness
    """
    s, y, w, _ = _rows_of(kc, "period", "staleness_of")
    return staleness(s, y, periods_of(kc), method, sample_weight=w, params=params, n_bins=n_bins, strategy=strategy,
                     min_rows=min_rows, column=kc.spec.column)


def key_pairs(part: np.ndarray, y: np.ndarray, sample_weight: np.ndarray,
              scheme: Scheme) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, judged rows) positions of weighted rows from their cells' parts under ``scheme``.

    ``"split"`` and ``"column"``: part 0 fits, part 1 is judged; ``"kfold"``: fold ``f`` is judged by the fit on
    the others; ``"insample"``: every row both.

    Raises
    ------
    DataError
        The parts do not come from ``scheme`` (no held-out part, or a part beyond its folds), or a fitting part
        holds one class only.
    """
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
    """The calibrator that fixes the groups, on group-keyed cells whose parts come from ``scheme``.

    ``method`` (the score alone) and MBCT with the group as its one categorical feature are fitted on the
    fitting cells as weighted rows and judged per group on the held-out cells, as
    :func:`calibdash.monitoring.groups.fix_groups` does on rows (its MBCT settings: ``MBCT_VIEWS`` views, the bin size
    from the lightest group's fitting rows).

    Parameters
    ----------
    kc : KeyedCells
        Cells keyed by a group column, whose ``part`` was set for ``scheme``
        (:func:`calibdash.evaluation.holdout.cell_parts`: 0 = fit, 1 = held out; k-fold: the fold).
    method : str, default "isotonic"
        The score-only calibrator.
    scheme : Scheme, default ``Scheme()``
        How the parts divide the rows: ``"split"``/``"column"`` (part 0 fits, part 1 is judged),
        ``"kfold"`` (each fold judged by the fit on the others) or ``"insample"``.
    params, mbct_params, n_bins, strategy, n_boot, seed
        As for :func:`calibdash.monitoring.groups.fix_groups`.

    Returns
    -------
    GroupFix
        Its ``predictions`` and ``rows`` are per judged weighted row; the reports' ``rows`` count real rows.
    """
    scheme = scheme or Scheme()
    s, y, w, k = _rows_of(kc, "group", "fix_keys")
    part, _, _ = kc.cells.weighted_predictions(kc.cells.part.astype(float))   # each weighted row's part
    pairs = key_pairs(part, y, w, scheme)
    names = np.asarray(kc.labels, dtype=object)
    return fix_made_groups(s, y, w, True, names[k], list(kc.labels), kc.spec.column, pairs, scheme, method,
                           params=params, mbct_params=mbct_params, n_bins=n_bins, strategy=strategy, n_boot=n_boot,
                           seed=seed, cells=True)
