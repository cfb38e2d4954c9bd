"""The Spark engine: the DuckDB engine's aggregations as Spark jobs on a session (pyspark loaded when used)."""
from __future__ import annotations

from ..base import Engine

__all__ = []


class Spark(Engine):
    """A Spark session's jobs; chosen only when asked. Its tables and queries name Spark's catalog, and a
    table's rows have no position (give ``order_by`` for a hashed scheme)."""

    name, label, order = "spark", "Spark", 2
    by_default = False
    table_positions = False
    catalog = True
    dialect = "spark"
    session = "spark"

    def label_counts(self, source, limit: int):
        """A table's or query's label counts, by Spark (:func:`calibdash.engines.spark.rows.label_counts`)."""
        return self._module("rows").label_counts(source, limit)
