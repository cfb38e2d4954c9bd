"""The measures: the papers' metrics and the further measures, one module per concern, and their registry.

The subpackage:

==========================  ===================================================================
``binning``                 the bins every binned measure and the bootstrap share (equal-count,
                            equal-width, rank), bin indices, reliability tables, input checks
``calibration``             the papers' metrics: ECE, MCE, MVCE, RMSE, Brier, log-loss, AUC,
                            accuracy, PUD, ``summary`` (also as :mod:`calibdash.metrics`)
``recalibration``           calibration intercept and slope (the one logistic solver,
                            :mod:`calibdash.logistic`)
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
its rows (``tests/test_clinical.py`` checks this for each function). Weights
are counts everywhere, also where a statistic depends on the sample size
(standard errors, the tests' statistics, the debiasing term, the loess
neighbourhood): weights that sum to 1 describe one row, not a distribution.

This module is the registry of the further measures beside
:data:`calibdash.metrics.METRIC_NAMES` (the four papers' metrics, tuned for
the bootstrap of score cells): it names
the measures that the peers and the clinical literature add, each computed by
its own module, and says for each which value is best, so that the metric
tables, Compare's intervals (:func:`calibdash.bootstrap.bootstrap_measures`)
and the Benchmark's ranks (:func:`oriented`) treat them alike:

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

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, SettingsError
from . import binned, calibration as metrics, corp, decomposition, hypothesis, recalibration, smooth_ece, smoother
from .binning import DEFAULT_N_BINS, check_inputs

__all__ = ["Measure", "MEASURES", "MEASURE_NAMES", "ALL_NAMES", "compute", "table", "check_names", "select_names",
           "describe", "best_phrase", "direction", "oriented", "rankable", "TESTS", "hypothesis_tests"]


@dataclass(frozen=True)
class Measure:
    """One measure: its table name, what it is, and which value is best.

    Attributes
    ----------
    name : str
        Column name in tables (``"smECE"``).
    label : str
        What it is, in a few words.
    best : {"lower", "higher", "target", "none"}
        ``"target"``: the value closest to ``target`` is best; ``"none"``:
        not a ranking (the same for every method of a data set).
    target : float
        The ideal value when ``best == "target"``.
    paper : str
        Where it comes from.
    """

    name: str
    label: str
    best: str
    paper: str
    target: float = 0.0


#: name -> Measure, in table order.
MEASURES: dict[str, Measure] = {m.name: m for m in (
    Measure("smECE", "smooth ECE", "lower", "Błasiok & Nakkiran (2023), Smooth ECE"),
    Measure("ACE", "adaptive ECE (15 equal-mass bins)", "lower", "Nixon et al. (2019), Measuring calibration in deep learning"),
    Measure("dCE", "debiased l2 calibration error", "lower", "Kumar, Liang & Ma (2019), Verified uncertainty calibration"),
    Measure("ICI", "integrated calibration index", "lower", "Austin & Steyerberg (2019)"),
    Measure("E50", "median loess calibration error", "lower", "Austin & Steyerberg (2019)"),
    Measure("E90", "90th percentile loess calibration error", "lower", "Austin & Steyerberg (2019)"),
    Measure("CITL", "calibration-in-the-large (intercept; 0 is ideal)", "target", "Cox (1958); Van Calster et al. (2019)"),
    Measure("Slope", "calibration slope (1 is ideal)", "target", "Cox (1958)", target=1.0),
    Measure("MCB", "CORP miscalibration (Brier)", "lower", "Dimitriadis, Gneiting & Jordan (2021), PNAS"),
    Measure("DSC", "CORP discrimination (Brier)", "higher", "Dimitriadis, Gneiting & Jordan (2021), PNAS"),
    Measure("UNC", "CORP uncertainty (Brier)", "none", "Dimitriadis, Gneiting & Jordan (2021), PNAS"),
    Measure("REL", "Murphy reliability (10 equal-count bins)", "lower", "Murphy (1973)"),
    Measure("RES", "Murphy resolution (10 equal-count bins)", "higher", "Murphy (1973)"),
    Measure("Spieg. z", "Spiegelhalter's z (0 is ideal)", "target", "Spiegelhalter (1986)"),
    Measure("HL", "Hosmer-Lemeshow statistic (10 groups)", "lower", "Hosmer & Lemeshow (1980)"),
)}
MEASURE_NAMES = tuple(MEASURES)
#: Every name a table, an interval or a rank can hold: the metrics of :mod:`calibdash.metrics`, then these.
ALL_NAMES = tuple(metrics.METRIC_NAMES) + MEASURE_NAMES


def _cox(p, y, w) -> dict:
    fit = recalibration.calibration_intercept_slope(p, y, w)
    return {"CITL": fit["intercept"], "Slope": fit["slope"]}


def _ici(p, y, w, loess_points=None) -> dict:
    out = smoother.ici(p, y, w, **({} if loess_points is None else {"max_points": int(loess_points)}))
    return {"ICI": out["ICI"], "E50": out["E50"], "E90": out["E90"]}


def _corp(p, y, w) -> dict:
    out = corp.corp_decomposition(p, y, w)
    return {"MCB": out["MCB"], "DSC": out["DSC"], "UNC": out["UNC"]}


def _murphy(p, y, w) -> dict:
    out = decomposition.brier_decomposition(p, y, w, n_bins=DEFAULT_N_BINS, strategy="quantile")
    return {"REL": out["reliability"], "RES": out["resolution"]}


#: Functions that compute one or several measures at once, and the measures each gives.
_GROUPS: tuple[tuple[tuple[str, ...], Callable[..., dict]], ...] = (
    (("smECE",), lambda p, y, w: {"smECE": smooth_ece.smooth_ece(p, y, w)}),
    (("ACE",), lambda p, y, w: {"ACE": binned.adaptive_ece(p, y, w)}),
    (("dCE",), lambda p, y, w: {"dCE": binned.debiased_l2_ce(p, y, w)}),
    (("ICI", "E50", "E90"), _ici),
    (("CITL", "Slope"), _cox),
    (("MCB", "DSC", "UNC"), _corp),
    (("REL", "RES"), _murphy),
    (("Spieg. z",), lambda p, y, w: {"Spieg. z": hypothesis.spiegelhalter_z(p, y, w)["z"]}),
    (("HL",), lambda p, y, w: {"HL": hypothesis.hosmer_lemeshow(p, y, w)["statistic"]}),
)


def select_names(names: Sequence[str] | None, known: Sequence[str], what: str = "measure") -> tuple[str, ...]:
    """The asked names of ``known`` in ``known``'s order (all when ``names`` is None).

    Raises
    ------
    SettingsError
        For a name not in ``known`` (``"unknown {what} 'x'; choose from ..."``).
    """
    if names is None:
        return tuple(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SettingsError(f"unknown {what} {unknown[0]!r}; choose from {', '.join(known)}.")
    return tuple(n for n in known if n in set(names))


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
    label values, scores outside [0, 1]) raises :class:`~calibdash.errors.DataError`.

    ``labels`` are any two values, as for :mod:`calibdash.metrics`;
    ``pos_label`` names the positive class (default: the shared rule,
    :func:`calibdash.validation.choose_positive`).
    """
    want = check_names(names)
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    out: dict[str, float] = {}
    for given, fn in _GROUPS:
        if not set(given) & set(want):
            continue
        try:
            with np.errstate(all="ignore"):
                values = fn(p, y, w, loess_points) if fn is _ici else fn(p, y, w)
        except DataError:
            values = dict.fromkeys(given, np.nan)
        out.update({k: float(values[k]) for k in given if k in want})
    return {n: out[n] for n in want}


def _spiegelhalter(p, y, w) -> dict:
    out = hypothesis.spiegelhalter_z(p, y, w)
    return {"statistic": out["z"], "p_value": out["p_value"], "reading": out["reading"]}


def _hosmer_lemeshow(p, y, w) -> dict:
    out = hypothesis.hosmer_lemeshow(p, y, w)
    return {"statistic": out["statistic"], "p_value": out["p_value"], "reading": out["reading"]}


#: The measures that are test statistics, each with the test that also gives its p-value and reading.
TESTS: dict[str, Callable[..., dict]] = {"Spieg. z": _spiegelhalter, "HL": _hosmer_lemeshow}


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
    if name in metrics.METRIC_NAMES:
        return "lower is better" if name in metrics.LOWER_IS_BETTER else "higher is better"
    m = MEASURES[name]
    return {"lower": "lower is better", "higher": "higher is better", "none": "the same for every method",
            "target": f"{m.target:g} is ideal"}[m.best]


def describe(name: str) -> str:
    """``"smooth ECE (lower is better; Błasiok & Nakkiran (2023), Smooth ECE)"``: for help texts."""
    m = MEASURES[name]
    return f"{m.label} ({best_phrase(name)}; {m.paper})"


def rankable(name: str) -> bool:
    """Whether methods can be ranked on ``name`` (a metric, or a measure with a best value)."""
    return name in metrics.METRIC_NAMES or (name in MEASURES and MEASURES[name].best != "none")


def direction(name: str) -> bool | None:
    """Lower is better (True), higher is better (False), or neither (None: closest to a target, or unranked),
    for any name of :data:`ALL_NAMES`; what a table's bold "best" follows."""
    if name in metrics.METRIC_NAMES:
        return name in metrics.LOWER_IS_BETTER
    best = MEASURES[name].best
    return {"lower": True, "higher": False}.get(best)


def oriented(name: str, values):
    """``values`` of ``name`` (array or DataFrame) turned so that lower is better, for ranks; keeps the type.

    Raises
    ------
    SettingsError
        For a name methods cannot be ranked on (UNC, the same for every method).
    """
    if not rankable(name):
        raise SettingsError(f"{name} is the same for every method of a data set: it ranks nothing.")
    if name in metrics.METRIC_NAMES:
        return values if name in metrics.LOWER_IS_BETTER else -values
    m = MEASURES[name]
    if m.best == "lower":
        return values
    if m.best == "higher":
        return -values
    return abs(values - m.target)
