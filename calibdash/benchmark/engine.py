"""The benchmark engine: plan (data set, method, repeat) units, run each as one K-fold evaluation, cache them.

K-class benchmarks follow Kull et al. (NeurIPS 2019, "Beyond temperature scaling: obtaining well-calibrated
multiclass probabilities with Dirichlet calibration", section 5): average ranks over data sets on log-loss (the
default ranked measure, :data:`DEFAULT_CLASS_METRIC`) and classwise-ECE (``cwECE``) with Friedman tests, after
5 x 5-fold cross-validation (``repeats`` and ``n_folds``). The K-class folds are cut by the rows' content, so the
order of the rows never changes a result.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Mapping, MutableMapping, Sequence

import pandas as pd

from ..data import ClassSet
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import UNCALIBRATED, Scheme, evaluate, evaluate_cells, evaluate_classes, resolve_classes
from ..evaluation.methods import resolve
from .. import calibrators, measures
from ..measures.calibration import METRIC_NAMES
from ..measures import class_measures as mmetrics
from .outcome import BINARY, CLASS_MEASURES, BenchmarkResult, Catalogue
from .statistics import DEFAULT_ALPHA, DEFAULT_METRIC, default_reference, summarise

__all__ = []

#: Methods a benchmark starts with: the three classic calibrators and BBQ.
DEFAULT_METHODS = ("platt", "histogram", "isotonic", "bbq")
#: K of the cross-fitting: the evaluation scheme's own default.
DEFAULT_FOLDS = Scheme().n_folds
#: Repetitions of the K-fold cross-fitting, with fold seeds seed, seed + 1, ...
DEFAULT_REPEATS = 2
#: Methods a K-class benchmark starts with (those registered): the scaling family of Kull et al. (2019)
#: and one-vs-rest isotonic and top-label histogram binning (Gupta & Ramdas 2022's choice).
DEFAULT_CLASS_METHODS = ("temperature", "vector", "matrix", "dirichlet", "ovr:isotonic", "top_label:histogram")
#: The measure a K-class benchmark ranks unless another is chosen: the log-loss, as Kull et al. (2019) rank first.
DEFAULT_CLASS_METRIC = "LogLoss"
#: Changes when a unit's computation changes, so stale cached units are not reused.
_UNIT_VERSION = 1
_CLASS_UNIT_VERSION = 1


def default_class_methods() -> list[str]:
    """:data:`DEFAULT_CLASS_METHODS` that are registered (:func:`calibdash.calibrators.available`)."""
    known = set(calibrators.available("classes"))
    return [m for m in DEFAULT_CLASS_METHODS if m in known]


def problem_of(datasets: Mapping) -> str:
    """``"multiclass"`` when every data set is a :class:`~calibdash.data.ClassSet`, ``"binary"`` when none is
    (DataError when mixed)."""
    k_class = {name: isinstance(data, ClassSet) for name, data in datasets.items()}
    if any(k_class.values()) and not all(k_class.values()):
        multi = next(n for n, k in k_class.items() if k)
        binary = next(n for n, k in k_class.items() if not k)
        raise DataError(f"data set {binary!r} is not a K-class table, but {multi!r} is: a benchmark takes "
                        "data sets of one kind, binary or K-class.")
    return "multiclass" if k_class and all(k_class.values()) else "binary"


class EngineDataset:
    """A data set that stays where it lives: a source (:class:`calibdash.engines.Source`) read by ``engine``.

    Each repeat's folds come from the hash of a row's position, so one scan per repeat gives the cells of every
    fold, on which every method is fitted and judged. Feature-aware methods (MBCT) need rows and are refused.

    ``engine``: a name of :func:`calibdash.engines.available` (default: the default out-of-core engine);
    ``name``: in the tables (default: the source's description); ``memory_limit``: DuckDB's; ``keep``: cell tables
    kept (one per repeat's scheme, each O(cells)); ``aggregate(source, scheme, engine, memory_limit) -> ScoreCells``
    (default: :func:`calibdash.engines.aggregate` without features).
    """

    def __init__(self, source, engine: str | None = None, name: str | None = None, memory_limit: str = "1GB",
                 keep: int = 4, aggregate=None):
        from .. import engines

        self.source = source
        self._aggregate = aggregate or (lambda src, parts, name, limit: engines.aggregate(
            src, parts, engine=name, features=[], memory_limit=limit))
        self.engine = engine or engines.default_engine()
        self.name = name or source.describe()
        self.memory_limit = memory_limit
        self._keep = int(keep)
        self._cells: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.n_rows = None

    def content_key(self) -> str:
        """The source (files with their sizes and modification times, or the table or query) and its roles."""
        src = self.source
        parts = [repr((src.table, src.query, src.order_by, src.database, src.score, src.label, src.split,
                       src.positive, src.transform))]
        for f in src.files():
            st = os.stat(f)
            parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def cells(self, scheme):
        """The score cells of ``scheme``'s parts (aggregated once per scheme, the last ``keep`` kept)."""
        key = (scheme.kind, scheme.n_folds, scheme.seed, scheme.test_size, scheme.train_value)
        with self._lock:
            if key in self._cells:
                self._cells.move_to_end(key)
                return self._cells[key]
            c = self._aggregate(self.source, scheme, self.engine, self.memory_limit)
            self.n_rows = int(c.n.sum())
            self._cells[key] = c
            while len(self._cells) > self._keep:
                self._cells.popitem(last=False)
            return c


@dataclass(frozen=True)
class Unit:
    """One independent piece of work: a method on a data set in one repeat."""

    dataset: str
    method: str
    repeat: int
    seed: int


class UnitCache:
    """A bounded, thread-safe mapping of unit key -> unit metrics (least recently used dropped first), what the
    dashboard keeps for all sessions (any ``MutableMapping`` works as ``run_benchmark(cache=...)``)."""

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

    def __setitem__(self, key, value) -> None:
        with self._lock:
            self._data[key] = dict(value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


def _params_key(cal) -> tuple:
    """A calibrator's class and parameters as a hashable key (the raw scores: ``("uncalibrated", ())``)."""
    if cal is None:
        return (UNCALIBRATED, ())
    return (type(cal).__module__ + "." + type(cal).__qualname__,
            tuple(sorted((k, repr(v)) for k, v in cal.get_params().items())))


def unit_key(data, calibrator, n_folds: int, seed: int) -> tuple:
    """Cache key of a unit: the data's content key, the calibrator's class and parameters, K and the seed."""
    if isinstance(data, ClassSet):
        return (_CLASS_UNIT_VERSION, "multiclass", data.content_key(), _params_key(calibrator), int(n_folds),
                int(seed))
    return (_UNIT_VERSION, data.content_key(), _params_key(calibrator), int(n_folds), int(seed))


def run_unit(data, calibrator, n_folds: int = DEFAULT_FOLDS, seed: int = 0,
             progress: Callable[[float, str], None] | None = None,
             extra: Sequence[str] = ()) -> dict[str, float]:
    """Measures of one unit: ``calibrator`` (unfitted, cloned per fold; None: the raw scores) cross-fitted on
    ``data`` (a ScoreSet, an :class:`EngineDataset`'s cells for this repeat's folds, or a ClassSet) with
    ``Scheme("kfold", n_folds=n_folds, seed=seed)``; ``progress(fraction, message)`` after each fold; ``extra``:
    binary measures of :mod:`calibdash.measures` to compute too.

    Returns
    -------
    dict
        :data:`calibdash.metrics.METRIC_NAMES` and ``extra`` (K classes:
        :data:`calibdash.measures.class_measures.MEASURE_NAMES`) -> value on all out-of-fold predictions, plus
        ``"seconds"``.
    """
    scheme = Scheme("kfold", n_folds=int(n_folds), seed=int(seed))
    methods = {} if calibrator is None else {"m": calibrator}
    key = UNCALIBRATED if calibrator is None else "m"
    t0 = time.perf_counter()
    if isinstance(data, ClassSet):
        ev = evaluate_classes(data.scores(), data.labels, methods, scheme, split=data.split, progress=progress)
    elif isinstance(data, EngineDataset):             # rows where they live: this repeat's cells, one scan
        if calibrator is not None and calibrator.uses_features:     # cells hold scores only
            raise SettingsError(f"{calibrator.name} reads feature columns, which score cells of {data.name} do not "
                                "hold: benchmark it on a file read in memory.")
        ev = evaluate_cells(data.cells(scheme), methods, scheme)
    else:
        feats = data.features if calibrator is not None and calibrator.uses_features else None
        ev = evaluate(data.scores, data.labels, methods, scheme, features=feats, progress=progress)
    row = ev.metrics.loc[key]
    names = mmetrics.MEASURE_NAMES if isinstance(data, ClassSet) else METRIC_NAMES
    out = {name: float(row[name]) for name in names}
    if extra:
        out.update(measures.compute(ev.predictions[key].to_numpy(), ev.labels, ev.weights, names=extra))
    out["seconds"] = time.perf_counter() - t0
    return out


def _check_metrics(names: Sequence[str], metric: str, catalogue: Catalogue = BINARY) -> list[str]:
    """The kept metric names in ``catalogue.names`` order, the ranked one included (SettingsError: an unknown
    name, or a ranked metric no method can be ranked on)."""
    names = list(dict.fromkeys(names))
    unknown = [m for m in names + [metric] if m not in catalogue.names]
    if unknown:
        raise SettingsError(f"unknown metric {unknown[0]!r}; choose from {', '.join(catalogue.names)}.")
    if not catalogue.rankable(metric):
        raise SettingsError(f"{metric} is the same for every method of a data set: rank by another metric.")
    if metric not in names:
        names.append(metric)
    return [m for m in catalogue.names if m in names]


def run_units(datasets: Mapping, cals: Mapping, units: Sequence[Unit], n_folds: int, *,
              metric_names: Sequence[str], extra: Sequence[str] = (), needed: Sequence[str] = (),
              progress: Callable[[float, str], None] | None = None, cache: MutableMapping | None = None,
              compute: bool = True) -> list[dict]:
    """Run (or take from ``cache``) every unit; one row per finished unit, in ``units``' order, keeping
    ``metric_names``. ``extra`` as :func:`run_unit` takes it; ``needed``: measures a cached entry must hold to be
    used; the others as :func:`run_benchmark` takes them. A DataError gets the data set's name in front."""
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
        k = unit_key(data, cal, n_folds, unit.seed) if cache is not None else None
        found = cache.get(k) if cache is not None else None
        if found is not None and any(m not in found for m in needed):
            found = None                                  # cached before these measures were asked for
        cached = found is not None
        where = f"{unit.dataset} · {unit.method} · repeat {unit.repeat + 1} of {repeats}"
        if not cached and compute:
            def fold_progress(frac, _msg, _base=done_steps, _n=n, _where=where):
                report(_base + frac * _n, f"{_where} · fold {int(round(frac * _n))} of {_n}")

            try:
                found = run_unit(data, cal, n_folds, unit.seed, progress=fold_progress, extra=extra)
            except DataError as exc:
                raise DataError(f"data set {unit.dataset!r}: {exc}") from None
            if cache is not None:
                cache[k] = found
        done_steps += n
        if found is None:                                 # not cached, and compute=False
            continue
        if cached or cal is None:
            report(done_steps, f"{where} · {'from cache' if cached else 'scored'}")
        rows.append({"dataset": unit.dataset, "repeat": unit.repeat, "seed": unit.seed,
                     "method": unit.method, **{m: found[m] for m in metric_names},
                     "seconds": found.get("seconds", float("nan"))})
    return rows


def run_benchmark(datasets: Mapping, methods, n_folds: int = DEFAULT_FOLDS, repeats: int = DEFAULT_REPEATS,
                  seed: int = 0, metrics: Sequence[str] | None = None, *, metric: str | None = None,
                  reference: str | None = None, alpha: float = DEFAULT_ALPHA, include_uncalibrated: bool = True,
                  progress: Callable[[float, str], None] | None = None, cache: MutableMapping | None = None,
                  compute: bool = True, params: Mapping[str, Mapping] | None = None) -> BenchmarkResult:
    """Cross-fit every method on every data set, ``repeats`` times, and compare them by ranks.

    Parameters
    ----------
    datasets : mapping name -> ScoreSet, EngineDataset or ClassSet
        At least two for the Friedman test (one still gives the tables). All binary, or all K-class
        (:func:`problem_of`; their numbers of classes may differ).
    methods : method spec
        Anything :func:`calibdash.evaluation.methods.resolve` takes (``"platt,bbq"``, a list of names, key ->
        hyperparameters, key -> unfitted calibrator); K classes: what
        :func:`calibdash.evaluation.holdout.resolve_classes` takes (``"temperature,ovr:isotonic"``). The key
        ``"uncalibrated"`` is reserved for the raw scores.
    n_folds, repeats, seed : int
        K of the cross-fitting (default ``Scheme().n_folds``), and its repetitions (default 2) with fold seeds
        ``seed`` (default 0), ``seed + 1``, ...
    metrics : sequence of str, optional
        Metrics kept: names of the problem's catalogue (default :data:`calibdash.metrics.METRIC_NAMES`;
        K classes: every measure of :data:`calibdash.measures.class_measures.MEASURES`).
    metric : str, optional
        The metric ranked for the Friedman test and Holm's procedure (default "ECE"; K classes
        :data:`DEFAULT_CLASS_METRIC`, the log-loss).
    reference, alpha
        The method the others are compared with (default :func:`~calibdash.benchmark.statistics.default_reference`);
        the tests' level (default 0.05).
    include_uncalibrated : bool, default True
        Rank the raw scores as a method, as the papers rank the base classifier.
    progress : callable(fraction, message), optional
        Called after every fold of every (data set, method, repeat), and once per unit taken from ``cache``;
        ``fraction`` rises to 1.
    cache : mutable mapping, optional
        Unit results by :func:`unit_key` (e.g. a :class:`UnitCache`): units found are not refitted, computed ones
        are stored as they finish, so a run interrupted from outside (the dashboard's Stop) later resumes.
    compute : bool, default True
        False: use only the units found in ``cache``; the result covers the complete (data set, repeat) blocks.
    params : mapping method -> {hyperparameter: value}, optional
        Hyperparameters of the methods named in ``methods``.

    Returns
    -------
    BenchmarkResult
        Its ``catalogue`` is the problem's (binary or K-class measures).

    Raises
    ------
    SettingsError
        Unknown method, hyperparameter or metric, no data set or method, fewer than 2 folds or 1 repeat.
    DataError
        A data set that K-fold cross-fitting cannot use (the message names it), or binary and K-class data sets
        mixed.
    """
    if not datasets:
        raise SettingsError("choose at least one data set.")
    k_class = problem_of(datasets) == "multiclass"
    cals = resolve_classes(methods, params) if k_class else resolve(methods, params)
    if not cals:
        raise SettingsError("choose at least one calibrator.")
    if int(repeats) < 1:
        raise SettingsError(f"repeats must be at least 1, got {repeats}.")
    if int(n_folds) < 2:
        raise SettingsError(f"K-fold cross-fitting needs at least 2 folds, got {n_folds}.")
    catalogue = CLASS_MEASURES if k_class else BINARY
    metric = metric or (DEFAULT_CLASS_METRIC if k_class else DEFAULT_METRIC)
    default = mmetrics.MEASURE_NAMES if k_class else METRIC_NAMES
    metric_names = _check_metrics(default if metrics is None else metrics, metric, catalogue)
    extra = [m for m in metric_names if m in measures.MEASURES] if not k_class else []
    # run order: data set, then repeat (fold seed seed + r), then the raw scores and each method
    keys = ([UNCALIBRATED] if include_uncalibrated else []) + [m for m in cals if m != UNCALIBRATED]
    units = [Unit(d, m, r, int(seed) + r) for d in datasets for r in range(int(repeats)) for m in keys]
    rows = run_units(datasets, cals, units, n_folds, metric_names=metric_names, extra=extra,
                     needed=metric_names if k_class else extra, progress=progress, cache=cache, compute=compute)
    planned = list(dict.fromkeys(u.method for u in units))
    units_frame = pd.DataFrame(rows, columns=["dataset", "repeat", "seed", "method", *metric_names, "seconds"])
    return summarise(units_frame, metric=metric,
                     reference=reference or default_reference(planned), alpha=alpha, n_folds=n_folds,
                     repeats=repeats, seed=seed, planned=len(units), methods=planned, datasets=list(datasets),
                     catalogue=catalogue)
