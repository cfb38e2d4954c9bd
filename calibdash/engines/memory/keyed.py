"""Keyed cells in memory: :func:`calibdash.monitoring.keyed.from_rows.keyed_cells` on the checked rows."""
from __future__ import annotations

from ...evaluation.cells import MAX_EXACT
from ...monitoring.keyed.from_rows import keyed_cells
from ...evaluation.scheme import Scheme
from ..source import Source
from .rows import prepared_rows

__all__ = []


def aggregate_keyed(source: Source, key, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, on_stage=None):
    """Keyed cells of a source's rows in memory (``memory_limit`` and ``threads`` not used). Text dates are read
    by pandas (:func:`calibdash.monitoring.drift.as_dates`), in more formats than the SQL engines' ISO-8601."""
    stage = on_stage or (lambda name: None)
    stage("reading rows")
    df, _, s, y, part = prepared_rows(source, scheme or Scheme(kind="insample"), [key.column],
                                      source.needs_keys(scheme))
    stage("aggregation")
    return keyed_cells(s, y, df[key.column], key, part, max_exact=max_exact)
