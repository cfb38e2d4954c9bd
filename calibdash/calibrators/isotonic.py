"""Isotonic regression by the pool-adjacent-violators algorithm."""
from __future__ import annotations

from ..core.pav import pav_blocks
from .base import CurveCalibrator, HyperParam, check_setting

__all__ = ["IsotonicCalibrator"]

INTERPOLATIONS = ("step", "linear")


class IsotonicCalibrator(CurveCalibrator):
    """Isotonic regression (Zadrozny & Elkan, 2002): the best non-decreasing map.

    Tied scores merge into one point at their (weighted) mean label, weighted by their count or weight sum (a score
    whose rows all weigh 0 is absent); PAV (scikit-learn's compiled ``isotonic_regression``) finds the non-decreasing
    fit of least weighted squared error, pooling adjacent points into blocks of constant value. A row of weight ``w``
    counts as ``w`` rows: integer weights fit as the rows repeated, exactly; scaling every weight by one constant
    changes nothing (up to rounding).

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
        check_setting(lambda v: v in INTERPOLATIONS, self.interpolation, "interpolation must be 'step' or 'linear'")
        blocks = pav_blocks(s, y, w)
        self.cuts_, self.block_value_ = blocks.cuts, blocks.value
        self.x_, self.fitted_ = blocks.knots

    @property
    def steps(self) -> bool:
        return self.interpolation != "linear"

    @property
    def curve(self) -> tuple[str, ...]:
        """The blocks' step map, or the fitted points joined by lines (each block's first and last point only: the
        interpolation between two points of equal value returns that value exactly)."""
        return ("cuts_", "block_value_", "cuts", "values") if self.steps else ("x_", "fitted_", "x", "fitted")
