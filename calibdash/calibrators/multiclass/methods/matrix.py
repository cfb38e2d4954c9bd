"""Matrix scaling with ODIR (Guo et al. 2017; Kull et al. 2019): a full linear map of the log-scores."""
from __future__ import annotations

from ..base import HyperParam
from ..scaling import ScalingCalibrator

__all__ = ["MatrixScaling"]

#: The default grid of lambda (and, tied, of mu), strongest first: in decades, the values Kull et al.'s tuning chose
#: for the CIFAR networks (about 1 to 1e4 here); they searched {1, 2.5, 5} x 10^i for lambda, 10^i for mu (i from -5
#: or -2 to 6) in their Keras units (lambda K (K - 1) and mu K here).
LAMBDAS = (1e4, 1e3, 1e2, 1e1, 1e0, 1e-1)

#: The hyperparameters the dashboard shows for the ODIR-regularised maps.
ODIR_HYPERPARAMS = (
    HyperParam("select", "CV", "bool", True,
               help="choose lambda and mu by 5-fold cross-validation on the calibration set (Kull et al.)"),
    HyperParam("lam", "λ", "float", 100.0, low=1e-2, high=1e5, log=True,
               help="weight of the mean square of W's off-diagonal entries (when not chosen by CV)"),
    HyperParam("mu", "μ", "float", 100.0, low=1e-2, high=1e5, log=True,
               help="weight of the mean square of the intercepts (when not chosen by CV)"),
)


class MatrixScaling(ScalingCalibrator):
    """Matrix scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017, Sec. 4.2) with Kull et al.'s ODIR (2019).

    .. math::  \\hat q(x) = \\operatorname{softmax}(W x + b), \\qquad W \\in R^{K x K},\\ b \\in R^K,

    ``x`` the logits as given or the log of the probabilities given (with probabilities: Dirichlet calibration
    with ODIR). ``W`` and ``b`` minimise the weighted mean NLL plus Kull et al.'s Off-Diagonal and Intercept
    Regularisation (their Sec. 3.2, "MS-ODIR"):

    .. math::  L = \\frac{1}{n} \\sum_i -\\log \\hat q_{y_i}(x_i)
               + \\frac{\\lambda}{K(K-1)} \\sum_{j \\ne k} W_{jk}^2 + \\frac{\\mu}{K} \\sum_j b_j^2 .

    Guo et al. found unregularised matrix scaling to overfit with many classes; ODIR leaves the diagonal free
    and shrinks the rest. ``lambda`` and ``mu``: Kull et al.'s 5-fold cross-validation
    (:func:`~calibdash.calibrators.multiclass.penalty_search.select_penalty`, which states how it departs from the
    authors' code), or fixed with ``select=False``. The fit starts from the fitted temperature's map ``W = I / T``,
    not the authors' identity (:func:`~calibdash.calibrators.multiclass.linear.fit_linear` says why).

    Integer weights equal repeated rows (identical rows share a fold); row and class-column order change nothing.
    Degenerate data: :class:`~calibdash.calibrators.multiclass.scaling.ScalingCalibrator`. Cost: ``O(n K^2)`` per
    Newton step, ``O(n K + K^3)`` memory, times the folds and grid points; refused (DataError) above
    :data:`~calibdash.calibrators.multiclass.linear.MAX_FULL_CLASSES` classes. 10,000 rows x 100 classes: 15 s.

    Parameters
    ----------
    logits : bool, default False
        Whether ``P`` holds logits (else probabilities).
    select : bool, default True
        Choose ``lambda`` and ``mu`` by cross-validation over ``lambdas`` x ``mus``.
    lam, mu : float, default 100.0
        The penalty strengths when ``select`` is False.
    lambdas : tuple of float, default :data:`LAMBDAS`
        The lambda grid.
    mus : tuple of float or None, default None
        The mu grid (one fit per pair and fold); None ties mu to lambda (the authors' ``--no_mus``).
    n_folds : int, default 5
    seed : int, default 0
        Keys the rows' hash that deals the folds.
    """

    name = "matrix"
    label = "Matrix scaling (ODIR)"
    summary = "a full linear map of the log-scores, off-diagonal and intercept regularised"
    paper = ("Guo et al. (2017), On calibration of modern neural networks; Kull et al. (2019), Beyond "
             "temperature scaling (ODIR)")
    order = 30
    color = "#009E73"
    hyperparams = ODIR_HYPERPARAMS
    default_penalty = "odir"

    def __init__(self, logits: bool = False, select: bool = True, lam: float = 100.0, mu: float = 100.0,
                 lambdas: tuple = LAMBDAS, mus: tuple | None = None, n_folds: int = 5, seed: int = 0):
        self._keep(locals())
