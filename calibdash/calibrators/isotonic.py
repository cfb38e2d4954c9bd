"""Isotonic regression by the pool-adjacent-violators algorithm."""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.isotonic import isotonic_regression

from ..errors import DataError
from ._steps import collapse_ties, midpoints, step_lookup
from .base import Calibrator, HyperParam


class IsotonicCalibrator(Calibrator):
    """Isotonic regression (Zadrozny & Elkan, 2002): the best non-decreasing map.

    Tied scores are merged into one point weighted by its count; PAV
    (scikit-learn's compiled ``isotonic_regression``) then finds the
    non-decreasing fit minimising the weighted squared error, which pools
    adjacent points into blocks of constant value.

    Parameters
    ----------
    interpolation : {"step", "linear"}, default "step"
        ``"step"``: the classic piecewise-constant map, a block's value holding
        up to halfway to the next block's first score. ``"linear"``:
        interpolate linearly between the fitted points (as scikit-learn's
        ``IsotonicRegression`` does), which breaks fewer ties in the ranking.
        Beyond the training range both hold the end values.
    """

    name = "isotonic"
    label = "Isotonic regression"
    summary = "pool-adjacent-violators"
    paper = "Zadrozny & Elkan (2002), Transforming classifier scores into accurate multiclass probability estimates"
    hyperparams = (
        HyperParam("interpolation", "", "choice", "step", choices=("step", "linear"),
                   help="Piecewise-constant blocks (classic PAV) or linear interpolation between fitted points."),
    )

    def __init__(self, interpolation: str = "step"):
        self.interpolation = interpolation

    def _fit(self, s, y, features):
        if self.interpolation not in ("step", "linear"):
            raise DataError(f"interpolation must be 'step' or 'linear', got {self.interpolation!r}.")
        values, counts, positives = collapse_ties(s, y)
        fitted = isotonic_regression(positives / counts, sample_weight=counts.astype(float), increasing=True)
        self.x_ = values
        self.fitted_ = np.clip(fitted, 0.0, 1.0)
        change = np.flatnonzero(np.diff(self.fitted_) != 0)
        # block b spans values[start_b .. end_b]
        self.block_start_ = np.concatenate([[0], change + 1])
        self.block_end_ = np.concatenate([change, [values.size - 1]])
        self.block_value_ = self.fitted_[self.block_start_]
        self.block_count_ = np.add.reduceat(counts, self.block_start_)
        self.cuts_ = (values[self.block_end_[:-1]] + values[self.block_start_[1:]]) / 2.0

    def _predict(self, s, features):
        if self.interpolation == "linear":
            return np.interp(s, self.x_, self.fitted_)
        return step_lookup(self.cuts_, self.block_value_, s)

    def _export_state(self) -> dict:
        """What ``predict`` needs (for :mod:`calibdash.export`).

        ``"step"``: the cut points and each block's value. ``"linear"``: the
        first and last fitted point of each block only: inside a block the map
        is flat, and ``np.interp`` between two points of equal value returns
        that value exactly, so the points in between change no prediction.
        """
        if self.interpolation != "linear":
            return {"cuts": self.cuts_.tolist(), "values": self.block_value_.tolist()}
        change = np.flatnonzero(np.diff(self.fitted_) != 0)
        ends = np.unique(np.concatenate([[0], change, change + 1, [self.x_.size - 1]]))
        return {"x": self.x_[ends].tolist(), "fitted": self.fitted_[ends].tolist()}

    def _import_state(self, state) -> None:
        """Restore the state of :meth:`_export_state` (``state``: a :class:`calibdash.export.State`)."""
        if self.interpolation != "linear":
            self.cuts_ = state.array("cuts", sorted=True)
            self.block_value_ = state.array("values", size=self.cuts_.size + 1)
        else:
            self.x_ = state.array("x", sorted=True)
            self.fitted_ = state.array("fitted", size=self.x_.size)

    def diagnostics(self) -> dict:
        """``blocks``: one row per PAV block (first and last score, rows, value)."""
        self._check_fitted()
        return {"blocks": pd.DataFrame({
            "first_score": self.x_[self.block_start_], "last_score": self.x_[self.block_end_],
            "count": self.block_count_, "value": self.block_value_,
        })}
