"""Calibration over time: per-period metrics with intervals, and when a fitted calibrator goes stale.

Two questions monitoring users ask of a deployed score:

* *is it still calibrated?* :func:`over_time` groups the rows by period of a
  date column (day, week, month or quarter, chosen to give about
  :data:`MIN_PERIODS`-:data:`MAX_AUTO_PERIODS` periods, or given) and gives,
  per period, rows, positive rate, mean score, ECE, Brier score, log-loss and
  AUC with bootstrap intervals (:func:`calibdash.groups.group_stats`: a
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
random split mixing all periods, as :mod:`calibdash.evaluation` uses, would
hide the drift.

Periods (:func:`to_periods`)
----------------------------
The column may hold dates or date-times (a date type, or text that reads as
dates; rows whose entry is missing or not a date are left out and counted),
whole numbers written ``YYYYMMDD``, pandas periods, or ordered codes (whole
numbers such as a month index, at most :data:`MAX_PERIODS` of them) taken as
the periods themselves, in numeric order. Anything else is refused with a
:class:`~calibdash.errors.DataError`. With ``freq="auto"`` the period is the
finest of day, week, month, quarter (and year) that gives at most
:data:`MAX_AUTO_PERIODS` periods with rows; weeks start on Monday.

A period holding one class only has no calibration metrics (NaN with a
note), as a group in :mod:`calibdash.groups`; in :func:`staleness` a
calibrator cannot be fitted on such a period (its row of the matrix is NaN,
and "refitted" keeps the last calibrator that could be fitted).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import metrics
from .crossfit import cross_fit
from .errors import DataError, SettingsError
from .group_metrics import cell_rows, group_stats
from .methods import resolve
from .validation import check_labels, check_scores

__all__ = ["FREQS", "FREQ_NAMES", "MIN_PERIODS", "MAX_AUTO_PERIODS", "MAX_PERIODS", "DATE_SHARE", "Periods",
           "to_periods", "choose_freq", "as_dates", "day_codes", "period_start_days", "freq_from_days", "name_periods",
           "YMD_RANGE", "ymd_note", "DriftReport", "over_time", "period_report", "Staleness", "staleness", "RAW_COL",
           "STALE_COL",
           "FRESH_COL"]

#: Period lengths offered, finest first (pandas period aliases).
FREQS = ("D", "W", "M", "Q", "Y")
FREQ_NAMES = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year", "given": "as given"}
#: The automatic choice aims at this many periods or more ...
MIN_PERIODS = 6
#: ... and at most this many.
MAX_AUTO_PERIODS = 30
#: Most periods shown (a chosen period length giving more is refused).
MAX_PERIODS = 60
#: A text column is read as dates when at least this share of its present entries parse as dates.
DATE_SHARE = 0.9
#: Whole numbers in this range may be dates written YYYYMMDD.
YMD_RANGE = (1900_01_01, 2100_12_31)
_YMD_LOW, _YMD_HIGH = YMD_RANGE


@dataclass
class Periods:
    """Each row's period and the periods in time order (see :func:`to_periods`).

    Attributes
    ----------
    codes : ndarray of int
        Each row's period as an index into ``labels``; -1 for a row left out (no readable date).
    labels : list of str
        The periods in time order, as text: ``"2025-03-14"`` (day), ``"2025-03-10"`` (the week starting
        that Monday), ``"2025-03"`` (month), ``"2025Q1"``, ``"2025"``; the code itself for periods as given.
    starts : list
        The first day of each period (Timestamps), or the code itself for periods as given.
    freq : str
        A key of :data:`FREQ_NAMES`.
    notes : list of str
        What was read and chosen, for the user.
    left_out : int, default 0
        Rows left out before ``codes`` were made (keyed cells hold no cell for a row without a date).
    """

    codes: np.ndarray
    labels: list
    starts: list
    freq: str
    notes: list = field(default_factory=list)
    left_out: int = 0

    @property
    def n_left_out(self) -> int:
        """Rows without a period: coded -1, or left out before coding."""
        return int((self.codes < 0).sum()) + int(self.left_out)


def ymd_note(name: str) -> str:
    """What is said of a column of whole numbers read as dates YYYYMMDD."""
    return f"{name} holds whole numbers written YYYYMMDD: read as dates."


def as_dates(values: pd.Series, name: str = "the column") -> tuple[pd.Series | None, list[str]]:
    """The column as date-times (NaT where missing or unreadable), or None when it holds no dates.

    Date-times with a time zone are taken in UTC (as text with an offset is),
    so an instant falls in the same period whatever zone it was written in.
    Also returns the notes on how the column was read.
    """
    s = values
    if isinstance(s.dtype, pd.PeriodDtype):
        return s.dt.start_time, []
    if pd.api.types.is_datetime64_any_dtype(s):
        return (s.dt.tz_convert(None) if getattr(s.dt, "tz", None) is not None else s), []
    if pd.api.types.is_bool_dtype(s):
        return None, []
    if pd.api.types.is_numeric_dtype(s):
        x = s.to_numpy(dtype=float)
        ok = np.isfinite(x)
        if ok.any() and np.all(x[ok] == np.floor(x[ok])) and x[ok].min() >= _YMD_LOW and x[ok].max() <= _YMD_HIGH:
            text = pd.Series(np.where(ok, np.nan_to_num(x).astype(np.int64).astype(str), ""), index=s.index)
            d = pd.to_datetime(text.where(ok), format="%Y%m%d", errors="coerce")
            if d[ok].notna().mean() >= DATE_SHARE:
                return d, [ymd_note(name)]
        return None, []
    # text: each distinct entry read once, the rows counted by how often they hold it (a column of 10^7
    # rows and 90 dates parses 90 strings)
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes, uniq = s.cat.codes.to_numpy(), s.cat.categories
    else:
        codes, uniq = pd.factorize(s, use_na_sentinel=True)
    rows = np.bincount(codes[codes >= 0], minlength=len(uniq))
    text = pd.Series(np.asarray(uniq, dtype=object), dtype="string").str.strip()
    present = (text.notna() & (text != "")).to_numpy(dtype=bool)
    n_present = rows[present].sum()
    if n_present == 0:
        return None, []
    numbers = text.str.fullmatch(r"[+-]?\d+(\.\d*)?").fillna(False).to_numpy(dtype=bool)
    if rows[present & numbers].sum() > 0.5 * n_present:               # numbers in text: not dates
        return None, []
    d = pd.to_datetime(text.where(present), errors="coerce", format="mixed")
    if d.dt.tz is not None:
        d = d.dt.tz_convert(None)
    read = d.notna().to_numpy()
    if rows[present & read].sum() < DATE_SHARE * n_present:
        return None, []
    values = d.to_numpy()
    out = values[np.maximum(codes, 0)]
    out[codes < 0] = np.datetime64("NaT")
    return pd.Series(out, index=s.index, name=s.name), []


def day_codes(dates) -> np.ndarray:
    """Days since 1970-01-01 of each date-time (its calendar day; NaT must be removed first)."""
    return np.asarray(pd.Series(dates).to_numpy(dtype="datetime64[ns]").astype("datetime64[D]").astype(np.int64))


def period_start_days(days, freq: str) -> np.ndarray:
    """The first day (days since 1970-01-01) of the period of length ``freq`` holding each day.

    Weeks start on Monday (1970-01-05 was one), quarters in January, April,
    July and October; the periods of :func:`to_periods`, computed on day
    numbers so that any engine's day or period codes can be read alike.
    """
    d = np.asarray(days, dtype=np.int64)
    if freq == "D":
        return d
    if freq == "W":
        return d - (d + 3) % 7
    months = d.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
    if freq == "M":
        return months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    if freq == "Q":
        return (months - months % 3).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    if freq == "Y":
        return d.astype("datetime64[D]").astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64)
    raise SettingsError(f"freq must be one of {', '.join(FREQS)}, got {freq!r}.")


def freq_from_days(days, freqs=FREQS) -> str:
    """The finest of ``freqs`` giving at most :data:`MAX_AUTO_PERIODS` periods with rows, from the distinct
    days that have rows (the last of ``freqs`` when none does)."""
    d = np.unique(np.asarray(days, dtype=np.int64))
    if d.size == 0:
        raise DataError("no dates to divide into periods.")
    for freq in freqs:
        if np.unique(period_start_days(d, freq)).size <= MAX_AUTO_PERIODS:
            return freq
    return freqs[-1]


def choose_freq(dates) -> str:
    """The finest of :data:`FREQS` giving at most :data:`MAX_AUTO_PERIODS` periods with rows in ``dates``."""
    d = pd.Series(pd.to_datetime(pd.Series(dates))).dropna()
    if d.empty:
        raise DataError("no dates to divide into periods.")
    return freq_from_days(day_codes(d))


def name_periods(starts, freq: str, *, first, last, auto: bool, n_left_out: int = 0, name: str = "the column",
                 notes=()) -> tuple[list, list, list]:
    """The periods shown, from the first days of the periods that have rows: labels, starts and notes.

    The one rule of :func:`to_periods` for any engine: ``starts`` are the
    distinct first days (days since 1970-01-01) of the periods of length
    ``freq`` holding rows; ``first`` and ``last`` the earliest and latest
    date-time read; ``auto`` whether ``freq`` was chosen
    (:func:`freq_from_days`); ``n_left_out`` the rows without a readable
    date; ``notes`` what was said before (how the column was read).

    Returns
    -------
    (labels, starts, notes)
        Labels in time order (as :class:`Periods`), each period's first day
        (Timestamp), and the notes.

    Raises
    ------
    SettingsError
        More than :data:`MAX_PERIODS` periods.
    """
    uniq = np.unique(np.asarray(starts, dtype=np.int64))
    if uniq.size > MAX_PERIODS:
        raise SettingsError(f"{name} spans {uniq.size:,} periods of a {FREQ_NAMES[freq]}, more than the "
                            f"{MAX_PERIODS} that can be shown: choose a longer period.")
    stamps = [pd.Timestamp(int(v), unit="D") for v in uniq]
    labels = [_period_label(t.to_period(freq), freq) for t in stamps]
    notes = list(notes)
    span = f"{pd.Timestamp(first):%Y-%m-%d} to {pd.Timestamp(last):%Y-%m-%d}"
    how = "chosen to give at most" if auto else "as asked; the automatic choice gives at most"
    notes.append(f"{name} runs from {span}: rows are grouped by {FREQ_NAMES[freq]} ({len(labels)} periods; "
                 f"{how} {MAX_AUTO_PERIODS} periods)."
                 + (" Weeks start on Monday and are named by that day." if freq == "W" else ""))
    if n_left_out:
        notes.append(f"{int(n_left_out):,} rows have no readable date in {name} and are left out.")
    return labels, stamps, notes


def to_periods(values, freq: str = "auto", name: str = "the column") -> Periods:
    """Each row's period of the date (or period) column ``values``.

    Parameters
    ----------
    values : array-like or Series
    freq : {"auto", "D", "W", "M", "Q", "Y"}, default "auto"
        Period length; "auto": :func:`choose_freq`. Ignored for a column of
        ordered codes, which are the periods themselves.
    name : str
        The column's name, for notes and errors.

    Raises
    ------
    DataError
        The column holds no dates nor ordered codes, or no row has one.
    SettingsError
        An unknown ``freq``, or one giving more than :data:`MAX_PERIODS` periods.
    """
    if freq != "auto" and freq not in FREQS:
        raise SettingsError(f"freq must be 'auto' or one of {', '.join(FREQS)}, got {freq!r}.")
    s = pd.Series(values).reset_index(drop=True)
    dates, notes = as_dates(s, name)
    if dates is None:
        x = pd.to_numeric(s, errors="coerce") if not pd.api.types.is_bool_dtype(s) else pd.Series(np.nan, s.index)
        ok = x.notna().to_numpy()
        if (ok.any() and ok.mean() >= DATE_SHARE and np.all(x[ok] == np.floor(x[ok]))
                and x[ok].nunique() <= MAX_PERIODS):
            uniq = np.sort(x[ok].unique())
            codes = np.full(len(s), -1, dtype=np.int64)
            codes[ok] = np.searchsorted(uniq, x[ok].to_numpy())
            labels = [str(int(v)) for v in uniq]
            notes = [f"{name} holds {len(uniq)} whole numbers: each value is taken as a period, in numeric order."]
            if (~ok).any():
                notes.append(f"{int((~ok).sum()):,} rows have no value in {name} and are left out.")
            return Periods(codes, labels, [int(v) for v in uniq], "given", notes)
        example = s.dropna().astype(str).head(3).tolist()
        raise DataError(f"{name} does not hold dates (such as {', '.join(map(repr, example))}): choose a column "
                        "of dates or date-times (2025-03-14, 14/03/2025 10:30, ...), of whole numbers "
                        "YYYYMMDD, or of period codes (whole numbers in time order).")
    ok = dates.notna().to_numpy()
    if not ok.any():
        raise DataError(f"no row of {name} holds a date.")
    days = day_codes(dates[ok])
    chosen = freq_from_days(days) if freq == "auto" else freq
    starts = period_start_days(days, chosen)
    uniq = np.unique(starts)
    labels, stamps, notes = name_periods(uniq, chosen, first=dates[ok].min(), last=dates[ok].max(),
                                         auto=freq == "auto", n_left_out=int((~ok).sum()), name=name, notes=notes)
    codes = np.full(len(s), -1, dtype=np.int64)
    codes[ok] = np.searchsorted(uniq, starts)
    return Periods(codes, labels, stamps, chosen, notes)


def _period_label(p: pd.Period, freq: str) -> str:
    """``"2025-03"`` (month), ``"2025Q1"``, ``"2025"``, ``"2025-03-14"`` (day); a week by its Monday."""
    return f"{p.start_time:%Y-%m-%d}" if freq == "W" else str(p)


def _check(scores, labels, sample_weight):
    s = check_scores(scores)
    y = check_labels(labels, s.size)
    if sample_weight is None:
        return s, y, None
    w = np.asarray(sample_weight, dtype=float).reshape(-1)
    if w.size != s.size or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise DataError("sample_weight must hold one finite, non-negative weight per row, with a positive sum.")
    return s, y, w


def _periods_of(dates, n: int, freq: str, name: str) -> Periods:
    if isinstance(dates, Periods):
        per = dates
    else:
        per = to_periods(dates, freq, name)
    if per.codes.size != n:
        raise DataError(f"the date column has {per.codes.size} values but there are {n} rows.")
    return per


@dataclass
class DriftReport:
    """Per-period calibration of one score (see :func:`over_time`).

    Attributes
    ----------
    table : DataFrame
        One row per period (index: its label, in time order): ``start``,
        ``rows``, ``weight``, ``positives``, every name of
        :data:`calibdash.groups.STATS` with ``<name>_low`` and ``<name>_high``,
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
    s, y, w = _check(scores, labels, sample_weight)
    per = _periods_of(dates, s.size, freq, column)
    return period_report(s, y, w, per, n_bins=n_bins, strategy=strategy, n_boot=n_boot, seed=seed, level=level)


def period_report(s: np.ndarray, y: np.ndarray, w: np.ndarray | None, per: Periods, *,
                  n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200,
                  seed: int = 0, level: float = 0.95, cells: bool = False) -> DriftReport:
    """The :class:`DriftReport` of rows whose periods are made (what :func:`over_time` returns).

    Parameters
    ----------
    s, y : ndarray
        Checked scores and labels.
    w : ndarray or None
        Row weights (None: unweighted rows).
    per : Periods
        Each row's period (``per.codes`` aligned with ``s``).
    n_bins, strategy, n_boot, seed, level
        As for :func:`over_time`.
    cells : bool, default False
        The rows are score cells' weighted rows (each stands for ``w`` real rows): ``rows`` then counts
        the real rows, the sum of the weights (:func:`calibdash.group_metrics.cell_rows`).
    """
    seeds = np.random.SeedSequence(seed).generate_state(len(per.labels))
    rows, tables = {}, {}
    notes = list(per.notes)
    one = []
    for k, (lab, sd) in enumerate(zip(per.labels, seeds)):
        m = per.codes == k
        if not m.any():
            continue
        wk = None if w is None else w[m]
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


# ---------------------------------------------------------------------------------------------
# Staleness
# ---------------------------------------------------------------------------------------------
#: Columns of :attr:`Staleness.table`.
RAW_COL, STALE_COL, FRESH_COL = "uncalibrated", "fitted on the first period", "refitted on the period before"


@dataclass
class Staleness:
    """Held-out ECE of calibrators fitted on one period and judged on later ones (see :func:`staleness`).

    Attributes
    ----------
    matrix : DataFrame
        Index: the period fitted on; columns: the period judged on; held-out
        ECE where the judged period is later (NaN on and below the diagonal,
        and for a period a calibrator could not be fitted on).
    table : DataFrame
        One row per period (from the second on): the ECE of the raw scores,
        of the calibrator fitted on the first period (:data:`STALE_COL`), of
        the one refitted on the period before (:data:`FRESH_COL`; the last
        period that could be fitted, when the one before could not), and
        ``age`` (periods since the first), ``rows``.
    by_age : DataFrame
        Index: age in periods (1, 2, ...); ``ECE``: the mean held-out ECE of
        every (fitted, judged) pair that many periods apart; ``raw``: the mean
        ECE of the raw scores on the same judged periods; ``pairs``.
    method : str
    fit_rows : Series
        Rows (weight) each period's calibrator was fitted on.
    notes : list of str
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

    @property
    def binning(self) -> str:
        return metrics.binning_label(self.n_bins, self.strategy)


def _ece(p, y, w, n_bins, strategy) -> float:
    """ECE, NaN for a one-class or empty period (as :func:`calibdash.groups.group_stats`)."""
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
    """Fit ``method`` on each period and measure its ECE on every later period.

    Parameters
    ----------
    scores, labels : array-like
    dates : array-like, Series or :class:`Periods`
        The date (or period) column (see :func:`to_periods`).
    method : str, default "isotonic"
        A registered calibrator of the score (a feature-aware one is fitted
        on the score alone).
    sample_weight : array-like, optional
        Passed to every fit and every ECE.
    params : dict, optional
        The calibrator's hyperparameters.
    freq : str, default "auto"
    n_bins, strategy
        Binning of ECE.
    min_rows : float, default 20
        A period with less weight than this, or with one class only, is not
        fitted on (its row of the matrix is NaN, with a note).
    column : str

    Returns
    -------
    Staleness

    Raises
    ------
    DataError
        Fewer than two periods, or no period a calibrator can be fitted on.
    """
    s, y, w = _check(scores, labels, sample_weight)
    per = _periods_of(dates, s.size, freq, column)
    cal = resolve({method: dict(params or {})})[method]
    present = [k for k in range(len(per.labels)) if (per.codes == k).any()]
    if len(present) < 2:
        raise DataError(f"{column} gives {len(present)} period with rows: staleness needs two or more.")
    labs = [per.labels[k] for k in present]
    masks = {k: per.codes == k for k in present}
    fitted: dict[int, int] = {}                       # period -> its pair in the cross-fit
    fit_rows = {}
    skipped = []
    for k in present:
        m = masks[k]
        wk = None if w is None else w[m]
        weight = float(m.sum()) if w is None else float(wk.sum())
        pos = float(y[m].sum()) if w is None else float(wk[y[m] == 1].sum())
        fit_rows[per.labels[k]] = weight
        if weight < min_rows or pos <= 0 or pos >= weight:
            skipped.append(per.labels[k])
            continue
        fitted[k] = len(fitted)
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
    rows = []
    last_fit = None
    for j, u in enumerate(present):
        if j > 0:
            t_prev = present[j - 1]
            if t_prev in fitted:
                last_fit = t_prev
            rows.append({"period": per.labels[u], "age": j,
                         "rows": float(masks[u].sum()) if w is None else float(w[masks[u]].sum()),
                         RAW_COL: raw[u],
                         STALE_COL: matrix.iloc[0, j] if first in fitted else np.nan,
                         FRESH_COL: matrix.iloc[present.index(last_fit), j] if last_fit is not None else np.nan})
        elif u in fitted:
            last_fit = u
    table = pd.DataFrame(rows).set_index("period")
    ages = []
    for i, t in enumerate(present):
        for j in range(i + 1, len(present)):
            v = matrix.iloc[i, j]
            if np.isfinite(v):
                ages.append((j - i, v, raw[present[j]]))
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
