"""Drawing temperature scaling from a :class:`calibdash.explain.temperature.TemperatureExplanation`.

* :func:`nll_figure`: the mean negative log-likelihood (log-loss) as a
  function of the temperature ``T`` (log axis), the fitted ``T`` marked at
  the minimum with its approximate 95% interval shaded, and ``T = 1`` (the
  scores as they are) marked for comparison.
* :func:`map_figure`: the map ``sigmoid(logit(s) / T)`` against the identity
  and the training rows as equal-weight groups.

Everything drawn is in the explanation; nothing here fits or predicts.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ...explain.temperature import TemperatureExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout
from ..palette import color_of, rgba

__all__ = []

_DATA = DATA_GREY


def nll_figure(explanation, title: str | None = None, height: int = 420) -> go.Figure:
    """Mean NLL against T (log x axis): the curve, the optimum (star), T = 1 (grey) and the 95% band."""
    ex = explanation
    colour = color_of("temperature")
    c = ex.nll_curve
    t = ex.temperature
    fig = go.Figure()
    if math.isfinite(ex.se_log_t):
        lo, hi = t * math.exp(-1.96 * ex.se_log_t), t * math.exp(1.96 * ex.se_log_t)
        fig.add_vrect(x0=lo, x1=hi, fillcolor=rgba(colour, 0.15), line_width=0, layer="below")
    fig.add_trace(go.Scatter(
        x=c["temperature"], y=c["mean_nll"], mode="lines", name="mean negative log-likelihood", meta="curve",
        line=dict(color=colour, width=2.5), customdata=c["nll"],
        hovertemplate="T = %{x:.4g}<br>mean NLL %{y:.5f}<br>total %{customdata:,.2f}<extra></extra>"))
    best = -ex.log_likelihood / ex.total_weight
    at_one = -ex.log_likelihood_at_1 / ex.total_weight
    fig.add_trace(go.Scatter(
        x=[1.0], y=[at_one], mode="markers", name=f"T = 1, the scores as they are ({at_one:.4f})", meta="identity",
        marker=dict(symbol="circle", size=10, color=_DATA, line=dict(color="#FFFFFF", width=1)),
        hovertemplate="T = 1<br>mean NLL %{y:.5f}<extra></extra>"))
    label = f"fitted T = {t:.4g} ({best:.4f})" + (f", at {ex.at_bound}" if ex.at_bound else "")
    fig.add_trace(go.Scatter(
        x=[t], y=[best], mode="markers", name=label, meta="optimum",
        marker=dict(symbol="star", size=15, color=colour, line=dict(color="#FFFFFF", width=1)),
        hovertemplate="fitted T = %{x:.5g}<br>mean NLL %{y:.5f}<extra></extra>"))
    fig.add_vline(x=t, line=dict(color=rgba(colour, 0.6), dash="dash", width=1.5))
    fig.update_xaxes(type="log", title_text="temperature T (log scale; right: softer, left: sharper)")
    fig.update_yaxes(title_text="mean negative log-likelihood")
    return base_layout(fig, title, height)


def map_figure(explanation, title: str | None = None, height: int = 440) -> go.Figure:
    """The fitted map (bold), the identity (dashed, T = 1) and the training rows as groups (grey)."""
    ex = explanation
    colour = color_of("temperature")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="identity (T = 1)", hoverinfo="skip",
                             line=dict(color="#BBBBBB", dash="dash", width=1)))
    g = ex.groups
    w = np.asarray(g["weight"], dtype=float)
    size = 5 + 9 * np.sqrt(w / w.max()) if w.size and w.max() > 0 else 6
    fig.add_trace(go.Scatter(
        x=g["score"], y=g["rate"], mode="markers", name="training rows (equal-weight groups)", meta="groups",
        marker=dict(color=rgba(_DATA, 0.5), size=size), customdata=g["weight"],
        hovertemplate="mean score %{x:.4f}<br>positive rate %{y:.4f}<br>weight %{customdata:,.4g}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=ex.curve["score"], y=ex.curve["prob"], mode="lines", name=f"sigmoid(logit(s) / {ex.temperature:.4g})",
        meta="map", line=dict(color=colour, width=3),
        hovertemplate="score %{x:.4f} → %{y:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="score", range=[-0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


@draws(TemperatureExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the likelihood over T with its optimum, and the fitted map."""
    ex = explanation
    gain = ex.log_likelihood - ex.log_likelihood_at_1
    return [(f"Negative log-likelihood against the temperature: minimum at T = {ex.temperature:.4g} "
             f"(log-likelihood {gain:+,.2f} over T = 1)", nll_figure(ex)),
            (f"Temperature-scaled map, T = {ex.temperature:.4g}", map_figure(ex))]
