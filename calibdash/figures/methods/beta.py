"""Drawing beta calibration from a :class:`calibdash.explain.beta.BetaExplanation`: its map against the logistic
(Platt) map fitted on the same rows, on the probability scale and on the log-odds scale, where Platt's map is a line
and the beta map ``a ln s - b ln(1 - s) + c`` bends away from it at the ends."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ...explain.beta import BetaExplanation
from .. import draws
from ..layout import (DATA_GREY, base_layout, group_sizes, identity_trace, map_trace, unit_axes,
                      weighted_groups_trace)
from ..palette import color_of, rgba

__all__ = []


def map_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """The beta map (bold), Platt's map (dotted), the identity (dashed), data groups (grey) and the midpoint ``m``
    (where the map crosses 1/2)."""
    ex = explanation
    colour, platt = color_of("beta"), color_of("platt")
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(weighted_groups_trace(ex.groups))
    c = ex.curve
    fig.add_trace(map_trace(c["score"], c["platt"], f"Platt (logistic) on the same rows: A = {ex.platt_a:.3g}, "
                            f"B = {ex.platt_b:.3g}", platt, "Platt", width=2, dash="dot", meta="platt"))
    fig.add_trace(map_trace(c["score"], c["beta"], f"beta ({ex.parameters}): a = {ex.a:.3g}, b = {ex.b:.3g}, "
                            f"c = {ex.c:.3g}", colour, "beta", meta="map"))
    if math.isfinite(ex.m):
        fig.add_trace(go.Scatter(
            x=[ex.m], y=[0.5], mode="markers", meta="midpoint", name=f"midpoint m = {ex.m:.4g} (map = 1/2)",
            marker=dict(symbol="diamond", size=11, color=colour, line=dict(color="#FFFFFF", width=1)),
            hovertemplate="midpoint m = %{x:.4f}<extra></extra>"))
    unit_axes(fig)
    return base_layout(fig, title, height)


def logodds_figure(explanation, title: str | None = None, height: int = 420) -> go.Figure:
    """Both maps on the log-odds scale over the training scores' range; data groups whose rate is strictly between 0
    and 1 as grey markers."""
    ex = explanation
    colour, platt = color_of("beta"), color_of("platt")
    c = ex.curve
    lo, hi = ex.score_range
    c = c[(c["score"] >= lo) & (c["score"] <= hi)]
    if len(c) < 2:                                   # one distinct training score: show the grid around it
        c = ex.curve[(ex.curve["score"] > 0) & (ex.curve["score"] < 1)]
    fig = go.Figure()
    x = c["logit"]
    fig.add_trace(identity_trace(lo=x.min(), hi=x.max()))
    g = ex.groups
    gi = g[(g["rate"] > 0) & (g["rate"] < 1) & (g["score"] > 0) & (g["score"] < 1)]
    if len(gi):
        fig.add_trace(go.Scatter(
            x=np.log(gi["score"]) - np.log1p(-gi["score"]), y=np.log(gi["rate"]) - np.log1p(-gi["rate"]),
            mode="markers", name="training rows (groups, log-odds of the rate)", meta="groups",
            marker=dict(color=rgba(DATA_GREY, 0.5), size=group_sizes(gi["weight"])),
            hovertemplate="logit(mean score) %{x:.3f}<br>logit(rate) %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=c["platt_logodds"], mode="lines", name="Platt: A logit(s) + B (a line)",
                             meta="platt", line=dict(color=platt, width=2, dash="dot"),
                             hovertemplate="Platt<br>logit(s) %{x:.3f} → %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=c["beta_logodds"], mode="lines", name="beta: a ln s − b ln(1 − s) + c",
                             meta="map", line=dict(color=colour, width=3),
                             hovertemplate="beta<br>logit(s) %{x:.3f} → %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="logit(score)")
    fig.update_yaxes(title_text="log-odds of the calibrated probability")
    return base_layout(fig, title, height)


@draws(BetaExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map against Platt's, and both on the log-odds scale."""
    ex = explanation
    diff = ex.log_likelihood - ex.platt_log_likelihood
    map_title = (f"Beta map ({ex.parameters}) against the logistic (Platt) map on the same rows: "
                 f"log-likelihood {diff:+,.2f}")
    return [(map_title, map_figure(ex)),
            ("On the log-odds scale: Platt's map is a line, the beta map bends at the ends", logodds_figure(ex))]
