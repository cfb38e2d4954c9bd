"""Drawing a calibration history: one measure of a saved series of runs over time, a line per group or period,
with the alert threshold the nightly job checks (data: :func:`calibdash.io.runs.history_frame`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..layout import base_layout
from ..palette import color_of

__all__ = ["history_chart", "reliability_pair"]

#: One colour per group or period line (Okabe-Ito, told apart with colour-vision deficiencies); the whole data grey.
PART_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
ALL_ROWS_COLOR = "#888888"


def history_chart(frame: pd.DataFrame, measure: str, threshold: float | None = None) -> go.Figure:
    """``measure`` of each part (``frame``: saved, part, value) over the runs' save times; ``threshold`` as a
    dashed red line."""
    fig = go.Figure()
    parts = [p for p in dict.fromkeys(frame["part"]) if p != "(all rows)"]
    colors = {p: PART_COLORS[i % len(PART_COLORS)] for i, p in enumerate(parts)} | {"(all rows)": ALL_ROWS_COLOR}
    for part, rows in frame.groupby("part", sort=False):
        fig.add_trace(go.Scatter(x=rows["saved"], y=rows["value"], mode="lines+markers", name=str(part),
                                 line=dict(color=colors[part], width=3 if part == "(all rows)" else 2),
                                 hovertemplate=f"<b>{part}</b><br>%{{x|%Y-%m-%d %H:%M}}<br>{measure} %{{y:.4f}}"
                                               "<extra></extra>"))
    if threshold is not None:
        fig.add_hline(y=threshold, line=dict(color="#D55E00", dash="dash"),
                      annotation_text=f"alert above {threshold:g}", annotation_position="top left")
    fig.update_layout(xaxis_title="saved", yaxis_title=measure)
    return base_layout(fig, f"{measure} of each saved run")


def reliability_pair(a: dict, b: dict | None, labels: dict | None = None, names=("A", "B")) -> go.Figure:
    """Two saved runs' reliability diagrams overlaid (``a``, ``b``: their ``diagrams`` documents): each method
    in both, run A solid and run B dashed, in the method's colour, over the diagonal; ``b=None``: run A's
    methods alone."""
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                               line=dict(color="#BBBBBB", dash="dot"), hoverinfo="skip"))
    shared = [m for m in a.get("methods", {}) if b is None or m in b.get("methods", {})]
    runs = ((a, names[0], "solid"),) + (((b, names[1], "dash"),) if b is not None else ())
    for method in shared:
        for doc, name, dash in runs:
            bins = doc["methods"][method]
            label = (labels or {}).get(method, method)
            fig.add_trace(go.Scatter(x=bins["mean_pred"], y=bins["obs_freq"], mode="lines+markers",
                                     name=f"{label} · {name}", line=dict(color=color_of(method), dash=dash),
                                     customdata=bins["count"],
                                     hovertemplate=f"<b>{label}</b> · {name}<br>mean prediction %{{x:.3f}}<br>"
                                                   "observed %{y:.3f}<br>rows %{customdata:,}<extra></extra>"))
    fig.update_layout(xaxis_title="mean predicted probability", yaxis_title="observed frequency",
                      xaxis_range=[0, 1], yaxis_range=[0, 1])
    title = f"Reliability: {names[0]} (solid) and {names[1]} (dashed)" if b is not None else f"Reliability: {names[0]}"
    return base_layout(fig, title)
