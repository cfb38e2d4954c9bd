"""Calibration by group: is the model calibrated for every segment, or only on average?

:func:`by_group` measures each group of a column with intervals; :func:`fix_groups` fits a calibrator of the score
alone and MBCT (Huang et al., 2022) with the group as its one feature and measures each group's held-out ECE: a
score-only calibrator can only move the average, a group-aware one can fix each group. :func:`column_for_rows` aligns
a file's column with a ScoreSet.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from ..evaluation.crossfit import cross_fit
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import Scheme, split_indices
from .group_metrics import METRICS, STATS, by_group, checked_groups, group_report, group_stats
from .grouping import MAX_GROUPS, MIN_ROWS, MISSING, N_QUANTILES, OTHER, make_groups
from ..evaluation.methods import RAW, resolve

__all__ = [
    "MAX_GROUPS", "MIN_ROWS", "N_QUANTILES", "STATS", "column_for_rows", "METRICS", "by_group", "group_stats",
    "MISSING", "OTHER", "ALL_ROWS"
]


@dataclass
class GroupFix:
    """Per-group held-out calibration before and after a score-only calibrator and MBCT on the group: ``reports``,
    method key (``"uncalibrated"``, the chosen method, ``"mbct"``) -> ``GroupReport`` of its held-out predictions;
    ``table``, held-out ECE by group (then ``"all rows"``) and method; ``predictions`` on the judged ``rows``
    (positions), one column per method; ``models`` fitted on the fitting part (k-fold: all rows); the ``scheme``;
    ``mbct_params``.
    """

    reports: dict
    table: pd.DataFrame
    predictions: pd.DataFrame
    rows: np.ndarray
    models: dict
    scheme: Scheme
    mbct_params: dict


#: Index label of the table row measured on every judged row.
ALL_ROWS = "all rows"
#: MVCE views per node of "the calibrator that fixes the groups" (MBCT with the group as its feature).
MBCT_VIEWS = 100


def fix_groups(scores, labels, groups, scheme: Scheme | None = None, method: str = "isotonic",
               sample_weight=None, *, params: dict | None = None, mbct_params: dict | None = None, split=None,
               n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200,
               seed: int = 0, min_rows: float = MIN_ROWS, max_groups: int = MAX_GROUPS,
               n_quantiles: int = N_QUANTILES, column: str | None = None) -> GroupFix:
    """Fit ``method`` (score only) and MBCT with the group as its feature; per-group ECE on held-out rows.

    The rows are divided as :func:`calibdash.evaluation.holdout.evaluate` divides them (``scheme``, ``split``), so
    without weights the predictions are ``evaluate``'s, and measured per group as :func:`by_group` does (with its
    parameters); MBCT reads the groups, made once on all rows, as one categorical feature named after the column.
    ``params``: the calibrator's hyperparameters; ``mbct_params``: MBCT's (by default its own but ``bin_size``, half
    the lightest group's fitting weight so every group can have a leaf of its own, within 20, MBCT's lowest offered
    value, to 500, its default; and :data:`MBCT_VIEWS` views).
    """
    scheme = scheme or Scheme()
    s, y, w, col, (labels_, order, _, _) = checked_groups(scores, labels, groups, sample_weight, column, "group", True,
                                                         max_groups=max_groups, n_quantiles=n_quantiles,
                                                         min_rows=min_rows)
    pairs = split_indices(y, scheme, split, scores=s)
    return fix_made_groups(s, y, w, sample_weight is not None, labels_, order, col, pairs, scheme, method,
                           params=params, mbct_params=mbct_params, n_bins=n_bins, strategy=strategy, n_boot=n_boot,
                           seed=seed)


def fix_made_groups(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, weighted: bool, labels_: np.ndarray, order,
                    col: str, pairs, scheme: Scheme, method: str = "isotonic", *, params: dict | None = None,
                    mbct_params: dict | None = None, n_bins: int = metrics.DEFAULT_N_BINS,
                    strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, seed: int = 0,
                    cells: bool = False) -> GroupFix:
    """:func:`fix_groups` on checked scores, labels and row weights (ones unless ``weighted``), groups already made
    (each row's ``labels_``, their display ``order``, the column name ``col``) and rows already divided (``pairs``;
    k-fold ``scheme``: one per fold, the models refitted on all rows). ``cells``: the rows are score cells' weighted
    rows, and the reports count the real rows they stand for."""
    kfold = scheme.kind == "kfold"
    rows = np.sort(np.concatenate([te for _, te in pairs])) if kfold else pairs[0][1]
    fit_rows = np.arange(s.size) if kfold else pairs[0][0]
    # The paper's r = 100 views for each node's split choice, not MBCT's default 20: with 20, a seeded draw
    # on the drift sample misses the one feature split that fixes the bad segment about one time in five.
    fit_w = pd.Series(sample_weight[fit_rows]).groupby(labels_[fit_rows]).sum()
    mbct = {"bin_size": int(np.clip(fit_w.min() // 2, 20, 500)), "views": MBCT_VIEWS}
    mbct.update(mbct_params or {})
    cals = resolve({method: dict(params or {})})
    if getattr(cals[method], "uses_features", False):
        raise SettingsError(f"choose a calibrator of the score alone to set beside MBCT, not {method!r}.")
    cals.update(resolve({"mbct": mbct}))
    features = pd.DataFrame({col: pd.Categorical(labels_, categories=order)})
    fit = cross_fit(cals, s, y, sample_weight if weighted else None, pairs, features, refit=kfold)
    preds = {RAW: s[rows], **{key: fit.column(key)[rows] for key in cals}}
    predictions = pd.DataFrame(preds, index=rows)
    reports = {key: group_report(predictions[key].to_numpy(), y[rows], sample_weight[rows], weighted, labels_[rows],
                                 order, [], [], col, n_bins, strategy, n_boot, 0.95, seed, cells=cells)
               for key in preds}
    table = pd.DataFrame({key: r.table["ECE"] for key, r in reports.items()})
    table = table.reindex([g for g in order if g in table.index])
    table.loc[ALL_ROWS] = [r.overall["ECE"] for r in reports.values()]
    table.index.name = "group"
    return GroupFix(reports=reports, table=table, predictions=predictions, rows=rows, models=fit.models,
                    scheme=scheme, mbct_params=mbct)


def column_for_rows(ss, column: str) -> pd.Series:
    """Column ``column`` of ``ss.raw`` restricted to the ScoreSet's usable rows, in their order: the rows a ScoreSet
    drops (score or label missing or unreadable) are found again by the same tests and checked against ``ss.scores``,
    so a mismatch cannot pass silently (none dropped: the file's column as it is). DataError when ``column`` is not
    in the file or the usable rows cannot be found again.
    """
    from ..core.margins import to_probabilities
    from ..core.numbers import parse_numbers

    raw = ss.raw
    if column not in raw.columns:
        raise DataError(f"column {column!r} is not in {ss.name}; its columns are: "
                        f"{', '.join(map(str, raw.columns[:40]))}.")
    if ss.n_rows == len(raw):
        return raw[column].reset_index(drop=True)      # no row was dropped: the rows are the file's, in order
    score, _ = parse_numbers(raw[ss.score])
    lab = raw[ss.label_column]
    keep = np.isfinite(score) & lab.notna().to_numpy(dtype=bool)
    if lab.dtype == object or pd.api.types.is_string_dtype(lab):
        keep &= (lab.astype(str).str.strip() != "").to_numpy()
    ok = int(keep.sum()) == ss.n_rows
    if ok:
        mapped, _ = to_probabilities(score, column=ss.score)
        ok = np.allclose(np.asarray(mapped, dtype=float)[keep], ss.scores, rtol=0, atol=1e-12)
    if not ok:
        raise DataError(f"the usable rows of {ss.name} cannot be matched to the file's rows, so column "
                        f"{column!r} cannot be aligned with the scores.")
    return raw[column][keep].reset_index(drop=True)
