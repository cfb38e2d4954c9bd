"""Inside a fitted vector, matrix or Dirichlet calibration: ``W`` and ``b`` of ``softmax(W s + b)`` (Kull et al.
2019; vector scaling's diagonal as a matrix) and the regularisation path when the method records it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd

from ..core.errors import ProgrammingError
from ..calibrators.multiclass.methods.dirichlet import DirichletCalibration
from ..calibrators.multiclass.methods.matrix import MatrixScaling
from ..calibrators.multiclass.methods.vector import VectorScaling
from . import explains
from .k_class import MAX_CLASSES, ClassExplanation, class_rows

__all__ = ["LinearExplanation"]


@dataclass
class LinearExplanation(ClassExplanation):
    """A linear K-class map explained.

    Attributes
    ----------
    weights, bias : ndarray or None
        ``W`` (K, K), ``b`` (K,): row k of ``W`` gives class k's new log-score (None, with a note, for a method
        that keeps them under other names).
    path : DataFrame or None
        The regularisation path (the cross-validated choice), as the method recorded it.
    """

    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    path: pd.DataFrame | None = None
    kind: ClassVar[str] = "linear"


def _linear_parts(model) -> tuple[np.ndarray, np.ndarray, pd.DataFrame | None]:
    """``(W, b, path)`` of a fitted vector, matrix or Dirichlet calibrator."""
    W = next((getattr(model, a) for a in ("weights_", "coef_", "W_") if hasattr(model, a)), None)
    b = next((getattr(model, a) for a in ("bias_", "intercept_", "b_") if hasattr(model, a)), None)
    if W is None or b is None:
        raise ProgrammingError(f"{type(model).__name__} holds no fitted weights and bias.")
    W = np.asarray(W, dtype=float)
    if W.ndim == 1:                                  # vector scaling: the diagonal
        W = np.diag(W)
    path = getattr(model, "path_", None)
    return W, np.asarray(b, dtype=float).reshape(-1), None if path is None else pd.DataFrame(path)


@explains(VectorScaling, MatrixScaling, DirichletCalibration)
def explain(model, P, y, features=None, *, sample_weight=None, held_out=None,
            class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
            simplex_grid: int = 10) -> LinearExplanation:
    """The fitted ``W``, ``b`` and path (the arguments: :mod:`calibdash.explain.k_class`)."""
    ex = LinearExplanation(**class_rows(model, P, y, class_names, simplex_grid)[2])
    try:
        ex.weights, ex.bias, ex.path = _linear_parts(model)
    except ProgrammingError as exc:            # a method that keeps W and b under other names
        ex.notes.append(f"W and b cannot be shown: {exc}")
    return ex
