"""Plotly figure builders (no streamlit).

Computing a diagram's data is separate from drawing it: the data functions
(``reliability_tables``, ``map_curves``) return DataFrames, the drawing
functions (``reliability_diagram``, ``calibration_map``) return figures.

A calibrator's inner workings are explained by :mod:`calibdash.explain`
(plain data) and drawn by the module of this package named after the method
(``calibdash.figures.bbq`` for ``"bbq"``), which exposes
``inner_figures(explanation) -> list[(title, figure)]``; :func:`inner_figures`
finds it. Figures fit nothing: everything they draw is in the explanation.
"""
from __future__ import annotations

import importlib

from ..errors import EnvironmentProblem

try:
    import plotly  # noqa: F401  (the figures need it; the rest of calibdash does not)
except ImportError:  # pragma: no cover - exercised in an install without the [app] extra
    raise EnvironmentProblem("calibdash.figures draws with plotly, which is not installed: "
                             "pip install 'calibdash[app]'.") from None

from .calibration_map import calibration_map, map_curves, score_grid
from .layout import base_layout
from .palette import color_of, rgba
from .reliability import reliability_diagram, reliability_tables

__all__ = ["calibration_map", "map_curves", "score_grid", "reliability_diagram", "reliability_tables",
           "color_of", "rgba", "base_layout", "inner_figures"]


def inner_figures(explanation) -> list:
    """(title, figure) pairs drawing an :class:`calibdash.explain.Explanation`; [] if its method has none."""
    name = explanation.method
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return []
        raise
    return list(module.inner_figures(explanation))
