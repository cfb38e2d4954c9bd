"""Multi-class benchmarks: K-class calibrators over several K-class data sets, ranked and tested as the binary ones.

The protocol is the binary benchmark's (:mod:`calibdash.benchmark`, after
Demšar 2006), with K-class data sets (:class:`calibdash.data.ClassSet`) and
multi-class methods (:func:`calibdash.multiclass.available`):

1. Every (data set, method, repeat) unit is one call of
   :func:`calibdash.evaluation.evaluate_classes` with
   ``Scheme("kfold", n_folds=K, seed=seed + repeat)``: each row's calibrated
   probabilities come from a model fitted on the other K - 1 folds (the folds
   are cut by the rows' content, :mod:`calibdash.scheme`, so the
   order of the rows never changes a result), and every measure of
   :data:`calibdash.multiclass.metrics.MEASURES` is computed once on all the
   out-of-fold rows. The uncalibrated probabilities are a unit of their own.
2. Means over repeats, ranks per data set, average ranks per measure, the
   Friedman test (Iman-Davenport) and Holm's procedure against a reference
   are :func:`calibdash.benchmark.statistics.summarise`'s, with the
   multi-class measures' directions (:data:`CLASS_MEASURES`).

Kull et al. (NeurIPS 2019, "Beyond temperature scaling: obtaining
well-calibrated multiclass probabilities with Dirichlet calibration",
section 5) report average ranks of the calibrators over their data sets on
log-loss and on classwise-ECE, with Friedman tests; so the default ranked
measure here is the log-loss (:data:`DEFAULT_CLASS_METRIC`) and the result's
average-rank table holds classwise ECE (``cwECE``) and every other measure
beside it. Their protocol is 5 x 5-fold cross-validation of the calibrators
(on held-out model outputs); ``repeats`` and ``n_folds`` set it.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping, MutableMapping, Sequence

import pandas as pd

from ..data import ClassSet, build_class_set, is_multiclass, read_table
from ..errors import DataError, SettingsError
from ..multiclass import available as class_methods
from ..multiclass import metrics as mmetrics
from ..evaluation import UNCALIBRATED, evaluate_classes, resolve_classes
from ..scheme import Scheme
from .catalogue import Catalogue
from .datasets import expand_paths, file_datasets, unique_name
from .engine import (DEFAULT_FOLDS, DEFAULT_REPEATS, check_metrics, check_plan, params_key, plan_units, run_units,
                     units_frame)
from .result import BenchmarkResult
from .statistics import DEFAULT_ALPHA, default_reference, summarise

__all__ = ["CLASS_MEASURES", "DEFAULT_CLASS_METHODS", "DEFAULT_CLASS_METRIC", "default_class_methods",
           "class_unit_key", "run_class_unit", "run_class_benchmark", "class_datasets_from_table",
           "load_benchmark_datasets"]

#: Methods a multi-class benchmark starts with (those registered): the scaling family of Kull et al. (2019)
#: and one-vs-rest isotonic and top-label histogram binning (Gupta & Ramdas 2022's choice).
DEFAULT_CLASS_METHODS = ("temperature", "vector", "matrix", "dirichlet", "ovr:isotonic", "top_label:histogram")
#: The measure ranked unless another is chosen: the log-loss, as Kull et al. (2019) rank first.
DEFAULT_CLASS_METRIC = "LogLoss"
#: Changes when a multi-class unit's computation changes, so stale cached units are not reused.
_CLASS_UNIT_VERSION = 1


def _phrase(name: str) -> str:
    lower = mmetrics.MEASURES[name].lower_is_better
    return {True: "lower is better", False: "higher is better", None: "0 is ideal"}[lower]


#: The multi-class measures as a benchmark ranks them (every one has a best value).
CLASS_MEASURES = Catalogue(
    "multiclass", tuple(mmetrics.MEASURE_NAMES), lambda name: name in mmetrics.MEASURES,
    lambda name: mmetrics.MEASURES[name].lower_is_better,
    lambda name, values: mmetrics.MEASURES[name].oriented(values), _phrase)


def default_class_methods() -> list[str]:
    """:data:`DEFAULT_CLASS_METHODS` that are registered (:func:`calibdash.multiclass.available`)."""
    known = set(class_methods())
    return [m for m in DEFAULT_CLASS_METHODS if m in known]


def class_unit_key(cs: ClassSet, calibrator, n_folds: int, seed: int) -> tuple:
    """Cache key of a multi-class unit: the data's content key, the calibrator's class and parameters, K, seed."""
    return (_CLASS_UNIT_VERSION, "multiclass", cs.content_key(), params_key(calibrator), int(n_folds), int(seed))


def run_class_unit(cs: ClassSet, calibrator, n_folds: int = DEFAULT_FOLDS, seed: int = 0,
                   progress: Callable[[float, str], None] | None = None) -> dict[str, float]:
    """Every multi-class measure of one unit: ``calibrator`` cross-fitted on ``cs`` with K folds cut by ``seed``.

    Parameters
    ----------
    cs : ClassSet
    calibrator : MulticlassCalibrator or None
        Unfitted; None for the uncalibrated probabilities.
    n_folds, seed : int
        ``Scheme("kfold", n_folds=n_folds, seed=seed)``.
    progress : callable(fraction, message), optional
        Called after each fold.

    Returns
    -------
    dict
        :data:`calibdash.multiclass.metrics.MEASURE_NAMES` -> value on all out-of-fold rows, and ``"seconds"``.
    """
    scheme = Scheme("kfold", n_folds=int(n_folds), seed=int(seed))
    methods = {} if calibrator is None else {"m": calibrator}
    t0 = time.perf_counter()
    ev = evaluate_classes(cs.scores(), cs.labels, methods, scheme, split=cs.split, progress=progress)
    row = ev.metrics.loc[UNCALIBRATED if calibrator is None else "m"]
    out = {name: float(row[name]) for name in mmetrics.MEASURE_NAMES}
    out["seconds"] = time.perf_counter() - t0
    return out


def run_class_benchmark(datasets: Mapping[str, ClassSet], methods, n_folds: int = DEFAULT_FOLDS,
                        repeats: int = DEFAULT_REPEATS, seed: int = 0,
                        metrics: Sequence[str] = mmetrics.MEASURE_NAMES, *, metric: str = DEFAULT_CLASS_METRIC,
                        reference: str | None = None, alpha: float = DEFAULT_ALPHA, include_uncalibrated: bool = True,
                        progress: Callable[[float, str], None] | None = None, cache: MutableMapping | None = None,
                        compute: bool = True, params: Mapping[str, Mapping] | None = None) -> BenchmarkResult:
    """Cross-fit every multi-class method on every K-class data set, ``repeats`` times, and compare them by ranks.

    Parameters
    ----------
    datasets : mapping name -> ClassSet
        At least two for the Friedman test (one still gives the tables). Their numbers of classes may differ.
    methods : method spec
        What :func:`calibdash.evaluation.resolve_classes` takes (``"temperature,ovr:isotonic"``, a
        list, key -> hyperparameters, key -> unfitted calibrator); ``params``: key -> hyperparameters.
        The key ``"uncalibrated"`` is reserved for the raw probabilities.
    n_folds, repeats, seed
        K of the cross-fitting; repetitions with fold seeds ``seed``, ``seed + 1``, ...
    metrics : sequence of str
        Measures kept (names of :data:`calibdash.multiclass.metrics.MEASURES`).
    metric : str, default "LogLoss"
        The measure ranked for the Friedman test and Holm's procedure.
    reference : str, optional
        Default :func:`calibdash.benchmark.statistics.default_reference` (the first method).
    alpha, include_uncalibrated, progress, cache, compute
        As :func:`calibdash.benchmark.run_benchmark` takes them.

    Returns
    -------
    BenchmarkResult
        With ``catalogue`` :data:`CLASS_MEASURES`.

    Raises
    ------
    SettingsError
        Unknown method, hyperparameter or measure; no data set or method; fewer than 2 folds or 1 repeat.
    DataError
        A data set that K-fold cross-fitting cannot use (the message names it), or one that is not a ClassSet.
    """
    for name, cs in datasets.items():
        if not isinstance(cs, ClassSet):
            raise DataError(f"data set {name!r} is not a K-class table; a multi-class benchmark takes "
                            "K-class data sets only.")
    cals = resolve_classes(methods, params)
    check_plan(datasets, cals, n_folds, repeats)
    metric_names = check_metrics(metrics, metric, CLASS_MEASURES)
    units = plan_units(list(datasets), list(cals), repeats, seed, include_uncalibrated)
    rows = run_units(datasets, cals, units, n_folds,
                     run=lambda cs, cal, k, s, p: run_class_unit(cs, cal, k, s, progress=p),
                     key=class_unit_key, metric_names=metric_names, needed=metric_names, progress=progress,
                     cache=cache, compute=compute)
    planned = list(dict.fromkeys(u.method for u in units))
    return summarise(units_frame(rows, metric_names), metric=metric,
                     reference=reference or default_reference(planned), alpha=alpha, n_folds=n_folds,
                     repeats=repeats, seed=seed, planned=len(units), methods=planned, datasets=list(datasets),
                     catalogue=CLASS_MEASURES)


def class_datasets_from_table(df: pd.DataFrame, info=None, *, name: str | None = None,
                              label: str | None = None) -> dict[str, ClassSet]:
    """The K-class data set of a table, as ``{name: ClassSet}`` (one per file; its columns found by
    :func:`calibdash.data.build_class_set`).

    Raises
    ------
    DataError
        As :func:`calibdash.data.build_class_set`.
    """
    base = name or (info.name if info is not None else "data")
    return {base: build_class_set(df, label=label, info=info, name=base)}


def load_benchmark_datasets(paths: Sequence[str], label: str | None = None,
                            scores: Sequence[str] | None = None) -> tuple[str, dict]:
    """Data sets from files and folders, binary or K-class, told apart by their columns.

    Each table is read once; :func:`calibdash.data.is_multiclass` says whether it is a K-class table
    (a label of 3 or more classes and one probability or logit column per class). K-class tables give one
    :class:`~calibdash.data.ClassSet` each, binary ones one ScoreSet per score column
    (:func:`calibdash.benchmark.datasets_from_table`).

    Returns
    -------
    (kind, datasets)
        ``"multiclass"`` or ``"binary"``, and name -> data set (a name met twice gets " (2)", ...).

    Raises
    ------
    DataError
        A folder without tables, an unreadable table, or binary and K-class tables mixed (named).
    SettingsError
        ``scores`` given for K-class tables (their class columns are found, not named).
    """
    tables = []
    for path in expand_paths(paths):
        df, info = read_table(path)
        tables.append((df, info, is_multiclass(df, label)))
    kinds = {multi for *_, multi in tables}
    if len(kinds) > 1:
        multi = next(info.name for _, info, m in tables if m)
        binary = next(info.name for _, info, m in tables if not m)
        raise DataError(f"binary and K-class tables cannot be benchmarked together ({binary} is binary, {multi} "
                        "has K >= 3 classes): give one kind.")
    kind = "multiclass" if kinds == {True} else "binary"
    if kind == "multiclass" and scores:
        raise SettingsError("--score names a binary score column; K-class tables have one column per class, "
                            "found by their prefix.")
    out: dict = {}
    for df, info, _ in tables:
        found = (class_datasets_from_table(df, info, label=label) if kind == "multiclass"
                 else file_datasets(df, info, label, scores))
        for key, data in found.items():
            out[unique_name(key, out)] = data
    return kind, out

