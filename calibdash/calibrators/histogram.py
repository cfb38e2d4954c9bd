"""Histogram binning with equal-frequency bins (Zadrozny & Elkan, 2001)."""
from __future__ import annotations

import numpy as np

from ..core.errors import SettingsError
from ..core.step_maps import collapse_ties, midpoints
from .base import CurveCalibrator, HyperParam

__all__ = ["HistogramCalibrator", "bin_sums"]


def equal_count_cuts(values: np.ndarray, counts: np.ndarray, n_bins: int) -> np.ndarray:
    """Cut points giving about equal counts per bin, never splitting tied scores. For each ideal boundary rank ``b N /
    n_bins`` the cut goes between the two distinct scores whose cumulative count is nearest to it (the lower on a tie),
    at their midpoint; cuts that coincide are merged, so heavy ties give fewer bins. ``counts`` may be weight sums
    (:func:`~calibdash.core.step_maps.collapse_ties` with weights): the boundaries then lie at cumulative weight ``b W /
    n_bins``."""
    if values.size < 2 or n_bins < 2:
        return np.empty(0)
    cum = np.cumsum(counts)[:-1]          # rows at or below values[j], for a cut after j
    n = counts.sum()
    targets = n * np.arange(1, n_bins) / n_bins
    j = np.clip(np.searchsorted(cum, targets), 0, cum.size - 1)
    j_lo = np.clip(j - 1, 0, cum.size - 1)
    pick = np.where(np.abs(cum[j_lo] - targets) <= np.abs(cum[j] - targets), j_lo, j)
    return midpoints(values)[np.unique(pick)]


def bin_sums(cuts: np.ndarray, s: np.ndarray, y: np.ndarray,
             sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, positives and the sum of the scores in each bin cut by ``cuts`` (upper bin on a cut).

    With weights ``sample_weight`` each is a weight sum (rows count ``sample_weight`` times): weight,
    positives' weight and the weighted sum of the scores.
    """
    ids = np.searchsorted(cuts, s, side="right")
    k = cuts.size + 1
    if sample_weight is None:
        return (np.bincount(ids, minlength=k).astype(np.int64), np.bincount(ids, weights=y, minlength=k),
                np.bincount(ids, weights=s, minlength=k))
    return (np.bincount(ids, weights=sample_weight, minlength=k),
            np.bincount(ids, weights=sample_weight * y, minlength=k),
            np.bincount(ids, weights=sample_weight * s, minlength=k))


class HistogramCalibrator(CurveCalibrator):
    """Histogram binning: the calibrated value is the bin's observed frequency.

    Equal-frequency bins of the training scores (Zadrozny & Elkan, 2001, the BBQ paper's baseline): tied scores share
    a bin, cuts lie halfway between neighbouring scores, a score on a cut goes to the upper bin, one outside the
    training range to an end bin.

    Sample weights: a row of weight ``w`` counts as ``w`` rows: bins hold equal shares of the total weight ``W``
    (boundaries at cumulative weight ``b W / B``, moved to the nearest change of score; scores whose rows all weigh 0
    are absent), a bin's estimate is its positives' weight over its weight, and integer weights fit as the rows
    repeated, exactly. Scaling weights by ``c`` changes nothing with ``by="bins"`` (up to rounding when a boundary
    lies exactly half-way); with ``by="size"`` ``B = max(1, floor(c W / bin_size))`` grows with ``c``.

    Parameters
    ----------
    n_bins : int, default 10
        Number of bins B (used when ``by="bins"``).
    bin_size : int, default 100
        Rows per bin (used when ``by="size"``); B = max(1, N // bin_size), ``N`` the total weight when weighted.
    by : {"bins", "size"}, default "bins"
        Whether the number of bins or the rows per bin is fixed.

    Attributes
    ----------
    cuts_ : ndarray of float
        Cut points between the bins.
    estimates_ : ndarray of float
        Each bin's observed (weighted) frequency of positives, its calibrated value.
    """

    name = "histogram"
    order = 20
    color = "#56B4E9"   # sky blue (Okabe-Ito)
    label = "Histogram binning"
    summary = "equal-frequency bins"
    paper = ("Zadrozny & Elkan (2001), Obtaining calibrated probability estimates from decision trees and naive "
             "Bayesian classifiers")
    hyperparams = (
        HyperParam("by", "", "choice", "bins", choices=("bins", "size"),
                   help="Fix the number of bins, or the number of rows in each bin."),
        HyperParam("n_bins", "B", "int", 10, low=2, high=100, log=True,
                   help="Number of equal-frequency bins (when fixing the number of bins)."),
        HyperParam("bin_size", "n/B", "int", 100, low=10, high=5000, log=True,
                   help="Rows per bin (when fixing the bin size)."),
    )
    curve = ("cuts_", "estimates_", "cuts", "estimates")

    def __init__(self, n_bins: int = 10, bin_size: int = 100, by: str = "bins"):
        self._keep(locals())

    def _fit(self, s, y, features, w):
        if self.by == "bins":
            b = int(self.n_bins)
        elif self.by == "size":
            b = max(1, int((s.size if w is None else w.sum()) // max(1, int(self.bin_size))))
        else:
            raise SettingsError(f"by must be 'bins' or 'size', got {self.by!r}.")
        if b < 1:
            raise SettingsError(f"n_bins must be at least 1, got {b}.")
        values, counts, _ = collapse_ties(s, y, w)
        self.cuts_ = equal_count_cuts(values, counts, b)
        n, k, _ = bin_sums(self.cuts_, s, y, w)
        self.estimates_ = k / n
