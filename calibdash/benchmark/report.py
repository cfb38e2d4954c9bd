"""The tables a benchmark shows people (:func:`report_tables`), each with its :class:`TableKind`, which a page
formats by; the title is for people and may be reworded freely."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Mapping

import pandas as pd

from .outcome import BenchmarkResult

__all__ = []


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
    """One table of a benchmark report: its ``kind`` (format it from this, never from ``title``, a heading for
    people), the numbers ``frame`` (methods named by the labels given to :func:`report_tables`), and
    ``lower_is_better``, the values' direction where one is the best (the means and ranks; None for the tests)."""

    kind: TableKind
    title: str
    frame: pd.DataFrame
    lower_is_better: bool | None = None


def report_tables(result: BenchmarkResult, labels: Mapping[str, str] | None = None) -> list[ReportTable]:
    """The tables the Benchmark page and the ``benchmark`` command show, in order: the per-data-set means and
    ranks and the average ranks per metric; the Friedman and Holm tables when the result has the tests (two data
    sets or more). Methods are renamed by ``labels`` when given."""
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
