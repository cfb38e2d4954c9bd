"""Input checks shared by metrics, calibrators and evaluation.

This module sits below every other calibdash module that takes scores and
labels (it imports only :mod:`calibdash.errors`), so metrics and calibrators
can both use it without importing each other.
"""
from __future__ import annotations

import numpy as np

from .errors import DataError

__all__ = ["check_scores", "check_labels", "check_weights"]


def check_scores(scores, name: str = "scores") -> np.ndarray:
    """Return ``scores`` as a 1-D float array of finite values in [0, 1].

    Raises
    ------
    DataError
        If the array is empty, not 1-D, holds NaN/inf, or leaves [0, 1].
    """
    try:
        s = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numbers: {exc}") from None
    if s.ndim != 1:
        s = s.reshape(-1) if s.size == max(s.shape, default=0) else s
        if s.ndim != 1:
            raise DataError(f"{name} must be one-dimensional, got shape {np.shape(scores)}.")
    if s.size == 0:
        raise DataError(f"{name} is empty.")
    if not np.all(np.isfinite(s)):
        raise DataError(f"{name} holds {int((~np.isfinite(s)).sum())} missing or infinite values.")
    if s.min() < 0.0 or s.max() > 1.0:
        raise DataError(
            f"{name} must lie in [0, 1] (found {s.min():.4g} to {s.max():.4g}); map margins or "
            "logits with the logistic function first (calibdash.load_scores does this)."
        )
    return s


def check_labels(labels, n: int, require_both: bool = True) -> np.ndarray:
    """Return ``labels`` as a 1-D int array of 0/1 of length ``n``."""
    y = np.asarray(labels)
    if y.ndim != 1:
        y = y.reshape(-1)
    if y.shape[0] != n:
        raise DataError(f"labels has {y.shape[0]} values but scores has {n}.")
    if y.dtype == bool:
        y = y.astype(np.int8)
    try:
        yf = y.astype(float)
    except (TypeError, ValueError):
        raise DataError("labels must be 0/1 (or True/False).") from None
    if not np.all(np.isfinite(yf)):
        raise DataError("labels hold missing values.")
    vals = np.unique(yf)
    if not set(vals.tolist()) <= {0.0, 1.0}:
        raise DataError(f"labels must be 0/1; found values {vals[:5].tolist()}.")
    if require_both and vals.size < 2:
        raise DataError(f"labels hold one class only ({int(vals[0])}); calibration needs both.")
    return yf.astype(np.int8)


def check_weights(sample_weight, n: int, labels: np.ndarray | None = None) -> np.ndarray | None:
    """Return ``sample_weight`` as a 1-D float array of ``n`` finite, non-negative weights, or None.

    ``None`` stays None (every row weighs 1). With ``labels``, both classes
    must keep a positive total weight.

    Raises
    ------
    DataError
        If the weights are not numbers, have the wrong length, hold NaN, inf
        or negative values, sum to zero, or leave one class without weight.
    """
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"sample_weight must be numbers: {exc}") from None
    if w.size != n:
        raise DataError(f"sample_weight has {w.size} values but scores has {n}.")
    if not np.all(np.isfinite(w)):
        raise DataError(f"sample_weight holds {int((~np.isfinite(w)).sum())} missing or infinite values.")
    if (w < 0).any():
        raise DataError(f"sample_weight holds {int((w < 0).sum())} negative values; weights count rows.")
    if w.sum() <= 0:
        raise DataError("sample_weight sums to zero: no row would count.")
    if labels is not None:
        for cls in (0, 1):
            if labels.size and w[labels == cls].sum() <= 0:
                raise DataError(f"the rows of class {cls} all have weight 0; calibration needs both classes.")
    return w
