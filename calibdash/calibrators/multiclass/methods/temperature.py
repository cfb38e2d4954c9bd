"""Temperature scaling (Guo et al. 2017): the log-scores divided by one fitted temperature."""
from __future__ import annotations

from ..scaling import ScalingCalibrator

__all__ = ["TemperatureScaling"]


class TemperatureScaling(ScalingCalibrator):
    """Temperature scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017, Sec. 4.2).

    .. math::  \\hat q(x) = \\operatorname{softmax}(x / T), \\qquad T > 0,

    with ``T`` minimising the (weighted mean) negative log-likelihood of the calibration labels
    (Guo et al.'s Eq. 9 with ``W = I / T``, no intercept). ``x`` is the row's logits, or, given
    probabilities, their logarithm (floored at :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`); the two
    differ by a constant per row, which the softmax ignores, so both give the same map. ``T > 1``
    softens over-confident scores, ``T < 1`` sharpens; the ranking of the classes never changes.

    Fitting: :func:`calibdash.calibrators.multiclass.linear.fit_linear` on ``beta = 1 / T`` (the NLL is convex in
    ``beta``), from ``T = 1``, with ``beta`` kept in ``[exp(-10), exp(10)]`` as scikit-learn does
    (its ``CalibratedClassifierCV(method="temperature")`` minimises the same NLL over ``log beta``
    with ``minimize_scalar`` in those bounds; the two agree to the solvers' tolerances). A fit that
    stops at ``T = 1`` stops there because ``T = 1`` is the optimum (the gradient there is below
    the stopping rule's ``gtol``); a solver that stops elsewhere for another reason warns
    (:class:`sklearn.exceptions.ConvergenceWarning`; netcal issue #61 was a fit that silently
    returned ``T = 1``).

    Cost: each Newton step one pass over the n x K scores (``O(n K)`` time and memory); any number of
    classes. No hyperparameters. Sample weights: each row's NLL term times its weight (a row of weight
    ``w`` counts as ``w`` rows); scaling all weights by ``c`` leaves ``T`` unchanged. A class absent from
    the fitted labels is scaled like the others (the map has no per-class part).

    Parameters
    ----------
    logits : bool, default False
        Whether ``P`` holds logits (else probabilities).

    Attributes
    ----------
    temperature_ : float
        The fitted ``T``. (And those of :class:`~calibdash.calibrators.multiclass.linear.ScalingCalibrator`.)
    """

    name = "temperature"
    label = "Temperature scaling"
    summary = "one temperature divides every log-score"
    paper = "Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern neural networks"
    order = 10
    input_form = "logits"
    color = "#D55E00"
    hyperparams = ()
    matrix = "scalar"
    bias = False

    @property
    def temperature_(self) -> float:
        """The fitted temperature ``T = 1 / beta``."""
        self._check_fitted()
        return 1.0 / float(self.theta_[0])
