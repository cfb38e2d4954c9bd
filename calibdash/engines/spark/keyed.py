"""Keyed cells with Spark: :mod:`calibdash.engines.duckdb.keyed`'s steps as Spark jobs.

The session time zone is UTC for the call (restored after). Text dates are read by ``try_to_timestamp``
(**ISO-8601 only**), whole numbers by ``'yyyyMMdd'``; CSV's ``inferSchema`` reads ISO timestamps in UTC."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...evaluation.cells import MAX_EXACT
from ...monitoring.drift import YMD_RANGE, freq_from_days
from ...monitoring.grouping import GroupCoding, coding_for
from ...monitoring.keyed import PERIODS, Key, KeyedCells
from ...monitoring.keyed.assemble import check_group_key
from ...monitoring.keyed.from_rows import not_dates_error, read_dates_check
from ...evaluation.scheme import Scheme
from ..source import KEYED_STAGES, TRUNC_UNITS, Source, checked_scheme, group_result, period_result
from .rows import F, T, bin_column, cell_code, grouped, keyed_rows, part_column, release, session, statistics
from .rows import col as spark_col

__all__ = []

_TZ = "spark.sql.session.timeZone"
_SPACE = r"^\s+|\s+$"


def aggregate_keyed(source: Source, key: Key, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, on_stage=None, spark=None) -> KeyedCells:
    """Keyed cells of a source with Spark (the parameters and result of
    :func:`calibdash.engines.duckdb.keyed.aggregate_keyed`; ``spark`` is the session, default
    ``getOrCreate()``; ``memory_limit`` and ``threads`` belong to the session)."""
    scheme = checked_scheme(source, scheme, table_positions=False, engine="Spark")
    if key.kind == "group":
        check_group_key(key)
    spark = session(spark)
    stage = on_stage or (lambda name: None)
    before = spark.conf.get(_TZ)
    spark.conf.set(_TZ, "UTC")
    try:
        stage(KEYED_STAGES[0])
        df = keyed_rows(spark, source, source.columns([key.column]), source.needs_keys(scheme))
        run = _groups if key.kind == "group" else _periods
        return run(spark, df, source, key, scheme, max_exact, stage)
    finally:
        spark.conf.set(_TZ, before)
        release()


def _cells(spark, df, source, scheme, st, mapped, positive, split_values, max_exact, stage, key_col):
    exact, s, code = cell_code(df, source, st, mapped, max_exact)
    stage(KEYED_STAGES[3])
    df, part = part_column(df, scheme, source, split_values)
    return exact, grouped(spark, df, source, part, s, code, st, positive, [key_col.alias("__k")])


def _groups(spark, df, source, key, scheme, max_exact, stage) -> KeyedCells:
    dtype = df.schema[key.column].dataType
    col = spark_col(key.column)
    number = isinstance(dtype, T.NumericType)
    coding = None
    if number:
        x = F.when(~F.isnan(col.cast("double")), col.cast("double"))
        st, mapped, positive, splits, (estimate,) = statistics(df, source, scheme, [F.approx_count_distinct(x, 0.01)])
        n_distinct = int(estimate or 0)
        if key.max_groups / 4 < n_distinct <= 4 * key.max_groups:
            n_distinct = int(df.select(F.countDistinct(x)).collect()[0][0])
        if coding_for(True, n_distinct, key.max_groups) == "quantile":
            stage(KEYED_STAGES[2])
            levels = np.linspace(0, 1, int(key.n_quantiles) + 1).tolist()
            q, n_distinct = df.agg(F.percentile(x, F.array(*[F.lit(v) for v in levels])),
                                   F.countDistinct(x)).collect()[0]
            edges = np.unique(np.asarray(q, dtype=float))
            key_col = F.when(x.isNotNull(), bin_column(x, edges[1:-1]))
            coding = GroupCoding("quantile", int(n_distinct), edges)
        else:
            key_col = x
    else:
        st, mapped, positive, splits, _ = statistics(df, source, scheme)
        if isinstance(dtype, T.BooleanType):
            key_col = F.when(col.isNull(), F.lit(None)).when(col, F.lit("True")).otherwise(F.lit("False"))
        else:
            text = col if isinstance(dtype, T.StringType) else col.cast("string")
            key_col = F.regexp_replace(text, _SPACE, "")
    exact, res = _cells(spark, df, source, scheme, st, mapped, positive, splits, max_exact, stage, key_col)
    return group_result(res, key, exact, coding, number, n_distinct if number else 0)


def _periods(spark, df, source, key, scheme, max_exact, stage) -> KeyedCells:
    dtype = df.schema[key.column].dataType
    col = spark_col(key.column)
    checks = []
    if isinstance(dtype, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        ts = col.cast("timestamp")
    elif isinstance(dtype, T.NumericType):
        x = F.when(~F.isnan(col.cast("double")), col.cast("double"))
        ok = (x == F.floor(x)) & (x >= F.lit(YMD_RANGE[0])) & (x <= F.lit(YMD_RANGE[1]))
        ts = F.when(ok, F.try_to_timestamp(x.cast("long").cast("string"), F.lit("yyyyMMdd")))
        checks = [F.count(x), F.count(F.when(x != F.floor(x), 1)), F.min(x), F.max(x)]
    elif isinstance(dtype, T.StringType):
        trimmed = F.regexp_replace(col, _SPACE, "")
        text = F.when(trimmed != "", trimmed)
        ts = F.try_to_timestamp(text)
        checks = [F.count(text), F.count(F.when(text.rlike(r"^[+-]?\d+(\.\d*)?$"), 1))]
    else:
        raise not_dates_error(key.column)
    day = F.datediff(F.to_date(ts), F.lit("1970-01-01").cast("date"))
    extra = [F.count(ts), F.min(ts).cast("string"), F.max(ts).cast("string")] + checks
    if key.freq == "auto":
        extra.append(F.collect_set(day))
    st, mapped, positive, splits, got = statistics(df, source, scheme, extra)
    n_read, first, last = int(got[0]), got[1], got[2]
    notes = read_dates_check("dates" if not checks else "text" if isinstance(dtype, T.StringType) else "ymd", n_read,
                             got[3:3 + len(checks)], key.column)
    freq = freq_from_days(list(got[-1]), PERIODS) if key.freq == "auto" else key.freq
    key_col = F.datediff(F.to_date(F.date_trunc(TRUNC_UNITS[freq], ts)), F.lit("1970-01-01").cast("date"))
    exact, res = _cells(spark, df, source, scheme, st, mapped, positive, splits, max_exact, stage, key_col)
    return period_result(res, key, exact, freq=freq, first=pd.Timestamp(first), last=pd.Timestamp(last),
                         n_left_out=st.n_rows - n_read, notes=notes)
