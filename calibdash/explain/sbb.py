"""Explaining a fitted SBB (which keeps only its cut points, its bins' estimates and two log scores): finding its best
binning again from the rows it was fitted on (:func:`calibdash.calibrators.sbb.best_binning`, as ``fit``), its bins
with their counts, the collapsed training positions and the binning's posterior probability. :func:`positions_notes`
serves ABB's explainer too."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators._bayes_binning import Positions
from ..calibrators.sbb import BestBinning, SBB, best_binning
from ..core.validation import check_weights
from . import Explanation, check_map, explains, training_rows

__all__ = ["SBBExplanation"]

#: Largest difference between the calibrator's map and the binning found again.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class SBBExplanation(Explanation):
    """What :func:`explain` finds behind a fitted SBB.

    Attributes
    ----------
    lam : float
        The calibrator's lambda.
    bins : DataFrame
        One row per chosen bin: ``bin``; ``lower``, ``upper`` (its interval on the score axis: 0, the cuts, 1);
        ``score_min``, ``score_max`` (its smallest and largest training score); ``n``, ``n1`` (training rows,
        positives; their weights when fitted with weights); ``estimate`` (the calibrated probability, ``(n1 + 1) / (n
        + 2)``); ``first``, ``last`` (its positions).
    positions : DataFrame
        The collapsed training data: ``score``, ``lo``, ``hi``, ``n``, ``n1`` (weights when fitted with weights).
    log_score : float
        Log Score (Eq. 6) of the chosen binning.
    log_evidence : float
        Log of the sum of Eq. 6 over all binnings.
    """

    lam: float
    bins: pd.DataFrame
    positions: pd.DataFrame
    log_score: float
    log_evidence: float

    @property
    def posterior_of_best(self) -> float:
        """The chosen binning's posterior probability among all binnings."""
        return float(np.exp(self.log_score - self.log_evidence))


def positions_notes(pos: Positions, max_positions: int) -> list[str]:
    """What collapsing the training rows into positions did, in plain sentences."""
    notes = []
    if pos.weighted:
        notes.append(f"Fitted with sample weights (total {pos.total:,.6g} over {pos.n_rows:,} rows): each "
                     "position counts its rows' weights, as if a row of weight w were w rows.")
    if pos.grouped:
        notes.append(f"The {pos.n_rows:,} training scores hold {pos.n_distinct:,} distinct values, more "
                     f"than {int(max_positions):,}: they were grouped into {pos.size:,} "
                     f"{'equal-weight' if pos.weighted else 'equal-count'} micro-bins before fitting, and bin "
                     "boundaries can only fall between micro-bins.")
    elif pos.n_distinct < pos.n_rows:
        notes.append(f"Tied scores were collapsed: {pos.n_rows:,} training rows, {pos.n_distinct:,} "
                     "distinct scores; a bin boundary never splits a run of ties.")
    return notes


def _bins_table(best: BestBinning) -> pd.DataFrame:
    pos, first, last = best.positions, best.first, best.last
    return pd.DataFrame({
        "bin": np.arange(first.size),
        "lower": np.concatenate([[0.0], best.cuts]), "upper": np.concatenate([best.cuts, [1.0]]),
        "score_min": pos.lo[first], "score_max": pos.hi[last],
        "n": best.n, "n1": best.n1, "estimate": best.estimate, "first": first, "last": last,
    })


@explains(SBB)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> SBBExplanation:
    """Explain a fitted SBB by finding its best binning again from the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    best = best_binning(s, y, cal.lam, cal.max_positions, w)
    check_map("SBB", (cal.cuts_, cal.bin_estimate_), (best.cuts, best.estimate), MAP_TOL,
              "the best binning of them is not the calibrator's",
              f"it has {best.estimate.size:,} bins, the calibrator {cal.bin_estimate_.size:,}")
    pos = best.positions
    bins, positions = _bins_table(best), pos.frame()
    posterior = float(np.exp(best.log_score - best.log_evidence))
    notes = positions_notes(pos, cal.max_positions) + [
        f"SBB chose {best.first.size} bins; that binning has posterior probability {posterior:.3g} among all "
        f"2^{pos.size - 1} binnings."]
    return SBBExplanation(
        method=cal.name, notes=notes, tables={"bins": bins, "positions": positions},
        lam=float(cal.lam), bins=bins, positions=positions,
        log_score=best.log_score, log_evidence=best.log_evidence)
