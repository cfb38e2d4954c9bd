"""Explaining a fitted histogram binning (which keeps its cut points and estimates): the rows it was fitted on counted
in its bins again (:func:`calibdash.calibrators.histogram.bin_sums`, as ``fit``), checked against its estimates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ..calibrators.histogram import HistogramCalibrator, bin_sums
from ..core.validation import check_weights
from . import Explanation, explains, not_the_rows, training_rows

__all__ = []

#: Largest difference between a bin's estimate and its rows' frequency counted again.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class HistogramExplanation(Explanation):
    """What :func:`explain` finds behind a fitted histogram binning: ``bins``, one row per bin, ``lower``, ``upper``
    (its edges: 0, the cuts, 1), ``count``, ``positives`` (training rows, positive ones; their weights when fitted
    with weights), ``mean_score`` (their mean score), ``estimate`` (``positives / count``)."""

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    bins: pd.DataFrame


@explains(HistogramCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> HistogramExplanation:
    """Explain a fitted histogram binning on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    n, k, score_sum = bin_sums(cal.cuts_, s, y, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq, mean_score = k / n, score_sum / n
    if not np.allclose(freq, cal.estimates_, rtol=0.0, atol=MAP_TOL):
        raise not_the_rows("the histogram binning", "their frequencies in its bins are not its estimates")
    edges = np.concatenate([[0.0], cal.cuts_, [1.0]])
    bins = pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "count": n, "positives": k,
                         "mean_score": mean_score, "estimate": cal.estimates_})
    return HistogramExplanation(method=cal.name, tables={"bins": bins}, bins=bins)
