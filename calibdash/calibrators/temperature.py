"""Temperature scaling: the score's logit divided by one fitted temperature."""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ..core.errors import SettingsError
from ..core.logistic import fit_logistic
from .base import Calibrator
from ..core.sql_forms import ClosedForm, literal
from .platt import logit, logit_sql

__all__ = ["TemperatureCalibrator", "nll_grad_hess", "log_likelihood", "negative_log_likelihoods",
           "fit_inverse_temperature"]


def _softplus(f: np.ndarray) -> np.ndarray:
    """``log(1 + e^f)``, stably (as ``np.logaddexp(0, f)`` to 1 ulp, about three times faster)."""
    return np.log1p(np.exp(-np.abs(f))) + np.maximum(f, 0.0)


def nll_grad_hess(beta: float, z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None):
    """Negative log-likelihood of labels ``y`` under ``sigmoid(beta z)`` (row terms weighted by ``sample_weight``),
    with its first and second derivatives in the inverse temperature ``beta = 1 / T``."""
    f = beta * z
    loss = _softplus(f) - y * f                  # -[y ln p + (1 - y) ln(1 - p)], computed stably
    q = expit(f)
    r = (q - y) * z
    v = q * (1 - q) * z * z
    if sample_weight is not None:
        loss, r, v = sample_weight * loss, sample_weight * r, sample_weight * v
    return float(np.sum(loss)), float(np.sum(r)), float(np.sum(v))


def log_likelihood(temperature: float, s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """Bernoulli log-likelihood of labels ``y`` under ``sigmoid(logit(s) / T)``, each row's term times its
    weight in ``sample_weight`` (if given); ``logit`` clips like :func:`calibdash.calibrators.platt.logit`."""
    z = logit(s)
    f = z / temperature
    loss = _softplus(f) - y * f
    return -float(np.sum(loss if sample_weight is None else sample_weight * loss))


def negative_log_likelihoods(temperatures, s: np.ndarray, y: np.ndarray,
                             sample_weight: np.ndarray | None = None) -> np.ndarray:
    """``-log_likelihood(T, s, y, w)`` at each ``T`` of ``temperatures``, sharing the logits and the label term (the
    explainer's curve over ``T``)."""
    z = logit(s)
    label_term = float(np.dot(y, z) if sample_weight is None else np.dot(sample_weight * y, z))
    out = []
    for t in np.asarray(temperatures, dtype=float):
        sp = _softplus(z / t)
        out.append(float(np.sum(sp) if sample_weight is None else np.dot(sample_weight, sp)) - label_term / t)
    return np.array(out)


def fit_inverse_temperature(z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, lo: float, hi: float,
                            max_iter: int = 100, tol: float = 1e-12) -> tuple[float, int]:
    """The maximum-likelihood ``beta = 1/T`` in ``[lo, hi]`` for labels ``y`` and logits ``z``, and the Newton steps
    taken (0 at a bound).

    The negative log-likelihood is convex in ``beta`` (a logistic regression through the origin on ``z``), so the
    optimum in ``[lo, hi]`` is the root of its derivative there, or the bound where the derivative keeps its sign
    (checked first). The root is found by :func:`calibdash.core.logistic.fit_logistic` on the single column ``z``
    without an intercept, from ``beta = 1`` (``T = 1``), to the floating-point limit. ``tol`` is accepted for the
    settings saved with earlier fits; the solver's own stopping rule (a step below 4 ulps of ``beta``) is tighter than
    any ``tol`` above 1e-15.
    """
    y = y.astype(float)
    start = min(max(1.0, lo), hi)
    if not np.any(z):                                  # every score 1/2: the likelihood ignores T
        return start, 0
    if nll_grad_hess(lo, z, y, sample_weight)[1] >= 0:            # the likelihood still grows as T -> t_max
        return lo, 0
    if nll_grad_hess(hi, z, y, sample_weight)[1] <= 0:            # ... as T -> t_min (separable scores)
        return hi, 0
    (beta,), _, it = fit_logistic(z[:, None], y, sample_weight, [start], max_iter)
    return min(max(float(beta), lo), hi), int(it)


class TemperatureCalibrator(Calibrator):
    """Temperature scaling (Guo, Pleiss, Sun & Weinberger, ICML 2017): ``p = sigmoid(logit(s) / T)``.

    Guo et al. divide a network's logits by one scalar ``T > 0`` before the softmax, minimising the negative
    log-likelihood on a validation set (their Section 4.2): confidence changes, never the ranking. For two classes the
    softmax is the sigmoid of the logits' difference, so on scores in [0, 1] the method is ``sigmoid(logit(s) / T)``:
    Platt scaling with intercept 0 and slope ``A = 1/T``, the logit clipped like Platt's
    (:func:`calibdash.calibrators.platt.logit`). ``T > 1`` softens over-confident scores, ``T < 1`` sharpens.

    The paper minimises the NLL over ``T`` with a general optimiser; here it is minimised over ``beta = 1/T``, where it
    is convex, by the package's logistic solver (:func:`fit_inverse_temperature`): one optimum, to about machine
    precision. ``T`` stays in ``[t_min, t_max]``: ``T -> infinity`` (the constant 1/2) when ``sum(w (y - 1/2)
    logit(s)) <= 0`` (the scores rank the labels no better than chance, or the wrong way round); ``T -> 0`` when they
    separate the classes at score 1/2. No hyperparameters (no slider): the constructor arguments are solver settings.
    Sample weights multiply each row's log-likelihood term: integer weights fit as the rows repeated, and scaling every
    weight leaves ``T`` unchanged.

    Parameters
    ----------
    t_min, t_max : float, default 1e-3 and 1e3
        The range ``T`` is fitted in (``0 < t_min < t_max``).
    max_iter : int, default 100
        Newton steps at most.
    tol : float, default 1e-12
        Kept for saved settings; the fit runs to the floating-point limit (:func:`fit_inverse_temperature`).

    Attributes
    ----------
    temperature_ : float
        The fitted temperature ``T``.
    log_likelihood_ : float
        Log-likelihood of the training labels at ``T`` (weighted: each row's term times its weight).
    n_iter_ : int
        Newton steps taken (0 when ``T`` sits at a bound).
    """

    name = "temperature"
    order = 110
    color = "#999933"   # olive (Tol)
    label = "Temperature scaling"
    summary = "one temperature dividing the score's logit"
    monotone = True
    paper = "Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern neural networks (ICML)"

    def __init__(self, t_min: float = 1e-3, t_max: float = 1e3, max_iter: int = 100, tol: float = 1e-12):
        self._keep(locals())

    def _check_settings(self) -> tuple[float, float]:
        try:
            lo, hi = float(self.t_min), float(self.t_max)
        except (TypeError, ValueError):
            raise SettingsError(f"t_min and t_max must be numbers, got {self.t_min!r} and {self.t_max!r}.") from None
        if not (0 < lo < hi < math.inf):
            raise SettingsError(f"the temperature range needs 0 < t_min < t_max < inf, got t_min={self.t_min!r}, "
                                f"t_max={self.t_max!r}.")
        return lo, hi

    def _fit(self, s, y, features, w):
        lo, hi = self._check_settings()
        z = logit(s)
        beta, it = fit_inverse_temperature(z, y, w, 1.0 / hi, 1.0 / lo, self.max_iter, self.tol)
        # at a bound, the bound itself (1 / (1 / t) need not be t)
        self.temperature_ = hi if beta <= 1.0 / hi else lo if beta >= 1.0 / lo else float(1.0 / beta)
        self.log_likelihood_ = log_likelihood(self.temperature_, s, y, w)
        self.n_iter_ = int(it)

    def _predict(self, s, features):
        return expit(logit(s) / self.temperature_)

    def sql_map(self) -> ClosedForm:
        """``expit(logit(s) / T)`` with Platt's clipped logit: a closed form."""
        t = float(self.temperature_)
        return ClosedForm(lambda w: w.sigmoid(f"{logit_sql(w)} / {literal(t)}"))

    def _export_state(self) -> dict:
        return {"temperature": self.temperature_}

    def _import_state(self, state) -> None:
        t = state.number("temperature")
        if not t > 0:
            raise state.error(f"'temperature' must be positive, got {t!r}")
        self.temperature_ = t
