"""Explaining a fitted isotonic regression (which keeps only its map): the blocks PAV pools the rows it was fitted on
into again (:func:`calibdash.core.pav.pav_blocks`, as ``fit``), checked against the calibrator's map."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ..calibrators.isotonic import IsotonicCalibrator
from ..core.pav import pav_blocks
from ..core.validation import check_weights
from . import Explanation, explains, not_the_rows, training_rows

__all__ = []

#: Largest difference between the calibrator's map at a block's first score and the block's value.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class IsotonicExplanation(Explanation):
    """What :func:`explain` finds behind a fitted isotonic regression: ``blocks``, one row per PAV block,
    ``first_score``, ``last_score`` (its smallest and largest training score), ``count`` (training rows; their weight
    when fitted with weights), ``value`` (its fitted value, non-decreasing from block to block)."""

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    blocks: pd.DataFrame


@explains(IsotonicCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> IsotonicExplanation:
    """Explain a fitted isotonic regression on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    b = pav_blocks(s, y, w)
    if not np.allclose(cal.predict(b.first_score), b.value, rtol=0.0, atol=MAP_TOL):
        raise not_the_rows("the isotonic regression", "its map differs from the blocks they pool into")
    blocks = pd.DataFrame({"first_score": b.first_score, "last_score": b.last_score, "count": b.count,
                           "value": b.value})
    return IsotonicExplanation(method=cal.name, tables={"blocks": blocks}, blocks=blocks)
