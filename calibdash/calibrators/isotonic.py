"""Isotonic regression by the pool-adjacent-violators algorithm."""
from __future__ import annotations

import numpy as np

from ..core.errors import SettingsError
from ..core.sql_forms import LinearMap, StepMap
from ..core.pav import pav_blocks
from ..core.step_maps import interp, step_lookup
from .base import Calibrator, HyperParam

__all__ = ["IsotonicCalibrator"]

INTERPOLATIONS = ("step", "linear")


class IsotonicCalibrator(Calibrator):
    """Isotonic regression (Zadrozny & Elkan, 2002): the best non-decreasing map.

    Tied scores are merged into one point weighted by its count; PAV (scikit-learn's compiled ``isotonic_regression``)
    then finds the non-decreasing fit minimising the weighted squared error, which pools adjacent points into blocks
    of constant value.

    Sample weights (``fit(..., sample_weight=w)``): a row of weight ``w`` counts as ``w`` rows. Tied scores merge into
    one point at their weighted mean label with their weight sum (a score whose rows all weigh 0 is absent), and PAV
    minimises the weighted squared error. With integer weights the fit equals the fit on the rows repeated, exactly;
    scaling every weight by the same constant changes nothing (up to rounding).

    Parameters
    ----------
    interpolation : {"step", "linear"}, default "step"
        ``"step"``: the classic piecewise-constant map, a block's value holding up to halfway to the next block's
        first score. ``"linear"``: interpolate linearly between the fitted points (as scikit-learn's
        ``IsotonicRegression`` does), which breaks fewer ties in the ranking; computed without ``np.interp``'s
        overflow between knots closer than 1e-308 (:func:`~calibdash.core.step_maps.interp`), so the map stays
        non-decreasing and in [0, 1] at subnormal scores. Beyond the training range both hold the end values.

    Attributes
    ----------
    cuts_, block_value_ : ndarray of float
        The step map: ``block_value_[k]`` on ``cuts_[k-1] <= s < cuts_[k]``.
    x_, fitted_ : ndarray of float
        The linear map's knots: the first and last score of each block and its value there.
    """

    name = "isotonic"
    order = 30
    color = "#009E73"   # bluish green (Okabe-Ito)
    label = "Isotonic regression"
    summary = "pool-adjacent-violators"
    monotone = True
    paper = "Zadrozny & Elkan (2002), Transforming classifier scores into accurate multiclass probability estimates"
    hyperparams = (
        HyperParam("interpolation", "", "choice", "step", choices=INTERPOLATIONS,
                   help="Piecewise-constant blocks (classic PAV) or linear interpolation between fitted points."),
    )

    def __init__(self, interpolation: str = "step"):
        self.interpolation = interpolation

    def _fit(self, s, y, features, w):
        if self.interpolation not in INTERPOLATIONS:
            raise SettingsError(f"interpolation must be 'step' or 'linear', got {self.interpolation!r}.")
        blocks = pav_blocks(s, y, w)
        self.cuts_, self.block_value_ = blocks.cuts, blocks.value
        self.x_, self.fitted_ = blocks.knots

    def _predict(self, s, features):
        if self.interpolation == "linear":
            return interp(s, self.x_, self.fitted_)
        return step_lookup(self.cuts_, self.block_value_, s)

    def sql_map(self) -> StepMap | LinearMap:
        """The blocks' values between their cuts (a step map), or with ``interpolation="linear"`` the
        fitted points joined by lines (a linear map)."""
        if self.interpolation == "linear":
            return LinearMap(self.x_, self.fitted_)
        return StepMap(self.cuts_, self.block_value_)

    def _export_state(self) -> dict:
        """``"linear"`` keeps each block's first and last point only: the interpolation between two points of equal
        value returns that value exactly, so the points in between change no prediction."""
        if self.interpolation != "linear":
            return {"cuts": self.cuts_.tolist(), "values": self.block_value_.tolist()}
        return {"x": self.x_.tolist(), "fitted": self.fitted_.tolist()}

    def _import_state(self, state) -> None:
        if self.interpolation != "linear":
            self.cuts_ = state.array("cuts", sorted=True)
            self.block_value_ = state.array("values", size=self.cuts_.size + 1)
        else:
            self.x_ = state.array("x", sorted=True)
            self.fitted_ = state.array("fitted", size=self.x_.size)
