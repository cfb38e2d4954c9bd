"""A large source as the pages and the report read it: a ScoreSet's questions, answered from score cells.

An aggregated large source (rows that stay where they live, :mod:`calibdash.engines.plan`) has no rows in Python,
only its all-rows score cells and, per evaluation scheme, the cells of that scheme's parts, which the
``aggregate`` callable its maker passes gives (the dashboard runs it as a job and caches the cells; a script may
pass ``lambda scheme: engines.aggregate(src, scheme)``).

>>> from calibdash.evaluation.cells import aggregate
>>> import numpy as np
>>> c = aggregate(np.array([0.2, 0.2, 0.7]), np.array([0, 1, 1]))
>>> ld = LargeData.from_aggregate("demo", {"score": "p", "label": "y"},
...                               {"cells": c, "positive": 1, "range": None, "splits": []}, key="k")
>>> ld.describe()
'3 rows summarised into 2 score cells (DuckDB)'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..core.errors import DataError

if TYPE_CHECKING:
    from ..evaluation.cells import ScoreCells

__all__ = ["LargeData"]


@dataclass(frozen=True, eq=False)
class LargeData:
    """An aggregated large source: what Compare and Explore read of a ScoreSet, with cells instead of rows.

    ``all_cells`` are the all-rows cells; :meth:`cells` the cells of a scheme, from ``aggregate(scheme)`` (None:
    only the all-rows cells are known). ``splits`` holds the split column's distinct values only, never one per
    row; ``key`` identifies the source, its roles and its rows (e.g. :func:`calibdash.engines.plan.plan_key`).
    """

    name: str
    score: str
    label_column: str
    split_column: str | None
    positive_label: Any
    all_cells: "ScoreCells"
    key: str
    mapped_range: tuple | None
    splits: tuple
    roles: dict
    aggregate: Callable[[Any], "ScoreCells"] | None = field(default=None, repr=False)
    features = None
    feature_columns: tuple = ()
    is_large = True

    @classmethod
    def from_aggregate(cls, name: str, roles: dict, got: dict, key: str,
                       aggregate: Callable[[Any], "ScoreCells"] | None = None) -> "LargeData":
        """From the roles (``score``, ``label``, ``split``) and what the all-rows aggregation gave
        (:func:`calibdash.engines.plan.aggregate_plan`'s ``"all"``: ``cells``, ``positive``, ``range``, ``splits``)."""
        return cls(name=name, score=roles["score"], label_column=roles["label"],
                   split_column=roles.get("split") or None, positive_label=got["positive"],
                   all_cells=got["cells"], key=key, mapped_range=got["range"], splits=tuple(got["splits"]),
                   roles=dict(roles), aggregate=aggregate)

    @property
    def n_rows(self) -> int:
        return int(self.all_cells.n_rows)

    @property
    def n_pos(self) -> int:
        return int(np.sum(self.all_cells.n_pos))

    @property
    def n_cells(self) -> int:
        return len(self.all_cells)

    @property
    def score_columns(self) -> list:
        return [self.score]

    @property
    def split(self):
        return np.array(self.splits, dtype=object) if self.split_column else None

    @property
    def report(self) -> SimpleNamespace:
        """What the pages read of a validation report: the mapped score's range, notes."""
        notes = [f"A large source on the server ({self.name}): {self.n_rows:,} rows summarised by DuckDB into "
                 f"{self.n_cells:,} score cells; no row was dropped (rows where they live are checked, not "
                 "filtered)."]
        return SimpleNamespace(mapped={self.score: self.mapped_range} if self.mapped_range else {}, messages=notes,
                               n_read=self.n_rows, n_used=self.n_rows)

    def content_key(self) -> str:
        return self.key

    def with_score(self, column: str) -> "LargeData":
        if column != self.score:
            raise DataError("a large source is aggregated for one score column; choose another on the Data page.")
        return self

    def cells(self, scheme) -> "ScoreCells":
        """The score cells of ``scheme`` (parts by row hash, or the split column), from ``aggregate``."""
        if self.aggregate is None:
            raise DataError(f"{self.name}: only its all-rows cells are known (no aggregation was given).")
        return self.aggregate(scheme)

    def weighted_rows(self) -> tuple:
        """``(scores, labels, weights)``: the all-rows cells as weighted rows (the raw scores' reliability)."""
        c = self.all_cells
        return c.weighted_predictions(c.score)

    def report_view(self) -> SimpleNamespace:
        """For :func:`calibdash.report.describe_source`, which sums ``labels``: the positives as one number."""
        return SimpleNamespace(name=self.name, labels=np.array([self.n_pos]), report=self.report, n_rows=self.n_rows,
                               score=self.score, label_column=self.label_column, positive_label=self.positive_label,
                               split_column=self.split_column, feature_columns=[])

    def describe(self) -> str:
        """The sidebar's line."""
        return f"{self.n_rows:,} rows summarised into {self.n_cells:,} score cells (DuckDB)"
