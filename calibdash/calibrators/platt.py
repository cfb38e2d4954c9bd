"""Platt scaling: a logistic function of the score's logit."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..core.logistic import fit_logistic
from .base import Calibrator, HyperParam
from ..core.sql_forms import ClosedForm, SqlWriter, literal

__all__ = ["PlattCalibrator", "logit", "targets", "log_likelihood"]

#: Scores are clipped to [EPS, 1 - EPS] before the logit so 0 and 1 stay finite.
EPS = 1e-12


def logit(s: np.ndarray) -> np.ndarray:
    """log(s / (1 - s)) of scores clipped to [EPS, 1 - EPS]."""
    s = np.clip(s, EPS, 1 - EPS)
    return np.log(s) - np.log1p(-s)


def logit_sql(writer: SqlWriter) -> str:
    """SQL of :func:`logit` of the writer's score: ``ln(c) - log1p(-c)``, ``c`` the score clipped to
    [EPS, 1 - EPS] (the closed forms of :mod:`calibdash.io.sql`)."""
    return writer.logit(writer.clip(writer.score, EPS, 1 - EPS))


def class_totals(y: np.ndarray, sample_weight: np.ndarray | None = None) -> tuple[float, float]:
    """``(N+, N-)``: the rows of each class, or their weight sums with weights ``sample_weight``."""
    if sample_weight is None:
        n_pos = int(y.sum())
        return n_pos, y.size - n_pos
    n_pos = float(np.dot(sample_weight, y))
    return n_pos, float(sample_weight.sum()) - n_pos


def targets(y: np.ndarray, smooth: bool, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """The fit's targets: the labels, or Platt's smoothed ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` (``N+``,
    ``N-``: :func:`class_totals`)."""
    if not smooth:
        return y.astype(float)
    n_pos, n_neg = class_totals(y, sample_weight)
    return np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def log_likelihood(a: float, b: float, s: np.ndarray, t: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """Bernoulli log-likelihood of targets ``t`` under ``sigmoid(a logit(s) + b)``, each row's term times its weight in
    ``sample_weight`` (if given)."""
    f = a * logit(s) + b
    loss = np.logaddexp(0.0, f) - t * f          # -[t log q + (1 - t) log(1 - q)], computed stably
    return -float(np.sum(loss if sample_weight is None else sample_weight * loss))


class PlattCalibrator(Calibrator):
    """Platt scaling (Platt, 1999): ``p = sigmoid(A * logit(s) + B)``.

    A and B maximise the Bernoulli likelihood of the training labels (Newton's method with backtracking line search,
    as in Lin, Lin & Weng, 2007, "A note on Platt's probabilistic outputs", iterated to the floating-point limit:
    :func:`fit_logistic`). The input is the logit of the score: for scores that are the sigmoid of an SVM margin this
    is the margin itself, which is what Platt fitted.

    Sample weights: each row's term of the log-likelihood is multiplied by its weight; ``N+`` and ``N-`` (the smoothed
    targets, the starting intercept ``log((N+ + 1) / (N- + 1))``) and the ``N`` of ``tol`` are weight totals. With
    integer weights the fit is the fit on the rows repeated up to the rounding of the sums (the solver stops at the
    floating-point limit, so both land on the same optimum). Scaling every weight by ``c`` leaves the map unchanged
    with ``smooth_targets=False``; with ``smooth_targets=True`` the targets are those of ``c`` times as many rows (``c
    < 1`` pulls them towards 1/2, ``c > 1`` towards 0 and 1).

    Parameters
    ----------
    smooth_targets : bool, default False
        Use Platt's smoothed targets ``t+ = (N+ + 1) / (N+ + 2)`` for positives and ``t- = 1 / (N- + 2)`` for
        negatives instead of 1 and 0 (a prior that keeps the fit finite on separable data).
    max_iter : int, default 100
        Newton iterations at most.
    tol : float, default 0.0
        Stop early when the gradient's largest entry falls below ``tol * N``; 0 iterates to the floating-point limit.

    Attributes
    ----------
    a_, b_ : float
        Slope A and intercept B.
    log_likelihood_ : float
        Log-likelihood of the training targets at the fit (weighted: each row's term times its weight).
    n_iter_ : int
        Newton iterations taken.
    """

    name = "platt"
    order = 10
    color = "#E69F00"   # orange (Okabe-Ito)
    label = "Platt scaling"
    summary = "logistic fit on the score's logit"
    paper = "Platt (1999), Probabilistic outputs for support vector machines"
    hyperparams = (
        HyperParam("smooth_targets", "t±", "bool", False,
                   help="Platt's smoothed targets (N+ + 1)/(N+ + 2) and 1/(N- + 2) instead of 1 and 0."),
    )

    def __init__(self, smooth_targets: bool = False, max_iter: int = 100, tol: float = 0.0):
        self.smooth_targets = smooth_targets
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, s, y, features, w):
        z = logit(s)
        t = targets(y, self.smooth_targets, w)
        n_pos, n_neg = class_totals(y, w)
        # Start at the prior log-odds with unit slope, as Lin et al. do.
        start = [1.0, float(np.log((n_pos + 1.0) / (n_neg + 1.0)))]
        (a, b), nll, it = fit_logistic(np.column_stack([z, np.ones_like(z)]), t, w, start, self.max_iter, self.tol)
        self.a_, self.b_ = float(a), float(b)
        self.log_likelihood_ = -float(nll)
        self.n_iter_ = int(it)

    def _predict(self, s, features):
        return expit(self.a_ * logit(s) + self.b_)

    def sql_map(self) -> ClosedForm:
        """``1 / (1 + exp(-(a logit(s) + b)))`` with :func:`logit_sql`: a closed form."""
        a, b = float(self.a_), float(self.b_)
        return ClosedForm(lambda w: w.sigmoid(f"{literal(a)} * {logit_sql(w)} + {literal(b)}"))

    def _export_state(self) -> dict:
        return {"a": self.a_, "b": self.b_}

    def _import_state(self, state) -> None:
        self.a_, self.b_ = state.number("a"), state.number("b")
