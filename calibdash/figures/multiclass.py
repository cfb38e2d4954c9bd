"""The multi-class diagrams drawn: the plot half of :mod:`calibdash.multiclass.diagrams`' prepare / plot pairs.

>>> from calibdash.multiclass import diagrams as mdiagrams
>>> from calibdash.figures import multiclass as fmulticlass
>>> fig = fmulticlass.plot_confidence(mdiagrams.prepare_confidence({"raw": P, "temperature": Q}, y))
>>> fig = fmulticlass.plot_classwise(mdiagrams.prepare_classwise({"raw": P}, y))
>>> fig = fmulticlass.plot_simplex_map(mdiagrams.prepare_simplex_map(cal.predict_proba))

:func:`plot_confidence` draws with :func:`~calibdash.figures.reliability_diagram`
(accuracy against confidence, the rows per bin underneath); :func:`plot_classwise`
draws one small panel per shown class; :func:`plot_simplex_map` draws a
3-class map as arrows on a ternary plot (``go.Scatterternary``).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..diagrams import display_names
from ..multiclass.diagrams import ClasswiseData, ConfidenceData, SimplexMapData, class_labels
from .layout import base_layout
from .palette import class_color_of, rgba
from .charts.reliability import reliability_diagram

__all__ = ["plot_confidence", "plot_classwise", "plot_simplex_map"]

_HEIGHT = 520
#: Height of one row of class-wise panels, in pixels.
PANEL_HEIGHT = 230


def plot_confidence(data: ConfidenceData, *, names: Mapping[str, str] | None = None,
                    title: str | None = "Confidence reliability diagram", height: int = _HEIGHT) -> go.Figure:
    """Each method's accuracy against mean confidence per bin (95% intervals), its confidence ECE in the legend,
    and the rows per bin underneath: one scatter and one bar trace per method after the diagonal."""
    shown = display_names(names, data.tables)
    labels = {k: f"{shown[k]} (ECE {data.ece[k]:.4f})" if k in data.ece else shown[k] for k in data.tables}
    fig = reliability_diagram(data.tables, labels=labels, title=title, height=height,
                              colors={k: class_color_of(k) for k in data.tables})
    fig.update_xaxes(title_text="confidence (top probability)", row=2, col=1)
    fig.update_yaxes(title_text="accuracy", row=1, col=1)
    return fig


def plot_classwise(data: ClasswiseData, *, names: Mapping[str, str] | None = None, cols: int = 4,
                   title: str | None = "Class-wise reliability", panel_height: int = PANEL_HEIGHT) -> go.Figure:
    """One panel per shown class (``data.classes``, in order): each method's share of rows labelled k against
    its mean probability of k per bin, over the diagonal. Panel title: the class and its ECE (first method).
    Traces: per panel the diagonal, then one per method (the legend shows each method once)."""
    shown = display_names(names, data.ece.columns)
    cols = max(1, min(int(cols), len(data.classes)))
    rows = math.ceil(len(data.classes) / cols)
    first = data.ece.columns[0]
    titles = [f"{data.names[c]} · ECE {data.ece.loc[c, first]:.3f}" for c in data.classes]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.05,
                        vertical_spacing=min(0.12, 0.5 / rows))
    for i, c in enumerate(data.classes):
        r, col = divmod(i, cols)
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#BBBBBB", dash="dash", width=1),
                                 hoverinfo="skip", showlegend=False), row=r + 1, col=col + 1)
        for key, t in data.tables[c].items():
            color = class_color_of(key)
            fig.add_trace(go.Scatter(
                x=t["mean_pred"], y=t["obs_freq"], mode="lines+markers", name=shown[key], legendgroup=key,
                showlegend=i == 0, line=dict(color=color, width=1.5), marker=dict(size=5, color=color),
                error_y=dict(type="data", symmetric=False, array=t["ci_high"] - t["obs_freq"],
                             arrayminus=t["obs_freq"] - t["ci_low"], color=rgba(color, 0.5), thickness=1, width=2),
                customdata=np.column_stack([t["count"], t["lower"], t["upper"]]),
                hovertemplate=(f"<b>{shown[key]}</b> · {data.names[c]}<br>bin %{{customdata[1]:.3f}} – "
                               "%{customdata[2]:.3f}<br>rows: %{customdata[0]:,}<br>mean p: %{x:.3f}<br>"
                               "observed: %{y:.3f}<extra></extra>")), row=r + 1, col=col + 1)
    fig.update_annotations(font_size=12)                # the panel titles
    fig.update_xaxes(range=[-0.02, 1.02])
    fig.update_yaxes(range=[-0.02, 1.02])
    fig.update_xaxes(title_text="mean predicted probability", row=rows, col=1)
    fig.update_yaxes(title_text="observed frequency", row=1, col=1)
    return base_layout(fig, title, 120 + int(panel_height) * rows)


def plot_simplex_map(data: SimplexMapData, *, class_names: Sequence[str] | None = None,
                     title: str | None = "Calibration map on the simplex", height: int = _HEIGHT,
                     colorscale: str = "Viridis") -> go.Figure:
    """The map as arrows on the probability triangle: three ternary traces, the segments from each grid point
    to its image (grey), the grid points (small, grey) and the images (coloured by the distance moved)."""
    a_name, b_name, c_name = class_labels(3, class_names)
    inp, out = data.inputs, data.outputs
    # one line trace for every segment, separated by gaps
    seg = np.full((len(inp) * 3, 3), np.nan)
    seg[0::3], seg[1::3] = inp, out
    fig = go.Figure()
    fig.add_trace(go.Scatterternary(a=seg[:, 0], b=seg[:, 1], c=seg[:, 2], mode="lines", name="map",
                                    line=dict(color="#999999", width=1), hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatterternary(a=inp[:, 0], b=inp[:, 1], c=inp[:, 2], mode="markers", name="input",
                                    marker=dict(size=4, color="#7F7F7F"),
                                    hovertemplate=f"input<br>{a_name} %{{a:.3f}}<br>{b_name} %{{b:.3f}}<br>"
                                                  f"{c_name} %{{c:.3f}}<extra></extra>"))
    fig.add_trace(go.Scatterternary(
        a=out[:, 0], b=out[:, 1], c=out[:, 2], mode="markers", name="calibrated",
        marker=dict(size=8, symbol="triangle-up", color=data.shift, colorscale=colorscale, showscale=True,
                    colorbar=dict(title="moved", thickness=12)),
        customdata=np.column_stack([inp, data.shift]),
        hovertemplate=(f"calibrated<br>{a_name} %{{a:.3f}} (from %{{customdata[0]:.3f}})<br>{b_name} %{{b:.3f}} "
                       f"(from %{{customdata[1]:.3f}})<br>{c_name} %{{c:.3f}} (from %{{customdata[2]:.3f}})<br>"
                       "moved %{customdata[3]:.3f}<extra></extra>")))
    fig.update_layout(ternary=dict(sum=1, aaxis=dict(title=a_name, min=0), baxis=dict(title=b_name, min=0),
                                   caxis=dict(title=c_name, min=0)))
    return base_layout(fig, title, height)
