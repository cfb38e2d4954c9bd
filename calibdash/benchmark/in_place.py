"""A benchmark data set that stays where it lives: its rows are aggregated into score cells by an engine.

``run_benchmark`` cross-fits every method on every data set. For a
:class:`calibdash.data.ScoreSet` it fits on rows (or their cells); for an
:class:`EngineDataset` each repeat's K-fold parts come from the hash of a
row's position (:mod:`calibdash.evaluation.cells`), so one scan of the source per
repeat gives the cells of every fold, and every method of that repeat is
fitted and judged on them (:func:`calibdash.evaluation.holdout.evaluate_cells`).
Feature-aware methods (MBCT) need rows and are refused.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict

from ..core.errors import SettingsError

__all__ = []


class EngineDataset:
    """A source (:class:`calibdash.engines.Source`) read by ``engine``, with its cells kept per scheme.

    Parameters
    ----------
    source : calibdash.engines.Source
    engine : str, optional
        A name of :func:`calibdash.engines.available` (default: the default out-of-core engine).
    name : str, optional
        The data set's name in the tables (default: the source's description).
    memory_limit : str, default "1GB"
        DuckDB's memory limit.
    keep : int, default 4
        Cell tables kept (one per repeat's scheme): each is O(cells), never rows.
    aggregate : callable, optional
        ``aggregate(source, scheme, engine, memory_limit) -> ScoreCells`` (default: :func:`calibdash.engines.aggregate`
        without features): e.g. the command line's, which runs it as a job with its progress shown.
    """

    def __init__(self, source, engine: str | None = None, name: str | None = None, memory_limit: str = "1GB",
                 keep: int = 4, aggregate=None):
        from .. import engines

        self.source = source
        self._aggregate = aggregate
        self.engine = engine or engines.default_engine()
        self.name = name or source.describe()
        self.memory_limit = memory_limit
        self._keep = int(keep)
        self._cells: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.n_rows = None

    def content_key(self) -> str:
        """The source (files with their sizes and modification times, or the table or query) and its roles."""
        src = self.source
        parts = [repr((src.table, src.query, src.order_by, src.database, src.score, src.label, src.split,
                       src.positive, src.transform))]
        for f in src.files():
            st = os.stat(f)
            parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def cells(self, scheme):
        """The score cells of ``scheme``'s parts (aggregated once per scheme, the last ``keep`` kept)."""
        from .. import engines

        key = (scheme.kind, scheme.n_folds, scheme.seed, scheme.test_size, scheme.train_value)
        with self._lock:
            if key in self._cells:
                self._cells.move_to_end(key)
                return self._cells[key]
            if self._aggregate is not None:
                c = self._aggregate(self.source, scheme, self.engine, self.memory_limit)
            else:
                c = engines.aggregate(self.source, scheme, engine=self.engine, features=[],
                                      memory_limit=self.memory_limit)
            self.n_rows = int(c.n.sum())
            self._cells[key] = c
            while len(self._cells) > self._keep:
                self._cells.popitem(last=False)
            return c

    def check_method(self, calibrator) -> None:
        """Refuse a method that reads feature columns: cells hold scores only."""
        if calibrator is not None and calibrator.uses_features:
            raise SettingsError(f"{calibrator.name} reads feature columns, which score cells of {self.name} do not "
                                "hold: benchmark it on a file read in memory.")
