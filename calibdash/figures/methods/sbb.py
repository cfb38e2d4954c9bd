"""SBB's inner workings: the single best binning it chose, drawn on the calibration map."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...explain.sbb import SBBExplanation
from .. import draws
from ..layout import base_layout, identity_trace, map_trace, steps, unit_axes
from ..palette import color_of, rgba

__all__ = []


def _bands(bins: pd.DataFrame) -> tuple[list, list]:
    """Rectangles over every other bin, as one polygon trace (``None`` between rectangles)."""
    xs, ys = [], []
    for lo, hi in zip(bins["lower"].to_numpy()[::2], bins["upper"].to_numpy()[::2]):
        xs += [lo, hi, hi, lo, lo, None]
        ys += [0, 0, 1, 1, 0, None]
    return xs, ys


def bins_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """The step map over the chosen bins as alternately shaded bands, and a marker per bin at the middle of its
    training scores, sized by its rows, its counts on hover."""
    colour = color_of("sbb")
    b = explanation.bins
    fig = go.Figure()
    xs, ys = _bands(b)
    fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=rgba(colour, 0.10), mode="lines",
                             line=dict(width=0), name="bins (alternate shading)", hoverinfo="skip"))
    fig.add_trace(identity_trace())
    fig.add_trace(map_trace(*steps(b["lower"].to_numpy(), b["estimate"].to_numpy()), "SBB map", colour, "SBB",
                            line_shape="hv"))
    size = 6 + 14 * np.sqrt(b["n"] / b["n"].max())
    fig.add_trace(go.Scatter(
        x=(b["score_min"] + b["score_max"]) / 2, y=b["estimate"], mode="markers", name="bin (size ∝ √rows)",
        marker=dict(color=colour, size=size, line=dict(color="#FFFFFF", width=1)),
        customdata=np.c_[b["lower"], b["upper"], b["n"], b["n1"], b["score_min"], b["score_max"]],
        hovertemplate=("bin [%{customdata[0]:.4f}, %{customdata[1]:.4f})<br>"
                       "training scores %{customdata[4]:.4f} to %{customdata[5]:.4f}<br>"
                       "%{customdata[3]:,} positives of %{customdata[2]:,} rows<br>"
                       "estimate (n1+1)/(n+2) = %{y:.4f}<extra></extra>")))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(SBBExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): SBB's chosen bins on the calibration map."""
    title = (f"SBB's best binning: {len(explanation.bins)} bins "
             f"(posterior probability {explanation.posterior_of_best:.3g})")
    return [(title, bins_figure(explanation))]
