"""Keyed cells with Spark: :mod:`calibdash.engines.duckdb.keyed`'s steps as Spark jobs.

The session time zone is UTC for the call (restored after). Text dates are read by ``try_to_timestamp``
(**ISO-8601 only**), whole numbers by ``'yyyyMMdd'``; CSV's ``inferSchema`` reads ISO timestamps in UTC."""
from __future__ import annotations

from ...evaluation.cells import MAX_EXACT
from ...monitoring.drift import YMD_RANGE
from ...monitoring.keyed import Key, KeyedCells
from ...evaluation.scheme import Scheme
from ..flow import KEYED_STAGES, KeyedFlow
from ..source import Source, checked_scheme
from .rows import F, SparkFlow, release, session

__all__ = []

_TZ = "spark.sql.session.timeZone"
_SPACE = r"^\s+|\s+$"
_EPOCH = "1970-01-01"


def aggregate_keyed(source: Source, key: Key, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, on_stage=None, spark=None) -> KeyedCells:
    """Keyed cells of a source with Spark (the parameters and result of
    :func:`calibdash.engines.duckdb.keyed.aggregate_keyed`; ``spark`` is the session, default
    ``getOrCreate()``; ``memory_limit`` and ``threads`` belong to the session)."""
    scheme = checked_scheme(source, scheme, table_positions=False, engine="Spark")
    spark = session(spark)
    stage = on_stage or (lambda name: None)
    before = spark.conf.get(_TZ)
    spark.conf.set(_TZ, "UTC")
    try:
        stage(KEYED_STAGES[0])
        return SparkKeyed(spark, source, scheme, [key.column]).keyed(key, max_exact, stage)
    finally:
        spark.conf.set(_TZ, before)
        release()


class SparkKeyed(SparkFlow, KeyedFlow):
    """The source's rows and a key column as Spark columns."""

    def text_key(self, x, boolean, key):
        code = (F.when(x.isNull(), F.lit(None)).when(x, F.lit("True")).otherwise(F.lit("False")) if boolean
                else F.regexp_replace(x.cast("string"), _SPACE, ""))
        return (code, *self.statistics([])[:3], None)

    def timestamps(self, x, kind):
        if kind == "date":
            return x.cast("timestamp"), []
        if kind == "number":
            n = self.number(x)
            ok = (n == F.floor(n)) & (n >= F.lit(YMD_RANGE[0])) & (n <= F.lit(YMD_RANGE[1]))
            return (F.when(ok, F.try_to_timestamp(n.cast("long").cast("string"), F.lit("yyyyMMdd"))),
                    [F.count(n), F.count(F.when(n != F.floor(n), 1)), F.min(n), F.max(n)])
        trimmed = F.regexp_replace(x, _SPACE, "")
        text = F.when(trimmed != "", trimmed)
        return F.try_to_timestamp(text), [F.count(text), F.count(F.when(text.rlike(r"^[+-]?\d+(\.\d*)?$"), 1))]

    def date_range(self, ts):
        return [F.count(ts), F.min(ts).cast("string"), F.max(ts).cast("string")]

    def days(self, ts, unit=None):
        return F.datediff(F.to_date(F.date_trunc(unit, ts) if unit else ts), F.lit(_EPOCH).cast("date"))

    def day_list(self, day):
        return F.collect_set(day)
