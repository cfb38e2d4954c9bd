"""Inside a fitted multi-class calibrator: the data of its inner-workings figures (no plotly here).

:func:`explain_classes` reads what a fitted method learned and evaluates it
where a picture shows it; :mod:`calibdash.figures.multiclass_explain` draws it.
By method:

==========================  ============================================================================
method                      what the explanation holds
==========================  ============================================================================
temperature                 the fitted ``T``, and the mean log-loss of ``softmax(s / T)`` on a grid of
                            temperatures (``s`` the log-scores, Guo et al. 2017, section 4.2) on the
                            fitting rows and, when given, on held-out rows
vector, matrix, dirichlet   the fitted ``W`` (K x K; vector scaling's diagonal as a matrix) and ``b``
                            (Kull et al. 2019, ``softmax(W s + b)``), and the regularisation path when
                            the method records its cross-validation
ovr:<binary>                each class's binary map ``q_k(p_k)`` on a grid of [0, 1] (one curve per class,
                            K <= ``max_classes``, else the ``max_classes`` classes of largest class-wise
                            ECE on the fitting rows)
top_label:<binary>          each predicted class's map of the top probability, the pooled map, and which
                            classes were pooled (fewer than ``min_rows`` rows predicted)
any method, K = 3           the map on a grid of the probability simplex
                            (:func:`calibdash.multiclass.diagrams.prepare_simplex_map`)
==========================  ============================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from ..errors import ProgrammingError
from ..measures.calibration import LOG_LOSS_EPS
from . import metrics
from .base import MulticlassCalibrator, Scores, as_scores, check_classes
from .diagrams import SimplexMapData, class_labels, prepare_simplex_map
from .methods.ovr import BinaryComposite, OneVsRestCalibrator
from .methods.top_label import TopLabelCalibrator

__all__ = ["ClassExplanation", "explain_classes", "temperature_curve", "fitted_temperature", "MAX_CLASSES", "N_GRID", "T_GRID"]

#: Most classes whose one-vs-rest or top-label maps are drawn (the worst by class-wise ECE when there are more).
MAX_CLASSES = 10
#: Points of the score grid the binary maps are evaluated on.
N_GRID = 201
#: Temperatures of the log-loss curve: this many, evenly spaced in log T around the fitted T (and T = 1).
T_GRID = 121


@dataclass
class ClassExplanation:
    """What :func:`explain_classes` found inside a fitted multi-class calibrator.

    Attributes
    ----------
    method : str
        The calibrator's registry name (``"temperature"``, ``"ovr:isotonic"``).
    kind : str
        ``"temperature"``, ``"linear"`` (vector, matrix, Dirichlet), ``"ovr"``, ``"top_label"``, or ``""``
        (nothing more than the simplex map to show).
    classes : list of str
        The class names, in column order.
    temperature : float or None
        The fitted ``T``.
    loss_curve : DataFrame or None
        ``temperature``, ``fit`` (mean log-loss of the fitting rows) and, when held-out rows were given,
        ``held_out``: the temperature method's objective around its optimum.
    weights, bias : ndarray or None
        ``W`` (K, K), ``b`` (K,) of a linear method: row k of ``W`` gives class k's new log-score.
    path : DataFrame or None
        A linear method's regularisation path (the cross-validated choice), as the method recorded it.
    maps : DataFrame or None
        Long table: ``class`` (index), ``name``, ``score`` (grid), ``calibrated``; for ovr the binary map of
        class k's probability, for top-label the map of the top probability of rows predicted k.
    shown : list of int
        The classes in ``maps`` (largest class-wise ECE of the fitting rows first).
    pooled : list of int
        Top-label: the classes calibrated by the pooled map (too few rows predicted them).
    pooled_map : DataFrame or None
        Top-label: ``score``, ``calibrated`` of the pooled map.
    predicted : ndarray or None
        Top-label: fitting rows predicted as each class (by weight).
    simplex : SimplexMapData or None
        For K = 3, the map on a grid of the simplex.
    notes : list of str
    """

    method: str
    kind: str
    classes: list
    temperature: float | None = None
    loss_curve: pd.DataFrame | None = None
    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    path: pd.DataFrame | None = None
    maps: pd.DataFrame | None = None
    shown: list = field(default_factory=list)
    pooled: list = field(default_factory=list)
    pooled_map: pd.DataFrame | None = None
    predicted: np.ndarray | None = None
    simplex: SimplexMapData | None = None
    notes: list = field(default_factory=list)


def _name(model: MulticlassCalibrator) -> str:
    if isinstance(model, BinaryComposite):
        return f"{model.name}:{model.binary}"
    return model.name


def temperature_curve(x: Scores, y, temperatures, sample_weight=None) -> np.ndarray:
    """Mean log-loss of ``softmax(s / T)`` at each temperature, ``s`` the log-scores of ``x``.

    The objective temperature scaling minimises (Guo et al. 2017, section 4.2: ``T`` is "optimized with
    respect to NLL on the validation set"), computed with :func:`calibdash.multiclass.metrics.log_loss`.
    """
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


def _temperature_grid(t: float, n: int = T_GRID) -> np.ndarray:
    lo, hi = min(t, 1.0) / 4.0, max(t, 1.0) * 4.0
    grid = np.geomspace(lo, hi, n)
    return np.unique(np.concatenate([grid, [t, 1.0]]))


def fitted_temperature(model: MulticlassCalibrator) -> float:
    """The ``T`` of a fitted temperature scaling, read back from its map.

    Temperature scaling maps log-scores ``s`` to ``softmax(s / T)``, so on a row whose log-scores are
    ``(0, 1, 0, ...)`` the log-ratio of its second and first outputs is ``1 / T``. Reading ``T`` from the
    map rather than from an attribute explains exactly what the calibrator does.
    """
    k = model.n_classes_
    s = np.zeros((1, k))
    s[0, 1] = 1.0
    q = model.predict_proba(s if model.logits else softmax(s, axis=1))[0]
    ratio = float(np.log(q[1]) - np.log(q[0]))
    if not np.isfinite(ratio) or ratio <= 0:
        raise ProgrammingError(f"{type(model).__name__} does not act as a temperature scaling (log-ratio {ratio}).")
    return 1.0 / ratio


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


def _binary_maps(model: BinaryComposite, subs: list, classes: list[int], names: list[str],
                 grid: np.ndarray) -> pd.DataFrame:
    parts = [pd.DataFrame({"class": c, "name": names[c], "score": grid, "calibrated": model.apply(subs[c], grid)})
             for c in classes if subs[c] is not None]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["class", "name", "score", "calibrated"])


def _worst(P: np.ndarray, y: np.ndarray, w, candidates: Sequence[int], limit: int) -> list[int]:
    """``candidates`` ordered by their class-wise ECE on ``(P, y)`` (largest first, ties by index), the first
    ``limit``."""
    ece = metrics.per_class_ece(P, y, sample_weight=w)
    cand = np.asarray(list(candidates), dtype=int)
    order = np.lexsort((cand, -ece[cand]))
    return cand[order][:limit].tolist()


def explain_classes(model: MulticlassCalibrator, P, y, *, sample_weight=None, held_out=None,
                    class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
                    simplex_grid: int = 10) -> ClassExplanation:
    """Explain ``model``, fitted on ``(P, y)``.

    Parameters
    ----------
    model : MulticlassCalibrator
        Fitted on the rows ``P``, ``y`` (with ``sample_weight``).
    P : array-like (n, K) or Scores
        What the model was fitted on (probabilities, or logits when ``model.logits``).
    y : array-like (n,)
    sample_weight : array-like (n,), optional
    held_out : tuple (P, y), optional
        Rows the model was not fitted on, for the temperature's held-out log-loss curve.
    class_names : sequence of K str, optional
    max_classes : int, default 10
        Most classes whose binary maps are listed.
    simplex_grid : int, default 10
        Grid spacing 1/``simplex_grid`` of the K = 3 simplex map.

    Raises
    ------
    NotFittedError
        ``model`` is not fitted.
    """
    model._check_fitted()
    x = as_scores(P, model.logits, model.n_classes_)
    y = check_classes(y, x.n, x.k)
    names = class_labels(x.k, class_names)
    name = _name(model)
    ex = ClassExplanation(method=name, kind="", classes=names)
    if name == "temperature":
        t = fitted_temperature(model)
        grid = _temperature_grid(t)
        curve = pd.DataFrame({"temperature": grid, "fit": temperature_curve(x, y, grid, sample_weight)})
        if held_out is not None:
            hx = as_scores(held_out[0], model.logits, x.k)
            curve["held_out"] = temperature_curve(hx, held_out[1], grid)
        ex.kind, ex.temperature, ex.loss_curve = "temperature", t, curve
    elif name in ("vector", "matrix", "dirichlet"):
        try:
            ex.weights, ex.bias, ex.path = _linear_parts(model)
            ex.kind = "linear"
        except ProgrammingError as exc:            # a method that keeps W and b under other names
            ex.notes.append(f"W and b cannot be shown: {exc}")
    elif isinstance(model, OneVsRestCalibrator):
        ex.kind = "ovr"
        ex.shown = _worst(x.probabilities, y, sample_weight, range(x.k), max_classes)
        ex.maps = _binary_maps(model, model.models_, ex.shown, names, np.linspace(0.0, 1.0, N_GRID))
        if x.k > max_classes:
            ex.notes.append(f"The {max_classes} classes of largest class-wise ECE before calibration, of {x.k}.")
    elif isinstance(model, TopLabelCalibrator):
        ex.kind = "top_label"
        r, c, _, share = model.tops(x)              # a row whose top is tied counts 1/m for each tied class
        weight = np.ones(x.n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        ex.predicted = np.bincount(c, weights=weight[r] * share, minlength=x.k)
        ex.pooled = [k for k, m in enumerate(model.models_) if m is None]
        own = [k for k, m in enumerate(model.models_) if m is not None]
        grid = np.linspace(1.0 / x.k, 1.0, N_GRID)
        ex.shown = _worst(x.probabilities, y, sample_weight, own, max_classes) if own else []
        ex.maps = _binary_maps(model, model.models_, ex.shown, names, grid)
        ex.pooled_map = pd.DataFrame({"score": grid, "calibrated": model.apply(model.pooled_, grid)})
        if len(own) > max_classes:
            ex.notes.append(f"The {max_classes} classes of largest class-wise ECE before calibration, of "
                            f"{len(own)} with a map of their own.")
    if x.k == 3:
        ex.simplex = prepare_simplex_map(_on_probabilities(model), n_grid=simplex_grid)
    return ex


def _on_probabilities(model: MulticlassCalibrator):
    """``model.predict_proba`` on rows of probabilities (their logarithm when the model takes logits: a row's
    log-probabilities are logits of the same probabilities)."""
    if not model.logits:
        return model.predict_proba
    return lambda G: model.predict_proba(np.log(np.maximum(G, 1e-300)))
