"""Benchmark calibrators over several data sets: repeated K-fold cross-fitting, ranks, Friedman and Holm.

The protocol of the BBQ and ELiTE papers' real-data experiments, after
Demšar (2006):

1. Every (data set, method, repeat) *unit* is one call of
   :func:`calibdash.evaluation.evaluate` with ``Scheme("kfold", seed=seed +
   repeat)``: each row's calibrated value comes from a model fitted on the
   other K - 1 folds, and the metrics are computed once on all the
   out-of-fold predictions. Within a repeat every method sees the same folds
   (same seed); the uncalibrated scores are a unit of their own (``method =
   "uncalibrated"``), ranked like a method, as the papers rank the base
   classifier. A unit depends only on its data, calibrator, K and seed, so
   callers can cache units (``cache=``) and a cancelled run resumes.
2. A data set's value of a metric for a method is the mean over repeats.
   Demšar (section 3.2.3) warns that folds and repeats are not independent
   observations, so they are averaged, never used as extra blocks.
3. On each data set the methods are ranked (1 = best, ties get mid-ranks);
   average ranks per metric, Friedman's test with the Iman-Davenport
   correction, and Holm's step-down procedure against a reference method
   follow (:mod:`calibdash.stats`). As in the papers, the post-hoc comparison
   counts only when the Friedman test rejects: otherwise every method is
   reported as not significantly different from the reference.

:func:`run_benchmark` does all of it; :func:`summarise` redoes step 2-3 from
the unit table for another ranking metric, reference or alpha without
refitting. The command line ``python -m calibdash benchmark FILES...``
(:func:`add_parser`, :func:`cmd_benchmark`) prints :func:`report_tables`,
the tables the dashboard's Benchmark page shows.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, MutableMapping, Sequence

import numpy as np
import pandas as pd

from . import calibrators, metrics, stats
from .calibrators.base import Calibrator
from .data import ScoreSet, build_score_set, read_table
from .errors import DataError
from .evaluation import UNCALIBRATED, Scheme, evaluate

__all__ = ["Cancelled", "Unit", "UnitCache", "BenchmarkResult", "plan_units", "unit_key", "run_unit",
           "run_benchmark", "summarise", "report_tables", "datasets_from_table", "load_datasets",
           "default_reference", "add_parser", "cmd_benchmark", "DEFAULT_METHODS"]

#: Methods a benchmark starts with: the three classic calibrators and BBQ.
DEFAULT_METHODS = ("platt", "histogram", "isotonic", "bbq")
#: Changes when a unit's computation changes, so stale cached units are not reused.
_UNIT_VERSION = 1
_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".gz", ".parquet", ".pq")


class Cancelled(Exception):
    """A benchmark stopped because ``should_stop()`` returned True.

    :func:`run_benchmark` raises it (it does not return partial results);
    the units finished before the stop are attached, and with a ``cache``
    they are kept there, so the same call later resumes where it stopped.

    Attributes
    ----------
    units : DataFrame
        The finished units, as in :attr:`BenchmarkResult.units`.
    done, total : int
        Units finished and planned.
    """

    def __init__(self, units: pd.DataFrame, done: int, total: int):
        super().__init__(f"benchmark cancelled after {done} of {total} units")
        self.units = units
        self.done = done
        self.total = total


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
        return len(self._data)


def plan_units(datasets: Sequence[str], methods: Sequence[str], repeats: int = 2, seed: int = 0,
               include_uncalibrated: bool = True) -> list[Unit]:
    """Units in run order: data set, then repeat, then the uncalibrated scores and each method.

    Repeat ``r`` uses fold seed ``seed + r``.
    """
    keys = ([UNCALIBRATED] if include_uncalibrated else []) + [m for m in methods if m != UNCALIBRATED]
    return [Unit(d, m, r, int(seed) + r) for d in datasets for r in range(int(repeats)) for m in keys]


def _params_key(cal: Calibrator | None) -> tuple:
    if cal is None:
        return (UNCALIBRATED, ())
    return (type(cal).__module__ + "." + type(cal).__qualname__,
            tuple(sorted((k, repr(v)) for k, v in cal.get_params().items())))


def unit_key(ss: ScoreSet, calibrator: Calibrator | None, n_folds: int, seed: int) -> tuple:
    """Cache key of a unit: the data's content hash, the calibrator's class and parameters, K and the seed."""
    return (_UNIT_VERSION, ss.content_key(), _params_key(calibrator), int(n_folds), int(seed))


def run_unit(ss: ScoreSet, calibrator: Calibrator | None, n_folds: int = 5, seed: int = 0,
             progress: Callable[[float, str], None] | None = None) -> dict[str, float]:
    """Metrics of one unit: ``calibrator`` cross-fitted on ``ss`` with K folds shuffled by ``seed``.

    Parameters
    ----------
    ss : ScoreSet
    calibrator : Calibrator or None
        Unfitted (cloned per fold); None for the uncalibrated scores.
    n_folds, seed : int
        ``Scheme("kfold", n_folds=n_folds, seed=seed)``.
    progress : callable(fraction, message), optional
        Passed to :func:`~calibdash.evaluation.evaluate` (called after each fold).

    Returns
    -------
    dict
        :data:`calibdash.metrics.METRIC_NAMES` -> value on all out-of-fold
        predictions, plus ``"seconds"``.
    """
    scheme = Scheme("kfold", n_folds=int(n_folds), seed=int(seed))
    methods = {} if calibrator is None else {"m": calibrator}
    feats = ss.features if calibrator is not None and calibrator.uses_features else None
    t0 = time.perf_counter()
    ev = evaluate(ss.scores, ss.labels, methods, scheme, features=feats, progress=progress)
    row = ev.metrics.loc[UNCALIBRATED if calibrator is None else "m"]
    out = {name: float(row[name]) for name in metrics.METRIC_NAMES}
    out["seconds"] = time.perf_counter() - t0
    return out


def default_reference(methods: Sequence[str]) -> str:
    """BBQ when it takes part (the papers' reference), else the first calibrator, else the raw scores."""
    methods = list(methods)
    if "bbq" in methods:
        return "bbq"
    others = [m for m in methods if m != UNCALIBRATED]
    return others[0] if others else UNCALIBRATED


def _units_frame(rows: list[dict], metric_names: Sequence[str]) -> pd.DataFrame:
    cols = ["dataset", "repeat", "seed", "method", *metric_names, "seconds"]
    return pd.DataFrame(rows, columns=cols)


def run_benchmark(datasets: Mapping[str, ScoreSet], methods: Mapping[str, Calibrator] | Sequence[str],
                  n_folds: int = 5, repeats: int = 2, seed: int = 0,
                  metrics: Sequence[str] = metrics.METRIC_NAMES, *, metric: str = "ECE",
                  reference: str | None = None, alpha: float = 0.05, include_uncalibrated: bool = True,
                  progress: Callable[[float, str], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  cache: MutableMapping | None = None, compute: bool = True) -> "BenchmarkResult":
    """Cross-fit every method on every data set, ``repeats`` times, and compare them by ranks.

    Parameters
    ----------
    datasets : mapping name -> ScoreSet
        At least two for the Friedman test (one still gives the tables).
    methods : mapping key -> unfitted Calibrator, or registry names
        The key ``"uncalibrated"`` is reserved for the raw scores.
    n_folds : int, default 5
        K of the cross-fitting.
    repeats : int, default 2
        Repetitions with fold seeds ``seed``, ``seed + 1``, ...
    seed : int, default 0
    metrics : sequence of str
        Metrics kept (names of :data:`calibdash.metrics.METRIC_NAMES`).
    metric : str, default "ECE"
        The metric ranked for the Friedman test and Holm's procedure.
    reference : str, optional
        Method the others are compared with (default :func:`default_reference`).
    alpha : float, default 0.05
    include_uncalibrated : bool, default True
        Rank the raw scores as a method, as the papers rank the base classifier.
    progress : callable(fraction, message), optional
        Called after every fold of every (data set, method, repeat), and once
        per unit taken from ``cache``; ``fraction`` rises to 1.
    should_stop : callable() -> bool, optional
        Checked before each unit and after each fold; when it returns True the
        run raises :class:`Cancelled` (with the finished units attached).
    cache : mutable mapping, optional
        Unit results by :func:`unit_key` (e.g. a :class:`UnitCache`): units
        found are not refitted, computed ones are stored.
    compute : bool, default True
        False: use only the units found in ``cache`` (nothing is fitted); the
        result then covers the complete (data set, repeat) blocks found.

    Returns
    -------
    BenchmarkResult

    Raises
    ------
    DataError
        Unknown method or metric, fewer than one data set or method, or a data
        set that K-fold cross-fitting cannot use (the message names it).
    Cancelled
        When ``should_stop()`` returned True.
    """
    if not datasets:
        raise DataError("choose at least one data set.")
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    cals = dict(methods) if isinstance(methods, Mapping) else {m: calibrators.get(m) for m in methods}
    cals = {str(k): (calibrators.get(v) if isinstance(v, str) else v) for k, v in cals.items()}
    if UNCALIBRATED in cals:
        raise DataError(f"{UNCALIBRATED!r} names the raw scores; give the calibrators other keys.")
    metric_names = _check_metrics(metrics, metric)
    if int(repeats) < 1:
        raise DataError(f"repeats must be at least 1, got {repeats}.")
    if int(n_folds) < 2:
        raise DataError(f"K-fold cross-fitting needs at least 2 folds, got {n_folds}.")
    if not cals:
        raise DataError("choose at least one calibrator.")
    units = plan_units(list(datasets), list(cals), repeats, seed, include_uncalibrated)
    steps = {u: (1 if u.method == UNCALIBRATED else int(n_folds)) for u in units}
    total_steps = sum(steps.values())
    done_steps = 0
    rows: list[dict] = []

    def stop_now():
        if should_stop is not None and should_stop():
            raise Cancelled(_units_frame(rows, metric_names), len(rows), len(units))

    for i, unit in enumerate(units):
        stop_now()
        ss = datasets[unit.dataset]
        cal = None if unit.method == UNCALIBRATED else cals[unit.method]
        key = unit_key(ss, cal, n_folds, unit.seed) if cache is not None else None
        found = cache.get(key) if cache is not None else None
        where = f"{unit.dataset} · {unit.method} · repeat {unit.repeat + 1} of {repeats}"
        if found is None:
            if not compute:
                done_steps += steps[unit]
                continue

            def fold_progress(frac, _msg, _base=done_steps, _n=steps[unit], _where=where):
                if progress is not None:
                    fold = int(round(frac * _n))
                    progress((_base + frac * _n) / total_steps, f"{_where} · fold {fold} of {_n}")
                stop_now()

            try:
                found = run_unit(ss, cal, n_folds, unit.seed, progress=fold_progress)
            except DataError as exc:
                raise DataError(f"data set {unit.dataset!r}: {exc}") from None
            if cache is not None:
                cache[key] = found
            done_steps += steps[unit]
            if cal is None and progress is not None:
                progress(done_steps / total_steps, f"{where} · scored")
        else:
            done_steps += steps[unit]
            if progress is not None:
                progress(done_steps / total_steps, f"{where} · from cache")
        rows.append({"dataset": unit.dataset, "repeat": unit.repeat, "seed": unit.seed,
                     "method": unit.method, **{m: found[m] for m in metric_names},
                     "seconds": found.get("seconds", float("nan"))})
    table = _units_frame(rows, metric_names)
    ref = reference or default_reference([u.method for u in units])
    return summarise(table, metric=metric, reference=ref, alpha=alpha, n_folds=n_folds,
                     repeats=repeats, seed=seed, planned=len(units),
                     methods=list(dict.fromkeys(u.method for u in units)), datasets=list(datasets))


def _check_metrics(names: Sequence[str], metric: str) -> list[str]:
    names = list(dict.fromkeys(names))
    unknown = [m for m in names + [metric] if m not in metrics.METRIC_NAMES]
    if unknown:
        raise DataError(f"unknown metric {unknown[0]!r}; choose from {', '.join(metrics.METRIC_NAMES)}.")
    if metric not in names:
        names.append(metric)
    return [m for m in metrics.METRIC_NAMES if m in names]


@dataclass
class BenchmarkResult:
    """Everything a benchmark found, ready for tables and plots.

    Attributes
    ----------
    units : DataFrame
        One row per finished unit: dataset, repeat, seed, method, the metrics, seconds.
    means : DataFrame
        Mean over repeats, indexed by (dataset, method), one column per metric;
        only complete (data set, repeat) blocks count.
    metric : str
        The ranked metric.
    lower_is_better : bool
        Its direction.
    table : DataFrame
        Data sets x methods: ``means`` of ``metric``.
    ranks : DataFrame
        Data sets x methods: ranks of ``table`` (1 = best, mid-ranks for ties).
    average_ranks : Series
        Method -> average rank on ``metric``.
    rank_summary : DataFrame
        Methods x metrics: the average rank on every metric.
    friedman : FriedmanResult or None
        None with fewer than two data sets or methods.
    friedman_by_metric : DataFrame
        Metric -> chi2_F, F_F, degrees of freedom, p, critical value, reject.
    reference : str
    holm : DataFrame or None
        :func:`calibdash.stats.holm` against ``reference`` plus a ``significant``
        column: Holm rejects *and* the Friedman test rejected.
    alpha : float
    n_folds, repeats, seed : int
    methods, datasets : list of str
        In display order (the uncalibrated scores first); ``datasets`` lists
        those with complete results.
    planned : int
        Units planned (``len(units) < planned`` for a partial result).
    notes : list of str
        What was left out and why.
    """

    units: pd.DataFrame
    means: pd.DataFrame
    metric: str
    lower_is_better: bool
    table: pd.DataFrame
    ranks: pd.DataFrame
    average_ranks: pd.Series
    rank_summary: pd.DataFrame
    friedman: stats.FriedmanResult | None
    friedman_by_metric: pd.DataFrame
    reference: str
    holm: pd.DataFrame | None
    alpha: float
    n_folds: int
    repeats: int
    seed: int
    methods: list
    datasets: list
    planned: int
    notes: list = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every planned unit is in the result."""
        return len(self.units) >= self.planned

    def joined(self) -> list[str]:
        """The reference and the methods not significantly different from it (the bar of the rank plot)."""
        if self.holm is None:
            return [self.reference] if self.reference in self.average_ranks.index else []
        same = [m for m, sig in self.holm["significant"].items() if not sig]
        return [m for m in self.average_ranks.index if m == self.reference or m in same]

    def describe(self, labels: Mapping[str, str] | None = None) -> str:
        """The result in plain sentences (names from ``labels`` when given)."""
        name = (lambda k: (labels or {}).get(k, k))
        if self.table.empty:
            return "No complete results yet: run the benchmark."
        n, k = self.table.shape
        ar = self.average_ranks.sort_values(kind="stable")
        best = ar.index[ar == ar.iloc[0]]
        lead = (f"On {self.metric} ({'lower' if self.lower_is_better else 'higher'} is better) over {n} "
                f"data set{'s' if n != 1 else ''} ({self.repeats} x {self.n_folds}-fold cross-fitting), "
                f"{_join([name(b) for b in best])} rank{'s' if len(best) == 1 else ''} best "
                f"(average rank {ar.iloc[0]:.2f} of {k}).")
        if self.friedman is None:
            why = "one data set" if n < 2 else "one method"
            return lead + f" With {why} there is no test across data sets: add data sets and methods."
        f = self.friedman
        if not f.reject:
            return (lead + f" The Friedman test (Iman-Davenport F_F = {f.ff:.2f}, critical value "
                    f"{f.critical:.2f}, p = {f.ff_p:.3g}) finds no significant difference at alpha = "
                    f"{self.alpha:g}, so no method is significantly different from {name(self.reference)}.")
        h = self.holm
        sig = h[h["significant"]]
        worse = [name(m) for m in sig.index if sig.loc[m, "diff"] > 0]
        better = [name(m) for m in sig.index if sig.loc[m, "diff"] < 0]
        same = [name(m) for m in h.index if not h.loc[m, "significant"]]
        text = (lead + f" The Friedman test rejects equal performance (Iman-Davenport F_F = {f.ff:.2f} > "
                f"critical {f.critical:.2f}, p = {f.ff_p:.3g}). Holm's procedure against "
                f"{name(self.reference)} (average rank {self.average_ranks[self.reference]:.2f}) at alpha = "
                f"{self.alpha:g}: ")
        parts = []
        if worse:
            parts.append(f"{_join(worse)} {'is' if len(worse) == 1 else 'are'} significantly worse")
        if better:
            parts.append(f"{_join(better)} {'is' if len(better) == 1 else 'are'} significantly better")
        if same:
            parts.append(f"{_join(same)} {'is' if len(same) == 1 else 'are'} not significantly different")
        return text + "; ".join(parts) + "."

    def to_json(self) -> dict:
        """Plain JSON-ready content (what ``benchmark --json`` prints)."""
        def frame(df):
            return {str(i): {str(c): _num(v) for c, v in row.items()} for i, row in df.iterrows()}
        return {
            "metric": self.metric, "lower_is_better": self.lower_is_better, "reference": self.reference,
            "alpha": self.alpha, "n_folds": self.n_folds, "repeats": self.repeats, "seed": self.seed,
            "datasets": list(self.datasets), "methods": list(self.methods), "complete": self.complete,
            "values": frame(self.table), "ranks": frame(self.ranks),
            "average_ranks": {str(m): _num(v) for m, v in self.average_ranks.items()},
            "average_ranks_by_metric": frame(self.rank_summary.T),
            "friedman": self.friedman.as_dict() if self.friedman else None,
            "friedman_by_metric": frame(self.friedman_by_metric),
            "holm": None if self.holm is None else [
                {"method": str(m), **{c: _num(v) for c, v in row.items()}} for m, row in self.holm.iterrows()],
            "not_significantly_different": self.joined(),
            "means": {str(d): {str(m): {c: _num(v) for c, v in row.items()} for (dd, m), row in self.means.iterrows()
                               if dd == d} for d in self.datasets},
            "summary": self.describe(),
            "notes": list(self.notes),
        }


def _num(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return v if np.isfinite(v) else None


def _join(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def summarise(units: pd.DataFrame, *, metric: str = "ECE", reference: str | None = None,
              alpha: float = 0.05, n_folds: int = 5, repeats: int | None = None, seed: int = 0,
              planned: int | None = None, methods: Sequence[str] | None = None,
              datasets: Sequence[str] | None = None) -> BenchmarkResult:
    """Means, ranks, Friedman and Holm from a unit table (as :attr:`BenchmarkResult.units`).

    Only complete (data set, repeat) blocks — every method present — count; a
    data set with no complete block is left out and named in ``notes``.

    Parameters
    ----------
    units : DataFrame
        Columns dataset, repeat, seed, method and the metrics.
    metric : str
        The metric to rank.
    reference : str, optional
        Default :func:`default_reference`.
    alpha : float
    n_folds, repeats, seed, planned, methods, datasets
        Recorded in the result; ``methods``/``datasets`` fix the display
        order (default: order of appearance).
    """
    metric_names = [m for m in metrics.METRIC_NAMES if m in units.columns]
    if metric not in metric_names:
        raise DataError(f"metric {metric!r} was not computed; choose from {', '.join(metric_names)}.")
    methods = list(methods) if methods is not None else list(dict.fromkeys(units["method"]))
    all_datasets = list(datasets) if datasets is not None else list(dict.fromkeys(units["dataset"]))
    notes: list[str] = []
    counts = units.groupby(["dataset", "repeat"])["method"].nunique()
    full = {blk for blk, c in counts.items() if c == len(methods)}
    keep = units[[(d, r) in full for d, r in zip(units["dataset"], units["repeat"])]]
    done = [d for d in all_datasets if d in set(keep["dataset"])]
    missing = [d for d in all_datasets if d not in done]
    if missing:
        notes.append(f"Left out (no complete results yet): {', '.join(missing)}.")
    reps = keep.groupby("dataset")["repeat"].nunique()
    if len(set(reps.tolist())) > 1:
        notes.append("Data sets were averaged over different numbers of repeats: "
                     + ", ".join(f"{d} {reps[d]}" for d in done) + ".")
    means = keep.groupby(["dataset", "method"])[metric_names].mean()
    if done:
        means = means.reindex(pd.MultiIndex.from_product([done, methods], names=["dataset", "method"]))
    lower = metric in metrics.LOWER_IS_BETTER

    def pivot(name: str) -> pd.DataFrame:
        if not done:
            return pd.DataFrame(columns=methods, dtype=float)
        t = means[name].unstack("method").reindex(index=done, columns=methods)
        t.index.name, t.columns.name = "dataset", "method"
        return t

    table = pivot(metric)
    if done:
        ranks = stats.rank_table(table, lower)
        rank_summary = pd.DataFrame({m: stats.average_ranks(pivot(m), m in metrics.LOWER_IS_BETTER)
                                     for m in metric_names})
    else:
        ranks = table.copy()
        rank_summary = pd.DataFrame(index=methods, columns=metric_names, dtype=float)
    rank_summary.index.name = "method"
    avg = ranks.mean(axis=0) if done else pd.Series(np.nan, index=methods)
    avg.name = "average rank"
    ref = reference or default_reference(methods)
    if ref not in methods:
        raise DataError(f"reference method {ref!r} is not in the benchmark ({', '.join(methods)}).")
    fried = None
    holm = None
    by_metric = pd.DataFrame(columns=["chi2_F", "F_F", "df1", "df2", "p", "critical", "reject"], dtype=float)
    if len(done) >= 2 and len(methods) >= 2:
        fried = stats.friedman_from_ranks(avg.to_numpy(), len(done), alpha)
        rows = {}
        for m in metric_names:
            f = stats.friedman_from_ranks(rank_summary[m].to_numpy(), len(done), alpha)
            rows[m] = {"chi2_F": f.chi2, "F_F": f.ff, "df1": f.ff_df1, "df2": f.ff_df2, "p": f.ff_p,
                       "critical": f.critical, "reject": f.reject}
        by_metric = pd.DataFrame.from_dict(rows, orient="index")
        holm = stats.holm(avg, len(done), ref, alpha)
        holm["significant"] = holm["reject"] & fried.reject
    by_metric.index.name = "metric"
    return BenchmarkResult(
        units=units.reset_index(drop=True), means=means, metric=metric, lower_is_better=lower, table=table,
        ranks=ranks, average_ranks=avg, rank_summary=rank_summary, friedman=fried,
        friedman_by_metric=by_metric, reference=ref, holm=holm, alpha=float(alpha), n_folds=int(n_folds),
        repeats=int(repeats if repeats is not None else (units["repeat"].nunique() if len(units) else 0)),
        seed=int(seed), methods=methods, datasets=done,
        planned=int(planned if planned is not None else len(units)), notes=notes,
    )


def report_tables(result: BenchmarkResult, labels: Mapping[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """The tables the Benchmark page and ``benchmark`` command show, title -> DataFrame.

    Methods are renamed by ``labels`` when given.
    """
    name = (lambda k: (labels or {}).get(k, k))
    m = result.metric
    out = {
        f"Mean {m} per data set ({result.repeats} x {result.n_folds}-fold cross-fitting)":
            result.table.rename(columns=name),
        f"Rank on {m} per data set (1 = best)": result.ranks.rename(columns=name),
        "Average rank per metric (1 = best)": result.rank_summary.rename(index=name),
    }
    if result.friedman is not None:
        out[f"Friedman test with the Iman-Davenport correction (alpha = {result.alpha:g})"] = \
            result.friedman_by_metric
    if result.holm is not None:
        h = result.holm.rename(index=name)
        h.index.name = "method"
        out[f"Holm's procedure against {name(result.reference)} on {m}"] = h
    return out


# ---------------------------------------------------------------------------------------------
# Data sets from files
# ---------------------------------------------------------------------------------------------
def datasets_from_table(df: pd.DataFrame, info=None, *, name: str | None = None, label: str | None = None,
                        scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """One ScoreSet per score column of a table (several models in one file are several data sets).

    Parameters
    ----------
    df : DataFrame
        A table as :func:`calibdash.data.read_table` returns it.
    info : FileInfo, optional
    name : str, optional
        Base name (default: the file's name); with several score columns the
        data sets are named ``"<name> · <column>"``.
    label : str, optional
        Label column (default: guessed).
    scores : sequence of str, optional
        Score columns to use (default: all guessed score columns).

    Raises
    ------
    DataError
        As :func:`calibdash.data.build_score_set`.
    """
    base = name or (info.name if info is not None else "data")
    cols = list(scores) if scores else None
    if cols is None:
        first = build_score_set(df, label=label, info=info, name=base)
        cols = list(first.score_columns)
        label = first.label_column
    out = {}
    for col in cols:
        key = base if len(cols) == 1 else f"{base} · {col}"
        out[key] = build_score_set(df, score=col, label=label, info=info, name=base)
    return out


def _expand(paths: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(f for f in path.iterdir() if f.is_file() and f.name.lower().endswith(_FILE_SUFFIXES))
            if not found:
                raise DataError(f"folder {path} holds no .csv, .csv.gz or .parquet file.")
            files.extend(found)
        else:
            files.append(path)
    return files


def load_datasets(paths: Sequence[str], label: str | None = None,
                  scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """Data sets from files and folders (each folder's .csv/.csv.gz/.parquet files), one per score column."""
    out: dict[str, ScoreSet] = {}
    for path in _expand(paths):
        df, info = read_table(path)
        use = None
        if scores:
            use = [c for c in scores if c in df.columns]
            if not use:
                raise DataError(f"{info.name} has none of the score columns {', '.join(scores)}.")
        for key, ss in datasets_from_table(df, info, label=label, scores=use).items():
            unique, i = key, 2
            while unique in out:
                unique, i = f"{key} ({i})", i + 1
            out[unique] = ss
    return out


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``benchmark`` command to an ``argparse`` subparsers object; returns its parser."""
    b = subparsers.add_parser(
        "benchmark", help="compare calibrators over several data sets (ranks, Friedman, Holm)",
        description="Repeated K-fold cross-fitting of each calibrator on each data set, average ranks, "
                    "the Friedman test with the Iman-Davenport correction and Holm's procedure against "
                    "a reference method (Demsar 2006), as on the dashboard's Benchmark page.")
    b.add_argument("files", nargs="+", metavar="FILE",
                   help="CSV, .csv.gz or Parquet files, or folders of them; every score column is a data set")
    b.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help="comma-separated calibrators (default: %(default)s)")
    b.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")
    b.add_argument("--folds", type=int, default=5, help="K of the cross-fitting (default 5)")
    b.add_argument("--repeats", type=int, default=2, help="repetitions with seeds seed, seed+1, ... (default 2)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--metric", default="ECE", choices=list(metrics.METRIC_NAMES), help="metric to rank (default ECE)")
    b.add_argument("--reference", help="method the others are compared with (default: bbq if chosen)")
    b.add_argument("--alpha", type=float, default=0.05)
    b.add_argument("--no-uncalibrated", action="store_true", help="do not rank the raw scores")
    b.add_argument("--label", help="label column (default: guessed)")
    b.add_argument("--score", action="append", help="score column to use (repeatable; default: every score column)")
    b.add_argument("--json", action="store_true", help="print JSON instead of tables")
    b.set_defaults(func=cmd_benchmark)
    return b


def cmd_benchmark(args) -> int:
    """Run ``benchmark`` from parsed arguments; print tables (or JSON); return the exit code 0.

    Raises
    ------
    DataError
        Bad files or options (``python -m calibdash`` prints it as a message).
    """
    datasets = load_datasets(args.files, label=args.label, scores=args.score)
    from .__main__ import _params       # the evaluate command's --param parser (imported late: __main__ imports us)

    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    params = _params(args.param)
    cals = {m: calibrators.get(m, **params.get(m, {})) for m in names}
    quiet = args.json or not sys.stderr.isatty()

    def progress(frac, msg):
        if not quiet:
            print(f"\r{100 * frac:5.1f}%  {msg[:90]:<90}", end="", file=sys.stderr, flush=True)

    result = run_benchmark(datasets, cals, n_folds=args.folds, repeats=args.repeats, seed=args.seed,
                           metric=args.metric, reference=args.reference, alpha=args.alpha,
                           include_uncalibrated=not args.no_uncalibrated, progress=progress)
    if not quiet:
        print(file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        print()
        return 0
    print(f"{len(datasets)} data set{'s' if len(datasets) != 1 else ''}: "
          + "; ".join(f"{k} ({ss.n_rows:,} rows)" for k, ss in datasets.items()))
    for title, table in report_tables(result).items():
        print(f"\n{title}")
        print(table.to_string(float_format=lambda v: f"{v:.4f}"))
    print()
    print(result.describe())
    for note in result.notes:
        print(f"Note: {note}")
    return 0
