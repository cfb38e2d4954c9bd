"""True calibration error of the raw scores or of a calibrator, from a scenario's known truth.

:func:`true_calibration_error` integrates ``E |f(s) - g(s)|^p`` (then the p-th root) over the population's score
distribution by the midpoint rule in the quantile domain (:data:`N_NODES` nodes), with ``g`` the identity (raw
scores) or a fitted calibrator. The two ``against`` readings agree for one-to-one maps (raw scores, Platt); for
step maps (histogram, isotonic, BBQ) the one against the prediction is smaller.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core.errors import DataError
from .scenarios import population

__all__ = []

#: Quadrature nodes (quantile midpoints) of :func:`true_calibration_error`.
N_NODES = 2 ** 16


def _predictor(calibrated_fn):
    if calibrated_fn is None:
        return lambda s: s
    if hasattr(calibrated_fn, "predict"):
        return calibrated_fn.predict
    if callable(calibrated_fn):
        return calibrated_fn
    raise DataError("calibrated_fn must be a fitted calibrator, a function of the score, or None.")


@functools.lru_cache(maxsize=32)
def true_nodes(name: str, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    s, f = population(name).nodes(int(n_nodes))
    s.setflags(write=False)
    f.setflags(write=False)
    return s, f


def true_errors(f: np.ndarray, g: np.ndarray, p: float) -> tuple[float, float]:
    """(error against the score, error against the prediction) of predictions ``g`` at nodes with truth ``f``."""
    _, group = np.unique(g, return_inverse=True)
    f_given_g = (np.bincount(group, weights=f) / np.bincount(group))[group]
    return (float(np.mean(np.abs(f - g) ** p) ** (1.0 / p)),
            float(np.mean(np.abs(f_given_g - g) ** p) ** (1.0 / p)))


def true_calibration_error(name: str, calibrated_fn=None, p: float = 1, *, against: str = "score",
                           n_nodes: int = N_NODES) -> float:
    """The population's true calibration error ``(E |f(s) - g(s)|^p)^(1/p)``.

    Parameters
    ----------
    name : str
        Scenario.
    calibrated_fn : fitted Calibrator, callable or None
        ``g``: a fitted calibrator (its ``predict``), any function of the score array, or None for the raw scores.
    p : float, default 1
        The norm (1: mean absolute error, comparable with ECE and MVCE).
    against : {"score", "prediction"}
        ``"score"``: compare ``g(s)`` with the true probability given the score, f(s). ``"prediction"``: with
        the true probability given the prediction, ``E[f(s) | g(s)]`` (the strict calibration error, what a
        binned ECE estimates).
    n_nodes : int
        Midpoint nodes in the quantile domain of the score distribution.
    """
    if p <= 0:
        raise DataError(f"p must be positive, got {p}.")
    if against not in ("score", "prediction"):
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    s, f = true_nodes(name, int(n_nodes))
    g = np.asarray(_predictor(calibrated_fn)(s), dtype=float)
    return true_errors(f, g, p)[0 if against == "score" else 1]
