"""Keyed cells with DuckDB: the steps of :mod:`calibdash.engines.duckdb.rows` with the key as one more grouping code.

* group: text or boolean as trimmed text (``True``/``False``, as pandas writes them), numbered in SQL; a number
  as itself when it has at most ``max_groups`` distinct values (estimate, exact count when within a factor 4),
  else its ``quantile_cont`` group at ``linspace(0, 1, n_quantiles + 1)`` (numpy's linear rule). NaN is missing.
* period: the first day of the row's period, ``date_trunc`` (ISO weeks) as days since 1970-01-01, in UTC. Text
  is read by ``TRY_CAST(... AS TIMESTAMPTZ)``: **ISO-8601 only**, narrower than pandas (``14/03/2025``); whole
  numbers YYYYMMDD by ``try_strptime``. Unreadable dates are left out and counted; ``freq="auto"`` lists the
  distinct days (:func:`calibdash.monitoring.drift.freq_from_days`)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ...evaluation.cells import MAX_EXACT
from ...monitoring.drift import YMD_RANGE
from ...monitoring.keyed import Key, KeyedCells
from ...core.errors import SettingsError
from ...evaluation.scheme import Scheme
from ..flow import KEYED_STAGES, KeyedFlow
from .rows import SourceRows, connection_for, lit
from ..source import Source, checked_scheme

__all__ = []

_STRIP = " \t\n\r\x0b\x0c"
#: A text key with more distinct values than this (HyperLogLog's estimate) is refused before it is listed.
MAX_TEXT_KEYS = 100_000
_DAYS = "date_diff('day', DATE '1970-01-01', CAST({} AS DATE))"


def aggregate_keyed(source: Source, key: Key, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, connection=None,
                    on_stage: Callable[[str], None] | None = None,
                    on_connect: Callable[..., None] | None = None) -> KeyedCells:
    """Keyed cells of a source with DuckDB, out of core (see the module docstring).

    Parameters
    ----------
    source : Source
    key : Key
    scheme, max_exact, memory_limit, threads, connection, on_connect
        As :func:`calibdash.engines.duckdb.rows.aggregate` (a caller's ``connection`` keeps its own ``TimeZone``:
        set it to UTC for zoned timestamps to fall in UTC periods).
    on_stage : callable, optional
        Called with each stage of :data:`KEYED_STAGES`.

    Raises
    ------
    DataError
        As :func:`calibdash.engines.duckdb.rows.aggregate`; a period column holding no dates, or no readable one.
    SettingsError
        Too many groups or periods (:func:`calibdash.monitoring.grouping.name_groups`,
        :func:`calibdash.monitoring.drift.name_periods`).
    """
    scheme = checked_scheme(source, scheme)
    stage = on_stage or (lambda name: None)
    with connection_for(connection, memory_limit, threads, on_connect,
                        temp_tables=("__cd_rows", "__cd_keys")) as (con, own):
        if own:
            con.execute("SET TimeZone = 'UTC'")
        stage(KEYED_STAGES[0])
        return KeyedRows(con, source, scheme, [key.column], tune=own).keyed(key, max_exact, stage)


class KeyedRows(SourceRows, KeyedFlow):
    """The source's rows and a key column in DuckDB SQL."""

    def text_key(self, x, boolean, key):
        """The distinct values are numbered in SQL (cells group by a small integer, not a string): one scan lists
        them into the temporary table ``__cd_keys(__v, __c)``, after a column whose HyperLogLog estimate exceeds
        :data:`MAX_TEXT_KEYS` distinct values is refused (its hash table would hold every value)."""
        raw = (f"CASE WHEN {x} IS NULL THEN NULL WHEN {x} THEN 'True' ELSE 'False' END" if boolean
               else f"CAST({x} AS VARCHAR)")
        st, mapped, positive, (estimate,) = self.statistics([self.distinct(raw, approx=True)])
        if (estimate or 0) > MAX_TEXT_KEYS:
            raise SettingsError(f"{key.column} has about {int(estimate):,} distinct values: far more than the "
                                f"{key.max_groups} groups that can be compared. Bin the column into fewer values (a "
                                "coarser category), or choose another column.")
        values = [v for (v,) in self._run(f"SELECT DISTINCT {raw} AS v FROM ({self.sql}) WHERE {raw} IS NOT NULL",
                                          fetch="all")]
        self._run("CREATE OR REPLACE TEMP TABLE __cd_keys (__v VARCHAR, __c INTEGER)")
        if values:
            self.con.executemany("INSERT INTO __cd_keys VALUES (?, ?)", [(v, i) for i, v in enumerate(values)])
        shown = np.array([v.strip(_STRIP) for v in values] + [None], dtype=object)   # last: rows with no value

        def decode(res):
            code = res["__k"].to_numpy(dtype=float, na_value=np.nan)
            res["__k"] = pd.Series(shown[np.where(np.isnan(code), shown.size - 1, code).astype(np.int64)],
                                   dtype=object)
            return res

        return f"(SELECT __c FROM __cd_keys WHERE __v = {raw})", st, mapped, positive, decode

    def timestamps(self, x, kind):
        if kind == "date":
            return f"CAST({x} AS TIMESTAMP)", []
        if kind == "number":
            n = self.number(x)
            ts = f"try_strptime(CAST(CAST({n} AS BIGINT) AS VARCHAR), '%Y%m%d')"
            return (f"CASE WHEN {n} = floor({n}) AND {n} BETWEEN {YMD_RANGE[0]} AND {YMD_RANGE[1]} THEN {ts} END",
                    [f"count({n})", f"count(*) FILTER (WHERE {n} <> floor({n}))", f"min({n})", f"max({n})"])
        text = f"NULLIF(trim({x}, {lit(_STRIP)}), '')"
        return (f"CAST(TRY_CAST({text} AS TIMESTAMPTZ) AS TIMESTAMP)",
                [f"count({text})", f"count(*) FILTER (WHERE regexp_full_match({text}, '[+-]?\\d+(\\.\\d*)?'))"])

    def date_range(self, ts):
        return [f"count({ts})", f"min({ts})", f"max({ts})"]

    def days(self, ts, unit=None):
        return _DAYS.format(f"date_trunc('{unit}', {ts})" if unit else ts)

    def day_list(self, day):
        return f"list(DISTINCT {day})"

