"""Beta calibration: a logistic regression on ``ln s`` and ``-ln(1 - s)``."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from ..core.errors import SettingsError
from ..core.logistic import fit_logistic
from .base import Calibrator, HyperParam
from ..core.sql_forms import ClosedForm, SqlWriter, literal
from .platt import EPS

__all__ = ["BetaCalibrator", "beta_features", "beta_map", "log_likelihood", "fit_beta"]

#: The parametrisations of the authors' ``betacal.BetaCalibration(parameters=...)`` offered here.
PARAMETERS = ("abm", "am", "ab")

_LN2 = math.log(2.0)


def beta_features(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ln s, -ln(1 - s))`` of scores clipped to [EPS, 1 - EPS] (:data:`calibdash.calibrators.platt.EPS`,
    the clip of Platt's logit, so that their sum is :func:`calibdash.calibrators.platt.logit`)."""
    s = np.clip(np.asarray(s, dtype=float), EPS, 1 - EPS)
    return np.log(s), -np.log1p(-s)


def beta_map(a: float, b: float, c: float, s: np.ndarray) -> np.ndarray:
    """The beta calibration map ``mu(s; a, b, c) = 1 / (1 + 1 / (e^c s^a / (1 - s)^b))``, computed as
    ``sigmoid(a ln s - b ln(1 - s) + c)`` on clipped scores."""
    x1, x2 = beta_features(s)
    return expit(a * x1 + b * x2 + c)


def log_likelihood(a: float, b: float, c: float, s: np.ndarray, y: np.ndarray,
                   sample_weight: np.ndarray | None = None) -> float:
    """Bernoulli log-likelihood of labels ``y`` under ``mu(s; a, b, c)``, each row's term times its weight in
    ``sample_weight`` (if given)."""
    x1, x2 = beta_features(s)
    f = a * x1 + b * x2 + c
    loss = np.logaddexp(0.0, f) - y * f          # -[y ln mu + (1 - y) ln(1 - mu)], computed stably
    return -float(np.sum(loss if sample_weight is None else sample_weight * loss))


def midpoint(a: float, b: float, c: float) -> float:
    """The paper's ``m``: the score where ``mu(m; a, b, c) = 1/2``, solving ``c = b ln(1 - m) - a ln m`` in (0, 1). The
    log-odds are monotone in ``m`` unless ``a`` and ``b`` have strictly opposite signs (never with ``"abm"`` or
    ``"am"``), so ``m`` is then unique when it exists; it is solved on ``t = logit(m)`` with Brent's method to about
    1e-15 (``a == b``: in closed form, ``m = 1 / (1 + e^(c / a))``). NaN when the map never crosses 1/2, is constant, or
    ``a`` and ``b`` have opposite signs (the crossing need not be unique)."""
    a, b, c = float(a), float(b), float(c)
    if a == b:
        return float(expit(-c / a)) if a != 0 else math.nan
    if (a > 0 and b < 0) or (a < 0 and b > 0):
        return math.nan

    def f(t):  # log-odds of mu at m = expit(t): c + a ln m - b ln(1 - m)
        return c - a * np.logaddexp(0.0, -t) + b * np.logaddexp(0.0, t)

    lo, hi = -1.0, 1.0
    while np.sign(f(lo)) == np.sign(f(hi)) and hi < 1e4:
        lo, hi = 2 * lo, 2 * hi
    f_lo, f_hi = f(lo), f(hi)
    if f_lo == 0:
        return float(expit(lo))
    if f_hi == 0:
        return float(expit(hi))
    if np.sign(f_lo) == np.sign(f_hi):
        return math.nan
    t = brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    return float(expit(t))


@dataclass(frozen=True)
class BetaFit:
    """What :func:`fit_beta` finds (what ``fit`` keeps, and :mod:`calibdash.explain.beta` shows): the map's ``a, b,
    c`` and midpoint ``m`` (:func:`midpoint`), the weighted ``log_likelihood`` of the labels at the map, ``n_iter``
    Newton iterations over all the logistic regressions, and ``steps``, one dict per regression in order: ``features``
    (what it regressed on), ``a``, ``b``, ``c`` (NaN for a coefficient the step has not), ``log_likelihood``,
    ``n_iter`` and ``kept`` (whether the map is this step's fit)."""

    a: float
    b: float
    c: float
    m: float
    log_likelihood: float
    n_iter: int
    steps: tuple


def fit_beta(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, parameters: str = "abm",
             max_iter: int = 100, tol: float = 0.0) -> BetaFit:
    """Fit the beta calibration map with ``parameters`` (see :class:`BetaCalibrator`) on checked scores ``s``, labels
    ``y`` and weights (None: unit weights). Every regression starts from the identity map (``a = b = 1``, ``c = 0``; a
    refit from its kept coefficient 1 and ``c = 0``) and is solved by :func:`~calibdash.core.logistic.fit_logistic`,
    to the floating-point limit unless ``tol > 0``."""
    x1, x2 = beta_features(s)
    one = np.ones_like(x1)
    opts = dict(max_iter=max_iter, tol=tol)
    nan = math.nan
    steps = []

    def step(label, a, b, c, nll, it):
        steps.append({"features": label, "a": float(a), "b": float(b), "c": float(c),
                      "log_likelihood": -float(nll), "n_iter": int(it), "kept": False})

    if parameters == "abm":
        (a, b, c), nll, it = fit_logistic(np.column_stack([x1, x2, one]), y, sample_weight, [1.0, 1.0, 0.0], **opts)
        step("ln s, −ln(1 − s), intercept", a, b, c, nll, it)
        if a < 0:
            (b, c), nll, it = fit_logistic(np.column_stack([x2, one]), y, sample_weight, [1.0, 0.0], **opts)
            a = 0.0
            step("−ln(1 − s), intercept (a < 0: ln s dropped)", nan, b, c, nll, it)
        elif b < 0:
            (a, c), nll, it = fit_logistic(np.column_stack([x1, one]), y, sample_weight, [1.0, 0.0], **opts)
            b = 0.0
            step("ln s, intercept (b < 0: −ln(1 − s) dropped)", a, nan, c, nll, it)
        m = midpoint(a, b, c)
    elif parameters == "am":
        (a, c), nll, it = fit_logistic(np.column_stack([x1 + x2, one]), y, sample_weight, [1.0, 0.0], **opts)
        b = a
        step("logit(s) = ln s − ln(1 − s), intercept (a = b)", a, b, c, nll, it)
        m = midpoint(a, b, c)
    elif parameters == "ab":
        (a, b), nll, it = fit_logistic(np.column_stack([x1 + _LN2, x2 - _LN2]), y, sample_weight, [1.0, 1.0], **opts)
        c, m = (a - b) * _LN2, 0.5
        step("ln(2s), −ln(2(1 − s)), no intercept (m = 1/2)", a, b, c, nll, it)
    else:
        raise SettingsError(f"parameters must be one of {', '.join(map(repr, PARAMETERS))}, got {parameters!r}.")
    steps[-1]["kept"] = True
    return BetaFit(float(a), float(b), float(c), float(m), -float(nll), sum(st["n_iter"] for st in steps),
                   tuple(steps))


class BetaCalibrator(Calibrator):
    """Beta calibration (Kull, Silva Filho & Flach, AISTATS 2017).

    The paper's family ``mu(s; a, b, c) = 1 / (1 + 1 / (e^c s^a / (1 - s)^b))``, the posterior of two beta-distributed
    class-conditional score densities, has log-odds ``a ln s - b ln(1 - s) + c``, linear in ``ln s`` and ``-ln(1 -
    s)``: a logistic regression on them; the midpoint ``m`` (``mu(m) = 1/2``) gives ``c = b ln(1 - m) - a ln m``. The
    identity (``a = b = 1``, ``m = 1/2``) is in the family, unlike the logistic calibration on the raw score the paper
    compares with, ``sigmoid(g (s - m))``. (calibdash's Platt scaling works on ``logit(s)``: beta's ``"am"`` family.)

    The parametrisations of the authors' package (``betacal``, ``BetaCalibration(parameters=...)``):

    ``"abm"`` (three parameters)
        Both features and an intercept. If ``a`` (of ``ln s``) comes out negative, refit on ``-ln(1 - s)`` alone with
        ``a = 0``; else if ``b`` does, refit on ``ln s`` alone with ``b = 0`` (non-decreasing when the refitted
        coefficient is non-negative). As betacal codes it: ``a`` checked first, at most one feature dropped, the refit
        not checked again (on the data tested: the maximum-likelihood fit under ``a, b >= 0``).
    ``"am"`` (``a = b``)
        ``mu = sigmoid(a logit(s) + c)``, ``m = 1 / (1 + e^(c / a))`` (Platt scaling without smoothed targets).
    ``"ab"`` (``m = 1/2``)
        No intercept, on ``ln(2s)`` and ``-ln(2(1 - s))``, so ``c = (a - b) ln 2``; signs unchecked (as in betacal).

    Where this differs from betacal, and why:

    * betacal fits scikit-learn's ``LogisticRegression(C=99999999999)`` (an L2 penalty meant as none) by L-BFGS to its
      default tolerance. Here: the unregularised maximum-likelihood estimate (the paper's) by Newton's method
      (:func:`fit_logistic`) to the floating-point limit, so fits of one likelihood, on rows or weighted cells, agree
      to rounding. It equals ``LogisticRegression(C=inf)`` solved to 1e-6 (tested); betacal 1.1.0's maps differ by
      about 1e-4 inside (0, 1) on 5,000 rows, at a slightly lower likelihood (its solver stops earlier). On separable
      data no estimate exists: the coefficients grow until ``max_iter`` (betacal's tiny penalty keeps them finite but
      huge).
    * Scores are clipped to ``[EPS, 1 - EPS]`` with Platt's ``EPS = 1e-12``, not float64's machine epsilon, so a score
      of exactly 0 or 1 gives the same features in both calibrators; the maps differ only within 1e-12 of 0 or 1
      (there by up to 0.1 when a coefficient is negative).
    * betacal finds ``m`` by a bounded scalar search on ``|b ln(1 - m) - a ln m - c|`` (about 1e-5); :func:`midpoint`
      solves it to about 1e-15, NaN without a crossing of 1/2 (betacal: an end of the interval). ``m`` is reported
      only: the map uses ``a``, ``b``, ``c``.

    Sample weights multiply each row's log-likelihood term (betacal passes ``sample_weight`` to scikit-learn): integer
    weights fit as the rows repeated, and scaling every weight leaves the map unchanged.

    Parameters
    ----------
    parameters : {"abm", "am", "ab"}, default "abm"
        Which parameters are fitted (see above).
    max_iter : int, default 100
        Newton iterations at most (per logistic regression).
    tol : float, default 0.0
        Stop early when the gradient's largest entry falls below ``tol * N`` (``N`` the rows, or their total weight);
        0 iterates to the floating-point limit.

    Attributes
    ----------
    a_, b_, c_ : float
        The map's ``a``, ``b`` and ``c``.
    m_ : float
        The midpoint ``m`` (:func:`midpoint`; exactly 1/2 with ``"ab"``; NaN when the map never crosses 1/2).
    log_likelihood_ : float
        Log-likelihood of the training labels at the fit (weighted: each row's term times its weight).
    n_iter_ : int
        Newton iterations taken, over both fits when ``"abm"`` refits.
    """

    name = "beta"
    order = 100
    color = "#117733"   # green (Tol)
    label = "Beta calibration"
    summary = "logistic fit on ln s and −ln(1 − s)"
    paper = ("Kull, Silva Filho & Flach (2017), Beta calibration: a well-founded and easily implemented "
             "improvement on logistic calibration for binary classifiers (AISTATS)")
    hyperparams = (
        HyperParam("parameters", "", "choice", "abm", choices=PARAMETERS,
                   help="Fitted parameters: a, b and m (a refit drops ln s or ln(1 − s) if its coefficient is "
                        "negative); a = b (logistic on the logit); or a, b with m = 1/2."),
    )

    def __init__(self, parameters: str = "abm", max_iter: int = 100, tol: float = 0.0):
        self._keep(locals())

    def _fit(self, s, y, features, w):
        fit = fit_beta(s, y, w, self.parameters, self.max_iter, self.tol)
        self.a_, self.b_, self.c_, self.m_ = fit.a, fit.b, fit.c, fit.m
        self.log_likelihood_ = fit.log_likelihood
        self.n_iter_ = fit.n_iter

    def _predict(self, s, features):
        return beta_map(self.a_, self.b_, self.c_, s)

    def sql_map(self) -> ClosedForm:
        """:func:`beta_map` as a closed form, ``s`` clipped to ``[EPS, 1 - EPS]``."""
        a, b, c = float(self.a_), float(self.b_), float(self.c_)

        def build(writer: SqlWriter) -> str:
            s = writer.clip(writer.score, EPS, 1 - EPS)
            return writer.sigmoid(f"{literal(a)} * LN({s}) + {literal(b)} * (-{writer.log1p('-' + s)}) + {literal(c)}")
        return ClosedForm(build)

    def _export_state(self) -> dict:
        return {"a": self.a_, "b": self.b_, "c": self.c_}

    def _import_state(self, state) -> None:
        """``m`` is derived again from ``a``, ``b``, ``c``."""
        self.a_, self.b_, self.c_ = state.number("a"), state.number("b"), state.number("c")
        self.m_ = 0.5 if self.parameters == "ab" else midpoint(self.a_, self.b_, self.c_)
