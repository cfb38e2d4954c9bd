"""Explaining the Bayesian binnings: a fitted SBB (which keeps only its cuts, its bins' estimates and two log scores)
by finding its best binning again (:func:`calibdash.calibrators.sbb.best_binning`, as ``fit``), a fitted ABB (which
keeps only its map's knots and log evidence) by averaging over the binnings of its training rows again
(:func:`calibdash.calibrators.abb.average_binnings`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators._bayes_binning import Positions, log_gap_priors
from ..calibrators.abb import ABB, average_binnings, knots
from ..calibrators.sbb import BestBinning, SBB, best_binning
from . import Explanation, check_map, explains, training_rows

__all__ = ["ABBExplanation", "SBBExplanation"]

#: Largest difference between the calibrator's map and the binning (SBB) or average (ABB) found again.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class SBBExplanation(Explanation):
    """What :func:`explain` finds behind a fitted SBB: ``lam`` (its lambda); ``bins``, one row per chosen bin:
    ``bin``, ``lower``, ``upper`` (its interval: 0, the cuts, 1), ``score_min``, ``score_max`` (its smallest and
    largest training score), ``n``, ``n1`` (rows, positives; weights when fitted with weights), ``estimate`` (``(n1 +
    1) / (n + 2)``), ``first``, ``last`` (its positions); ``positions``, the collapsed training data (``score``,
    ``lo``, ``hi``, ``n``, ``n1``); ``log_score`` (Eq. 6) of the chosen binning; ``log_evidence``, the log of the sum
    of Eq. 6 over all binnings."""

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
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    best = best_binning(s, y, cal.lam, cal.max_positions, w)
    check_map("SBB", (cal.cuts_, cal.bin_estimate_), (best.cuts, best.estimate), MAP_TOL,
              "the best binning of them is not the calibrator's",
              f"it has {best.estimate.size:,} bins, the calibrator {cal.bin_estimate_.size:,}")
    pos = best.positions
    bins, positions = _bins_table(best), pos.frame()
    ex = SBBExplanation(method=cal.name, tables={"bins": bins, "positions": positions}, lam=float(cal.lam), bins=bins,
                        positions=positions, log_score=best.log_score, log_evidence=best.log_evidence)
    ex.notes = positions_notes(pos, cal.max_positions) + [
        f"SBB chose {best.first.size} bins; that binning has posterior probability {ex.posterior_of_best:.3g} among "
        f"all 2^{pos.size - 1} binnings."]
    return ex


@dataclass(kw_only=True)
class ABBExplanation(Explanation):
    """What :func:`explain` finds behind a fitted ABB: ``lam`` (its lambda); ``positions``, one row per training
    position: ``score``, ``lo``, ``hi``, ``n``, ``n1`` (weights when fitted with weights), ``value`` (ABB's
    probability there); ``boundaries``, one row per gap between consecutive positions: ``gap`` (k: between positions
    k and k+1), ``left``, ``right`` (the training scores either side), ``score`` (its midpoint), ``prior``
    (Prior(k)), ``posterior`` (probability of a bin boundary in the gap); ``curve``, the map over [0, 1] (``x``,
    ``y``), exact between its points (linear between positions, flat inside a micro-bin and beyond the ends);
    ``expected_bins``, the posterior mean number of bins (1 + the boundary probabilities); ``log_evidence``, the log
    of the sum of Eq. 6 over all binnings."""

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
def explain_abb(calibrator, scores, labels, features=None, sample_weight=None) -> ABBExplanation:
    """Explain a fitted ABB by averaging over the binnings of the rows it was fitted on again (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
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
