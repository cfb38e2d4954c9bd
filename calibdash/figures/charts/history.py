"""Drawing a calibration history: one measure of a saved series of runs over time, a line per group or period,
with the alert threshold the nightly job checks (data: :func:`calibdash.io.runs.history_frame`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..layout import base_layout
from ..palette import color_of

__all__ = ["history_chart"]


def history_chart(frame: pd.DataFrame, measure: str, threshold: float | None = None) -> go.Figure:
    """``measure`` of each part (``frame``: saved, part, value) over the runs' save times; ``threshold`` as a
    dashed red line."""
    fig = go.Figure()
    for part, rows in frame.groupby("part", sort=False):
        fig.add_trace(go.Scatter(x=rows["saved"], y=rows["value"], mode="lines+markers", name=str(part),
                                 line=dict(color=color_of(str(part))),
                                 hovertemplate=f"<b>{part}</b><br>%{{x|%Y-%m-%d %H:%M}}<br>{measure} %{{y:.4f}}"
                                               "<extra></extra>"))
    if threshold is not None:
        fig.add_hline(y=threshold, line=dict(color="#D55E00", dash="dash"),
                      annotation_text=f"alert above {threshold:g}", annotation_position="top left")
    fig.update_layout(xaxis_title="saved", yaxis_title=measure)
    return base_layout(fig, f"{measure} of each saved run")
