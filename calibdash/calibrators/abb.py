"""ABB: Averaging over Bayesian Binnings (Naeini, Cooper & Hauskrecht): the posterior-weighted average over all
binnings of the sorted training scores (Eq. 6-8), computed exactly in log space (:mod:`._bayes_binning`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._bayes_binning import BayesBinningBase, Positions, abb_average, check_lam, collapse

__all__ = ["ABB", "BinningAverage", "average_binnings", "knots"]


@dataclass(frozen=True)
class BinningAverage:
    """ABB's average over all binnings of a set of rows (what ``fit`` keeps part of and :mod:`calibdash.explain.sbb`
    shows): the ``positions``, ABB's calibrated probability ``value`` at each (Eq. 7), the posterior probability of a
    bin ``boundary`` in each of the ``P - 1`` gaps, and ``log_evidence``, the log of the sum of Eq. 6 over all
    binnings."""

    positions: Positions
    value: np.ndarray
    boundary: np.ndarray
    log_evidence: float


def average_binnings(s: np.ndarray, y: np.ndarray, lam: float, max_positions: int,
                     sample_weight: np.ndarray | None = None) -> BinningAverage:
    """ABB's model average on checked scores ``s``, 0/1 labels ``y`` and weights (None: unit weights; see
    :func:`~._bayes_binning.collapse`). SettingsError for ``lam <= 0`` or ``max_positions < 1``."""
    lam = check_lam(lam)
    pos = collapse(s, y, max_positions, sample_weight)
    return BinningAverage(pos, *abb_average(pos, lam))


def knots(lo: np.ndarray, hi: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(x, y)`` of ABB's piecewise-linear map: each position's value held from its
    smallest to its largest score (``lo``, ``hi``), linear in the gaps between positions."""
    return np.column_stack([lo, hi]).ravel(), np.repeat(value, 2)


class ABB(BayesBinningBase):
    """Averaging over Bayesian Binnings (ABB), Sec. 2.2 and 2.4 of the paper.

    The calibrated value is Eq. 7, ``P(x) = sum_M P(M | D) P(x | M)`` over all binnings ``M`` of the sorted distinct
    training scores, ``P(M | D)`` proportional to Eq. 6 (:mod:`calibdash.calibrators._bayes_binning`: EBD's Poisson
    boundary prior, Lustgarten et al. 2011, times Eq. 4; ties, micro-bins, sample weights) and ``P(x | M) = (n_b1 + 1)
    / (n_b + 2)`` for the bin ``b`` holding ``x`` (the Beta(1, 1) smoothing of footnote 1). Departures:

    * Eq. 8 splits the average into forward values ``V^f``, bin scores and backward values ``V^b``, which Sec. 2.4 calls
      the scores of the *highest scoring* prefix/suffix binnings; Eq. 7 needs the *sums* over all of them, which we
      compute (sum-product, log space). ``log_evidence_`` is the log of the total sum.
    * The paper evaluates Eq. 8 per test instance (O(N^2) each) or caches it on R equally spaced score bins (O(R N^2)
      training). We compute the exact Eq. 7 value at *every* training position in O(P^2) in total (each candidate bin
      ``[l, u]``'s posterior probability times its estimate added over ``l .. u`` with a difference array). A score in
      a gap between positions gets the linear interpolation of their values: the exact model average when a boundary
      in the gap is uniform within it (what the Poisson prior implies to first order in ``lambda d_k / D``). Scores
      outside the training range get the nearest end position's value; inside a micro-bin's range, its value.

    Default lambda, by measurement (``bench/bench_sbb_abb.py --lambda``): held-out loss for lambda in {0.1, 0.3, ...,
    300, 1000} on 22 data sets: log-loss on the quadratic-SVM reference scores (``shared/data/svm-quadratic-scores``,
    train -> test), the Avazu and Porto Seguro predictions (``shared/data/mbct-benchmarks``, train -> test), the
    shipped samples (circles linear and quadratic SVM train -> test, breast-cancer naive Bayes 5-fold, ctr_120k
    2-fold), and the excess cross-entropy against the known truth on simulated scores (five true curves: over-,
    under-confident, shifted, a sine, a step; 300, 1,000 and 3,000 rows; 10 seeds each). A lambda's regret on a data
    set is its loss above the best lambda's, in percent. ABB's mean regret was 43, 32, 20, 11, **9.2**, 38, 174 % for
    lambda = 0.1 ... 100 (mean rank 2.5 at 10, the best); SBB's see :class:`~calibdash.calibrators.sbb.SBB`. Large
    lambda (100 and up) overfits badly on small data; small lambda under-fits smooth curves but wins on the step.

    Parameters
    ----------
    lam : float, default 10
        Prior expected number of bin boundaries over the score range.
    max_positions : int, default 10_000
        Distinct-score count above which scores are grouped into micro-bins.

    Attributes
    ----------
    knots_x_, knots_y_ : ndarray of float
        The map's knots: each position's smallest and largest training score, and its value there (twice); ``predict``
        interpolates linearly between them and holds the end values outside.
    log_evidence_ : float
        Log of the sum of Eq. 6 over all binnings.
    """

    name = "abb"
    order = 60
    color = "#CC79A7"   # reddish purple (Okabe-Ito)
    label = "ABB"
    summary = "Bayesian averaging over all binnings"
    curve, steps = ("knots_x_", "knots_y_"), False       # its state: _export_state below

    def _fit(self, s, y, features, w) -> None:
        avg = average_binnings(s, y, self.lam, self.max_positions, w)
        self.knots_x_, self.knots_y_ = knots(avg.positions.lo, avg.positions.hi, avg.value)
        self.log_evidence_ = avg.log_evidence

    def _export_state(self) -> dict:
        """Each position's value at its score, or at its smallest and largest score (micro-bins)."""
        lo, hi = self.knots_x_[0::2], self.knots_x_[1::2]
        where = {"score": lo.tolist()} if np.array_equal(lo, hi) else {"lo": lo.tolist(), "hi": hi.tolist()}
        return {**where, "value": self.knots_y_[0::2].tolist()}

    def _import_state(self, state) -> None:
        lo = state.array("score" if "score" in state else "lo", sorted=True)
        hi = lo if "score" in state else state.array("hi", size=lo.size)
        self.knots_x_, self.knots_y_ = knots(lo, hi, state.array("value", size=lo.size))
