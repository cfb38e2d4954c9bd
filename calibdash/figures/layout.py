"""House style shared by every figure."""
from __future__ import annotations

import plotly.graph_objects as go

FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the house style (white template, compact margins, legend on top) in place; return ``fig``."""
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=13),
        margin=dict(l=60, r=20, t=95 if title else 40, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0),
        hoverlabel=dict(font_size=12),
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", y=0.985, yanchor="top",
                                     yref="container", font=dict(size=15)))
    if height:
        fig.update_layout(height=height)
    return fig
