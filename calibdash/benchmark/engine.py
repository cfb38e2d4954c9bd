"""The benchmark engine: plan (data set, method, repeat) units, run each as one K-fold evaluation, cache them.

A unit is one call of :func:`calibdash.evaluation.evaluate` with
``Scheme("kfold", n_folds=K, seed=seed + repeat)``; it depends only on its
data, calibrator, K and seed (:func:`unit_key`), so callers can cache units
(``run_benchmark(cache=...)``) and an interrupted run resumes where it
stopped. :func:`run_benchmark` runs the units and hands the unit table to
:func:`calibdash.benchmark.statistics.summarise`.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Mapping, MutableMapping, Sequence

import pandas as pd

from ..calibrators.base import Calibrator
from ..data import ScoreSet
from ..errors import DataError, SettingsError
from ..evaluation import UNCALIBRATED, Scheme, evaluate, evaluate_cells
from ..methods import resolve
from .. import measures
from ..measures.calibration import METRIC_NAMES
from .catalogue import BINARY, Catalogue
from .large import EngineDataset
from .result import BenchmarkResult
from .statistics import DEFAULT_ALPHA, DEFAULT_METRIC, default_reference, summarise

__all__ = ["Unit", "UnitCache", "plan_units", "unit_key", "run_unit", "run_units", "run_benchmark", "check_plan",
           "check_metrics", "units_frame", "DEFAULT_METHODS", "DEFAULT_FOLDS", "DEFAULT_REPEATS"]

#: Methods a benchmark starts with: the three classic calibrators and BBQ.
DEFAULT_METHODS = ("platt", "histogram", "isotonic", "bbq")
#: K of the cross-fitting: the evaluation scheme's own default.
DEFAULT_FOLDS = Scheme().n_folds
#: Repetitions of the K-fold cross-fitting, with fold seeds seed, seed + 1, ...
DEFAULT_REPEATS = 2
#: Changes when a unit's computation changes, so stale cached units are not reused.
_UNIT_VERSION = 1


@dataclass(frozen=True)
class Unit:
    """One independent piece of work: a method on a data set in one repeat."""

    dataset: str
    method: str
    repeat: int
    seed: int


class UnitCache:
    """A bounded, thread-safe mapping of unit key -> unit metrics (least recently used dropped first).

    Any ``MutableMapping`` works as ``run_benchmark(cache=...)``; this one is
    what the dashboard keeps for all sessions.
    """

    def __init__(self, max_entries: int = 20_000):
        self.max_entries = int(max_entries)
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return dict(self._data[key])

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._data

    def __setitem__(self, key, value) -> None:
        with self._lock:
            self._data[key] = dict(value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


def plan_units(datasets: Sequence[str], methods: Sequence[str], repeats: int = DEFAULT_REPEATS, seed: int = 0,
               include_uncalibrated: bool = True) -> list[Unit]:
    """Units in run order: data set, then repeat, then the uncalibrated scores and each method.

    Repeat ``r`` uses fold seed ``seed + r``.
    """
    keys = ([UNCALIBRATED] if include_uncalibrated else []) + [m for m in methods if m != UNCALIBRATED]
    return [Unit(d, m, r, int(seed) + r) for d in datasets for r in range(int(repeats)) for m in keys]


def params_key(cal) -> tuple:
    """A calibrator's class and parameters as a hashable key (the raw scores: ``("uncalibrated", ())``)."""
    if cal is None:
        return (UNCALIBRATED, ())
    return (type(cal).__module__ + "." + type(cal).__qualname__,
            tuple(sorted((k, repr(v)) for k, v in cal.get_params().items())))


def unit_key(ss: ScoreSet, calibrator: Calibrator | None, n_folds: int, seed: int) -> tuple:
    """Cache key of a unit: the data's content hash, the calibrator's class and parameters, K and the seed."""
    return (_UNIT_VERSION, ss.content_key(), params_key(calibrator), int(n_folds), int(seed))


def run_unit(ss: ScoreSet, calibrator: Calibrator | None, n_folds: int = DEFAULT_FOLDS, seed: int = 0,
             progress: Callable[[float, str], None] | None = None,
             extra: Sequence[str] = ()) -> dict[str, float]:
    """Metrics of one unit: ``calibrator`` cross-fitted on ``ss`` with K folds shuffled by ``seed``.

    Parameters
    ----------
    ss : ScoreSet or EngineDataset
        An :class:`~calibdash.benchmark.large.EngineDataset` is cross-fitted on
        the cells its engine aggregates for this repeat's folds.
    calibrator : Calibrator or None
        Unfitted (cloned per fold); None for the uncalibrated scores.
    n_folds, seed : int
        ``Scheme("kfold", n_folds=n_folds, seed=seed)``.
    progress : callable(fraction, message), optional
        Passed to :func:`~calibdash.evaluation.evaluate` (called after each fold).
    extra : sequence of str
        Measures of :mod:`calibdash.measures` to compute too (on the same
        out-of-fold predictions).

    Returns
    -------
    dict
        :data:`calibdash.metrics.METRIC_NAMES` and ``extra`` -> value on all
        out-of-fold predictions, plus ``"seconds"``.
    """
    scheme = Scheme("kfold", n_folds=int(n_folds), seed=int(seed))
    methods = {} if calibrator is None else {"m": calibrator}
    t0 = time.perf_counter()
    if isinstance(ss, EngineDataset):                 # rows where they live: this repeat's cells, one scan
        ss.check_method(calibrator)
        ev = evaluate_cells(ss.cells(scheme), methods, scheme)
    else:
        feats = ss.features if calibrator is not None and calibrator.uses_features else None
        ev = evaluate(ss.scores, ss.labels, methods, scheme, features=feats, progress=progress)
    key = UNCALIBRATED if calibrator is None else "m"
    row = ev.metrics.loc[key]
    out = {name: float(row[name]) for name in METRIC_NAMES}
    if extra:
        out.update(measures.compute(ev.predictions[key].to_numpy(), ev.labels, ev.weights, names=extra))
    out["seconds"] = time.perf_counter() - t0
    return out


def check_metrics(names: Sequence[str], metric: str, catalogue: Catalogue = BINARY) -> list[str]:
    """The kept metric names in ``catalogue.names`` order, the ranked one included.

    Raises
    ------
    SettingsError
        An unknown name, or a ranked metric no method can be ranked on.
    """
    names = list(dict.fromkeys(names))
    unknown = [m for m in names + [metric] if m not in catalogue.names]
    if unknown:
        raise SettingsError(f"unknown metric {unknown[0]!r}; choose from {', '.join(catalogue.names)}.")
    if not catalogue.rankable(metric):
        raise SettingsError(f"{metric} is the same for every method of a data set: rank by another metric.")
    if metric not in names:
        names.append(metric)
    return [m for m in catalogue.names if m in names]


def check_plan(datasets: Mapping, methods: Mapping, n_folds: int, repeats: int) -> None:
    """Refuse a benchmark without data sets or methods, with fewer than 2 folds or 1 repeat (SettingsError)."""
    if not datasets:
        raise SettingsError("choose at least one data set.")
    if not methods:
        raise SettingsError("choose at least one calibrator.")
    if int(repeats) < 1:
        raise SettingsError(f"repeats must be at least 1, got {repeats}.")
    if int(n_folds) < 2:
        raise SettingsError(f"K-fold cross-fitting needs at least 2 folds, got {n_folds}.")


def units_frame(rows: list[dict], metric_names: Sequence[str]) -> pd.DataFrame:
    """The unit table :func:`calibdash.benchmark.statistics.summarise` takes, from :func:`run_units`' rows."""
    return pd.DataFrame(rows, columns=["dataset", "repeat", "seed", "method", *metric_names, "seconds"])


def run_units(datasets: Mapping, cals: Mapping, units: Sequence[Unit], n_folds: int, *,
              run: Callable, key: Callable, metric_names: Sequence[str], needed: Sequence[str] = (),
              progress: Callable[[float, str], None] | None = None, cache: MutableMapping | None = None,
              compute: bool = True) -> list[dict]:
    """Run (or take from ``cache``) every unit; one row per finished unit, in ``units``' order.

    What binary and multi-class benchmarks share: the order, the cache, the
    progress and the resumption. A kind of data brings its own ``run`` and
    ``key``.

    Parameters
    ----------
    datasets : mapping name -> data set
    cals : mapping key -> unfitted calibrator
    units : sequence of Unit
        As :func:`plan_units` gives them.
    n_folds : int
    run : callable(data, calibrator or None, n_folds, seed, progress) -> dict
        A unit's measures (``metric_names`` and ``"seconds"``); ``progress(fraction, message)`` after each fold.
    key : callable(data, calibrator or None, n_folds, seed) -> hashable
        The unit's cache key.
    metric_names : sequence of str
        The measures a row keeps.
    needed : sequence of str
        Measures a cached entry must hold to be used (one cached before they were asked for is run again).
    progress, cache, compute
        As :func:`run_benchmark` takes them.

    Raises
    ------
    DataError
        From ``run``, the data set's name put in front.
    """
    steps = {u: (1 if u.method == UNCALIBRATED else int(n_folds)) for u in units}
    total_steps = sum(steps.values()) or 1
    done_steps = 0
    repeats = len({u.repeat for u in units})
    rows: list[dict] = []

    def report(steps_done: float, message: str) -> None:
        if progress is not None:
            progress(steps_done / total_steps, message)

    for unit in units:
        data = datasets[unit.dataset]
        cal = None if unit.method == UNCALIBRATED else cals[unit.method]
        n = steps[unit]
        k = key(data, cal, n_folds, unit.seed) if cache is not None else None
        found = cache.get(k) if cache is not None else None
        if found is not None and any(m not in found for m in needed):
            found = None                                  # cached before these measures were asked for
        where = f"{unit.dataset} · {unit.method} · repeat {unit.repeat + 1} of {repeats}"
        if found is None and not compute:
            done_steps += n
            continue
        if found is None:
            def fold_progress(frac, _msg, _base=done_steps, _n=n, _where=where):
                report(_base + frac * _n, f"{_where} · fold {int(round(frac * _n))} of {_n}")

            try:
                found = run(data, cal, n_folds, unit.seed, fold_progress)
            except DataError as exc:
                raise DataError(f"data set {unit.dataset!r}: {exc}") from None
            if cache is not None:
                cache[k] = found
            done_steps += n
            if cal is None:
                report(done_steps, f"{where} · scored")
        else:
            done_steps += n
            report(done_steps, f"{where} · from cache")
        rows.append({"dataset": unit.dataset, "repeat": unit.repeat, "seed": unit.seed,
                     "method": unit.method, **{m: found[m] for m in metric_names},
                     "seconds": found.get("seconds", float("nan"))})
    return rows


def run_benchmark(datasets: Mapping[str, ScoreSet], methods, n_folds: int = DEFAULT_FOLDS,
                  repeats: int = DEFAULT_REPEATS, seed: int = 0, metrics: Sequence[str] = METRIC_NAMES, *,
                  metric: str = DEFAULT_METRIC, reference: str | None = None, alpha: float = DEFAULT_ALPHA,
                  include_uncalibrated: bool = True, progress: Callable[[float, str], None] | None = None,
                  cache: MutableMapping | None = None, compute: bool = True) -> BenchmarkResult:
    """Cross-fit every method on every data set, ``repeats`` times, and compare them by ranks.

    Parameters
    ----------
    datasets : mapping name -> ScoreSet
        At least two for the Friedman test (one still gives the tables).
    methods : method spec
        Anything :func:`calibdash.methods.resolve` takes (``"platt,bbq"``, a
        list of names, key -> hyperparameters, key -> unfitted calibrator).
        The key ``"uncalibrated"`` is reserved for the raw scores.
    n_folds : int, default ``Scheme().n_folds``
        K of the cross-fitting.
    repeats : int, default 2
        Repetitions with fold seeds ``seed``, ``seed + 1``, ...
    seed : int, default 0
    metrics : sequence of str
        Metrics kept (names of :data:`calibdash.metrics.METRIC_NAMES`).
    metric : str, default "ECE"
        The metric ranked for the Friedman test and Holm's procedure.
    reference : str, optional
        Method the others are compared with (default
        :func:`~calibdash.benchmark.statistics.default_reference`).
    alpha : float, default 0.05
    include_uncalibrated : bool, default True
        Rank the raw scores as a method, as the papers rank the base classifier.
    progress : callable(fraction, message), optional
        Called after every fold of every (data set, method, repeat), and once
        per unit taken from ``cache``; ``fraction`` rises to 1.
    cache : mutable mapping, optional
        Unit results by :func:`unit_key` (e.g. a :class:`UnitCache`): units
        found are not refitted, computed ones are stored as soon as they
        finish, so a run interrupted from outside (the dashboard's Stop)
        keeps its finished units and the same call later resumes.
    compute : bool, default True
        False: use only the units found in ``cache`` (nothing is fitted); the
        result then covers the complete (data set, repeat) blocks found.

    Returns
    -------
    BenchmarkResult

    Raises
    ------
    SettingsError
        Unknown method, hyperparameter or metric, no data set or method,
        fewer than 2 folds or 1 repeat.
    DataError
        A data set that K-fold cross-fitting cannot use (the message names it).
    """
    if not datasets:
        raise SettingsError("choose at least one data set.")
    cals = resolve(methods)
    check_plan(datasets, cals, n_folds, repeats)
    metric_names = check_metrics(metrics, metric)
    extra = [m for m in metric_names if m in measures.MEASURES]
    units = plan_units(list(datasets), list(cals), repeats, seed, include_uncalibrated)
    rows = run_units(datasets, cals, units, n_folds,
                     run=lambda ss, cal, k, s, p: run_unit(ss, cal, k, s, progress=p, extra=extra),
                     key=unit_key, metric_names=metric_names, needed=extra, progress=progress, cache=cache,
                     compute=compute)
    planned = list(dict.fromkeys(u.method for u in units))
    return summarise(units_frame(rows, metric_names), metric=metric,
                     reference=reference or default_reference(planned), alpha=alpha, n_folds=n_folds,
                     repeats=repeats, seed=seed, planned=len(units), methods=planned, datasets=list(datasets))
