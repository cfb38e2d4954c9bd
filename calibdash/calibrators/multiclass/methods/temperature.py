"""Temperature scaling (Guo et al. 2017): the log-scores divided by one fitted temperature."""
from __future__ import annotations

from ..scaling import ScalingCalibrator

__all__ = ["TemperatureScaling"]


class TemperatureScaling(ScalingCalibrator):
    """Temperature scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017, Sec. 4.2).

    .. math::  \\hat q(x) = \\operatorname{softmax}(x / T), \\qquad T > 0,

    with ``T`` minimising the weighted mean negative log-likelihood of the calibration labels (Guo et al.'s
    Eq. 9 with ``W = I / T``, no intercept). ``x`` is the row's logits or, given probabilities, their
    logarithm (floored at :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`): they differ by a constant per
    row, so both give the same map. ``T > 1`` softens, ``T < 1`` sharpens; the classes' ranking never changes.

    Fitting: Newton's method on ``beta = 1 / T`` (the NLL is convex in it) from ``T = 1``, ``beta`` kept in
    ``[exp(-10), exp(10)]`` as scikit-learn's ``CalibratedClassifierCV(method="temperature")``, which minimises the
    same NLL over ``log beta`` with ``minimize_scalar`` (the two agree to the solvers' tolerances). A fit that stops
    elsewhere than at the optimum warns (ConvergenceWarning; netcal issue #61 silently returned ``T = 1``). Cost
    ``O(n K)`` per step, any number of classes. A class absent from the labels is scaled like the others.

    Parameters
    ----------
    logits : bool, default False
        Whether ``P`` holds logits (else probabilities).

    Attributes
    ----------
    temperature_ : float
        The fitted ``T`` (and those of :class:`~calibdash.calibrators.multiclass.scaling.ScalingCalibrator`).
    """

    name = "temperature"
    label = "Temperature scaling"
    summary = "one temperature divides every log-score"
    paper = "Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern neural networks"
    order = 10
    color = "#D55E00"
    matrix = "scalar"
    bias = False

    @property
    def temperature_(self) -> float:
        """The fitted temperature ``T = 1 / beta``."""
        self._check_fitted()
        return 1.0 / float(self.theta_[0])
