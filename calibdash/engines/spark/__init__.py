"""The Spark engine: the DuckDB engine's aggregations as Spark jobs, on an existing session (or
``SparkSession.builder.getOrCreate()``), so it runs under spark-submit. pyspark is imported only when used.

:mod:`.rows` (score cells; rows keyed by their position), :mod:`.keyed` (keyed cells), :mod:`.classes` (K-class
cells and rows), :mod:`.apply` (a model's Spark SQL or a pandas UDF).
"""
from __future__ import annotations

from ..base import Engine
from . import apply, classes, keyed, rows

__all__ = ["Spark"]


class Spark(Engine):
    """A Spark session's jobs; chosen only when asked. Its tables and queries name Spark's catalog, and a
    table's rows have no position (give ``order_by`` for a hashed scheme)."""

    name, label, order = "spark", "Spark", 2
    by_default = False
    table_positions = False
    catalog = True
    dialect = "spark"
    session = "spark"
    aggregate = staticmethod(rows.aggregate)
    aggregate_keyed = staticmethod(keyed.aggregate_keyed)
    aggregate_classes = staticmethod(classes.aggregate_classes)
    class_rows = staticmethod(classes.class_rows)
    apply = staticmethod(apply.apply)
    label_counts = staticmethod(rows.label_counts)
