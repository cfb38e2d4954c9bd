"""Dirichlet calibration (Kull et al. 2019): a full linear map of the log-probabilities, ODIR or L2 regularised."""
from __future__ import annotations

from ..base import HyperParam
from .matrix import LAMBDAS, ODIR_HYPERPARAMS, MatrixScaling

__all__ = ["DirichletCalibration"]


class DirichletCalibration(MatrixScaling):
    """Dirichlet calibration (Kull, Perello-Nieto, Kängsepp, Silva Filho, Song & Flach, NeurIPS 2019).

    The calibration map of the paper's Eq. (4),

    .. math::  \\hat\\mu_{DirLin}(q; W, b) = \\operatorname{softmax}(W \\ln q + b),

    is the multinomial logistic regression of the class on the log-probabilities ``ln q`` (Sec. 3: the posterior
    of one Dirichlet distribution per class, fitted in the linear parametrisation). ``ln q`` is the log of the
    probabilities given (floored at :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`) or of the softmax of the
    logits: the same map either way. ``W`` and ``b`` minimise the weighted mean NLL plus, with ``reg="odir"``
    ("Dir-ODIR", Sec. 3.2),

    .. math::  \\frac{\\lambda}{K(K-1)} \\sum_{j \\ne k} W_{jk}^2 + \\frac{\\mu}{K} \\sum_j b_j^2 ,

    or, with ``reg="l2"`` ("Dir-L2"), ``lambda / (K (K + 1)) * (sum W_jk^2 + sum b_j^2)``, normalised as the
    authors' ``dirichletcal`` package (``reg_norm=True``; their Keras code adds the sum unnormalised). The
    strengths are chosen by the paper's 5-fold cross-validation
    (:func:`~calibdash.calibrators.multiclass.penalty_search.select_penalty`, which states how it differs from the
    authors' code), or fixed with ``select=False``. The fit starts from the fitted temperature's map
    ``W = I / T`` rather than the authors' identity: the same optimum (convex), but on saturated scores the
    identity sits where the softmax is flat and the solver stalled. Weights, degenerate data and cost: as
    :class:`~calibdash.calibrators.multiclass.methods.matrix.MatrixScaling`.

    Parameters
    ----------
    reg : {"odir", "l2"}, default "odir"
        The penalty (with L2, ``mu`` and ``mus`` are unused).
    logits, select, lam, mu, lambdas, mus, n_folds, seed
        As :class:`~calibdash.calibrators.multiclass.methods.matrix.MatrixScaling`'s.
    """

    name = "dirichlet"
    label = "Dirichlet calibration"
    summary = "a full linear map of the log-probabilities (ODIR or L2)"
    paper = ("Kull, Perello-Nieto, Kängsepp, Silva Filho, Song & Flach (2019), Beyond temperature scaling: "
             "obtaining well-calibrated multiclass probabilities with Dirichlet calibration")
    order = 40
    color = "#CC79A7"
    hyperparams = (HyperParam("reg", "R", "choice", "odir", choices=("odir", "l2"),
                              help="ODIR (off-diagonal and intercept) or L2 on every parameter"),
                   *ODIR_HYPERPARAMS)
    on_log_probabilities = True
    input_form = "probabilities"

    def __init__(self, logits: bool = False, reg: str = "odir", select: bool = True, lam: float = 100.0,
                 mu: float = 100.0, lambdas: tuple = LAMBDAS, mus: tuple | None = None, n_folds: int = 5,
                 seed: int = 0):
        super().__init__(logits=logits, select=select, lam=lam, mu=mu, lambdas=lambdas, mus=mus,
                         n_folds=n_folds, seed=seed)
        self.reg = reg
