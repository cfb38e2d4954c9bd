"""Plotly figure builders (no streamlit).

Computing a diagram's data is separate from drawing it: the data functions
(``reliability_tables``, ``map_curves``) return DataFrames, the drawing
functions (``reliability_diagram``, ``calibration_map``) return figures.

A calibrator's inner workings are drawn by the module of this package named
after it (``calibdash.figures.bbq`` for ``"bbq"``), which exposes
``inner_figures(calibrator) -> list[(title, figure)]``; :func:`inner_figures`
finds it.
"""
from __future__ import annotations

import importlib

from .calibration_map import calibration_map, map_curves, score_grid
from .layout import base_layout
from .palette import color_of, rgba
from .reliability import reliability_diagram, reliability_tables

__all__ = ["calibration_map", "map_curves", "score_grid", "reliability_diagram", "reliability_tables",
           "color_of", "rgba", "base_layout", "inner_figures"]


def inner_figures(calibrator) -> list:
    """(title, figure) pairs showing a fitted calibrator's internals; [] if it has none."""
    name = getattr(calibrator, "name", "")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return []
        raise
    return list(module.inner_figures(calibrator))
