"""Drawing temperature scaling from a :class:`calibdash.explain.temperature.TemperatureExplanation`: the mean negative
log-likelihood against ``T`` with the fitted ``T`` and ``T = 1`` marked, and the map ``sigmoid(logit(s) / T)`` over
the training rows as equal-weight groups."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from ...explain.temperature import TemperatureExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout, identity_trace, map_trace, unit_axes, weighted_groups_trace
from ..palette import color_of, rgba

__all__ = []


def nll_figure(explanation, title: str | None = None, height: int = 420) -> go.Figure:
    """Mean NLL against T (log x axis): the curve, the optimum (star), T = 1 (the scores as they are, grey) and the
    approximate 95% interval of T shaded."""
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
        marker=dict(symbol="circle", size=10, color=DATA_GREY, line=dict(color="#FFFFFF", width=1)),
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
    fig.add_trace(identity_trace("identity (T = 1)"))
    fig.add_trace(weighted_groups_trace(ex.groups))
    fig.add_trace(map_trace(ex.curve["score"], ex.curve["prob"], f"sigmoid(logit(s) / {ex.temperature:.4g})", colour,
                            "", meta="map"))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(TemperatureExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the likelihood over T with its optimum, and the fitted map."""
    ex = explanation
    gain = ex.log_likelihood - ex.log_likelihood_at_1
    return [(f"Negative log-likelihood against the temperature: minimum at T = {ex.temperature:.4g} "
             f"(log-likelihood {gain:+,.2f} over T = 1)", nll_figure(ex)),
            (f"Temperature-scaled map, T = {ex.temperature:.4g}", map_figure(ex))]
