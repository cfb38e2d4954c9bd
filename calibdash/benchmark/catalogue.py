"""Which measures a benchmark can keep and rank, and which value of each is best: one :class:`Catalogue`
per kind of data.

The statistics (:func:`calibdash.benchmark.statistics.summarise`) and the
result's sentences need only this much of a measure: its name, whether
methods can be ranked on it, its direction, its values turned so that lower
is better, and a phrase for people. Binary benchmarks take it from
:mod:`calibdash.measures` (:data:`BINARY`); K-class benchmarks from
:data:`calibdash.measures.class_measures.MEASURES` (:data:`CLASS_MEASURES`), so both rank, test and
report through the same code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import measures
from ..measures import class_measures as mmetrics

__all__ = []


@dataclass(frozen=True)
class Catalogue:
    """The measures of one kind of data as a benchmark uses them.

    Attributes
    ----------
    kind : str
        ``"binary"`` or ``"multiclass"``: what the data sets are.
    names : tuple of str
        Every measure a unit can hold, in table order.
    rankable : callable(name) -> bool
        Whether methods can be ranked on ``name``.
    direction : callable(name) -> bool or None
        True: lower is better; False: higher is better; None: closest to a target.
    oriented : callable(name, values) -> values
        ``values`` turned so that lower is better (keeps the type: array or DataFrame).
    best_phrase : callable(name) -> str
        ``"lower is better"``, ``"0 is ideal"``, ...
    """

    kind: str
    names: tuple
    rankable: Callable[[str], bool]
    direction: Callable[[str], bool | None]
    oriented: Callable
    best_phrase: Callable[[str], str]


#: The binary measures: :data:`calibdash.measures.ALL_NAMES` and their directions.
BINARY = Catalogue("binary", tuple(measures.ALL_NAMES), measures.rankable, measures.direction, measures.oriented,
                   measures.best_phrase)


def _class_phrase(name: str) -> str:
    lower = mmetrics.MEASURES[name].lower_is_better
    return {True: "lower is better", False: "higher is better", None: "0 is ideal"}[lower]


#: The K-class measures as a benchmark ranks them (every one has a best value).
CLASS_MEASURES = Catalogue(
    "multiclass", tuple(mmetrics.MEASURE_NAMES), lambda name: name in mmetrics.MEASURES,
    lambda name: mmetrics.MEASURES[name].lower_is_better,
    lambda name, values: mmetrics.MEASURES[name].oriented(values), _class_phrase)
