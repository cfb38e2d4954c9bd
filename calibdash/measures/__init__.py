"""The measures: the papers' metrics and the further measures, one module per concern, and their registry.

Every statistic takes ``probs`` (predicted probability of the positive class, in [0, 1]), ``labels`` (0/1, or any two
values) and ``sample_weight``, validated by :func:`calibdash.measures.binning.check_inputs`. A row of weight ``w``
counts as ``w`` rows: with whole-number weights every statistic equals, to rounding, its value on the rows repeated,
so a table of score cells gives the value of its rows (``tests/measures/test_clinical.py``). Weights are counts
everywhere, also where a statistic depends on the sample size (standard errors, the tests' statistics, the debiasing
term, the loess neighbourhood): weights that sum to 1 describe one row, not a distribution.

Every measure, binary or K-class, is one record of :mod:`calibdash.measures.registry`; this module is the binary
view of it, so that the metric tables, Compare's intervals and the Benchmark's ranks (:func:`oriented`) treat the
papers' metrics (:data:`calibdash.measures.calibration.METRIC_NAMES`) and the further measures alike.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import DataError
from . import hypothesis
from .binning import check_inputs
from .registry import BINARY, Measure, select_names, view

__all__ = ["MEASURES", "MEASURE_NAMES", "ALL_NAMES", "compute", "check_names", "describe", "best_phrase", "direction",
           "oriented", "rankable", "hypothesis_tests"]

#: name -> record of the further measures of a binary score, in table order.
MEASURES: dict[str, Measure] = view(BINARY, metric=False)
MEASURE_NAMES = tuple(MEASURES)
#: Every binary name a table, an interval or a rank can hold: the papers' metrics, then these.
_BINARY = view(BINARY)
ALL_NAMES = tuple(_BINARY)


def check_names(names: Sequence[str] | None) -> tuple[str, ...]:
    """The asked measures in table order (all when ``names`` is None); SettingsError for a name that is not
    a measure (:func:`select_names`)."""
    return select_names(names, MEASURE_NAMES)


def compute(probs, labels, sample_weight=None, names: Sequence[str] | None = None, *,
            loess_points: int | None = None, pos_label=None) -> dict[str, float]:
    """The asked measures (default all) of predictions ``probs`` against ``labels`` (any two values; ``pos_label``
    names the positive class). ``loess_points``: the nodes of ICI's loess curve (default
    :data:`calibdash.measures.smoother.LOESS_MAX_POINTS`; fewer are faster). A measure these rows do not define is
    NaN: the slope when every prediction is the same, or ICI, E50 and E90 when most predictions are tied (where R's
    loess stops with "span too small"). Invalid input raises :class:`~calibdash.core.errors.DataError`."""
    want = check_names(names)
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    out: dict[str, float] = {}
    for name in want:
        if name in out:
            continue
        m = MEASURES[name]
        given = [k for k, r in MEASURES.items() if r.family == m.family] if m.family else [name]
        try:
            with np.errstate(all="ignore"):
                extra = {"loess_points": loess_points} if m.family == "ici" else {}
                values = m.compute(p, y, w, **extra)
                values = values if m.family else {name: values}
        except DataError:
            values = dict.fromkeys(given, np.nan)
        out.update({k: float(values[k]) for k in given})
    return {n: out[n] for n in want}


#: The measures that are test statistics: name -> (the test, the entry of its result that is the measure).
TESTS = {"Spieg. z": (hypothesis.spiegelhalter_z, "z"), "HL": (hypothesis.hosmer_lemeshow, "statistic")}


def hypothesis_tests(probs, labels, sample_weight=None, *, pos_label=None) -> dict[str, dict]:
    """The tests among the measures (:data:`TESTS`): measure name -> ``statistic`` (the measure's value in
    :func:`compute`), ``p_value`` and ``reading`` (one plain sentence at the 5% level)."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    out = {}
    for name, (test, key) in TESTS.items():
        result = test(p, y, w)
        out[name] = {"statistic": result[key], "p_value": result["p_value"], "reading": result["reading"]}
    return out


def best_phrase(name: str) -> str:
    """``"lower is better"``, ``"higher is better"``, ``"1 is ideal"`` or ``"the same for every method"``."""
    return _BINARY[name].phrase()


def describe(name: str) -> str:
    """``"smooth ECE (lower is better; Błasiok & Nakkiran (2023), Smooth ECE)"``: for help texts."""
    m = MEASURES[name]
    return f"{m.label} ({m.phrase()}; {m.caption})"


def rankable(name: str) -> bool:
    """Whether methods can be ranked on ``name`` (a metric, or a measure with a best value)."""
    return name in _BINARY and _BINARY[name].best != "none"


def direction(name: str) -> bool | None:
    """Lower is better (True), higher is better (False), or neither (None: closest to a target, or unranked),
    for any name of :data:`ALL_NAMES`; what a table's bold "best" follows."""
    return _BINARY[name].lower_is_better


def oriented(name: str, values):
    """``values`` of ``name`` (array or DataFrame) turned so that lower is better, for ranks; keeps the type.

    Raises
    ------
    SettingsError
        For a name methods cannot be ranked on (UNC, the same for every method).
    """
    return _BINARY[name].oriented(values)
