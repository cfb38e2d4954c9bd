"""Explaining a fitted scaling-binning calibrator (which keeps only its cut points and bin values): its three steps
redone on the rows it was fitted on (:func:`calibdash.calibrators.scaling_binning.scaling_binning`, as ``fit``),
Platt's fit and curve, and per bin both the mean of Platt's outputs (the calibrated value) and the frequency of
positives (what histogram binning would give on the same bins)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators.scaling_binning import ScalingBinningCalibrator, scaling_binning
from ..core.validation import check_weights
from . import Explanation, explains, not_the_rows, training_rows

__all__ = ["ScalingBinningExplanation"]

#: Largest difference between a bin's value and the mean of Platt's outputs computed again.
MAP_TOL = 1e-9


@dataclass(kw_only=True)
class ScalingBinningExplanation(Explanation):
    """What :func:`explain` finds behind a fitted scaling-binning calibrator.

    Attributes
    ----------
    A, B : float
        Slope and intercept of Platt scaling fitted on the rows (step 1).
    bins : DataFrame
        One row per bin: ``lower``, ``upper`` (its edges: 0, the cuts, 1), ``count``, ``positives`` (weight sums when
        fitted with weights), ``mean_score``, ``frequency`` (``positives / count``, histogram binning's value on these
        bins) and ``estimate`` (the mean of Platt's outputs, the calibrated value).
    curve : DataFrame
        Platt's map on a grid: ``score``, ``platt``.
    """

    A: float
    B: float
    bins: pd.DataFrame
    curve: pd.DataFrame


@explains(ScalingBinningCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> ScalingBinningExplanation:
    """Explain a fitted scaling-binning calibrator on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    fit = scaling_binning(s, y, w, int(cal.n_bins))
    if not (np.array_equal(fit.cuts, cal.cuts_) and np.allclose(fit.levels, cal.levels_, rtol=0.0, atol=MAP_TOL)):
        raise not_the_rows("the scaling-binning calibrator", "its steps redone on them give other bins or values")
    with np.errstate(invalid="ignore", divide="ignore"):
        frequency, mean_score = fit.positives / fit.count, fit.score_sum / fit.count
    edges = np.concatenate([[0.0], cal.cuts_, [1.0]])
    bins = pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "count": fit.count, "positives": fit.positives,
                         "mean_score": mean_score, "frequency": frequency, "estimate": cal.levels_})
    grid = np.linspace(0.0, 1.0, 201)
    curve = pd.DataFrame({"score": grid, "platt": fit.platt.predict(grid)})
    a, b = fit.platt.a_, fit.platt.b_
    fitted = pd.DataFrame({"A": [a], "B": [b], "bins": [len(bins)], "rows": [s.size]})
    notes = [f"Step 1: Platt scaling on the {s.size:,} rows, sigmoid({a:.4g} logit(s) {b:+.4g}).",
             f"Step 2: {len(bins)} bins of about equal count, cut on the score as histogram binning cuts them.",
             "Step 3: each bin's value is the mean of Platt's outputs over its rows, not their frequency of "
             "positives: the map takes at most as many values as there are bins, each averaging a smooth fit."]
    return ScalingBinningExplanation(method=cal.name, notes=notes, tables={"bins": bins, "platt": fitted},
                                     A=a, B=b, bins=bins, curve=curve)
