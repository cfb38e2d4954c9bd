"""Explaining a fitted isotonic regression: the blocks PAV pooled the scores into.

A fitted :class:`~calibdash.calibrators.isotonic.IsotonicCalibrator` keeps
only its map. :func:`explain` pools the rows it was fitted on again
(:func:`calibdash.core.pav.pav_blocks`, the function ``fit``
uses, with the weights it was fitted with), checks that the blocks' values are the calibrator's, and returns an
:class:`IsotonicExplanation` with one row per block.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ..calibrators.isotonic import IsotonicCalibrator
from ..core.pav import pav_blocks
from ..core.errors import ProgrammingError
from ..core.validation import check_weights
from . import Explanation, explains, training_rows

__all__ = []

#: Largest difference between the calibrator's map at a block's first score and the block's value.
MAP_TOL = 1e-12


@dataclass(kw_only=True)
class IsotonicExplanation(Explanation):
    """What :func:`explain` finds behind a fitted isotonic regression.

    Attributes
    ----------
    blocks : DataFrame
        One row per PAV block: ``first_score``, ``last_score`` (its smallest
        and largest training score), ``count`` (training rows; their weight
        when fitted with weights), ``value``
        (its fitted value, non-decreasing from block to block).
    """

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    blocks: pd.DataFrame


@explains(IsotonicCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> IsotonicExplanation:
    """Explain a fitted isotonic regression on the rows it was fitted on.

    Parameters
    ----------
    calibrator, scores, labels, features, sample_weight
        A fitted IsotonicCalibrator, the rows it was fitted on and their weights (None: unit
        weights), as :func:`calibdash.explain.explain` passes them (``features`` ignored).

    Returns
    -------
    IsotonicExplanation

    Raises
    ------
    ProgrammingError
        If the rows are not the ones ``calibrator`` was fitted on: their
        number differs, or the calibrator's map at the blocks found again
        is not their values.
    """
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    b = pav_blocks(s, y, w)
    if not np.allclose(cal.predict(b.first_score), b.value, rtol=0.0, atol=MAP_TOL):
        raise ProgrammingError("the rows given are not the ones the isotonic regression was fitted on: its map "
                               "differs from the blocks they pool into; pass the rows (and weights) it was "
                               "fitted on.")
    blocks = pd.DataFrame({"first_score": b.first_score, "last_score": b.last_score, "count": b.count,
                           "value": b.value})
    return IsotonicExplanation(method=cal.name, tables={"blocks": blocks}, blocks=blocks)
