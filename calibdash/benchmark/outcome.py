"""The result of a benchmark: :class:`BenchmarkResult`, with its result in sentences and its JSON.

A module of its own so that :mod:`calibdash.benchmark.statistics` (which
builds the result) and :mod:`calibdash.benchmark.report` (which makes its
tables) both import it and not each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import rank_tests
from .catalogue import BINARY, Catalogue

__all__ = []


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
    lower_is_better : bool or None
        Its direction; None for a measure whose best value is a target
        (the calibration slope's 1), ranked by the distance to it.
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
        :func:`~calibdash.benchmark.rank_tests.holm` against ``reference``
        plus a ``significant`` column: Holm rejects *and* the Friedman test
        rejected.
    alpha : float
    n_folds, repeats, seed : int
    methods, datasets : list of str
        In display order (the uncalibrated scores first); ``datasets`` lists
        those with complete results.
    planned : int
        Units planned (``len(units) < planned`` for a partial result).
    notes : list of str
        What was left out and why.
    catalogue : Catalogue
        The measures' kind and directions (binary, or multi-class:
        :mod:`calibdash.benchmark.catalogue`).
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
        """The result in plain sentences (see :func:`describe`)."""
        return describe(self, labels)

    def to_json(self) -> dict:
        """Plain JSON-ready content (see :func:`to_json`)."""
        return to_json(self)


def describe(result: BenchmarkResult, labels: Mapping[str, str] | None = None) -> str:
    """The result in plain sentences (method names from ``labels`` when given).

    What the Benchmark page writes above its figures and the ``benchmark``
    command prints after its tables.
    """
    name = (lambda k: (labels or {}).get(k, k))
    if result.table.empty:
        return "No complete results yet: run the benchmark."
    n, k = result.table.shape
    ar = result.average_ranks.sort_values(kind="stable")
    best = ar.index[ar == ar.iloc[0]]
    lead = (f"On {result.metric} ({result.catalogue.best_phrase(result.metric)}) over {n} "
            f"data set{'s' if n != 1 else ''} ({result.repeats} x {result.n_folds}-fold cross-fitting), "
            f"{_join([name(b) for b in best])} rank{'s' if len(best) == 1 else ''} best "
            f"(average rank {ar.iloc[0]:.2f} of {k}).")
    if result.friedman is None:
        why = "one data set" if n < 2 else "one method"
        return lead + f" With {why} there is no test across data sets: add data sets and methods."
    f = result.friedman
    if not f.reject:
        return (lead + f" The Friedman test (Iman-Davenport F_F = {f.ff:.2f}, critical value "
                f"{f.critical:.2f}, p = {f.ff_p:.3g}) finds no significant difference at alpha = "
                f"{result.alpha:g}, so no method is significantly different from {name(result.reference)}.")
    h = result.holm
    sig = h[h["significant"]]
    worse = [name(m) for m in sig.index if sig.loc[m, "diff"] > 0]
    better = [name(m) for m in sig.index if sig.loc[m, "diff"] < 0]
    same = [name(m) for m in h.index if not h.loc[m, "significant"]]
    text = (lead + f" The Friedman test rejects equal performance (Iman-Davenport F_F = {f.ff:.2f} > "
            f"critical {f.critical:.2f}, p = {f.ff_p:.3g}). Holm's procedure against "
            f"{name(result.reference)} (average rank {result.average_ranks[result.reference]:.2f}) at alpha = "
            f"{result.alpha:g}: ")
    parts = []
    if worse:
        parts.append(f"{_join(worse)} {'is' if len(worse) == 1 else 'are'} significantly worse")
    if better:
        parts.append(f"{_join(better)} {'is' if len(better) == 1 else 'are'} significantly better")
    if same:
        parts.append(f"{_join(same)} {'is' if len(same) == 1 else 'are'} not significantly different")
    return text + "; ".join(parts) + "."


def to_json(result: BenchmarkResult) -> dict:
    """Plain JSON-ready content (what ``benchmark --json`` prints)."""
    def frame(df):
        return {str(i): {str(c): _num(v) for c, v in row.items()} for i, row in df.iterrows()}
    return {
        "kind": result.catalogue.kind, "metric": result.metric, "lower_is_better": result.lower_is_better, "reference": result.reference,
        "alpha": result.alpha, "n_folds": result.n_folds, "repeats": result.repeats, "seed": result.seed,
        "datasets": list(result.datasets), "methods": list(result.methods), "complete": result.complete,
        "values": frame(result.table), "ranks": frame(result.ranks),
        "average_ranks": {str(m): _num(v) for m, v in result.average_ranks.items()},
        "average_ranks_by_metric": frame(result.rank_summary.T),
        "friedman": result.friedman.as_dict() if result.friedman else None,
        "friedman_by_metric": frame(result.friedman_by_metric),
        "holm": None if result.holm is None else [
            {"method": str(m), **{c: _num(v) for c, v in row.items()}} for m, row in result.holm.iterrows()],
        "not_significantly_different": result.joined(),
        "means": {str(d): {str(m): {c: _num(v) for c, v in row.items()} for (dd, m), row in result.means.iterrows()
                           if dd == d} for d in result.datasets},
        "summary": describe(result),
        "notes": list(result.notes),
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
