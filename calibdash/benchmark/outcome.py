"""The result of a benchmark (:class:`BenchmarkResult`, its sentences and JSON) and the measures it ranks
(:class:`Catalogue`), which the statistics and the report both import."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import measures
from ..measures import class_measures as mmetrics
from . import rank_tests

__all__ = []


@dataclass(frozen=True)
class Catalogue:
    """The measures of one kind of data (``kind``, ``"binary"`` or ``"multiclass"``) as a benchmark ranks, tests
    and reports them: ``names`` in table order; ``rankable(name)``; ``direction(name)`` (True: lower is better,
    False: higher, None: closest to a target); ``oriented(name, values)``, the values turned so that lower is better
    (same type); ``best_phrase(name)`` (``"lower is better"``, ``"0 is ideal"``, ...)."""

    kind: str
    names: tuple
    rankable: Callable[[str], bool]
    direction: Callable[[str], bool | None]
    oriented: Callable
    best_phrase: Callable[[str], str]


#: The binary measures: :data:`calibdash.measures.ALL_NAMES` and their directions.
BINARY = Catalogue("binary", tuple(measures.ALL_NAMES), measures.rankable, measures.direction, measures.oriented,
                   measures.best_phrase)


#: The K-class measures as a benchmark ranks them (every one has a best value).
CLASS_MEASURES = Catalogue(
    "multiclass", tuple(mmetrics.MEASURE_NAMES), lambda name: name in mmetrics.MEASURES,
    lambda name: mmetrics.MEASURES[name].lower_is_better,
    lambda name, values: mmetrics.MEASURES[name].oriented(values), lambda name: mmetrics.MEASURES[name].phrase())


@dataclass
class BenchmarkResult:
    """Everything a benchmark found, ready for tables and plots.

    Attributes
    ----------
    units : DataFrame
        One row per finished unit: dataset, repeat, seed, method, the metrics, seconds.
    means : DataFrame
        Mean over repeats of the complete (data set, repeat) blocks, indexed by (dataset, method).
    metric, lower_is_better : str, bool or None
        The ranked metric and its direction (None: ranked by the distance to a target, the slope's 1).
    table, ranks : DataFrame
        Data sets x methods: ``means`` of ``metric``, and their ranks (1 = best, mid-ranks for ties).
    average_ranks, rank_summary : Series, DataFrame
        Method -> average rank on ``metric``; methods x metrics, the average rank on every metric.
    friedman, friedman_by_metric : FriedmanResult or None, DataFrame
        None with fewer than two data sets or methods; metric -> chi2_F, F_F, df1, df2, p, critical, reject.
    holm : DataFrame or None
        :func:`~calibdash.benchmark.rank_tests.holm` against ``reference`` plus ``significant``: Holm rejects
        *and* the Friedman test rejected.
    reference, alpha, n_folds, repeats, seed
        As the benchmark ran.
    methods, datasets : list of str
        In display order (the raw scores first); ``datasets`` lists those with complete results.
    planned, notes, catalogue
        Units planned (fewer units: a partial result); what was left out and why; the measures' :class:`Catalogue`.
    """

    units: pd.DataFrame
    means: pd.DataFrame
    metric: str
    lower_is_better: bool | None
    table: pd.DataFrame
    ranks: pd.DataFrame
    average_ranks: pd.Series
    rank_summary: pd.DataFrame
    friedman: rank_tests.FriedmanResult | None
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
    catalogue: Catalogue = BINARY

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
        """The result in plain sentences (method names from ``labels`` when given), as the Benchmark page and
        the ``benchmark`` command write it."""
        name = (lambda k: (labels or {}).get(k, k))
        if self.table.empty:
            return "No complete results yet: run the benchmark."
        n, k = self.table.shape
        ar = self.average_ranks.sort_values(kind="stable")
        best = ar.index[ar == ar.iloc[0]]
        lead = (f"On {self.metric} ({self.catalogue.best_phrase(self.metric)}) over {n} "
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
        parts = [f"{_join(ms)} {'is' if len(ms) == 1 else 'are'} {how}" for ms, how in (
            (worse, "significantly worse"), (better, "significantly better"), (same, "not significantly different"))
            if ms]
        return text + "; ".join(parts) + "."

    def to_json(self) -> dict:
        """Plain JSON-ready content (what ``benchmark --json`` prints)."""
        def frame(df):
            return {str(i): {str(c): _num(v) for c, v in row.items()} for i, row in df.iterrows()}
        return {
            "kind": self.catalogue.kind, "metric": self.metric, "lower_is_better": self.lower_is_better,
            "reference": self.reference, "alpha": self.alpha, "n_folds": self.n_folds, "repeats": self.repeats,
            "seed": self.seed,
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
