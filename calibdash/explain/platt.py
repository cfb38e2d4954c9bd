"""Explaining a fitted Platt scaling: its slope, intercept and the log-likelihood of the rows it was fitted on
(:func:`calibdash.calibrators.platt.log_likelihood`, against the targets and weights ``fit`` used)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ..calibrators.platt import PlattCalibrator, log_likelihood, targets
from ..core.validation import check_weights
from . import Explanation, explains, training_rows

__all__ = []


@dataclass(kw_only=True)
class PlattExplanation(Explanation):
    """What :func:`explain` finds behind a fitted Platt scaling, ``p = sigmoid(A logit(s) + B)``: ``A``, ``B``, and
    ``log_likelihood``, of the training targets (the labels, or Platt's smoothed targets) at ``A``, ``B``, each row's
    term times its weight when fitted with weights."""

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    A: float
    B: float
    log_likelihood: float


@explains(PlattCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> PlattExplanation:
    """Explain a fitted Platt scaling on the rows it was fitted on: its ``fit`` table has ``A``, ``B``,
    ``log_likelihood``, ``rows`` and, when fitted with weights, ``weight`` (their total) (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    ll = log_likelihood(cal.a_, cal.b_, s, targets(y, cal.smooth_targets, w), w)
    fit = pd.DataFrame({"A": [cal.a_], "B": [cal.b_], "log_likelihood": [ll], "rows": [s.size]})
    if w is not None:
        fit["weight"] = float(w.sum())
    return PlattExplanation(method=cal.name, tables={"fit": fit}, A=cal.a_, B=cal.b_, log_likelihood=ll)
