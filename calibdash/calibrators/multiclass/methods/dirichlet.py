"""Dirichlet calibration (Kull et al. 2019): a full linear map of the log-probabilities, ODIR or L2 regularised."""
from __future__ import annotations

from ..base import HyperParam
from .matrix import LAMBDAS, ODIR_HYPERPARAMS, MatrixScaling

__all__ = ["DirichletCalibration"]


class DirichletCalibration(MatrixScaling):
    """Dirichlet calibration (Kull, Perello-Nieto, Kängsepp, Silva Filho, Song & Flach, NeurIPS 2019).

    The map of the paper's Eq. (4), :math:`\\hat\\mu_{DirLin}(q; W, b) = \\operatorname{softmax}(W \\ln q + b)`: the
    multinomial logistic regression of the class on the log-probabilities (Sec. 3: the posterior of one Dirichlet
    distribution per class, in the linear parametrisation); ``ln q`` is the log of the probabilities given (floored at
    :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR`) or of the softmax of the logits, the same map either way.
    The penalties ("Dir-ODIR", "Dir-L2"): :mod:`~calibdash.calibrators.multiclass.linear` (the L2 one normalised as the
    authors' ``dirichletcal`` package, ``reg_norm=True``; their Keras code adds the sum unnormalised). Everything else
    (the cross-validated strengths, the temperature start where the authors start from the identity, weights, degenerate
    data, cost): as :class:`~calibdash.calibrators.multiclass.methods.matrix.MatrixScaling`.

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
        self._keep(locals())
