"""Plotly figure builders (no streamlit), in two homes and a few shared helpers.

* :mod:`calibdash.figures.charts`: one module per chart that any page draws (the reliability diagram, the
  calibration map, the CORP and smoothed diagrams, groups, drift, benchmark, the Learn page's charts).
* :mod:`calibdash.figures.methods`: one module per method (or family of methods) drawing the inner workings of a
  fitted calibrator from its :class:`calibdash.explain.Explanation`. Each **declares** the explanation classes it
  draws with :func:`draws` over its ``inner_figures(explanation) -> list[(title, figure)]``; :func:`inner_figures`
  finds them by the explanation's class, never by the method's name. Figures fit nothing: everything they draw is
  in the explanation.
* ``layout``, ``palette``, ``text``, ``images``: the house layout, the colours, plain text, image export.

Computing a diagram's data is separate from drawing it: the data functions
(:func:`calibdash.diagrams.reliability_tables`, ``map_curves``) return DataFrames, the drawing
functions (``reliability_diagram``, ``calibration_map``) return figures.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from ..errors import EnvironmentProblem, ProgrammingError

try:
    import plotly  # noqa: F401  (the figures need it; the rest of calibdash does not)
except ImportError:  # pragma: no cover - exercised in an install without the [app] extra
    raise EnvironmentProblem("calibdash.figures draws with plotly, which is not installed: "
                             "pip install 'calibdash[app]'.") from None

from .charts.calibration_map import calibration_map, map_curves, score_grid
from .charts.reliability import reliability_diagram
from .layout import base_layout
from .palette import color_of, rgba

__all__ = ["calibration_map", "map_curves", "score_grid", "reliability_diagram",
           "color_of", "rgba", "base_layout", "draws", "drawers", "inner_figures"]

_DRAWERS: dict[type, Callable] = {}
_READ = False


def draws(*explanation_classes: type) -> Callable:
    """Declare the decorated ``inner_figures(explanation) -> list[(title, figure)]`` the drawing of
    ``explanation_classes`` (and of their subclasses)."""
    def declare(fn: Callable) -> Callable:
        for cls in explanation_classes:
            if _DRAWERS.get(cls, fn) is not fn:
                raise ProgrammingError(f"{cls.__name__} is drawn twice: by {_DRAWERS[cls].__module__} and "
                                       f"{fn.__module__}.")
            _DRAWERS[cls] = fn
        return fn
    return declare


def drawers() -> dict[type, Callable]:
    """Explanation class -> the function drawing it, as the modules of :mod:`calibdash.figures.methods`
    declare them (all read once)."""
    global _READ
    if not _READ:
        from . import methods
        for info in pkgutil.iter_modules(methods.__path__):
            importlib.import_module(f"{methods.__name__}.{info.name}")
        _READ = True
    return dict(_DRAWERS)


def inner_figures(explanation) -> list:
    """(title, figure) pairs drawing an :class:`calibdash.explain.Explanation`: the figures of each class of
    ``explanation`` that a module declares it draws, its own class first, then its bases' (a K-class method's
    own figures, then the simplex map every K-class explanation has); [] if none is drawn."""
    found = drawers()
    return [pair for cls in type(explanation).__mro__ if cls in found for pair in found[cls](explanation)]

