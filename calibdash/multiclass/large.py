"""Measures of a K-class model on a large source, from score cells aggregated where the rows live.

:func:`evaluate_class_source` finds the class columns of a Parquet or CSV
glob (or takes a :class:`calibdash.engines.classes.ClassSource`, which also
names DuckDB tables and queries), aggregates the rows into
:class:`~calibdash.multiclass.cells.ClassCells` with the memory, DuckDB or
Spark engine (:func:`calibdash.engines.classes.aggregate_classes`), and
computes every measure of :data:`calibdash.multiclass.metrics.MEASURES` from
the cells (:func:`calibdash.multiclass.cells.cell_measures`): with exact
cells these equal the measures of the rows (to summation order).

Only the uncalibrated probabilities are measured here: fitting multi-class
calibrators needs each row's whole vector, which cells do not keep (see
:mod:`calibdash.multiclass.cells`), so methods are not fitted on large
sources yet.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..cells import MAX_EXACT
from ..engines.classes import ClassSource, aggregate_classes, class_source
from ..scheme import Scheme
from .cells import ClassCells, cell_measures
from .evaluation import UNCALIBRATED

__all__ = ["ClassSourceResult", "evaluate_class_source"]


@dataclass
class ClassSourceResult:
    """The uncalibrated measures of a K-class source, and the cells they come from.

    Attributes
    ----------
    source : ClassSource
        The rows and their class columns.
    scheme : Scheme
    cells : ClassCells
        The judged rows' cells (a split's held-out part; every row for ``"insample"`` and ``"kfold"``).
    metrics : DataFrame
        One row, ``"uncalibrated"``, a column per measure.
    exact : bool
        Whether every reduction's cells were exact (then the measures equal the rows').
    note : str
        What the cells summarise.
    """

    source: ClassSource
    scheme: Scheme
    cells: ClassCells
    metrics: pd.DataFrame
    exact: bool
    note: str


def evaluate_class_source(source, label: str | None = None, probs=None, logits=None, *, split: str | None = None,
                          scheme: Scheme | None = None, engine: str = "duckdb", measures=None,
                          max_exact: int = MAX_EXACT, memory_limit: str = "1GB", threads: int | None = None,
                          spark=None) -> ClassSourceResult:
    """The measures of a K-class model's probabilities on a large source, computed from score cells.

    Parameters
    ----------
    source : str, list of str or ClassSource
        A Parquet or CSV path or glob (its class columns found by
        :func:`calibdash.engines.classes.class_source` from ``label``, ``probs``
        and ``logits``, as :func:`calibdash.data.build_class_set` takes them),
        or a :class:`~calibdash.engines.classes.ClassSource`.
    label, probs, logits, split : optional
        The columns' roles (ignored for a ``ClassSource``).
    scheme : Scheme, default every row
        With ``"split"`` or ``"column"`` only the held-out part is measured
        (the rows a calibrator would be judged on); otherwise every row.
    engine : {"duckdb", "memory", "spark"}
    measures : list of str, optional
        Names of :data:`calibdash.multiclass.metrics.MEASURES` (default all).
    max_exact, memory_limit, threads, spark
        As :func:`calibdash.engines.classes.aggregate_classes` takes them.

    Raises
    ------
    DataError, SettingsError
        As :func:`~calibdash.engines.classes.class_source` and
        :func:`~calibdash.engines.classes.aggregate_classes`; an unknown measure.
    """
    from .metrics import check_names

    names = check_names(measures)
    scheme = scheme or Scheme(kind="insample")
    csrc = source if isinstance(source, ClassSource) else class_source(source, label, probs, logits, split=split)
    cells = aggregate_classes(csrc, scheme, engine=engine, max_exact=max_exact, memory_limit=memory_limit,
                              threads=threads, spark=spark)
    judged = cells.select_parts([1]) if scheme.kind in ("split", "column") else cells
    table = pd.DataFrame([cell_measures(judged, names)], index=pd.Index([UNCALIBRATED], name="method"))
    return ClassSourceResult(source=csrc, scheme=scheme, cells=judged, metrics=table, exact=judged.exact,
                             note=judged.describe())
