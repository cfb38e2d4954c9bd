"""When a fitted calibrator goes stale: fitted on each period, judged on every later one (:func:`staleness`).

A calibrator whose ECE rises with age while the one refitted on the period before stays low has gone stale.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from ..evaluation.crossfit import cross_fit
from ..core.errors import DataError
from ..evaluation.methods import resolve
from .group_metrics import BinnedReport
from .periods import Periods, check_rows, periods_of

__all__ = []

#: Columns of :attr:`Staleness.table`.
RAW_COL, STALE_COL, FRESH_COL = "uncalibrated", "fitted on the first period", "refitted on the period before"


@dataclass
class Staleness(BinnedReport):
    """Held-out ECE of calibrators fitted on one period and judged on later ones (see :func:`staleness`).

    Attributes
    ----------
    matrix : DataFrame
        Held-out ECE by (fitted on, judged on) where the judged period is later (NaN on and below the diagonal, and
        for a period a calibrator could not be fitted on; ``fit_rows``: the weight each was fitted on).
    table : DataFrame
        One row per period from the second on: ``age``, ``rows``, the ECE of the raw scores, of the calibrator
        fitted on the first period (:data:`STALE_COL`) and of the one refitted on the period before
        (:data:`FRESH_COL`; the last that could be fitted).
    by_age : DataFrame
        Per age in periods, the mean held-out ``ECE`` of the pairs that many periods apart, the raw scores' mean
        (``raw``) on the same judged periods, and ``pairs``.
    """

    matrix: pd.DataFrame
    table: pd.DataFrame
    by_age: pd.DataFrame
    method: str
    fit_rows: pd.Series
    notes: list
    periods: Periods
    n_bins: int = metrics.DEFAULT_N_BINS
    strategy: str = metrics.DEFAULT_STRATEGY


def _ece(p, y, w, n_bins, strategy) -> float:
    """ECE, NaN for a one-class or empty period."""
    if y.size == 0:
        return np.nan
    pos = float(y.sum()) if w is None else float(w[y == 1].sum())
    total = float(y.size) if w is None else float(w.sum())
    if pos <= 0 or pos >= total:
        return np.nan
    return metrics.ece(p, y, n_bins, strategy, sample_weight=w)


def staleness(scores, labels, dates, method: str = "isotonic", sample_weight=None, *, params: dict | None = None,
              freq: str = "auto", n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
              min_rows: float = 20, column: str = "the date column") -> Staleness:
    """Fit ``method`` (a registered calibrator of the score, with ``params``) on each period and measure its ECE on
    every later period. ``scores``, ``labels``, ``dates``, ``sample_weight`` (passed to every fit and ECE), ``freq``,
    ``n_bins``, ``strategy`` and ``column`` as :func:`calibdash.monitoring.drift.over_time` takes them; a period with
    less weight than ``min_rows``, or one class only, is not fitted on (with a note).

    Raises
    ------
    DataError
        Fewer than two periods, or no period a calibrator can be fitted on.
    """
    s, y, w = check_rows(scores, labels, sample_weight)
    per = periods_of(dates, s.size, freq, column)
    cal = resolve({method: dict(params or {})})[method]
    present = [k for k in range(len(per.labels)) if (per.codes == k).any()]
    if len(present) < 2:
        raise DataError(f"{column} gives {len(present)} period with rows: staleness needs two or more.")
    labs = [per.labels[k] for k in present]
    masks = {k: per.codes == k for k in present}
    row_w = np.ones(s.size) if w is None else w
    weight = {k: float(row_w[masks[k]].sum()) for k in present}
    pos = {k: float(row_w[masks[k] & (y == 1)].sum()) for k in present}
    usable = [k for k in present if weight[k] >= min_rows and 0 < pos[k] < weight[k]]
    fitted = {k: i for i, k in enumerate(usable)}         # period -> its pair in the cross-fit
    fit_rows = {per.labels[k]: weight[k] for k in present}
    skipped = [per.labels[k] for k in present if k not in fitted]
    if not fitted:
        raise DataError(f"no period of {column} has {min_rows:g} rows of both classes to fit {method} on.")
    # each period fitted on is judged on every later period: one pair per fitted period
    later = {k: np.isin(per.codes, present[present.index(k) + 1:]) for k in fitted}
    fit = cross_fit({method: cal}, s, y, w, [(masks[k], later[k]) for k in fitted])
    matrix = pd.DataFrame(np.nan, index=pd.Index(labs, name="fitted on"), columns=pd.Index(labs, name="judged on"))
    raw = {}
    for j, u in enumerate(present):
        m = masks[u]
        wu = None if w is None else w[m]
        raw[u] = _ece(s[m], y[m], wu, n_bins, strategy)
        for t in present[:j]:
            if t in fitted:
                p = fit.column(method, fitted[t])[m]
                matrix.iloc[present.index(t), j] = _ece(p, y[m], wu, n_bins, strategy)
    first = present[0]
    rows, last_fit = [], None
    for j, u in enumerate(present[1:], start=1):
        if present[j - 1] in fitted:
            last_fit = present[j - 1]
        rows.append({"period": per.labels[u], "age": j, "rows": fit_rows[per.labels[u]], RAW_COL: raw[u],
                     STALE_COL: matrix.iloc[0, j] if first in fitted else np.nan,
                     FRESH_COL: matrix.iloc[present.index(last_fit), j] if last_fit is not None else np.nan})
    table = pd.DataFrame(rows).set_index("period")
    ages = [(j - i, matrix.iloc[i, j], raw[present[j]]) for i in range(len(present))
            for j in range(i + 1, len(present)) if np.isfinite(matrix.iloc[i, j])]
    by_age = (pd.DataFrame(ages, columns=["age", "ECE", "raw"]).groupby("age")
              .agg(ECE=("ECE", "mean"), raw=("raw", "mean"), pairs=("ECE", "size")))
    notes = list(per.notes)
    if skipped:
        notes.append(f"No calibrator is fitted on {', '.join(skipped[:6])}{', ...' if len(skipped) > 6 else ''}: "
                     f"fewer than {min_rows:g} rows, or one class only.")
    if first not in fitted:
        notes.append(f"The first period ({per.labels[first]}) cannot be fitted on, so the never-refitted "
                     "calibrator's column is empty.")
    return Staleness(matrix=matrix, table=table, by_age=by_age, method=method, fit_rows=pd.Series(fit_rows),
                     notes=notes, periods=per, n_bins=n_bins, strategy=strategy)
