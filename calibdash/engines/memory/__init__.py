"""The in-memory engine: rows read into numpy, aggregated by :mod:`calibdash.evaluation.cells` (the reference)."""
from __future__ import annotations

import os

from ..base import Engine

__all__ = []

#: A single file below this size is aggregated in memory by default (the dashboard's upload limit).
MAX_BYTES = 200 * 1024 * 1024


class Memory(Engine):
    """Every row in memory (pandas, pyarrow); the default for one file under :data:`MAX_BYTES`."""

    name, label, order = "memory", "in-memory", 0
    out_of_core = False

    def suits(self, source) -> bool:
        if source is None or source.kind != "files":
            return False
        return len(source.files()) == 1 and os.path.getsize(source.files()[0]) < MAX_BYTES
