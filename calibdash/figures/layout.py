"""House style shared by every figure."""
from __future__ import annotations

import plotly.graph_objects as go

from .text import plain_figure

__all__ = ["base_layout"]

FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the house style (white template, compact margins, legend on top) in place; return ``fig``.

    The figure's strings so far (names from the data among them) are made plain text for plotly
    (:func:`calibdash.figures.text.plain_figure`); the pages and the report do it again on the finished
    figure, for what is added after this call."""
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
    return plain_figure(fig)


#: Grey of the training rows drawn behind a calibration map.
DATA_GREY = "#7F7F7F"


def identity_trace() -> go.Scatter:
    """The dashed diagonal of a calibration map (no hover)."""
    return go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="identity", hoverinfo="skip",
                      line=dict(color="#BBBBBB", dash="dash", width=1))


def data_groups_trace(groups) -> go.Scatter:
    """The training rows as grey equal-count groups (columns ``score``, ``rate``, ``rows``), behind a map."""
    from .palette import rgba

    return go.Scatter(
        x=groups["score"], y=groups["rate"], mode="markers", name="training rows (equal-count groups)",
        marker=dict(color=rgba(DATA_GREY, 0.45), size=5), customdata=groups["rows"],
        hovertemplate="mean score %{x:.4f}<br>positive rate %{y:.4f}<br>%{customdata:,} rows<extra></extra>")
