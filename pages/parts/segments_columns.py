"""Groups & time's columns: which columns are offered as groups and dates, and which are guessed first.

An upload's columns are read from its table (a first group column: few distinct text values; a first date
column: one whose first rows read as dates); a large source's from its schema (:func:`pages.parts.large_source.
schema_or_stop`: names and DuckDB types, no rows): a text or boolean column as the group, a DATE or TIMESTAMP
column (else one named like a date) as the date.
"""
from __future__ import annotations

import pandas as pd

from calibdash.monitoring import drift as cdrift, groups as cgroups
from pages.parts import bounded_cache
from pages.parts.fitting import is_large

__all__ = ["DATE_HINTS", "offered"]

#: Words in a column's name that suggest dates.
DATE_HINTS = ("date", "time", "day", "week", "month", "quarter", "year", "period", "dt", "timestamp", "ts")


def _named_like_a_date(column) -> bool:
    return any(h in str(column).lower() for h in DATE_HINTS)


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="segments_columns.upload_guesses")
def _upload_guesses(data_key: str, last: tuple, _ss) -> tuple[str | None, str | None]:
    """A first group column (few distinct text values) and a first date column, for the widgets' defaults;
    the columns of ``last`` (a K-class table's predicted and true class), in that order, only after the others."""
    raw = _ss.raw
    cols = [c for c in raw.columns if c not in (_ss.score, _ss.label_column)]
    cols = [c for c in cols if c not in last] + [c for c in last if c in cols]
    group = next((c for c in cols if not pd.api.types.is_numeric_dtype(raw[c])
                  and 1 < raw[c].nunique() <= cgroups.MAX_GROUPS), None)
    if group is None:
        group = next((c for c in cols if 1 < raw[c].nunique() <= cgroups.MAX_GROUPS), None)
    date = next((c for c in sorted(cols, key=lambda c: not _named_like_a_date(c))
                 if cdrift.as_dates(raw[c].head(2000), str(c))[0] is not None), None)
    return group, date


def _large_guesses(columns: list, types: list) -> tuple[str | None, str | None]:
    kinds = dict(zip(columns, (str(t).upper() for t in types)))
    group = next((c for c in columns if kinds[c] in ("VARCHAR", "BOOLEAN") and not _named_like_a_date(c)), None)
    date = next((c for c in columns if kinds[c].startswith(("DATE", "TIMESTAMP"))), None)
    if date is None:
        date = next((c for c in columns if _named_like_a_date(c)), None)
    return group, date


def offered(ss, last: tuple = ()) -> tuple[list, str | None, str | None]:
    """``(columns, group guess, date guess)``: every column but the score and the label, and the first guesses.

    ``ss`` is a ScoreSet or a large source's LargeData (whose schema is read as a job: the page shows its
    progress and stops until it is known); ``last`` the columns guessed only after the others.
    """
    if is_large(ss):
        from pages.parts.large_source import schema_or_stop

        schema = schema_or_stop()
        keep = [(c, t) for c, t in zip(schema["columns"], schema["types"]) if c not in (ss.score, ss.label_column)]
        columns = [c for c, _ in keep]
        return (columns, *_large_guesses(columns, [t for _, t in keep]))
    columns = [c for c in ss.raw.columns if c not in (ss.score, ss.label_column)]
    return (columns, *_upload_guesses(ss.content_key(), last, ss))
