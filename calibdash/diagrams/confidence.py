"""The confidence reliability diagram of K-class predictions, drawn as the binned diagram: per method, accuracy
against confidence (:func:`calibdash.measures.class_measures.top_label`) and the confidence ECE, at the measures' bins
(15 equal-width unless told, a probability of exactly 1 in the last; ``n_bins="auto"``: the binary diagrams' rule)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

import numpy as np

from ..measures.binning import reliability_table
from ..measures import class_measures as metrics
from .binned import BinnedData
from .common import BINNINGS, DEFAULT_TITLE, HEIGHT, bin_count, check_strategy, display_names

__all__ = []

CONFIDENCE = "Confidence"


@dataclass(frozen=True)
class ConfidenceData(BinnedData):
    """A confidence reliability diagram: each method's reliability table of ``(max P, correct)`` (columns of
    :func:`calibdash.measures.binning.reliability_table`: ``obs_freq`` is the accuracy, ``mean_pred`` the mean
    confidence) and its confidence ECE at the same bins."""
    ece: dict = field(default_factory=dict)
    kind: ClassVar[str] = CONFIDENCE
    title: ClassVar[str] = "Confidence reliability diagram"
    problem: ClassVar[str] = "classes"
    position: ClassVar[float] = 1
    text: ClassVar[str] = (
        "Confidence reliability diagram: {bins}, {binning}, on the top probability of each row "
        "(a probability of exactly 1 in the last bin); each point is a bin's accuracy (share of rows "
        "whose most probable class is right) against its mean confidence, with its 95% interval; "
        "the bars count its rows. Legend: the confidence ECE.")

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return self.text.format(bins=self.bins_text, binning=BINNINGS[self.strategy])

    @classmethod
    def prepare(cls, P_by_method: Mapping[str, np.ndarray], y, sample_weight=None, *,
                n_bins=metrics.N_BINS, strategy: str = "uniform") -> "ConfidenceData":
        """The confidence diagram's data: per method, :func:`calibdash.measures.class_measures.top_label` binned.

        ``n_bins``: a count or ``"auto"``; ``strategy``: ``"uniform"`` (equal-width, default) or ``"quantile"``. The
        tables' counts sum to the rows (the weights' sum when weighted).
        """
        Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
        check_strategy(strategy)
        bins, said = bin_count(n_bins, y, w)
        tables, ece = {}, {}
        for key, P in Ps.items():
            c, a = metrics.top_label(P, y)
            tables[key] = reliability_table(c, a, bins, strategy, sample_weight=w)
            ece[key] = metrics.top_label_ece(P, y, bins, strategy, w)
        return cls(tables, bins, strategy, said, ece)

    def figure(self, *, names: Mapping[str, str] | None = None, title=DEFAULT_TITLE, height: int = HEIGHT):
        """Each method's accuracy against mean confidence per bin (95% intervals), its confidence ECE in the legend,
        and the rows per bin underneath: one scatter and one bar trace per method after the diagonal."""
        from ..figures.charts.reliability import reliability_diagram
        from ..figures.palette import class_color_of

        shown = display_names(names, self.tables)
        labels = {k: f"{shown[k]} (ECE {self.ece[k]:.4f})" if k in self.ece else shown[k] for k in self.tables}
        fig = reliability_diagram(self.tables, labels=labels, title=self._title(title), height=height,
                                  colors={k: class_color_of(k) for k in self.tables})
        fig.update_xaxes(title_text="confidence (top probability)", row=2, col=1)
        fig.update_yaxes(title_text="accuracy", row=1, col=1)
        return fig


prepare_confidence = ConfidenceData.prepare
plot_confidence = ConfidenceData.figure
