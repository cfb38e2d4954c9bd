"""Drawing the scaling-binning calibrator's three steps on the calibration map, from a
:class:`calibdash.explain.scaling_binning.ScalingBinningExplanation`. Nothing here fits."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...explain.scaling_binning import ScalingBinningExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout, identity_trace, map_trace, steps, unit_axes
from ..palette import color_of, rgba

__all__ = []


def map_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """Platt's curve (dotted), the step map of the bins' means of Platt's outputs (bold) and each bin's frequency of
    positives (grey, sized by its rows: histogram binning's value on the same bins)."""
    ex = explanation
    colour = color_of(ex.method)
    b = ex.bins
    lower, upper = b["lower"].to_numpy(), b["upper"].to_numpy()
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(map_trace(ex.curve["score"], ex.curve["platt"], f"step 1: Platt, sigmoid({ex.A:.3g} logit(s) "
                            f"{ex.B:+.3g})", rgba(colour, 0.6), "Platt", width=1.5, dash="dot", meta="platt"))
    est = b["estimate"].to_numpy()
    fig.add_trace(map_trace(*steps(lower, est), "step 3: mean of Platt's outputs per bin "
                            "(the map)", colour, "scaling-binning", line_shape="hv", meta="map"))
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
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(ScalingBinningExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): Platt's curve, the bins and the map."""
    return [(f"Scaling-binning: Platt's outputs averaged in {len(explanation.bins)} equal-count bins",
             map_figure(explanation))]
