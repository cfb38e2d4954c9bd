"""Drawing the multi-class lesson (:mod:`calibdash.synthetic.multiclass_study`): the true error against the
sample size, one line per method."""
from __future__ import annotations

from typing import Mapping

import pandas as pd
import plotly.graph_objects as go

from .layout import base_layout
from .palette import color_of, rgba

__all__ = ["size_curve_figure"]


def size_curve_figure(summary: pd.DataFrame, *, labels: Mapping[str, str] | None = None,
                      title: str | None = "True calibration error against the sample size",
                      height: int = 440) -> go.Figure:
    """Mean true error per (n, method) of :func:`calibdash.synthetic.multiclass_study.size_summary`, with 95%
    intervals of the mean (± 1.96 se), log x axis; one trace per method, in the summary's order."""
    fig = go.Figure()
    for method in dict.fromkeys(summary["method"]):
        s = summary[summary["method"] == method].sort_values("n")
        colour = color_of(method)
        name = (labels or {}).get(method, method)
        fig.add_trace(go.Scatter(
            x=s["n"], y=s["mean"], mode="lines+markers", name=name, meta=method,
            line=dict(color=colour, width=2.5, dash="dot" if method == "uncalibrated" else "solid"),
            error_y=dict(type="data", array=1.96 * s["se"], color=rgba(colour, 0.6), thickness=1.2, width=3),
            customdata=s[["sd", "draws"]].to_numpy(),
            hovertemplate=(f"<b>{name}</b><br>n = %{{x:,}}<br>mean true error %{{y:.4f}}<br>"
                           "SD %{customdata[0]:.4f} over %{customdata[1]} draws<extra></extra>")))
    sizes = sorted(set(summary["n"]))
    fig.update_xaxes(type="log", title_text="rows drawn n (half fit, half judged; log scale)", tickvals=sizes,
                     ticktext=[f"{n:,}" for n in sizes])
    fig.update_yaxes(title_text="true error E‖P(y|x) − q(x)‖₁", rangemode="tozero")
    return base_layout(fig, title, height)
