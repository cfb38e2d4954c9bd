"""Drawing the scaling-binning calibrator from a
:class:`calibdash.explain.scaling_binning.ScalingBinningExplanation`.

:func:`map_figure` draws its three steps on the calibration map: Platt's curve
(dotted), the step map of the equal-count bins' means of Platt's outputs (bold,
one step per bin), and, per bin, its frequency of positives (grey
markers sized by its rows: what histogram binning would give on the same bins).
Nothing here fits.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...explain.scaling_binning import ScalingBinningExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout, identity_trace
from ..palette import color_of, rgba

__all__ = []


def map_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """Platt's curve, the bins, their means of Platt's outputs (the map) and their frequencies."""
    ex = explanation
    colour = color_of(ex.method)
    b = ex.bins
    lower, upper = b["lower"].to_numpy(), b["upper"].to_numpy()
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(go.Scatter(x=ex.curve["score"], y=ex.curve["platt"], mode="lines", meta="platt",
                             name=f"step 1: Platt, sigmoid({ex.A:.3g} logit(s) {ex.B:+.3g})",
                             line=dict(color=rgba(colour, 0.6), width=1.5, dash="dot"),
                             hovertemplate="Platt<br>score %{x:.4f} → %{y:.4f}<extra></extra>"))
    est = b["estimate"].to_numpy()
    fig.add_trace(go.Scatter(x=np.append(lower, 1.0), y=np.append(est, est[-1]), mode="lines", line_shape="hv",
                             meta="map", name="step 3: mean of Platt's outputs per bin (the map)",
                             line=dict(color=colour, width=3),
                             hovertemplate="scaling-binning<br>score %{x:.4f} → %{y:.4f}<extra></extra>"))
    count = b["count"].to_numpy(dtype=float)
    size = 6 + 12 * np.sqrt(count / count.max()) if count.size and count.max() > 0 else 8
    fig.add_trace(go.Scatter(
        x=b["mean_score"], y=b["frequency"], mode="markers", meta="frequency",
        name="frequency of positives per bin (histogram binning's value; size ∝ √rows)",
        marker=dict(color=rgba(DATA_GREY, 0.75), size=size, line=dict(color="#FFFFFF", width=1)),
        customdata=np.c_[lower, upper, b["count"], b["positives"], est],
        hovertemplate=("bin [%{customdata[0]:.4f}, %{customdata[1]:.4f})<br>"
                       "%{customdata[3]:,.4g} positives of %{customdata[2]:,.4g} rows: frequency %{y:.4f}<br>"
                       "mean of Platt's outputs %{customdata[4]:.4f}<extra></extra>")))
    fig.update_xaxes(title_text="score", range=[-0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


@draws(ScalingBinningExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure) drawing a :class:`~calibdash.explain.scaling_binning.ScalingBinningExplanation`."""
    return [(f"Scaling-binning: Platt's outputs averaged in {len(explanation.bins)} equal-count bins",
             map_figure(explanation))]
