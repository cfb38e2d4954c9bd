"""What explaining any fitted K-class calibrator holds: its class names, notes and, for K = 3, its map on a grid of
the probability simplex (:func:`calibdash.diagrams.prepare_simplex_map`).

Each method's explainer (:mod:`.k_temperature`; :mod:`.k_linear` for vector, matrix and Dirichlet calibration;
:mod:`.k_binary_maps` for the one-vs-rest and top-label composites) subclasses :class:`ClassExplanation`; a
K-class method that declares no explainer gets the one here. Every K-class explainer takes ``(model, P, y,
features=None, *, sample_weight=None, held_out=None, class_names=None, max_classes=MAX_CLASSES,
simplex_grid=10)``: ``P``, ``y`` the rows the model was fitted on (probabilities, or logits when
``model.logits``), ``held_out`` a pair ``(P, y)`` it was not fitted on, ``max_classes`` the most classes whose
binary maps are listed, ``simplex_grid`` the spacing 1/``simplex_grid`` of the simplex grid; each raises
NotFittedError on a model not fitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np

from ..calibrators.multiclass.base import MulticlassCalibrator, Scores, as_scores

from ..core.validation import check_classes
from ..calibrators.multiclass.methods.ovr import BinaryComposite
from ..diagrams import SimplexMapData, class_labels, prepare_simplex_map
from . import Explanation, explains

__all__ = ["ClassExplanation"]

#: Most classes whose one-vs-rest or top-label maps are drawn (the worst by class-wise ECE when there are more).
MAX_CLASSES = 10


@dataclass
class ClassExplanation(Explanation):
    """What explaining a fitted K-class calibrator gives; each method's explainer subclasses it.

    Attributes
    ----------
    method : str
        The calibrator's registry name (``"temperature"``, ``"ovr:isotonic"``).
    kind : str (class attribute)
        ``"temperature"``, ``"linear"``, ``"ovr"``, ``"top_label"``, or ``""`` (only the simplex map to show).
    classes : list of str
        The class names, in column order.
    simplex : SimplexMapData or None
        For K = 3, the map on a grid of the simplex.
    notes : list of str
    """

    classes: list = field(default_factory=list)
    simplex: SimplexMapData | None = None
    kind: ClassVar[str] = ""


def _name(model: MulticlassCalibrator) -> str:
    return f"{model.name}:{model.binary}" if isinstance(model, BinaryComposite) else model.name


def _on_probabilities(model: MulticlassCalibrator):
    """``model.predict_proba`` on rows of probabilities (their logarithm when the model takes logits: a row's
    log-probabilities are logits of the same probabilities)."""
    if not model.logits:
        return model.predict_proba
    return lambda G: model.predict_proba(np.log(np.maximum(G, 1e-300)))


def class_rows(model: MulticlassCalibrator, P, y, class_names: Sequence[str] | None,
               simplex_grid: int) -> tuple[Scores, np.ndarray, dict]:
    """``(x, y, fields)``: the fitting rows checked against the fitted ``model``, and the fields every
    :class:`ClassExplanation` holds (``method``, ``classes``, ``simplex``)."""
    model._check_fitted()
    x = as_scores(P, model.logits, model.n_classes_)
    y = check_classes(y, x.n, x.k)
    simplex = prepare_simplex_map(_on_probabilities(model), n_grid=simplex_grid) if x.k == 3 else None
    return x, y, dict(method=_name(model), classes=class_labels(x.k, class_names), simplex=simplex)


@explains(MulticlassCalibrator)
def explain(model, P, y, features=None, *, sample_weight=None, held_out=None,
            class_names: Sequence[str] | None = None, max_classes: int = MAX_CLASSES,
            simplex_grid: int = 10) -> ClassExplanation:
    """A K-class method with no explainer of its own: its map on the simplex when K = 3."""
    return ClassExplanation(**class_rows(model, P, y, class_names, simplex_grid)[2])
