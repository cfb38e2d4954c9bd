"""Drawing a one-vs-rest or top-label composite: one binary map per shown class over the identity; top-label adds
the pooled map (dashed, black)."""
from __future__ import annotations

import plotly.graph_objects as go

from ...explain.k_binary_maps import OneVsRestExplanation
from .. import draws
from ..layout import base_layout, identity_trace
from ..palette import CLASS_COLORS

__all__ = []


def class_maps_figure(ex: OneVsRestExplanation, title: str | None = None, height: int = 460) -> go.Figure:
    """One curve per shown class over the identity; top-label: the pooled map dashed, black."""
    fig = go.Figure()
    fig.add_trace(identity_trace())
    top = ex.kind == "top_label"
    for i, c in enumerate(ex.shown):
        m = ex.maps[ex.maps["class"] == c]
        colour = CLASS_COLORS[i % len(CLASS_COLORS)]
        fig.add_trace(go.Scatter(x=m["score"], y=m["calibrated"], mode="lines", name=str(ex.classes[c]),
                                 line=dict(color=colour, width=2), meta=int(c),
                                 hovertemplate=f"{ex.classes[c]}<br>%{{x:.3f}} → %{{y:.3f}}<extra></extra>"))
    if top and ex.pooled_map is not None:
        pooled = ", ".join(str(ex.classes[c]) for c in ex.pooled)
        fig.add_trace(go.Scatter(x=ex.pooled_map["score"], y=ex.pooled_map["calibrated"], mode="lines",
                                 name="pooled" + (f" ({pooled})" if pooled else " (no class uses it)"),
                                 line=dict(color="#000000", width=2, dash="dash"), meta="pooled",
                                 hovertemplate="pooled<br>%{x:.3f} → %{y:.3f}<extra></extra>"))
    lo = float(ex.maps["score"].min()) if ex.maps is not None and len(ex.maps) else 0.0
    fig.update_xaxes(title_text="top probability of rows predicted as the class" if top
                     else "the class's probability", range=[min(lo, 0.0) - 0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


@draws(OneVsRestExplanation)
def inner_figures(ex: OneVsRestExplanation) -> list[tuple[str, go.Figure]]:
    """The class maps, as ``(title, figure)`` (one-vs-rest: only when a class is shown)."""
    if ex.kind == "top_label":
        return [("Top-label maps per predicted class", class_maps_figure(ex))]
    return [("One binary map per class (one-vs-rest)", class_maps_figure(ex))] if ex.shown else []
