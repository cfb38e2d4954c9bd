"""The Bayesian binnings' inner workings: SBB's single best binning on the calibration map; ABB's averaged map over
the prior and posterior probability of a bin boundary in each gap."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.sbb import ABBExplanation, SBBExplanation
from .. import draws
from ..layout import UNIT, base_layout, identity_trace, map_trace, steps, unit_axes
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
def abb_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map over the posterior boundary probability at each gap."""
    title = (f"ABB's map and where it believes the bin boundaries are "
             f"(posterior mean {explanation.expected_bins:.1f} bins)")
    return [(title, abb_figure(explanation))]
