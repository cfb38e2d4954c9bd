"""Explaining a fitted ABB (which keeps only its map's knots and its log evidence): averaging over the binnings of the
rows it was fitted on again (:func:`calibdash.calibrators.abb.average_binnings`, as ``fit``), its value at each
training position and the prior and posterior probability of a bin boundary in each gap."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators._bayes_binning import log_gap_priors
from ..calibrators.abb import ABB, average_binnings, knots
from ..core.validation import check_weights
from . import Explanation, check_map, explains, training_rows
from .sbb import positions_notes

__all__ = ["ABBExplanation"]

#: Largest difference between the calibrator's map and the average found again.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class ABBExplanation(Explanation):
    """What :func:`explain` finds behind a fitted ABB.

    Attributes
    ----------
    lam : float
        The calibrator's lambda.
    positions : DataFrame
        One row per training position: ``score``, ``lo``, ``hi``, ``n``, ``n1`` (weights when fitted with weights) and
        ``value`` (ABB's calibrated probability there).
    boundaries : DataFrame
        One row per gap between consecutive positions: ``gap`` (k: between positions k and k+1), ``left``, ``right``
        (the training scores either side), ``score`` (its midpoint), ``prior`` (Prior(k)), ``posterior`` (posterior
        probability of a bin boundary in the gap).
    curve : DataFrame
        The map over [0, 1] (``x``, ``y``), exact between its points (linear between positions, flat inside a
        micro-bin and beyond the ends).
    expected_bins : float
        Posterior mean number of bins, 1 + the sum of the boundary probabilities.
    log_evidence : float
        Log of the sum of Eq. 6 over all binnings.
    """

    lam: float
    positions: pd.DataFrame
    boundaries: pd.DataFrame
    curve: pd.DataFrame
    expected_bins: float
    log_evidence: float


def _curve(lo: np.ndarray, hi: np.ndarray, value: np.ndarray) -> pd.DataFrame:
    """The map through every position, from 0 to 1, without repeated knots."""
    x = np.concatenate([[0.0], np.column_stack([lo, hi]).ravel(), [1.0]])
    y = np.concatenate([[value[0]], np.repeat(value, 2), [value[-1]]])
    keep = np.r_[True, (np.diff(x) > 0) | (np.diff(y) != 0)]
    return pd.DataFrame({"x": x[keep], "y": y[keep]})


@explains(ABB)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> ABBExplanation:
    """Explain a fitted ABB by averaging over the binnings of the rows it was fitted on again (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    avg = average_binnings(s, y, cal.lam, cal.max_positions, w)
    check_map("ABB", (cal.knots_x_, cal.knots_y_), knots(avg.positions.lo, avg.positions.hi, avg.value), MAP_TOL,
              "averaging over their binnings does not give the calibrator's map",
              f"it has {avg.positions.size:,} positions, the calibrator {cal.knots_x_.size // 2:,}")
    pos = avg.positions
    positions = pos.frame()
    positions["value"] = avg.value
    log_p, _ = log_gap_priors(pos.score, float(cal.lam))
    left, right = pos.hi[:-1], pos.lo[1:]
    boundaries = pd.DataFrame({"gap": np.arange(left.size), "left": left, "right": right,
                               "score": 0.5 * (left + right), "prior": np.exp(log_p), "posterior": avg.boundary})
    expected = 1.0 + float(avg.boundary.sum())
    notes = positions_notes(pos, cal.max_positions) + [
        f"ABB averages over all 2^{pos.size - 1} binnings of the {pos.size:,} positions; the posterior "
        f"expects {expected:.1f} bins."]
    return ABBExplanation(
        method=cal.name, notes=notes, tables={"positions": positions, "boundaries": boundaries},
        lam=float(cal.lam), positions=positions, boundaries=boundaries,
        curve=_curve(pos.lo, pos.hi, avg.value), expected_bins=expected, log_evidence=avg.log_evidence)
