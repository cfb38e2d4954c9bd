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
from ...monitoring.drift import YMD_RANGE, freq_from_days
from ...monitoring.grouping import GroupCoding, coding_for
from ...monitoring.keyed import PERIODS, Key, KeyedCells
from ...monitoring.keyed.assemble import check_group_key
from ...monitoring.keyed.from_rows import not_dates_error, read_dates_check
from ...core.errors import SettingsError
from ...evaluation.scheme import Scheme
from .rows import (SourceRows, bin_sql, cell_code, connection_for, grouped, ident, is_numeric_type, number_sql,
                   statistics)
from ..source import KEYED_STAGES, TRUNC_UNITS, Source, checked_scheme, group_result, period_result

__all__ = []

_WHITESPACE = "' \t\n\r\x0b\x0c'"
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
    if key.kind == "group":
        check_group_key(key)
    stage = on_stage or (lambda name: None)
    with connection_for(connection, memory_limit, threads, on_connect,
                        temp_tables=("__cd_rows", "__cd_keys")) as (con, own):
        if own:
            con.execute("SET TimeZone = 'UTC'")
        stage(KEYED_STAGES[0])
        rows = SourceRows(con, source, [key.column], source.needs_keys(scheme), tune=own)
        col = ident("__f_" + key.column)
        duck_type = rows.types()["__f_" + key.column]
        if key.kind == "group":
            return _groups(rows, col, duck_type, key, scheme, max_exact, stage)
        return _periods(rows, col, duck_type, key, scheme, max_exact, stage)


def _aggregate(rows, scheme, st, positive, mapped, max_exact, stage, key_sql):
    exact, s_sql, code_sql = cell_code(rows, st, mapped, max_exact, stage)
    stage(KEYED_STAGES[3])
    return exact, grouped(rows, scheme, st, positive, s_sql, code_sql, [f"{key_sql} AS __k"])[0]


def _text_keys(rows, raw_sql: str, estimate, key) -> np.ndarray:
    """Number a text key's distinct values in SQL (so cells group by a small integer, not a string): one scan
    lists them into the temporary table ``__cd_keys(__v, __c)``; returns their shown (trimmed) texts by code.

    A column whose HyperLogLog estimate exceeds :data:`MAX_TEXT_KEYS` distinct values is refused before that
    scan (its hash table would hold every value)."""
    if (estimate or 0) > MAX_TEXT_KEYS:
        raise SettingsError(f"{key.column} has about {int(estimate):,} distinct values: far more than the "
                            f"{key.max_groups} groups that can be compared. Bin the column into fewer values (a "
                            "coarser category), or choose another column.")
    got = rows._run(f"SELECT DISTINCT {raw_sql} AS v FROM ({rows.sql}) WHERE {raw_sql} IS NOT NULL", fetch="all")
    raw = [v for (v,) in got]
    rows._run("CREATE OR REPLACE TEMP TABLE __cd_keys (__v VARCHAR, __c INTEGER)")
    if raw:
        rows.con.executemany("INSERT INTO __cd_keys VALUES (?, ?)", [(v, i) for i, v in enumerate(raw)])
    shown = np.empty(len(raw) + 1, dtype=object)          # the last entry: rows with no value
    shown[:-1] = [v.strip(_STRIP) for v in raw]
    return shown


def _groups(rows, col, duck_type, key, scheme, max_exact, stage) -> KeyedCells:
    number = is_numeric_type(duck_type)
    if number:
        x = number_sql(col)
        st, mapped, positive, (estimate,) = statistics(rows, [f"approx_count_distinct({x})"])
        n_distinct = int(estimate or 0)
        if key.max_groups / 4 < n_distinct <= 4 * key.max_groups:
            n_distinct = int(rows._run(f"SELECT count(DISTINCT {x}) FROM ({rows.sql})", fetch="one")[0])
        how = coding_for(True, n_distinct, key.max_groups)
        if how == "quantile":
            stage(KEYED_STAGES[2])
            levels = np.linspace(0, 1, int(key.n_quantiles) + 1).tolist()
            q, n_distinct = rows._run(f"SELECT quantile_cont({x}, {levels!r}), count(DISTINCT {x}) "
                                      f"FROM ({rows.sql})", fetch="one")
            edges = np.unique(np.asarray(q, dtype=float))
            key_sql = f"CASE WHEN {x} IS NULL THEN NULL ELSE {bin_sql(x, edges[1:-1])} END"
            coding = GroupCoding("quantile", int(n_distinct), edges)
        else:
            key_sql, coding = x, None
    else:
        raw_sql = (f"CASE WHEN {col} IS NULL THEN NULL WHEN {col} THEN 'True' ELSE 'False' END"
                   if duck_type.upper() == "BOOLEAN" else f"CAST({col} AS VARCHAR)")
        st, mapped, positive, (estimate,) = statistics(rows, [f"approx_count_distinct({raw_sql})"])
        shown = _text_keys(rows, raw_sql, estimate, key)
        key_sql = f"(SELECT __c FROM __cd_keys WHERE __v = {raw_sql})"
        coding = None
    exact, res = _aggregate(rows, scheme, st, positive, mapped, max_exact, stage, key_sql)
    if not number:
        code = res["__k"].to_numpy(dtype=float, na_value=np.nan)
        res["__k"] = pd.Series(shown[np.where(np.isnan(code), shown.size - 1, code).astype(np.int64)], dtype=object)
    return group_result(res, key, exact, coding, number, n_distinct if number else 0)


def _periods(rows, col, duck_type, key, scheme, max_exact, stage) -> KeyedCells:
    t = duck_type.upper()
    checks = []
    if t.startswith("DATE") or t.startswith("TIMESTAMP"):
        ts = f"CAST({col} AS TIMESTAMP)"
    elif is_numeric_type(t):
        x = number_sql(col)
        ts = f"try_strptime(CAST(CAST({x} AS BIGINT) AS VARCHAR), '%Y%m%d')"
        checks = [f"count({x})", f"count(*) FILTER (WHERE {x} <> floor({x}))", f"min({x})", f"max({x})"]
        ts = f"CASE WHEN {x} = floor({x}) AND {x} BETWEEN {YMD_RANGE[0]} AND {YMD_RANGE[1]} THEN {ts} END"
    elif t == "VARCHAR":
        text = f"NULLIF(trim({col}, {_WHITESPACE}), '')"
        ts = f"CAST(TRY_CAST({text} AS TIMESTAMPTZ) AS TIMESTAMP)"
        checks = [f"count({text})", f"count(*) FILTER (WHERE regexp_full_match({text}, '[+-]?\\d+(\\.\\d*)?'))"]
    else:
        raise not_dates_error(key.column)
    day = _DAYS.format(ts)
    extra = [f"count({ts})", f"min({ts})", f"max({ts})"] + checks
    if key.freq == "auto":
        extra.append(f"list(DISTINCT {day})")
    st, mapped, positive, got = statistics(rows, extra)
    n_read, first, last = int(got[0]), got[1], got[2]
    notes = read_dates_check("dates" if not checks else "text" if t == "VARCHAR" else "ymd", n_read,
                             got[3:3 + len(checks)], key.column)
    freq = freq_from_days(got[-1], PERIODS) if key.freq == "auto" else key.freq
    key_sql = _DAYS.format(f"date_trunc('{TRUNC_UNITS[freq]}', {ts})")
    exact, res = _aggregate(rows, scheme, st, positive, mapped, max_exact, stage, key_sql)
    return period_result(res, key, exact, freq=freq, first=first, last=last, n_left_out=st.n_rows - n_read,
                         notes=notes)
