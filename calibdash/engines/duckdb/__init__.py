"""The DuckDB engine: rows aggregated where they live, out of core, and models applied there."""
from __future__ import annotations

from ..base import Engine
from . import rows

__all__ = []


class DuckDB(Engine):
    """DuckDB on a private connection with a memory limit and a spill directory (or the caller's
    ``connection``); the default for a glob, a large file, a DuckDB table or a query."""

    name, label, order = "duckdb", "DuckDB", 1
    reads_heads = True
    dialect = "duckdb"
    read_head = staticmethod(rows.read_head)
    label_counts = staticmethod(rows.label_counts)

    def watched(self, job, stack) -> dict:
        """``on_connect``: the job interrupts the connection when cancelled and reads its query progress
        (:func:`calibdash.engines.plan.watch`)."""
        from ..plan import watch

        return {"on_connect": lambda con: stack.enter_context(watch(job, con))}
