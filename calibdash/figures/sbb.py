"""SBB's inner workings: the single best binning it chose, drawn on the calibration map.

:func:`bins_data` gathers the chosen bins (from ``calibrator.diagnostics()``)
and :func:`bins_figure` draws them: each bin a shaded band on the score axis
(alternating shades), the step map in bold, and a marker per bin at the middle
of its training scores, sized by its number of rows, with its counts on hover.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .layout import base_layout
from .palette import color_of, rgba

__all__ = ["SBBData", "bins_data", "bins_figure", "inner_figures"]


@dataclass
class SBBData:
    """``bins``: one row per bin (``lower``, ``upper``, ``score_min``, ``score_max``, ``n``,
    ``n1``, ``estimate``); ``posterior_of_best``: that binning's posterior probability."""

    bins: pd.DataFrame
    posterior_of_best: float
    log_score: float


def bins_data(calibrator) -> SBBData:
    """The chosen bins and how sure the posterior is of them."""
    d = calibrator.diagnostics()
    cols = ["lower", "upper", "score_min", "score_max", "n", "n1", "estimate"]
    return SBBData(bins=d["bins"][cols].copy(), posterior_of_best=float(d["posterior_of_best"]),
                   log_score=float(d["log_score"]))


def _bands(bins: pd.DataFrame) -> tuple[list, list]:
    """Rectangles over every other bin, as one polygon trace (``None`` between rectangles)."""
    xs, ys = [], []
    for lo, hi in zip(bins["lower"].to_numpy()[::2], bins["upper"].to_numpy()[::2]):
        xs += [lo, hi, hi, lo, lo, None]
        ys += [0, 0, 1, 1, 0, None]
    return xs, ys


def bins_figure(data: SBBData, title: str | None = None, height: int = 460) -> go.Figure:
    """The calibration map with SBB's bins as shaded bands."""
    colour = color_of("sbb")
    b = data.bins
    fig = go.Figure()
    xs, ys = _bands(b)
    fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=rgba(colour, 0.10), mode="lines",
                             line=dict(width=0), name="bins (alternate shading)", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="identity", hoverinfo="skip",
                             line=dict(color="#BBBBBB", dash="dash", width=1)))
    fig.add_trace(go.Scatter(
        x=np.append(b["lower"].to_numpy(), 1.0), y=np.append(b["estimate"].to_numpy(), b["estimate"].iloc[-1]),
        mode="lines", line_shape="hv", name="SBB map", line=dict(color=colour, width=3),
        hovertemplate="SBB<br>score %{x:.4f} → %{y:.4f}<extra></extra>"))
    size = 6 + 14 * np.sqrt(b["n"] / b["n"].max())
    fig.add_trace(go.Scatter(
        x=(b["score_min"] + b["score_max"]) / 2, y=b["estimate"], mode="markers", name="bin (size ∝ √rows)",
        marker=dict(color=colour, size=size, line=dict(color="#FFFFFF", width=1)),
        customdata=np.c_[b["lower"], b["upper"], b["n"], b["n1"], b["score_min"], b["score_max"]],
        hovertemplate=("bin [%{customdata[0]:.4f}, %{customdata[1]:.4f})<br>"
                       "training scores %{customdata[4]:.4f} to %{customdata[5]:.4f}<br>"
                       "%{customdata[3]:,} positives of %{customdata[2]:,} rows<br>"
                       "estimate (n1+1)/(n+2) = %{y:.4f}<extra></extra>")))
    fig.update_xaxes(title_text="score", range=[-0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


def inner_figures(calibrator) -> list[tuple[str, go.Figure]]:
    """(title, figure): SBB's chosen bins on the calibration map."""
    data = bins_data(calibrator)
    title = (f"SBB's best binning: {len(data.bins)} bins "
             f"(posterior probability {data.posterior_of_best:.3g})")
    return [(title, bins_figure(data))]
