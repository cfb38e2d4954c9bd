"""Drawing what every K-class explanation holds: for K = 3, the map on the probability simplex
(:func:`calibdash.diagrams.plot_simplex_map`), after the method's own figures."""
from __future__ import annotations

import plotly.graph_objects as go

from ...explain.k_class import ClassExplanation
from .. import draws

__all__ = []


@draws(ClassExplanation)
def inner_figures(ex: ClassExplanation) -> list[tuple[str, go.Figure]]:
    """The simplex map when K = 3, as ``(title, figure)``."""
    if ex.simplex is None:
        return []
    return [("The map on the probability simplex", ex.simplex.figure(class_names=ex.classes, title=None))]
