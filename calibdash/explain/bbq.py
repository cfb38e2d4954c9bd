"""Explaining a fitted BBQ (which keeps only its averaged map and the kept models' B and weights) by building its
binning models again (:func:`calibdash.calibrators.bbq.binning_models`, as ``fit``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators.bbq import BBQCalibrator, BinningModels, averaged_map, binning_models, model_size
from . import Explanation, check_map, explains, training_rows

__all__ = ["BBQExplanation"]

#: Largest difference between the calibrator's map and the average of the models built again.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class BBQExplanation(Explanation):
    """What :func:`explain` finds behind a fitted BBQ: ``models``, one row per B: ``B``, ``n_bins`` (fewer than B
    when ties merge cuts), ``log_marginal_likelihood`` (log P(D|M), Eq. 2), ``posterior`` (weight among all models,
    before pruning), ``kept``, ``weight`` (in the average: renormalised over the kept models), ``same_as`` (paper
    variant: the smaller B with the same binning, else -1); ``bins``, one row per bin of every model: ``B``, ``bin``,
    ``lower``, ``upper``, ``count``, ``positives`` (whole numbers; weight sums, as floats, with the paper variant
    fitted with weights), ``estimate``; ``map``, the averaged map's pieces (``lower``, ``upper``, ``prob``);
    ``log_evidence``, the log of the mean marginal likelihood over the distinct models (uniform prior)."""

    models: pd.DataFrame
    bins: pd.DataFrame
    map: pd.DataFrame
    log_evidence: float


def _bins_table(m: BinningModels, real_counts: bool) -> pd.DataFrame:
    b = m.bins
    counts = (b.count, b.pos) if real_counts else (b.count.astype(np.int64), b.pos.astype(np.int64))
    return pd.DataFrame({
        "B": m.b[b.model], "bin": np.arange(b.model.size) - b.first[b.model],
        "lower": b.lower, "upper": b.upper, "count": counts[0], "positives": counts[1], "estimate": b.est,
    })


def _notes(m: BinningModels, prune: bool, w) -> list[str]:
    b, kept = m.b, m.kept
    notes = [f"Averaging {int(kept.sum()):,} of {b.size:,} binning models (B = {b[0]:,} to {b[-1]:,})"
             + (" kept by the ρ = 0.001 pruning rule." if prune else ", no pruning.")]
    dup = int((m.same_as >= 0).sum())
    if dup:
        notes.append(f"{dup:,} values of B give the same bins as a smaller B because of tied scores; "
                     "each binning is counted once.")
    if m.variant == "authors":
        notes.append("Authors' variant: the BDeu prior has strength N' in each bin, estimates use the "
                     "authors' score-based smoothing, and tied scores may be split as in their MATLAB code.")
    if w is not None:
        notes.append(f"Fitted with sample weights (total {w.sum():,.6g} over {w.size:,} rows): "
                     + ("each row was repeated as many times as its weight." if m.variant == "authors" else
                        "the bins hold equal shares of the weight, bin counts are weight sums, and the "
                        f"models range over B as for {model_size(w.size, w):,} rows."))
    return notes


@explains(BBQCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> BBQExplanation:
    """Explain a fitted BBQ by building its models again from the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    m = binning_models(s, y, cal.ess, cal.c, cal.prune, cal.variant, w)
    check_map("BBQ", (cal.cuts_, cal.levels_, cal.point_x_, cal.point_delta_), averaged_map(m), MAP_TOL,
              "building its models again from them does not give its map", "their maps have different pieces")
    models = pd.DataFrame({
        "B": m.b, "n_bins": m.bins.nb, "log_marginal_likelihood": m.log_ml, "posterior": m.posterior,
        "kept": m.kept, "weight": m.weight, "same_as": np.where(m.same_as >= 0, m.b[np.maximum(m.same_as, 0)], -1),
    })
    bins = _bins_table(m, real_counts=w is not None and m.variant == "paper")
    lml = m.log_ml[m.same_as < 0]                   # each distinct binning once
    edges = np.concatenate([[0.0], cal.cuts_, [1.0]])
    pieces = pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "prob": np.clip(cal.levels_, 0.0, 1.0)})
    return BBQExplanation(method=cal.name, notes=_notes(m, bool(cal.prune), w),
                          tables={"models": models, "bins": bins, "map": pieces}, models=models, bins=bins,
                          map=pieces, log_evidence=float(lml.max() + np.log(np.mean(np.exp(lml - lml.max())))))
