"""Plotly figure builders (no streamlit): :mod:`.charts` holds one module per chart the pages draw, :mod:`.methods`
one module per method drawing a fitted calibrator's :class:`calibdash.explain.Explanation` (each declares the
explanation classes it draws with :func:`draws`); ``layout``, ``palette``, ``text``, ``images``: the house style, the
colours, plain text, image export. Figures fit nothing; computing a chart's data (DataFrames) is apart from drawing
it.
"""
from __future__ import annotations

from ..core.errors import EnvironmentProblem
from ..core.scan import Declarations

try:
    import plotly  # noqa: F401  (the figures need it; the rest of calibdash does not)
except ImportError:  # pragma: no cover - exercised in an install without the [app] extra
    raise EnvironmentProblem("calibdash.figures draws with plotly, which is not installed: "
                             "pip install 'calibdash[app]'.") from None

from .charts.calibration_map import calibration_map, map_curves, score_grid
from .charts.reliability import reliability_diagram
from .palette import color_of, rgba

__all__ = ["calibration_map", "map_curves", "inner_figures", "score_grid", "reliability_diagram", "color_of", "rgba"]

_DECLARED = Declarations(f"{__name__}.methods", "drawn")
#: ``@draws(BBQExplanation)`` over ``def inner_figures(explanation) -> list[(title, figure)]``: the function draws
#: these explanation classes (and their subclasses).
draws = _DECLARED.declare
#: Explanation class -> the function drawing it, as the modules of :mod:`calibdash.figures.methods` declare them.
drawers = _DECLARED.found


def inner_figures(explanation) -> list:
    """(title, figure) pairs drawing an :class:`calibdash.explain.Explanation`: the figures of each class of
    ``explanation`` that a module declares it draws, its own class first, then its bases' (a K-class method's own
    figures, then the simplex map every K-class explanation has); [] if none is drawn."""
    return [pair for fn in _DECLARED.along(type(explanation)) for pair in fn(explanation)]

