"""A K-class scenario with a known true posterior: Gaussian classes with a shared covariance.

The population: class ``k`` (of K) has prior ``π_k`` and ``x | y = k ~ N(μ_k, I)`` in the plane, the means evenly
spaced on a circle of radius ``r``: ``μ_k = r (cos 2πk/K, sin 2πk/K)``. With a shared covariance, Bayes' rule
gives a softmax of a linear function of ``x`` (linear discriminant analysis; Hastie, Tibshirani & Friedman, *The
Elements of Statistical Learning*, 2nd ed., section 4.3):

    P(y = k | x) = softmax_k(z(x)),   z_k(x) = μ_kᵀ x − ½ ‖μ_k‖² + log π_k.

The model reports an over-confident version of the true logits, as modern neural networks do (Guo et al., ICML
2017): logits ``T z(x) + b`` with a temperature ``T > 1`` and an optional class bias ``b``, probabilities
``p̂(x) = softmax(T z(x) + b)``.

What is known:

* With ``b = 0``, temperature scaling by ``T`` recovers the truth exactly: ``softmax(log p̂ / T) = softmax(z)``.
  With ``b ≠ 0`` a temperature alone cannot; vector scaling (Guo et al. section 4.2) can: ``(log p̂ − b) / T``.
* ``p̂(x)`` determines the true logits up to a constant per row, hence ``P(y = k | p̂(X)) = P(y = k | X)``: the
  canonical calibration error of ``p̂`` and of any one-to-one recalibration of it (Vaicenavicius et al., AISTATS
  2019) is known row by row, without labels (:func:`true_canonical_error`); for a map that merges rows (binning)
  the row-wise error is an upper bound (Jensen's inequality), as the binary error "against the score" is.
* The top-label calibration error (Gupta & Ramdas, ICLR 2022) conditions on the top class and its probability
  only, so it has no row-wise formula here; no helper claims to give it.

Everything is drawn from ``numpy.random.default_rng(seed)``: the same seed gives the same rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from ..core.errors import DataError
from ..core.validation import format_values
from .scenarios import sample_size

__all__ = []


@dataclass(frozen=True)
class GaussianClasses:
    """Gaussian classes on a circle and an over-confident linear model: ``classes`` (column order), ``means`` the
    (K, 2) ``μ_k``, ``priors`` the ``π_k`` (summing to 1); the model's logits are ``temperature * z(x) + bias``."""

    classes: tuple
    means: np.ndarray
    priors: np.ndarray
    temperature: float
    bias: np.ndarray

    @property
    def k(self) -> int:
        return len(self.classes)

    def true_logits(self, x) -> np.ndarray:
        """``z(x)``, shape (n, K): ``μ_kᵀ x − ½ ‖μ_k‖² + log π_k``."""
        x = np.asarray(x, dtype=float)
        return x @ self.means.T - 0.5 * np.sum(self.means ** 2, axis=1) + np.log(self.priors)

    def true_posterior(self, x) -> np.ndarray:
        """``P(y = k | x) = softmax(z(x))``, shape (n, K)."""
        return softmax(self.true_logits(x), axis=1)

    def reported_logits(self, x) -> np.ndarray:
        """The model's logits ``T z(x) + b``."""
        return self.temperature * self.true_logits(x) + self.bias

    def draw(self, n: int, seed: int, *, logits: bool = False, decimals: int | None = None) -> "ClassDraw":
        """``n`` independent rows: ``y ~ π``, then ``x ~ N(μ_y, I)``.

        Parameters
        ----------
        n, seed : int
            Rows (DataError outside [:data:`~calibdash.synthetic.MIN_N`, :data:`~calibdash.synthetic.MAX_N`]), seed.
        logits : bool, default False
            The frame's model columns hold logits (``logit_<class>``) instead of probabilities (``p_<class>``).
        decimals : int, optional
            Round the frame's model and feature columns (the draw's arrays stay exact); rounded probability
            rows sum to 1 within K half-units of the last decimal.
        """
        n = sample_size(n)
        rng = np.random.default_rng(int(seed))
        y = rng.choice(self.k, size=n, p=self.priors)
        x = self.means[y] + rng.standard_normal((n, 2))
        z = self.reported_logits(x)
        p = softmax(z, axis=1)
        true = self.true_posterior(x)
        model, stem = (z, "logit_") if logits else (p, "p_")
        r = (lambda a: a) if decimals is None else (lambda a: np.round(a, decimals))
        columns = {"label": np.asarray(self.classes, dtype=object)[y]}
        columns.update({f"{stem}{c}": r(model[:, j]) for j, c in enumerate(self.classes)})
        columns.update({f"true_{c}": true[:, j] for j, c in enumerate(self.classes)})
        columns.update({"x1": r(x[:, 0]), "x2": r(x[:, 1])})
        frame = pd.DataFrame(columns)
        if all(isinstance(c, (int, np.integer)) for c in self.classes):
            frame["label"] = frame["label"].astype(np.int64)
        return ClassDraw(frame=frame, x=x, labels=y.astype(np.int64), reported=p, reported_logits=z, true=true,
                         scenario=self, seed=int(seed))


@dataclass
class ClassDraw:
    """A sample of :class:`GaussianClasses`: ``frame`` holds ``label``, ``p_<class>`` (or ``logit_<class>``),
    ``true_<class>`` (the true posterior), ``x1``, ``x2``; ``labels`` the codes 0..K-1; ``reported``,
    ``reported_logits`` and ``true`` the unrounded (n, K) probabilities, logits and ``P(y = k | x)``."""

    frame: pd.DataFrame
    x: np.ndarray
    labels: np.ndarray
    reported: np.ndarray
    reported_logits: np.ndarray
    true: np.ndarray
    scenario: GaussianClasses
    seed: int


def gaussian_classes(classes: int | Sequence = 3, *, radius: float = 2.0, temperature: float = 2.0,
                     bias=None, priors=None) -> GaussianClasses:
    """The scenario with ``classes`` (a count K >= 3, the classes then 0..K-1, or the class values).

    Parameters
    ----------
    radius : float, default 2.0
        Radius of the circle the class means lie on (larger: classes further apart, a more accurate model).
    temperature : float, default 2.0
        ``T`` > 0 (> 1: over-confident, < 1: under-confident, 1: calibrated when ``bias`` is 0).
    bias, priors : sequence of K floats, optional
        ``b`` (default zeros) and ``π`` (positive; default uniform; divided by their sum).

    Raises
    ------
    DataError
        Fewer than three or repeated classes; a non-positive radius or temperature; bias or priors of the
        wrong length, non-finite, or priors not positive.
    """
    values = tuple(range(int(classes))) if isinstance(classes, (int, np.integer)) else tuple(classes)
    k = len(values)
    if k < 3 or len({str(c) for c in values}) != k:
        raise DataError(f"a multi-class scenario needs at least three distinct classes, got {format_values(values)}.")
    if not (np.isfinite(radius) and radius > 0 and np.isfinite(temperature) and temperature > 0):
        raise DataError(f"radius and temperature must be positive, got {radius} and {temperature}.")
    b = np.zeros(k) if bias is None else np.asarray(bias, dtype=float)
    pi = np.full(k, 1.0 / k) if priors is None else np.asarray(priors, dtype=float)
    for name, a in (("bias", b), ("priors", pi)):
        if a.shape != (k,) or not np.all(np.isfinite(a)):
            raise DataError(f"{name} must be {k} finite numbers, one per class.")
    if np.any(pi <= 0):
        raise DataError("priors must be positive.")
    angle = 2 * np.pi * np.arange(k) / k
    means = radius * np.column_stack([np.cos(angle), np.sin(angle)])
    return GaussianClasses(classes=values, means=means, priors=pi / pi.sum(), temperature=float(temperature), bias=b)


def true_canonical_error(probabilities, true, p: float = 1) -> float:
    """Mean over rows of ``‖P(y | x) − q(x)‖_p``: for :class:`GaussianClasses`' reported probabilities ``q`` or a
    one-to-one recalibration of them, the canonical calibration error ``E ‖P(y | q(X)) − q(X)‖_p`` (Vaicenavicius
    et al., 2019; module docstring) of the rows, from the truth, not labels; an upper bound for a map merging rows.

    ``probabilities`` and ``true`` (each row's true posterior, a draw's ``true``) are (n, K); ``p`` is the norm
    over the K classes (1: the sum of absolute differences, between 0 and 2).
    """
    q, t = np.asarray(probabilities, dtype=float), np.asarray(true, dtype=float)
    if q.shape != t.shape or q.ndim != 2:
        raise DataError(f"probabilities and true must be tables of the same shape, got {q.shape} and {t.shape}.")
    if p <= 0:
        raise DataError(f"p must be positive, got {p}.")
    return float(np.mean(np.sum(np.abs(t - q) ** p, axis=1) ** (1.0 / p)))
