"""Drawing a K-class temperature scaling: its objective, the mean log-loss, against ``T`` (log axis), on the fitting
rows and on held-out rows, the fitted ``T`` and ``T = 1`` marked."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...explain.k_temperature import ClassTemperatureExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout
from ..palette import rgba

__all__ = []

_TEMPERATURE = "#CC6677"


def loss_curve_figure(ex: ClassTemperatureExplanation, title: str | None = None, height: int = 420) -> go.Figure:
    """Mean log-loss against T (log x axis): fitting rows (solid), held-out rows (dashed), the fitted T (star,
    dashed line) and T = 1 (the probabilities as they are, grey dot) on each curve."""
    c, t = ex.loss_curve, ex.temperature
    fig = go.Figure()
    for col, label, dash in (("fit", "fitting rows", "solid"), ("held_out", "held-out rows", "dash")):
        if col not in c:
            continue
        fig.add_trace(go.Scatter(x=c["temperature"], y=c[col], mode="lines", name=f"log-loss, {label}", meta=col,
                                 line=dict(color=_TEMPERATURE, width=2.5, dash=dash),
                                 hovertemplate=f"{label}<br>T = %{{x:.4g}}<br>log-loss %{{y:.5f}}<extra></extra>"))
        at = lambda v: float(np.interp(np.log(v), np.log(c["temperature"]), c[col]))
        fig.add_trace(go.Scatter(x=[1.0], y=[at(1.0)], mode="markers", showlegend=col == "fit",
                                 name="T = 1 (as given)", marker=dict(size=9, color=DATA_GREY),
                                 hovertemplate=f"{label}, T = 1<br>log-loss %{{y:.5f}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[t], y=[at(t)], mode="markers", showlegend=col == "fit",
                                 name=f"fitted T = {t:.4g}",
                                 marker=dict(symbol="star", size=14, color=_TEMPERATURE,
                                             line=dict(color="#FFFFFF", width=1)),
                                 hovertemplate=f"{label}, fitted T = %{{x:.5g}}<br>log-loss %{{y:.5f}}<extra></extra>"))
    fig.add_vline(x=t, line=dict(color=rgba(_TEMPERATURE, 0.6), dash="dot", width=1.5))
    fig.update_xaxes(type="log", title_text="temperature T (log scale; right: softer, left: sharper)")
    fig.update_yaxes(title_text="mean log-loss")
    return base_layout(fig, title, height)


@draws(ClassTemperatureExplanation)
def inner_figures(ex: ClassTemperatureExplanation) -> list[tuple[str, go.Figure]]:
    """The log-loss curve, as ``(title, figure)``."""
    return [("Log-loss as a function of the temperature", loss_curve_figure(ex))]
