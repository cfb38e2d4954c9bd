"""House style shared by every figure."""
from __future__ import annotations

import plotly.graph_objects as go

FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the house style (white template, compact margins, legend on top) in place; return ``fig``."""
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=13),
        margin=dict(l=60, r=20, t=50 if title else 20, b=120),
        # Under the plot, anchored to the figure's bottom edge: a legend that wraps grows upward into the
        # margin instead of over the title or the data.
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.01, xanchor="left", x=0),
        hoverlabel=dict(font_size=12),
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", y=0.985, yanchor="top",
                                     yref="container", font=dict(size=15)))
    if height:
        fig.update_layout(height=height)
    return fig
