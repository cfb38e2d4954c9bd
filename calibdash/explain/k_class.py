"""K-class explanations: class names, notes and, for K = 3, the map on a grid of the probability simplex (every
method; the explainer of a method that declares none); the one-vs-rest and top-label composites' binary maps per
class; vector, matrix and Dirichlet calibration's ``W`` and ``b`` of ``softmax(W s + b)`` (Kull et al. 2019) and the
regularisation path when recorded. Every K-class explainer takes ``(model, P, y, features=None, *,
sample_weight=None, held_out=None, class_names=None, max_classes=MAX_CLASSES, simplex_grid=10)``: ``P``, ``y`` the
fitting rows (probabilities, or logits when ``model.logits``), ``held_out`` a pair ``(P, y)`` not fitted on,
``max_classes`` the most classes whose binary maps are listed (largest class-wise ECE on the fitting rows first),
``simplex_grid`` the simplex grid's spacing 1/``simplex_grid``; NotFittedError on a model not fitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd

from ..calibrators.multiclass.base import MulticlassCalibrator, Scores, as_scores
from ..calibrators.multiclass.methods.dirichlet import DirichletCalibration
from ..calibrators.multiclass.methods.matrix import MatrixScaling
from ..calibrators.multiclass.methods.ovr import BinaryComposite, OneVsRestCalibrator
from ..calibrators.multiclass.methods.top_label import TopLabelCalibrator
from ..calibrators.multiclass.methods.vector import VectorScaling
from ..core.validation import check_classes
from ..diagrams import SimplexMapData, class_labels, prepare_simplex_map
from ..measures import class_measures as metrics
from . import Explanation, explains

__all__ = ["ClassExplanation", "OneVsRestExplanation", "TopLabelExplanation", "LinearExplanation"]

#: Most classes whose one-vs-rest or top-label maps are drawn (the worst by class-wise ECE when there are more).
MAX_CLASSES = 10


@dataclass
class ClassExplanation(Explanation):
    """What explaining a fitted K-class calibrator gives: ``method``, the calibrator's registry name
    (``"temperature"``, ``"ovr:isotonic"``); ``kind`` (class attribute), ``"temperature"``, ``"linear"``, ``"ovr"``,
    ``"top_label"`` or ``""`` (only the simplex map to show); ``classes``, the class names in column order;
    ``simplex``, for K = 3 the map on a grid of the simplex (:class:`calibdash.diagrams.SimplexMapData`)."""

    classes: list = field(default_factory=list)
    simplex: SimplexMapData | None = None
    kind: ClassVar[str] = ""


def _name(model: MulticlassCalibrator) -> str:
    return f"{model.name}:{model.binary}" if isinstance(model, BinaryComposite) else model.name


def class_rows(model: MulticlassCalibrator, P, y, class_names: Sequence[str] | None,
               simplex_grid: int) -> tuple[Scores, np.ndarray, dict]:
    """``(x, y, fields)``: the fitting rows checked against the fitted ``model``, and the fields every
    :class:`ClassExplanation` holds (``method``, ``classes``, ``simplex``)."""
    model._check_fitted()
    x = as_scores(P, model.logits, model.n_classes_)
    y = check_classes(y, x.n, x.k)
    # a model taking logits maps rows of probabilities through their logarithm (logits of the same probabilities)
    on_p = (lambda G: model.predict_proba(np.log(np.maximum(G, 1e-300)))) if model.logits else model.predict_proba
    simplex = prepare_simplex_map(on_p, n_grid=simplex_grid) if x.k == 3 else None
    return x, y, dict(method=_name(model), classes=class_labels(x.k, class_names), simplex=simplex)


@explains(MulticlassCalibrator)
def explain(model, P, y, features=None, *, sample_weight=None, held_out=None,
            class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
            simplex_grid: int = 10) -> ClassExplanation:
    """A K-class method with no explainer of its own: its map on the simplex when K = 3."""
    return ClassExplanation(**class_rows(model, P, y, class_names, simplex_grid)[2])


#: Points of the score grid the binary maps are evaluated on.
N_GRID = 201


@dataclass
class OneVsRestExplanation(ClassExplanation):
    """A one-vs-rest composite explained: ``maps``, a long table (``class`` index, ``name``, ``score`` on a grid,
    ``calibrated``) of the binary map of class k's probability (top-label: the map of the top probability of rows
    predicted k); ``shown``, the classes in ``maps`` (largest class-wise ECE of the fitting rows first)."""

    maps: pd.DataFrame | None = None
    shown: list = field(default_factory=list)
    kind: ClassVar[str] = "ovr"


@dataclass
class TopLabelExplanation(OneVsRestExplanation):
    """A top-label composite explained: the per-class maps of :class:`OneVsRestExplanation`; ``pooled``, the classes
    calibrated by the pooled map (too few rows predicted them); ``pooled_map`` (``score``, ``calibrated``);
    ``predicted``, the fitting rows predicted as each class (by weight)."""

    pooled: list = field(default_factory=list)
    pooled_map: pd.DataFrame | None = None
    predicted: np.ndarray | None = None
    kind: ClassVar[str] = "top_label"


def _binary_maps(model: BinaryComposite, classes: list[int], names: list[str], grid: np.ndarray) -> pd.DataFrame:
    subs = model.models_
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


@explains(OneVsRestCalibrator)
def explain_ovr(model, P, y, features=None, *, sample_weight=None, held_out=None,
                class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
                simplex_grid: int = 10) -> OneVsRestExplanation:
    """Each shown class's binary map on [0, 1] (the arguments: :mod:`calibdash.explain.k_class`)."""
    x, y, fields = class_rows(model, P, y, class_names, simplex_grid)
    ex = OneVsRestExplanation(**fields, shown=_worst(x.probabilities, y, sample_weight, range(x.k), max_classes))
    ex.maps = _binary_maps(model, ex.shown, ex.classes, np.linspace(0.0, 1.0, N_GRID))
    if x.k > max_classes:
        ex.notes.append(f"The {max_classes} classes of largest class-wise ECE before calibration, of {x.k}.")
    return ex


@explains(TopLabelCalibrator)
def explain_top_label(model, P, y, features=None, *, sample_weight=None, held_out=None,
                      class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
                      simplex_grid: int = 10) -> TopLabelExplanation:
    """Each predicted class's map of the top probability on [1/K, 1], the pooled map, the pooled classes and the rows
    predicted as each class (the arguments: :mod:`calibdash.explain.k_class`)."""
    x, y, fields = class_rows(model, P, y, class_names, simplex_grid)
    ex = TopLabelExplanation(**fields)
    r, c, _, share = model.tops(x)              # a row whose top is tied counts 1/m for each tied class
    weight = np.ones(x.n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    ex.predicted = np.bincount(c, weights=weight[r] * share, minlength=x.k)
    ex.pooled = [k for k, m in enumerate(model.models_) if m is None]
    own = [k for k, m in enumerate(model.models_) if m is not None]
    grid = np.linspace(1.0 / x.k, 1.0, N_GRID)
    ex.shown = _worst(x.probabilities, y, sample_weight, own, max_classes) if own else []
    ex.maps = _binary_maps(model, ex.shown, ex.classes, grid)
    ex.pooled_map = pd.DataFrame({"score": grid, "calibrated": model.apply(model.pooled_, grid)})
    if len(own) > max_classes:
        ex.notes.append(f"The {max_classes} classes of largest class-wise ECE before calibration, of "
                        f"{len(own)} with a map of their own.")
    return ex


@dataclass
class LinearExplanation(ClassExplanation):
    """A linear K-class map explained: ``weights`` ``W`` (K, K) and ``bias`` ``b`` (K,), row k of ``W`` giving class
    k's new log-score (None, with a note, for a method that keeps them under other names), and ``path``, the
    regularisation path (the cross-validated choice) as the method recorded it, or None."""

    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    path: pd.DataFrame | None = None
    kind: ClassVar[str] = "linear"


@explains(VectorScaling, MatrixScaling, DirichletCalibration)
def explain_linear(model, P, y, features=None, *, sample_weight=None, held_out=None,
            class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
            simplex_grid: int = 10) -> LinearExplanation:
    """The fitted ``W``, ``b`` and path (the arguments: :mod:`calibdash.explain.k_class`)."""
    ex = LinearExplanation(**class_rows(model, P, y, class_names, simplex_grid)[2])
    try:                                       # W, b and path: its coef_, intercept_ and path_
        ex.weights, ex.bias, ex.path = (np.asarray(model.coef_, dtype=float),
                                        np.asarray(model.intercept_, dtype=float).reshape(-1), model.path_)
    except AttributeError:                     # a method that keeps W and b under other names
        ex.notes.append(f"W and b cannot be shown: {type(model).__name__} holds no fitted weights and bias.")
    return ex
