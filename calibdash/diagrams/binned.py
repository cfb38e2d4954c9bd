"""The binned reliability diagram: a reliability table per method
(:func:`calibdash.measures.binning.reliability_table`), each bin's observed frequency against its mean prediction with
its 95% interval, the rows per bin underneath."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

import pandas as pd

from ..measures.binning import DEFAULT_N_BINS, DEFAULT_STRATEGY, reliability_table
from .common import BINNINGS, DEFAULT_TITLE, HEIGHT, Diagram, bin_count, display_names

__all__ = []

BINNED = "Binned"


def reliability_tables(predictions: pd.DataFrame, labels, n_bins: int = DEFAULT_N_BINS,
                       strategy: str = DEFAULT_STRATEGY, sample_weight=None) -> dict[str, pd.DataFrame]:
    """Reliability table of every column of ``predictions`` (method -> table).

    ``sample_weight``: the rows' weights, such as :attr:`calibdash.evaluation.holdout.Evaluation.weights` on score
    cells (each weighted row standing for that many rows); bins then hold equal weight and their counts are weight
    sums, so on exact cells the tables are those of the rows the cells summarise.
    """
    return {str(c): reliability_table(predictions[c].to_numpy(), labels, n_bins, strategy, sample_weight=sample_weight)
            for c in predictions.columns}


@dataclass(frozen=True)
class BinnedData(Diagram):
    """A binned reliability diagram: each method's reliability table and how it was binned."""
    tables: dict[str, pd.DataFrame]
    n_bins: int
    strategy: str
    bins_text: str                      # "10 bins", or "auto: 12 bins (cube root of n = 1,728 rows)"
    kind: ClassVar[str] = BINNED
    title: ClassVar[str] = "Reliability diagram"
    position: ClassVar[float] = 1
    text: ClassVar[str] = ("Binned reliability diagram: {bins}, {binning}; each point is a bin's observed frequency "
                           "against its mean prediction, with its 95% interval; the bars count its rows.")

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return self.text.format(bins=self.bins_text, binning=BINNINGS.get(self.strategy, "equal-width"))

    @classmethod
    def prepare(cls, predictions: pd.DataFrame, labels, sample_weight=None, *, n_bins=DEFAULT_N_BINS,
                strategy: str = DEFAULT_STRATEGY) -> "BinnedData":
        """The binned diagram's data: ``n_bins`` a count or ``"auto"`` (:func:`calibdash.diagrams.bin_count`),
        ``strategy`` ``"uniform"`` or ``"quantile"``."""
        bins, said = bin_count(n_bins, labels, sample_weight)
        return cls(reliability_tables(predictions, labels, bins, strategy, sample_weight=sample_weight), bins, strategy,
                   said)

    def figure(self, *, names: Mapping[str, str] | None = None, title=DEFAULT_TITLE, height: int = HEIGHT):
        """Each bin's observed frequency against its mean prediction, its 95% interval, and the rows per bin
        underneath (:func:`calibdash.figures.reliability_diagram`)."""
        from ..figures.charts.reliability import reliability_diagram
        return reliability_diagram(self.tables, labels=display_names(names, self.tables), title=self._title(title),
                                   height=height)


prepare_binned = BinnedData.prepare
plot_binned = BinnedData.figure
