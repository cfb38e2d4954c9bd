"""What a benchmark shows people: its tables, each with its kind, its result in sentences, and its JSON.

:func:`report_tables` gives the tables the dashboard's Benchmark page and
the ``benchmark`` command show, as :class:`ReportTable` records. A table's
:class:`TableKind` says what it holds, so a page chooses its formatting from
the kind; the title is for people and may be reworded freely.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import measures

if TYPE_CHECKING:                                   # for annotations only: statistics imports this module
    from .statistics import BenchmarkResult

__all__ = ["TableKind", "ReportTable", "report_tables", "describe", "to_json"]


class TableKind(StrEnum):
    """What a report table holds."""

    #: Data sets x methods: the ranked metric's mean over repeats.
    PER_DATASET_MEAN = "per_dataset_mean"
    #: Data sets x methods: each method's rank on each data set (1 = best).
    PER_DATASET_RANK = "per_dataset_rank"
    #: Methods x metrics: the average rank on every metric (1 = best).
    AVERAGE_RANK = "average_rank"
    #: Metrics x statistics: the Friedman test with the Iman-Davenport correction per metric.
    FRIEDMAN = "friedman"
    #: Methods x statistics: Holm's step-down comparison with the reference method.
    HOLM = "holm"


@dataclass(frozen=True, eq=False)
class ReportTable:
    """One table of a benchmark report.

    Attributes
    ----------
    kind : TableKind
        What the table holds; format it from this, never from ``title``.
    title : str
        A heading for people.
    frame : DataFrame
        The numbers, methods named by the labels given to :func:`report_tables`.
    lower_is_better : bool or None
        Direction of the values where one of them is the best (the means and
        the ranks); None for the test tables, where no value is "best".
    """

    kind: TableKind
    title: str
    frame: pd.DataFrame
    lower_is_better: bool | None = None


def report_tables(result: BenchmarkResult, labels: Mapping[str, str] | None = None) -> list[ReportTable]:
    """The tables the Benchmark page and the ``benchmark`` command show, in order.

    Always the per-data-set means, the per-data-set ranks and the average
    ranks per metric; the Friedman and Holm tables when the result has the
    tests (two data sets or more). Methods are renamed by ``labels`` when
    given.
    """
    name = (lambda k: (labels or {}).get(k, k))
    m = result.metric
    out = [
        ReportTable(TableKind.PER_DATASET_MEAN,
                    f"Mean {m} per data set ({result.repeats} x {result.n_folds}-fold cross-fitting)",
                    result.table.rename(columns=name), result.lower_is_better),
        ReportTable(TableKind.PER_DATASET_RANK, f"Rank on {m} per data set (1 = best)",
                    result.ranks.rename(columns=name), True),
        ReportTable(TableKind.AVERAGE_RANK, "Average rank per metric (1 = best)",
                    result.rank_summary.rename(index=name), True),
    ]
    if result.friedman is not None:
        out.append(ReportTable(TableKind.FRIEDMAN,
                               f"Friedman test with the Iman-Davenport correction (alpha = {result.alpha:g})",
                               result.friedman_by_metric))
    if result.holm is not None:
        h = result.holm.rename(index=name)
        h.index.name = "method"
        out.append(ReportTable(TableKind.HOLM, f"Holm's procedure against {name(result.reference)} on {m}", h))
    return out


def describe(result: "BenchmarkResult", labels: Mapping[str, str] | None = None) -> str:
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
    lead = (f"On {result.metric} ({measures.best_phrase(result.metric)}) over {n} "
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


def to_json(result: "BenchmarkResult") -> dict:
    """Plain JSON-ready content (what ``benchmark --json`` prints)."""
    def frame(df):
        return {str(i): {str(c): _num(v) for c, v in row.items()} for i, row in df.iterrows()}
    return {
        "metric": result.metric, "lower_is_better": result.lower_is_better, "reference": result.reference,
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
