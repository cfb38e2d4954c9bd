"""Matrix scaling with ODIR (Guo et al. 2017; Kull et al. 2019): a full linear map of the log-scores."""
from __future__ import annotations

from ..base import HyperParam
from ..scaling import ScalingCalibrator

__all__ = ["MatrixScaling"]

#: The default grid of lambda (and, tied, of mu) searched by cross-validation, strongest first. Kull et
#: al. searched {1, 2.5, 5} x 10^i for lambda and 10^i for mu in their Keras units (i from -5 for 10 classes,
#: -2 for 100, to 6), that is lambda * K (K - 1) and mu * K in the normalised units used here; this grid
#: spans the values their tuning chose for the CIFAR networks (about 1 to 1e4 here) in decades.
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

    ``x`` the row's logits as given, or, given probabilities, their logarithm (floored at
    :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`); with probabilities this is Dirichlet calibration
    (:class:`~calibdash.calibrators.multiclass.methods.dirichlet.DirichletCalibration`) with ODIR, which always works on
    the log-probabilities. ``W`` and ``b`` minimise the weighted mean negative log-likelihood plus Kull et
    al.'s Off-Diagonal and Intercept Regularisation (their Sec. 3.2, "MS-ODIR"):

    .. math::  L = \\frac{1}{n} \\sum_i -\\log \\hat q_{y_i}(x_i)
               + \\frac{\\lambda}{K(K-1)} \\sum_{j \\ne k} W_{jk}^2 + \\frac{\\mu}{K} \\sum_j b_j^2 .

    Guo et al. found unregularised matrix scaling to overfit with many classes; ODIR leaves the diagonal
    (vector scaling's part) free and shrinks the rest. ``lambda`` and ``mu`` are chosen by Kull et al.'s
    procedure, 5-fold cross-validation on the calibration set over a grid
    (:func:`calibdash.calibrators.multiclass.penalty_search.select_penalty`: folds dealt from the rows' values, so row order
    does not matter; warm starts along the grid), or fixed by hand with ``select=False``. Fitting:
    :func:`calibdash.calibrators.multiclass.linear.fit_linear` (Newton-CG for full maps of about 100 classes), started
    from the fitted temperature's map ``W = I / T`` (the same optimum, the problem being convex, reached from
    a point where the softmax is not flat on saturated scores).

    Sample weights: each row's term times its weight; integer weights equal repeated rows, for the fit
    and for the cross-validation (identical rows fall in the same fold). Neither the order of the rows nor
    that of the class columns changes the result (the folds are dealt from hashes that ignore both).

    Degenerate data (:class:`~calibdash.calibrators.multiclass.scaling.ScalingCalibrator`): a class absent from the
    labels (``absent_classes_``) keeps the temperature map's row of ``[W | b]`` and a probability above 0;
    labels of one class are refused; with fewer distinct rows than folds, ``lam`` and ``mu`` are used as
    given, with a warning and ``penalty_note_``.

    Cost: each Newton step ``O(n K^2)`` time (each Hessian-vector product two n x K x K products), and
    ``O(n K + K^3)`` memory (the per-class Hessian blocks of the preconditioner, ``K (K + 1)^2`` floats);
    the search multiplies the fits by the folds and the grid points walked. Refused (a
    :class:`~calibdash.core.errors.DataError`, before anything is allocated) above
    :data:`~calibdash.calibrators.multiclass.linear.MAX_FULL_CLASSES` classes: vector or temperature scaling fit any
    number. Measured: 10,000 rows x 100 classes, the search and the final fit, 15 s.

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
        The mu grid; None ties mu to lambda (one grid point per lambda: the authors' setting without
        separate intercept tuning, ``--no_mus``; their full search tuned mu too, which a grid here
        allows at the cost of one fit per pair and fold).
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
    input_form = "logits"
    color = "#009E73"
    hyperparams = ODIR_HYPERPARAMS
    matrix = "full"
    bias = True
    default_penalty = "odir"

    def __init__(self, logits: bool = False, select: bool = True, lam: float = 100.0, mu: float = 100.0,
                 lambdas: tuple = LAMBDAS, mus: tuple | None = None, n_folds: int = 5, seed: int = 0):
        self.logits = logits
        self.select = select
        self.lam = lam
        self.mu = mu
        self.lambdas = lambdas
        self.mus = mus
        self.n_folds = n_folds
        self.seed = seed
