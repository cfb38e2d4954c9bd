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
    (floored at :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`): unlike temperature scaling the two give
    different maps (a per-class scale does not commute with a per-row shift); with probabilities this
    is the diagonal form of Dirichlet calibration (Kull et al.'s "Dir-Diag" up to their intercept
    parametrisation).

    Fitting: :func:`calibdash.calibrators.multiclass.linear.fit_linear`, Newton's method from the fitted temperature's
    map (``a = 1 / T``, ``b = 0``; conjugate-gradient steps beyond a few tens of classes). The intercepts
    are identified up to a constant added to all (the softmax ignores it); the fit keeps their sum at 0,
    where it starts. A class absent from the fitted labels (``absent_classes_``) is left out of the fit's
    softmax and keeps the temperature map's ``a_c = 1 / T``, ``b_c = 0`` (the likelihood would push its
    intercept to minus infinity): it keeps a probability above 0. Labels of one class only are refused
    (:class:`~calibdash.core.errors.DataError`). A class separable by its own score has no finite optimum (its
    scale runs to infinity); the fit ends when the objective's decrease falls into its rounding.

    Cost: each Newton step ``O(n K)`` time (a few passes over the n x K scores, each conjugate-gradient
    step one more) and ``O(n K)`` memory; any number of classes (1,000 classes and 5,000 rows: about 25
    steps).

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
