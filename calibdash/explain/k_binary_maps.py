"""Inside a fitted one-vs-rest or top-label composite: the binary maps it fitted, one per class, on a grid.

One-vs-rest (Zadrozny & Elkan 2002): class k's binary map ``q_k(p_k)`` on a grid of [0, 1]. Top-label (Gupta &
Ramdas 2022): each predicted class's map of the top probability on a grid of [1/K, 1], the pooled map, which
classes use it (fewer than ``min_rows`` fitting rows predicted them) and the rows predicted as each class. At most
``max_classes`` classes are listed: those of largest class-wise ECE on the fitting rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd

from ..measures import class_measures as metrics
from ..calibrators.multiclass.methods.ovr import BinaryComposite, OneVsRestCalibrator
from ..calibrators.multiclass.methods.top_label import TopLabelCalibrator
from . import explains
from .k_class import MAX_CLASSES, ClassExplanation, class_rows

__all__ = ["OneVsRestExplanation", "TopLabelExplanation"]

#: Points of the score grid the binary maps are evaluated on.
N_GRID = 201


@dataclass
class OneVsRestExplanation(ClassExplanation):
    """A one-vs-rest composite explained.

    Attributes
    ----------
    maps : DataFrame or None
        Long table: ``class`` (index), ``name``, ``score`` (grid), ``calibrated``: the binary map of class k's
        probability (top-label: the map of the top probability of rows predicted k).
    shown : list of int
        The classes in ``maps`` (largest class-wise ECE of the fitting rows first).
    """

    maps: pd.DataFrame | None = None
    shown: list = field(default_factory=list)
    kind: ClassVar[str] = "ovr"


@dataclass
class TopLabelExplanation(OneVsRestExplanation):
    """A top-label composite explained: the per-class maps of :class:`OneVsRestExplanation`, and

    Attributes
    ----------
    pooled : list of int
        The classes calibrated by the pooled map (too few rows predicted them).
    pooled_map : DataFrame or None
        ``score``, ``calibrated`` of the pooled map.
    predicted : ndarray or None
        Fitting rows predicted as each class (by weight).
    """

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
    """Each predicted class's map of the top probability on [1/K, 1], the pooled map, the pooled classes and
    the rows predicted as each class (the arguments: :mod:`calibdash.explain.k_class`)."""
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
