"""Inside a fitted K-class temperature scaling: its ``T``, and its objective, the log-loss, around it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from ..core.errors import ProgrammingError
from ..measures.calibration import LOG_LOSS_EPS
from ..calibrators.multiclass.base import MulticlassCalibrator, Scores, as_scores
from ..core.validation import check_classes
from ..calibrators.multiclass.methods.temperature import TemperatureScaling
from . import explains
from .k_class import MAX_CLASSES, ClassExplanation, class_rows

__all__ = ["ClassTemperatureExplanation"]

#: Temperatures of the log-loss curve: this many, evenly spaced in log T around the fitted T (and T = 1).
T_GRID = 121


@dataclass
class ClassTemperatureExplanation(ClassExplanation):
    """A K-class temperature scaling explained: the fitted ``temperature`` and ``loss_curve``, the method's objective
    around its optimum: ``temperature``, ``fit`` (mean log-loss of the fitting rows) and, when held-out rows were
    given, ``held_out``."""

    temperature: float = float("nan")
    loss_curve: pd.DataFrame | None = None
    kind: ClassVar[str] = "temperature"


def temperature_curve(x: Scores, y, temperatures, sample_weight=None) -> np.ndarray:
    """Mean log-loss of ``softmax(s / T)`` at each temperature, ``s`` the log-scores of ``x``: the objective of
    temperature scaling (Guo et al. 2017, section 4.2: ``T`` is "optimized with respect to NLL on the validation
    set"), computed as :func:`calibdash.measures.class_measures.log_loss` does."""
    y = check_classes(y, x.n, x.k)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
    s = x.log_scores
    s = s - s.max(axis=1, keepdims=True)            # the same softmax; every s / T is then <= 0
    s_true = s[np.arange(x.n), y]
    lo, hi = np.log(LOG_LOSS_EPS), np.log1p(-LOG_LOSS_EPS)
    out = []
    z = np.empty_like(s)
    for t in np.asarray(temperatures, dtype=float):
        # ln q_i = s_iy / T - ln sum_k exp(s_ik / T), clipped as log_loss clips q_i (ln is monotone): one pass
        # over the rows a temperature, without forming and checking the probabilities (5x faster)
        np.divide(s, t, out=z)
        np.exp(z, out=z)
        log_q = s_true / t - np.log(z.sum(axis=1))
        out.append(float(np.average(-np.clip(log_q, lo, hi), weights=w)))
    return np.array(out)


def fitted_temperature(model: MulticlassCalibrator) -> float:
    """The ``T`` of a fitted temperature scaling, read back from its map (so the explanation is of what the
    calibrator does, not of an attribute): on the log-scores ``(0, 1, 0, ...)``, the second and first outputs of
    ``softmax(s / T)`` have log-ratio ``1 / T``."""
    k = model.n_classes_
    s = np.zeros((1, k))
    s[0, 1] = 1.0
    q = model.predict_proba(s if model.logits else softmax(s, axis=1))[0]
    ratio = float(np.log(q[1]) - np.log(q[0]))
    if not np.isfinite(ratio) or ratio <= 0:
        raise ProgrammingError(f"{type(model).__name__} does not act as a temperature scaling (log-ratio {ratio}).")
    return 1.0 / ratio


@explains(TemperatureScaling)
def explain(model, P, y, features=None, *, sample_weight=None, held_out=None,
            class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
            simplex_grid: int = 10) -> ClassTemperatureExplanation:
    """``T`` read from the fitted map and the log-loss on a grid of temperatures around it, on the fitting rows and on
    ``held_out`` (the arguments: :mod:`calibdash.explain.k_class`)."""
    x, y, fields = class_rows(model, P, y, class_names, simplex_grid)
    t = fitted_temperature(model)
    grid = np.unique(np.concatenate([np.geomspace(min(t, 1.0) / 4.0, max(t, 1.0) * 4.0, T_GRID), [t, 1.0]]))
    curve = pd.DataFrame({"temperature": grid, "fit": temperature_curve(x, y, grid, sample_weight)})
    if held_out is not None:
        hx = as_scores(held_out[0], model.logits, x.k)
        curve["held_out"] = temperature_curve(hx, held_out[1], grid)
    return ClassTemperatureExplanation(**fields, temperature=t, loss_curve=curve)
