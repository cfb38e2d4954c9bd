"""ABB's inner workings: the averaged map over the prior and posterior probability of a bin boundary in each gap."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.abb import ABBExplanation
from .. import draws
from ..layout import UNIT, base_layout, identity_trace, map_trace
from ..palette import color_of

__all__ = []


def abb_figure(explanation, title: str | None = None, height: int = 560) -> go.Figure:
    """The map (top, linear between training positions as ``predict``) and, on the same score axis below, the prior
    and posterior probability of a boundary in each gap (at its midpoint)."""
    colour = color_of("abb")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.62, 0.38])
    fig.add_trace(identity_trace(), row=1, col=1)
    fig.add_trace(map_trace(explanation.curve["x"], explanation.curve["y"], "ABB map", colour, "ABB"), row=1, col=1)
    b = explanation.boundaries
    fig.add_trace(go.Scatter(
        x=b["score"], y=b["prior"], mode="lines", name="prior P(boundary)",
        line=dict(color="#7F7F7F", dash="dot", width=1.2),
        hovertemplate="gap %{x:.4f}<br>prior %{y:.4f}<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Scatter(
        x=b["score"], y=b["posterior"], mode="lines+markers" if len(b) <= 300 else "lines",
        name="posterior P(boundary)", line=dict(color=colour, width=1.5), marker=dict(size=5),
        customdata=np.c_[b["left"], b["right"], b["prior"]],
        hovertemplate=("gap between %{customdata[0]:.4f} and %{customdata[1]:.4f}<br>"
                       "posterior %{y:.4f} (prior %{customdata[2]:.4f})<extra></extra>")), row=2, col=1)
    fig.update_xaxes(range=UNIT)
    fig.update_xaxes(title_text="score", row=2, col=1)
    fig.update_yaxes(title_text="calibrated probability", range=UNIT, row=1, col=1)
    fig.update_yaxes(title_text="P(boundary in gap)", range=UNIT, row=2, col=1)
    return base_layout(fig, title, height)


@draws(ABBExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map over the posterior boundary probability at each gap."""
    title = (f"ABB's map and where it believes the bin boundaries are "
             f"(posterior mean {explanation.expected_bins:.1f} bins)")
    return [(title, abb_figure(explanation))]
