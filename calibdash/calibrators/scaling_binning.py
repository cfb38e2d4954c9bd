"""The scaling-binning calibrator (Kumar, Liang & Ma, 2019, "Verified Uncertainty Calibration", NeurIPS, Section 4).

A scaling method (Platt's) has low variance but an unmeasurable calibration error; a binning method's error can be
measured, but a bin's frequency of positives is noisy. Scaling-binning takes both: (1) *function fitting*: Platt
scaling ``g(s) = sigmoid(A logit(s) + B)``; (2) *binning scheme*: ``B`` bins of equal count; (3) *discretisation*: a
bin's value is the mean of ``g`` over its rows, not of their labels. The output takes at most ``B`` values, so its
calibration error can be estimated like any binned model's, while the values average ``g``, not noisy 0/1 labels.

As in the authors' code (``PlattBinnerCalibrator`` of ``p-lambda/verified_calibration``) the three steps use the same
rows; the paper's analysis splits the data in three (calibdash's evaluation schemes judge on held-out rows either
way). Where this differs from the authors' code:

* Bins are cut on the score, not on ``g(s)``, by histogram binning's
  :func:`~calibdash.calibrators.histogram.equal_count_cuts` (ties never split, cuts halfway between neighbouring
  distinct scores, weights counted as rows). Platt's map is monotone, so the bins are the same (but for scores that
  Platt's clip to ``[1e-12, 1 - 1e-12]`` or rounding maps to one value of ``g``, which the authors never split and
  which may be split here), and a new score near a cut goes by the midpoint of the scores, not of their ``g``: the
  map is a step function of the score, whose SQL form equals ``predict`` exactly. A score on a cut takes the upper
  bin, one outside the training range an end bin.
* The authors give an empty bin the midpoint of its edges; here no bin is empty (each holds a distinct training score).

Sample weights: a row of weight ``w`` counts as ``w`` rows in all three steps; integer weights fit as the rows
repeated, up to the rounding of the sums.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import SettingsError
from ..core.step_maps import collapse_ties
from .base import CurveCalibrator, HyperParam
from .histogram import bin_sums, equal_count_cuts
from .platt import PlattCalibrator

__all__ = ["ScalingBinningCalibrator", "scaling_binning"]


@dataclass(frozen=True)
class ScalingBinning:
    """The three steps of a scaling-binning fit on some rows: ``platt`` (step 1, Platt scaling fitted on them), the
    ``cuts`` between the equal-count bins of the scores (step 2), each bin's ``levels`` (step 3: the mean of Platt's
    outputs over its rows, the calibrated values) and each bin's ``count``, ``positives`` and ``score_sum`` (weight
    sums when weighted)."""

    platt: PlattCalibrator
    cuts: np.ndarray
    levels: np.ndarray
    count: np.ndarray
    positives: np.ndarray
    score_sum: np.ndarray


def scaling_binning(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, n_bins: int) -> ScalingBinning:
    """Fit the scaling-binning calibrator's three steps on checked scores ``s``, 0/1 labels ``y`` and weights (None:
    unit weights) with ``n_bins`` equal-count bins."""
    platt = PlattCalibrator().fit(s, y, sample_weight=sample_weight)
    g = platt.predict(s)
    values, counts, _ = collapse_ties(s, y, sample_weight)
    cuts = equal_count_cuts(values, counts, n_bins)
    n, g_sum, _ = bin_sums(cuts, s, g, sample_weight)
    n, k, score_sum = bin_sums(cuts, s, y, sample_weight)
    return ScalingBinning(platt=platt, cuts=cuts, levels=g_sum / n, count=n, positives=k,
                          score_sum=score_sum)


class ScalingBinningCalibrator(CurveCalibrator):
    """The scaling-binning calibrator (Kumar, Liang & Ma, 2019): Platt scaling averaged in equal-count bins of the
    score, as the module docstring says.

    Parameters
    ----------
    n_bins : int, default 10
        Number of equal-count bins B (fewer when heavy ties leave fewer distinct scores to cut between).

    Attributes
    ----------
    cuts_ : ndarray of float
        Cut points between the bins, on the score.
    levels_ : ndarray of float
        Each bin's calibrated value: the (weighted) mean of Platt's outputs over its training rows.
    """

    name = "scaling_binning"
    order = 130
    color = "#EE3377"   # magenta (Tol's vibrant scheme)
    label = "Scaling-binning"
    summary = "Platt scaling averaged in equal-count bins"
    paper = "Kumar, Liang & Ma (2019), Verified uncertainty calibration"
    hyperparams = (
        HyperParam("n_bins", "B", "int", 10, low=2, high=100, log=True,
                   help="Number of equal-count bins; each bin's value is the mean of Platt's outputs in it."),
    )
    curve, unit = ("cuts_", "levels_", "cuts", "levels"), True

    def __init__(self, n_bins: int = 10):
        self.n_bins = n_bins

    def _fit(self, s, y, features, w):
        if int(self.n_bins) < 1:
            raise SettingsError(f"n_bins must be at least 1, got {self.n_bins}.")
        fit = scaling_binning(s, y, w, int(self.n_bins))
        self.cuts_, self.levels_ = fit.cuts, fit.levels
