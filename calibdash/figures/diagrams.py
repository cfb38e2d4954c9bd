"""The three reliability diagrams drawn: the plot half of :mod:`calibdash.diagrams`' prepare / plot pairs.

>>> from calibdash import diagrams
>>> from calibdash.figures import diagrams as fdiagrams
>>> data = diagrams.prepare_corp(predictions, labels)           # or prepare_binned, prepare_smooth, prepare
>>> fig = fdiagrams.plot(data, names={"platt": "Platt scaling"})
>>> caption = data.caption({"platt": "Platt scaling"})

:func:`plot_binned`, :func:`plot_smooth` and :func:`plot_corp` draw with
:func:`~calibdash.figures.reliability_diagram`,
:func:`~calibdash.figures.charts.smooth_ece.smoothed_diagram` and
:func:`~calibdash.figures.charts.corp.corp_diagram`; :func:`plot` picks one by the
data's kind, and :func:`diagram` prepares and plots in one call, returning the
figure and its caption.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd
import plotly.graph_objects as go

from .. import metrics
from ..diagrams import N_BOOT, TITLES, BinnedData, CorpData, SmoothData, check_kind, display_names, prepare
from .charts.corp import corp_diagram
from .charts.reliability import reliability_diagram
from .charts.smooth_ece import smoothed_diagram

__all__ = ["LEGEND_MARGIN", "plot_binned", "plot_smooth", "plot_corp", "plot", "diagram"]

#: The house layout's bottom margin (calibdash.figures.layout.base_layout), where the legend sits.
LEGEND_MARGIN = 120
_DEFAULT_TITLE = object()
_HEIGHT = 520


def _title(title, kind: str):
    return TITLES[kind] if title is _DEFAULT_TITLE else title


def _legend_margin(fig: go.Figure, n_entries: int, height: int) -> None:
    """Room under the plot for a legend of long entries (smECE, or MCB/DSC/UNC), one a line: the house legend
    grows upward from the figure's bottom, so the margin and the figure grow by the same amount and the plot
    keeps its size."""
    need = 70 + 24 * n_entries
    if n_entries > 1 and need > LEGEND_MARGIN:
        fig.update_layout(margin=dict(b=need), height=height + need - LEGEND_MARGIN)


def plot_binned(data: BinnedData, *, names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE,
                height: int = _HEIGHT) -> go.Figure:
    """The binned reliability diagram: each bin's observed frequency against its mean prediction, its 95%
    interval, and the rows per bin underneath. ``title``: default :data:`calibdash.diagrams.TITLES`'s."""
    return reliability_diagram(data.tables, labels=display_names(names, data.tables), title=_title(title, data.kind),
                               height=height)


def plot_smooth(data: SmoothData, *, names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE,
                height: int = _HEIGHT) -> go.Figure:
    """The smoothed reliability diagram, smECE and its bandwidth in the legend, the density underneath."""
    fig = smoothed_diagram(data.curves, labels=display_names(names, data.curves), title=_title(title, data.kind),
                           height=height)
    _legend_margin(fig, len(data.curves), height)
    return fig


def plot_corp(data: CorpData, *, names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE,
              height: int = _HEIGHT) -> go.Figure:
    """The CORP reliability diagram, MCB/DSC/UNC in the legend, the consistency band shaded."""
    fig = corp_diagram(data.curves, data.bands, data.decompositions, labels=display_names(names, data.curves),
                       title=_title(title, data.kind), height=height)
    _legend_margin(fig, len(data.curves), height)
    return fig


_PLOTS = {BinnedData: plot_binned, SmoothData: plot_smooth, CorpData: plot_corp}


def plot(data: BinnedData | SmoothData | CorpData, **kw) -> go.Figure:
    """The figure of any diagram's data (``names``, ``title``, ``height`` as the kind's plot function)."""
    return _PLOTS[type(data)](data, **kw)


def diagram(kind: str, predictions: pd.DataFrame, labels, weights=None, *, band: bool = False,
            n_bins=metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
            names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE, height: int = _HEIGHT,
            n_boot: int = N_BOOT) -> tuple[go.Figure, str]:
    """``(figure, caption)`` of the diagram ``kind`` (:func:`calibdash.diagrams.prepare`, then :func:`plot`)."""
    data = prepare(check_kind(kind), predictions, labels, weights, band=band, n_bins=n_bins, strategy=strategy,
                   n_boot=n_boot)
    return plot(data, names=names, title=title, height=height), data.caption(names)

