"""Periods of a date column, for calibration over time: dates or date-times (typed, or text that reads as dates; rows
without a readable date left out and counted), whole numbers ``YYYYMMDD``, pandas periods, or ordered codes (at most
:data:`MAX_PERIODS` whole numbers) taken as the periods; anything else refused. ``freq="auto"`` takes the finest of
day, week (from Monday), month, quarter, year giving at most :data:`MAX_AUTO_PERIODS` periods with rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from ..core.validation import check_labels, check_scores

__all__ = []

#: Period lengths offered, finest first (pandas period aliases).
FREQS = ("D", "W", "M", "Q", "Y")
FREQ_NAMES = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year", "given": "as given"}
#: The automatic choice gives at most this many periods.
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
    """Each row's period (``codes``, an index into ``labels``; -1 for a row left out, no readable date) and the periods
    in time order: ``labels`` (``"2025-03-14"``, ``"2025-03-10"`` for the week starting that Monday, ``"2025-03"``,
    ``"2025Q1"``, ``"2025"``) and ``starts`` (each one's first day), both the code itself for periods given as codes;
    ``freq`` a key of :data:`FREQ_NAMES`; ``notes`` what was read and chosen; ``left_out`` rows left out before
    coding (keyed cells hold no cell for a row without a date).
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
    """The column as date-times (NaT where missing or unreadable), or None when it holds no dates, and notes on how
    it was read. Date-times with a time zone are taken in UTC, so an instant falls in the same period in any zone."""
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
    """The first day (days since 1970-01-01) of the period of length ``freq`` holding each day: weeks start on Monday
    (1970-01-05 was one), quarters in January, April, July, October; on day numbers, so any engine's read alike."""
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


def name_periods(starts, freq: str, *, first, last, auto: bool, n_left_out: int = 0, name: str = "the column",
                 notes=()) -> tuple[list, list, list]:
    """``(labels, starts, notes)`` of the periods shown, :func:`to_periods`' rule for any engine, from ``starts``, the
    distinct first days (days since 1970-01-01) of the ``freq`` periods holding rows; ``first`` and ``last`` date-times
    read; ``auto``: whether ``freq`` was chosen; ``n_left_out`` rows without a readable date; earlier ``notes``.
    SettingsError beyond :data:`MAX_PERIODS` periods.
    """
    uniq = np.unique(np.asarray(starts, dtype=np.int64))
    if uniq.size > MAX_PERIODS:
        raise SettingsError(f"{name} spans {uniq.size:,} periods of a {FREQ_NAMES[freq]}, more than the "
                            f"{MAX_PERIODS} that can be shown: choose a longer period.")
    stamps = [pd.Timestamp(int(v), unit="D") for v in uniq]
    labels = [f"{t.to_period(freq).start_time:%Y-%m-%d}" if freq == "W" else str(t.to_period(freq)) for t in stamps]
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
    """Each row's period of the date (or period) column ``values`` (``name`` for notes and errors), ``freq`` long
    ({"auto", "D", "W", "M", "Q", "Y"}; "auto": :func:`freq_from_days`; ignored for ordered codes, the periods
    themselves). DataError when the column holds no dates nor ordered codes, or no row has one; SettingsError for an
    unknown ``freq`` or one giving more than :data:`MAX_PERIODS` periods.
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


def check_rows(scores, labels, sample_weight=None):
    """``(s, y, w)`` checked for a per-period analysis (``w`` None without weights)."""
    s = check_scores(scores)
    y = check_labels(labels, s.size)
    if sample_weight is None:
        return s, y, None
    w = np.asarray(sample_weight, dtype=float).reshape(-1)
    if w.size != s.size or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise DataError("sample_weight must hold one finite, non-negative weight per row, with a positive sum.")
    return s, y, w


def periods_of(dates, n: int, freq: str, name: str) -> Periods:
    """``dates`` made into :class:`Periods` (a :class:`Periods` taken as it is), checked to hold ``n`` entries."""
    per = dates if isinstance(dates, Periods) else to_periods(dates, freq, name)
    if per.codes.size != n:
        raise DataError(f"the date column has {per.codes.size} values but there are {n} rows.")
    return per
