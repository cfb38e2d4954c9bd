"""Venn-Abers' inner workings: the interval ``[p0, p1]`` over the score axis with the merged prediction and the
calibration scores as a rug, and its width ``p1 - p0``. Nothing here fits."""
from __future__ import annotations

import plotly.graph_objects as go

from ...explain.venn_abers import VennAbersExplanation
from .. import draws
from ..layout import UNIT, base_layout, identity_trace, map_trace
from ..palette import color_of, rgba

__all__ = []


def band_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """The band ``[p0, p1]`` and the merged prediction ``p`` over the score axis."""
    colour = color_of("venn_abers")
    b = explanation.band
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(go.Scatter(x=b["score"], y=b["p0"], mode="lines", name="p0 (test label 0)",
                             line=dict(color=colour, width=1),
                             hovertemplate="score %{x:.4f}<br>p0 %{y:.4f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=b["score"], y=b["p1"], mode="lines", name="p1 (test label 1)",
                             line=dict(color=colour, width=1), fill="tonexty", fillcolor=rgba(colour, 0.18),
                             hovertemplate="score %{x:.4f}<br>p1 %{y:.4f}<extra></extra>"))
    rule = "p1 / (1 - p0 + p1)" if explanation.merge == "log" else "p1 + (p0² - p1²) / 2"
    fig.add_trace(map_trace(b["score"], b["p"], f"prediction {rule}", colour, ""))
    at = explanation.at_scores
    fig.add_trace(go.Scatter(x=at["score"], y=[-0.01] * len(at), mode="markers", name="calibration scores",
                             marker=dict(symbol="line-ns-open", size=6, color="#7F7F7F"), hoverinfo="skip"))
    fig.update_xaxes(title_text="score", range=UNIT)
    fig.update_yaxes(title_text="calibrated probability", range=[-0.03, 1.02])
    return base_layout(fig, title, height)


def width_figure(explanation, title: str | None = None, height: int = 360) -> go.Figure:
    """The interval's width ``p1 - p0`` against the score, with its mean over the calibration rows."""
    colour = color_of("venn_abers")
    b = explanation.band
    mean = float(explanation.width["mean"].iloc[0])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=b["score"], y=b["width"], mode="lines", name="width p1 - p0",
                             line=dict(color=colour, width=2),
                             hovertemplate="score %{x:.4f}<br>width %{y:.4g}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[mean, mean], mode="lines", name="mean over the calibration rows",
                             line=dict(color="#7F7F7F", dash="dot", width=1),
                             hovertemplate=f"mean width {mean:.4g}<extra></extra>"))
    fig.update_xaxes(title_text="score", range=UNIT)
    fig.update_yaxes(title_text="p1 - p0", rangemode="tozero")
    return base_layout(fig, title, height)


@draws(VennAbersExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the band ``[p0, p1]`` with the prediction, and the interval's width."""
    mean = float(explanation.width["mean"].iloc[0])
    return [("Venn-Abers interval [p0, p1] and the merged prediction", band_figure(explanation)),
            (f"Interval width p1 - p0 (mean {mean:.3g} over the calibration rows)", width_figure(explanation))]
