"""Vector scaling (Guo et al. 2017): a scale and an intercept per class on the log-scores."""
from __future__ import annotations

from ..scaling import ScalingCalibrator

__all__ = ["VectorScaling"]


class VectorScaling(ScalingCalibrator):
    """Vector scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017, Sec. 4.2, "Matrix and vector scaling").

    .. math::  \\hat q(x) = \\operatorname{softmax}(\\operatorname{diag}(a)\\, x + b),

    ``a`` and ``b`` in R^K minimising the weighted mean negative log-likelihood of the calibration
    labels, without a penalty (Guo et al. regularise none; Kull et al. 2019 use it unregularised as
    their "VecS" baseline). ``x`` is the row's logits as given, or, given probabilities, their logarithm
    (floored at :data:`~calibdash.multiclass.base.LOG_FLOOR`): unlike temperature scaling the two give
    different maps (a per-class scale does not commute with a per-row shift); with probabilities this
    is the diagonal form of Dirichlet calibration (Kull et al.'s "Dir-Diag" up to their intercept
    parametrisation).

    Fitting: :func:`calibdash.multiclass.linear.fit_linear` from ``a = 1``, ``b = 0``. The intercepts
    are identified up to a constant added to all (the softmax ignores it); the fit keeps the one
    reached from ``b = 0``. A class absent from the fitted labels has its intercept pushed down until
    the gradient rule stops (its probability then about ``gtol``), not to minus infinity.

    Parameters
    ----------
    logits : bool, default False
        Whether ``P`` holds logits (else probabilities).
    """

    name = "vector"
    label = "Vector scaling"
    summary = "a scale and an intercept per class"
    paper = "Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern neural networks"
    order = 20
    input_form = "logits"
    color = "#0072B2"
    hyperparams = ()
    matrix = "diagonal"
    bias = True
