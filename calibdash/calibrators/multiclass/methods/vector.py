"""Vector scaling (Guo et al. 2017): a scale and an intercept per class on the log-scores."""
from __future__ import annotations

from ..scaling import ScalingCalibrator

__all__ = ["VectorScaling"]


class VectorScaling(ScalingCalibrator):
    """Vector scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017, Sec. 4.2, "Matrix and vector scaling").

    .. math::  \\hat q(x) = \\operatorname{softmax}(\\operatorname{diag}(a)\\, x + b),

    ``a`` and ``b`` minimising the weighted mean negative log-likelihood, without a penalty (Guo et al.
    regularise none; Kull et al. 2019 use it unregularised as "VecS"). ``x`` is the logits as given or the log
    of the probabilities given: unlike temperature scaling the two give different maps; on probabilities this
    is Kull et al.'s "Dir-Diag" (up to their intercept parametrisation).

    Fitting: Newton's method from the fitted temperature's map (``a = 1 / T``, ``b = 0``), the intercepts' sum
    kept at 0 (the softmax ignores a constant). A class absent from the labels (``absent_classes_``) keeps
    ``a_c = 1 / T``, ``b_c = 0`` and a probability above 0; labels of one class are refused. A class separable
    by its own score has no finite optimum: the fit ends when the decrease falls into the rounding. Cost
    ``O(n K)`` per step, any number of classes (1,000 classes, 5,000 rows: about 25 steps).

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
    color = "#0072B2"
    matrix = "diagonal"
