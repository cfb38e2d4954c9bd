"""The measures: the papers' metrics and the further measures, one module per concern, and their registry.

The subpackage:

==========================  ===================================================================
``binning``                 the bins every binned measure and the bootstrap share (equal-count,
                            equal-width, rank), bin indices, reliability tables, input checks
``calibration``             the papers' metrics: ECE, MCE, MVCE, RMSE, Brier, log-loss, AUC,
                            accuracy, PUD, ``summary`` (also as :mod:`calibdash.metrics`, deprecated)
``recalibration``           calibration intercept and slope (the one logistic solver,
                            :mod:`calibdash.core.logistic`)
``smoother``                the loess calibration curve, ICI, E50, E90, Emax
``hypothesis``              Spiegelhalter's z, the Hosmer-Lemeshow test
``decomposition``           Murphy's Brier decomposition
``binned``                  debiased l2 calibration error, adaptive ECE
``smooth_ece``, ``corp``    smooth ECE; CORP (also as :mod:`calibdash.smooth_ece`,
                            :mod:`calibdash.corp`)
==========================  ===================================================================

Inputs and weights
------------------
Every statistic takes ``probs`` (predicted probability of the positive
class, in [0, 1]), ``labels`` (0/1) and ``sample_weight``, validated by
:func:`calibdash.measures.binning.check_inputs`. A row of weight ``w`` counts
as ``w`` rows: with whole-number weights every statistic equals, to rounding,
its value on the rows repeated, so a table of score cells gives the value of
its rows (``tests/measures/test_clinical.py`` checks this for each function). Weights
are counts everywhere, also where a statistic depends on the sample size
(standard errors, the tests' statistics, the debiasing term, the loess
neighbourhood): weights that sum to 1 describe one row, not a distribution.

Every measure, binary or K-class, is one record of :mod:`calibdash.measures.registry`;
this module is the binary view of it: the papers' metrics
(:data:`calibdash.measures.calibration.METRIC_NAMES`) and the further measures
that the peers and the clinical literature add, each computed by its own
module, with which value is best, so that the metric tables, Compare's
intervals (:func:`calibdash.evaluation.bootstrap.bootstrap_measures`) and the
Benchmark's ranks (:func:`oriented`) treat them alike:

========  =========================================================  ===========
name      what                                                       best
========  =========================================================  ===========
smECE     smooth ECE at its own bandwidth (Błasiok & Nakkiran 2023)  lower
ACE       adaptive ECE, 15 equal-mass bins (Nixon et al. 2019)        lower
dCE       debiased l2 calibration error (Kumar, Liang & Ma 2019)      lower
ICI       integrated calibration index (Austin & Steyerberg 2019)     lower
E50, E90  median and 90th percentile of the loess curve's error       lower
CITL      calibration-in-the-large, the intercept (Cox 1958)          0
Slope     calibration slope (Cox 1958)                                1
MCB       CORP miscalibration of the Brier score (Dimitriadis et al.)  lower
DSC       CORP discrimination                                         higher
UNC       CORP uncertainty (the same for every method of a data set)   -
REL, RES  Murphy's (1973) reliability and resolution, 10 bins        lower, higher
Spieg. z  Spiegelhalter's (1986) z statistic                          0
HL        Hosmer-Lemeshow statistic over deciles of risk              lower
========  =========================================================  ===========

Every function takes ``(probs, labels, sample_weight)``; a row of weight ``w``
counts as ``w`` rows, so the values of score cells are those of their rows.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..core.errors import DataError
from . import hypothesis
from .binning import check_inputs
from .registry import BINARY, Measure, select_names, view

__all__ = [
    "MEASURES", "MEASURE_NAMES", "ALL_NAMES", "compute", "check_names", "describe", "best_phrase", "direction",
    "oriented", "rankable", "hypothesis_tests"
]

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
    """The asked measures (default all) of predictions ``probs`` against 0/1 ``labels``.

    ``loess_points``: the nodes at which ICI's loess curve is fitted exactly
    (default :data:`calibdash.measures.smoother.LOESS_MAX_POINTS`; fewer are faster,
    see :func:`calibdash.measures.smoother.smoothed_calibration_curve`).

    A measure these rows do not define is NaN: the slope when every
    prediction is the same, or ICI, E50 and E90 when most predictions are
    tied (a step calibrator's), where R's loess stops with "span too small"
    (:func:`calibdash.measures.smoother.ici`). Invalid input (NaN, more than two
    label values, scores outside [0, 1]) raises :class:`~calibdash.core.errors.DataError`.

    ``labels`` are any two values, as for :mod:`calibdash.measures.calibration`;
    ``pos_label`` names the positive class (default: the shared rule,
    :func:`calibdash.core.validation.choose_positive`).
    """
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


def _test(fn: Callable[..., dict], key: str) -> Callable[..., dict]:
    def run(p, y, sample_weight) -> dict:
        out = fn(p, y, sample_weight)
        return {"statistic": out[key], "p_value": out["p_value"], "reading": out["reading"]}
    return run


#: The measures that are test statistics, each with the test that also gives its p-value and reading.
TESTS: dict[str, Callable[..., dict]] = {"Spieg. z": _test(hypothesis.spiegelhalter_z, "z"),
                                         "HL": _test(hypothesis.hosmer_lemeshow, "statistic")}


def hypothesis_tests(probs, labels, sample_weight=None, *, pos_label=None) -> dict[str, dict]:
    """The tests among the measures (:data:`TESTS`): measure name -> ``statistic`` (the measure's value in
    :func:`compute`), ``p_value`` and ``reading`` (one plain sentence at the 5% level)."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return {name: fn(p, y, w) for name, fn in TESTS.items()}


def table(predictions: pd.DataFrame, labels, sample_weight=None, names: Sequence[str] | None = None, *,
          pos_label=None) -> pd.DataFrame:
    """One row per method (a column of ``predictions``), one column per measure."""
    return pd.DataFrame({m: compute(predictions[m].to_numpy(), labels, sample_weight, names, pos_label=pos_label)
                         for m in predictions.columns}).T.reindex(columns=list(check_names(names)))


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
