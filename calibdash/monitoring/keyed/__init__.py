"""Keyed score cells: score cells that also carry a group or a period, for monitoring at any scale.

A *keyed* cell gathers the rows that share a part, a score cell (:mod:`calibdash.evaluation.cells`) and a **key**:
the value of a group column (or a quantile range of a numeric one) or the period of a date column. Everything the
Groups & time views show is computed from keyed cells as weighted rows, in O(cells) after one pass over the rows,
wherever the rows live: memory, DuckDB and Spark give the same keyed cells (``tests/engines/test_engine_contract.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...evaluation.cells import ScoreCells
from ...core.errors import SettingsError

__all__ = ["Key", "KeyedCells", "PERIODS"]

#: What a key can be.
KINDS = ("group", "period")
#: Period lengths a key can have (pandas period aliases; weeks start on Monday, as :mod:`calibdash.monitoring.drift`).
PERIODS = ("D", "W", "M", "Q")


@dataclass(frozen=True)
class Key:
    """Which ``column`` keys the cells, and how its values become keys: ``kind="group"``, by the rules of
    :func:`calibdash.monitoring.grouping.make_groups` (with ``n_quantiles``, ``max_groups``, ``min_rows``; quantiles
    computed where the rows live); ``kind="period"``, the period of a date column of length ``freq`` ({"D", "W", "M",
    "Q"} or "auto"; :func:`~calibdash.monitoring.periods.to_periods`).
    """

    column: str
    kind: str = "group"
    freq: str = "auto"
    n_quantiles: int = 5
    max_groups: int = 20
    min_rows: float = 50

    def __post_init__(self):
        if self.kind not in KINDS:
            raise SettingsError(f"a key is one of {', '.join(KINDS)}, got {self.kind!r}.")
        if self.kind == "period" and self.freq != "auto" and self.freq not in PERIODS:
            raise SettingsError(f"a period is 'auto' or one of {', '.join(PERIODS)}, got {self.freq!r}.")
        if self.kind == "group" and not 2 <= int(self.n_quantiles) <= self.max_groups:   # as make_groups refuses
            raise SettingsError(f"n_quantiles must be between 2 and {self.max_groups}, got {self.n_quantiles}.")


@dataclass(frozen=True)
class KeyedCells:
    """Score cells with a key per cell: ``cells``, one per (part, score cell, key), sorted by key, part, score (exact or
    on the grid, decided on all rows together); ``key`` (int32), each cell's index into ``labels``, the keys in display
    order (as ``make_groups`` and ``to_periods`` order and name them); ``spec``, the key asked for (``freq``
    resolved); ``starts``, each period's first day (groups: empty); ``notes``, how the keys were made; ``pooled``,
    groups pooled into ``"other"``; ``n_left_out``, rows without a key (no readable date).
    """

    cells: ScoreCells
    key: np.ndarray
    labels: tuple
    spec: Key
    starts: tuple = ()
    notes: tuple = ()
    pooled: tuple = ()
    n_left_out: int = 0

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def nbytes(self) -> int:
        """Memory held (what a cache is charged for)."""
        return int(self.cells.nbytes + self.key.nbytes)

    def of(self, k: int) -> ScoreCells:
        """The cells of key ``k`` (an index into ``labels``)."""
        return self.cells.select(self.key == int(k))

    def weighted_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, labels, weights, key)``: each cell as a positive row of weight ``n_pos`` and a negative
        row of weight ``n - n_pos`` (zero-weight rows dropped), with its key."""
        c = self.cells
        keep = np.concatenate([c.n_pos, c.n - c.n_pos]) > 0
        return (*c.weighted_rows(), np.concatenate([self.key, self.key])[keep])
