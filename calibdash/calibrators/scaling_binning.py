"""The scaling-binning calibrator (Kumar, Liang & Ma, 2019, "Verified Uncertainty Calibration", NeurIPS, Section 4).

A scaling method (Platt's) has low variance but its calibration error cannot be measured; a binning method's can, but
a bin's frequency of positives is noisy. The scaling-binning calibrator takes the best of both: (1) *function
fitting*: fit Platt scaling ``g(s) = sigmoid(A logit(s) + B)``; (2) *binning scheme*: cut into ``B`` bins of equal
count; (3) *discretisation*: each bin's value is the mean of ``g`` over its rows, not of their labels. The output
takes at most ``B`` values, so its calibration error can be estimated like any binned model's, while the bin values
average ``g`` rather than noisy 0/1 labels.

As in the authors' code (``PlattBinnerCalibrator`` of ``p-lambda/verified_calibration``) the three steps use the same
rows; the paper's analysis splits the data in three (calibdash's evaluation schemes judge on held-out rows either
way). Where this differs from the authors' code:

* The bins are cut on the score, not on ``g(s)``, with histogram binning's
  :func:`~calibdash.calibrators.histogram.equal_count_cuts` (ties never split, cuts halfway between neighbouring
  distinct scores, weights counted as rows). Platt's map is monotone, so these are the same bins (except scores that
  Platt's clip to ``[1e-12, 1 - 1e-12]`` or rounding maps to one value of ``g``, which the authors' code never splits
  and which may be split here), and a new score near a cut goes by the midpoint of the scores rather than of their
  ``g`` values: the map is a step function of the score, whose SQL form equals ``predict`` exactly.
* The authors' code gives an empty bin the midpoint of its edges; here no bin is empty (every bin holds a distinct
  training score).

Sample weights: a row of weight ``w`` counts as ``w`` rows in all three steps; with integer weights the fit equals the
fit on the rows repeated, up to the rounding of the sums.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import SettingsError
from ..core.sql_forms import StepMap
from ..core.step_maps import collapse_ties, step_lookup
from .base import Calibrator, HyperParam
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


class ScalingBinningCalibrator(Calibrator):
    """The scaling-binning calibrator (Kumar, Liang & Ma, 2019): Platt scaling averaged in equal-count bins.

    The training scores are cut into ``n_bins`` bins of equal count, as histogram binning cuts them; each bin's value
    is the mean, over its training rows, of Platt scaling fitted on the same rows; a score takes its bin's value
    (upper bin on a cut, end bins outside the training range). The module docstring relates this to the paper and the
    authors' code.

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

    def __init__(self, n_bins: int = 10):
        self.n_bins = n_bins

    def _fit(self, s, y, features, w):
        if int(self.n_bins) < 1:
            raise SettingsError(f"n_bins must be at least 1, got {self.n_bins}.")
        fit = scaling_binning(s, y, w, int(self.n_bins))
        self.cuts_, self.levels_ = fit.cuts, fit.levels

    def _predict(self, s, features):
        return step_lookup(self.cuts_, self.levels_, s)

    def sql_map(self) -> StepMap:
        """Each bin's value between its cuts: a step map."""
        return StepMap(self.cuts_, self.levels_)

    def _export_state(self) -> dict:
        return {"cuts": self.cuts_.tolist(), "levels": self.levels_.tolist()}

    def _import_state(self, state) -> None:
        self.cuts_ = state.array("cuts", sorted=True)
        self.levels_ = state.array("levels", size=self.cuts_.size + 1)
        if np.any((self.levels_ < 0) | (self.levels_ > 1)):
            raise state.error("'levels' must lie in [0, 1]")
